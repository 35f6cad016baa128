/*
 * t-agent-dllock.c - the loader's lock (agent/dllock.h): the finder keeps
 * the only mutex held by the caller inside a callback and free after it,
 * and refuses none or several; on this glibc it finds the lock
 * dl_iterate_phdr takes, so a walk while another thread sits in a
 * callback is refused at once and names that thread, a walk from inside
 * our own callback (the lock is recursive) and after the other thread
 * left are done.  The module table's refresh (agent/modules.h) then keeps
 * the last walk's table and says who refused it, since when and how many
 * times; the next walk done clears that.
 */
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <semaphore.h>
#include <stddef.h>
#include <string.h>
#include <unistd.h>
#include "../../agent/dllock.h"
#include "../../agent/modules.h"
#include "../../agent/sys.h"
#include "tap.h"

struct fake {
	char pad[24];
	pthread_mutex_t m[4];
};

static struct fake f;
static sem_t entered, leave;
static pid_t holder_tid;
static int walked, nested_r = 1;

static int counting(struct dl_phdr_info *info, size_t size, void *arg)
{
	walked++;
	return 1;
}

static int nested(struct dl_phdr_info *info, size_t size, void *arg)
{
	nested_r = ls_dl_iterate(counting, NULL);
	return 1;
}

static int sit(struct dl_phdr_info *info, size_t size, void *arg)
{
	holder_tid = ls_gettid();
	sem_post(&entered);
	sem_wait(&leave);
	return 1;
}

static void *holder(void *arg)
{
	dl_iterate_phdr(sit, NULL);
	return NULL;
}

int main(void)
{
	pthread_mutexattr_t a;
	pthread_mutex_t w;
	pthread_t t;
	ptrdiff_t want;
	uint64_t walk0, at;
	uint32_t n;
	int i, r;

	pthread_mutexattr_init(&a);
	pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
	for (i = 0; i < 4; i++)
		pthread_mutex_init(&f.m[i], &a);

	/* m[1] held once, m[2] twice: two candidates; m[1] free after. */
	pthread_mutex_lock(&f.m[1]);
	pthread_mutex_lock(&f.m[2]);
	pthread_mutex_lock(&f.m[2]);
	is_u64(ls_dllock_collect(&f, sizeof(f), ls_gettid()), 2,
	       "two mutexes held by this thread");
	pthread_mutex_unlock(&f.m[1]);
	want = offsetof(struct fake, m[1]);
	ok(ls_dllock_pick(&f) == want,
	   "the one free again after is kept, at its offset");
	/* Both free after: not telling which. */
	pthread_mutex_lock(&f.m[1]);
	ls_dllock_collect(&f, sizeof(f), ls_gettid());
	pthread_mutex_unlock(&f.m[1]);
	pthread_mutex_unlock(&f.m[2]);
	pthread_mutex_unlock(&f.m[2]);
	ok(ls_dllock_pick(&f) == -1,
	   "two free after: no answer");
	/* None held by the caller: none kept. */
	is_u64(ls_dllock_collect(&f, sizeof(f), ls_gettid()), 0,
	       "nothing held: no candidate");
	ok(ls_dllock_pick(&f) == -1, "nothing held: no answer");
	/* Owner and count of this thread, but not locked and not of the
	 * recursive kind: no mutex glibc holds (common/loaderlock.h). */
	memset(&w, 0, sizeof(w));
	w.__data.__owner = ls_gettid();
	w.__data.__count = 1;
	is_u64(ls_dllock_collect(&w, sizeof(w), ls_gettid()), 0,
	       "owner and count alone, unlocked: no candidate");
	w.__data.__lock = 1;
	is_u64(ls_dllock_collect(&w, sizeof(w), ls_gettid()), 0,
	       "locked, but not of the recursive kind: no candidate");
	w.__data.__kind = PTHREAD_MUTEX_RECURSIVE_NP;
	is_u64(ls_dllock_collect(&w, sizeof(w), ls_gettid()), 1,
	       "locked, counted, recursive, this thread's: the candidate");
	ls_dllock_pick(&w);

	ok(ls_dllock_learn() == 1, "the loader's lock found in _rtld_global");
	walked = 0;
	ok(ls_dl_iterate(nested, NULL) == 0 && nested_r == 0 && walked == 1,
	   "a walk from inside our own callback is done");

	ok(ls_modules_refresh() > 0 && ls_modules_stale(&walk0, &n) == 0 &&
	   n == 0 && walk0 > 0, "the module table walked, nothing refused");

	sem_init(&entered, 0, 0);
	sem_init(&leave, 0, 0);
	pthread_create(&t, NULL, holder, NULL);
	sem_wait(&entered);
	ls_modules_refresh();
	ls_modules_refresh();
	ok(ls_modules_stale(&at, &n) == holder_tid && at == walk0 && n == 2,
	   "two refreshes while it sits: refused by it, the table the "
	   "earlier walk's (%u refused)", n);
	ls_dllock_clear();
	walked = 0;
	r = ls_dl_iterate(counting, NULL);
	ok(r == -EBUSY && walked == 0,
	   "another thread in a callback: the walk is refused (%d)", r);
	is_u64(ls_dllock_missed(), holder_tid, "the holder named by its tid");
	sem_post(&leave);
	pthread_join(t, NULL);
	ls_dllock_clear();
	ok(ls_dl_iterate(counting, NULL) == 0 && walked == 1 &&
	   ls_dllock_missed() == 0, "after it left: the walk is done");
	ls_modules_refresh();
	ok(ls_modules_stale(&at, &n) == 0 && at > walk0 && n == 0,
	   "after it left: the module table walked anew");
	return tap_done();
}
