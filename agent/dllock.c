/*
 * dllock.c - the loader's lock (dllock.h).
 */
#include <dlfcn.h>
#include <errno.h>
#include <link.h>
#include <pthread.h>
#include <stdint.h>
#include "../common/loaderlock.h"
#include "dllock.h"
#include "sys.h"

#define MAX_CAND 16

static const volatile int *lock_owner;	/* __data.__owner of the lock */
static pid_t missed;
static ptrdiff_t cand[MAX_CAND];
static unsigned ncand;

unsigned ls_dllock_collect(const void *base, size_t size, pid_t tid)
{
	const char *p = base;
	size_t off, step = _Alignof(pthread_mutex_t);

	ncand = 0;
	for (off = 0; off + sizeof(pthread_mutex_t) <= size; off += step) {
		const pthread_mutex_t *m = (const void *)(p + off);

		if (ls_loader_lock_owner(m) != tid)
			continue;
		if (ncand == MAX_CAND)
			return ncand = 0;	/* not telling */
		cand[ncand++] = (ptrdiff_t)off;
	}
	return ncand;
}

ptrdiff_t ls_dllock_pick(const void *base)
{
	const char *p = base;
	unsigned i, kept = 0;

	for (i = 0; i < ncand; i++) {
		const pthread_mutex_t *m = (const void *)(p + cand[i]);

		if (m->__data.__owner == 0)
			cand[kept++] = cand[i];
	}
	ncand = 0;
	return kept == 1 ? cand[0] : -1;
}

struct learn {
	const void *base;
	size_t size;
};

static int learn_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct learn *l = arg;

	(void)info;
	(void)size;
	ls_dllock_collect(l->base, l->size, ls_gettid());
	return 1;
}

int ls_dllock_learn(void)
{
	struct learn l;
	const ElfW(Sym) *sym = NULL;
	Dl_info di;
	ptrdiff_t off;

	if (lock_owner)
		return 1;
	l.base = dlsym(RTLD_DEFAULT, "_rtld_global");
	if (!l.base || !dladdr1(l.base, &di, (void **)&sym, RTLD_DL_SYMENT) ||
	    !sym || !sym->st_size)
		return 0;
	l.size = sym->st_size;
	dl_iterate_phdr(learn_cb, &l);
	off = ls_dllock_pick(l.base);
	if (off < 0)
		return 0;
	lock_owner = &((const pthread_mutex_t *)
		       ((const char *)l.base + off))->__data.__owner;
	return 1;
}

int ls_dl_iterate_held(ls_dl_cb cb, void *arg, pid_t *holder)
{
	pid_t owner = lock_owner ? __atomic_load_n(lock_owner, __ATOMIC_ACQUIRE) : 0;

	if (owner && owner != ls_gettid()) {
		__atomic_store_n(&missed, owner, __ATOMIC_RELEASE);
		if (holder)
			*holder = owner;
		return -EBUSY;
	}
	dl_iterate_phdr(cb, arg);
	return 0;
}

pid_t ls_dllock_missed(void)
{
	return __atomic_load_n(&missed, __ATOMIC_ACQUIRE);
}

void ls_dllock_clear(void)
{
	__atomic_store_n(&missed, 0, __ATOMIC_RELEASE);
}
