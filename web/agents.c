/*
 * agents.c - which agents the web server may ask, and a short-lived cache
 * of their snapshots.
 *
 * Why a cache: the page of every open browser polls each process every
 * couple of seconds, and an agent serves its socket from one thread that
 * walks the live tables for every snapshot.  Requests for one process
 * within the TTL share one snapshot (and one fetch: the first request
 * fetches, the others wait for it), so fifty clients cost the traced
 * program what one does.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "../common/contract.h"
#include "../lib/client.h"
#include "../lib/procinfo.h"
#include "../lib/symbolize.h"
#include "internal.h"
#include "agents.h"
#include "reply.h"

#define CACHE_TTL_NS (500ull * 1000 * 1000)
/* After an agent timed out, it is not asked again for this long: a
 * stuck agent costs one request its timeout, not every poll of every
 * page. */
#define STUCK_NS (10ull * 1000 * 1000 * 1000)

struct ls_web_proc {
	pid_t pid;			/* 0: free slot */
	int users;			/* requests holding the slot */
	uint64_t used_ns;
	pthread_mutex_t fetch;		/* one fetch at a time */
	uint64_t stuck_until;		/* under fetch: timed out until then */
	struct ls_web_snap *cur;	/* under agents.lock */
	pthread_mutex_t symlock;	/* sym and base */
	struct ls_web_snap *base;	/* the snapshot sym was built for */
	struct ls_symbolizer *sym;
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

int ls_web_agents_init(struct ls_web_agents *a)
{
	size_t i;

	memset(a, 0, sizeof(*a));
	a->slots = calloc(LS_WEB_CACHE_SLOTS, sizeof(*a->slots));
	if (!a->slots)
		return -ENOMEM;
	pthread_mutex_init(&a->lock, NULL);
	for (i = 0; i < LS_WEB_CACHE_SLOTS; i++) {
		pthread_mutex_init(&a->slots[i].fetch, NULL);
		pthread_mutex_init(&a->slots[i].symlock, NULL);
	}
	a->ttl_ns = CACHE_TTL_NS;
	return 0;
}

static void snap_free(struct ls_web_snap *s)
{
	if (!s)
		return;
	ls_snapshot_release(&s->snap);
	free(s);
}

/* Drop one reference; caller holds a->lock. */
static void snap_unref_locked(struct ls_web_snap *s)
{
	if (s && --s->refs == 0)
		snap_free(s);
}

static void slot_clear(struct ls_web_agents *a, struct ls_web_proc *p)
{
	ls_symbolizer_free(p->sym);
	p->sym = NULL;
	snap_unref_locked(p->base);
	p->base = NULL;
	snap_unref_locked(p->cur);
	p->cur = NULL;
	p->pid = 0;
	p->stuck_until = 0;
}

void ls_web_agents_release(struct ls_web_agents *a)
{
	size_t i;

	if (!a->slots)
		return;
	for (i = 0; i < LS_WEB_CACHE_SLOTS; i++)
		slot_clear(a, &a->slots[i]);
	free(a->slots);
	a->slots = NULL;
}

/* ---------------------------------------------------------------- discovery */

static int may_query(pid_t pid, int *status);

int ls_web_check_pid(pid_t pid, struct ls_web_reply *rep)
{
	int status;

	if (may_query(pid, &status))
		return 0;
	return ls_web_error(rep, status, status == 404 ? "no process with pid "
			    "%d" : "pid %d belongs to another user", (int)pid);
}

static int may_query(pid_t pid, int *status)
{
	uid_t owner;

	if (ls_proc_uid(pid, &owner)) {
		*status = 404;
		return 0;
	}
	if (getuid() != 0 && owner != getuid()) {
		*status = 403;
		return 0;
	}
	return 1;
}

/* Through the checked runtime dir's fd: a container's dir is reached
 * through its root without following its symlinks. */
static int has_socket(pid_t pid)
{
	char path[4200];
	struct stat st;
	uid_t uid;
	int r, dfd = ls_proc_runtime_open(pid, LS_SUFFIX_SOCKET, &uid, path,
					  sizeof(path));

	if (dfd < 0)
		return 0;
	r = !fstatat(dfd, strrchr(path, '/') + 1, &st, AT_SYMLINK_NOFOLLOW) &&
	    S_ISSOCK(st.st_mode);
	close(dfd);
	return r;
}

static int cmp_pid(const void *x, const void *y)
{
	pid_t a = *(const pid_t *)x, b = *(const pid_t *)y;

	return a < b ? -1 : a > b;
}

ssize_t ls_web_agents_list(pid_t **pids)
{
	size_t n = 0, cap = 0;
	struct dirent *de;
	pid_t pid, *v = NULL, *nv;
	int status;
	DIR *d = opendir("/proc");

	*pids = NULL;
	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		if (!ls_web_parse_pid(de->d_name, &pid) || pid == getpid() ||
		    !may_query(pid, &status) || !has_socket(pid))
			continue;
		if (n == cap) {
			cap = cap ? 2 * cap : 16;
			if (!(nv = realloc(v, cap * sizeof(*v)))) {
				free(v);
				closedir(d);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = pid;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_pid);
	*pids = v;
	return (ssize_t)n;
}

int ls_web_status_of(int err)
{
	switch (err) {
	case -ESRCH:
	case -ENOENT:
	case -ECONNREFUSED:
		return 404;
	case -EACCES:
	case -EPERM:
		return 403;
	case -EAGAIN:
	case -ETIMEDOUT:
		return 504;
	case -ENOMEM:
		return 500;
	case -ENOBUFS:		/* the memory budget: try again */
		return 503;
	}
	return 502;
}

/* ---------------------------------------------------------------- the cache */

/* The slot of pid, or a free / least recently used idle one; caller holds
 * a->lock.  NULL when every slot is in use. */
static struct ls_web_proc *slot_for(struct ls_web_agents *a, pid_t pid)
{
	struct ls_web_proc *p, *victim = NULL;
	size_t i;

	for (i = 0; i < LS_WEB_CACHE_SLOTS; i++) {
		p = &a->slots[i];
		if (p->pid == pid)
			return p;
		if (p->users || (victim && !victim->pid))
			continue;
		if (!victim || !p->pid || p->used_ns < victim->used_ns)
			victim = p;
	}
	if (victim) {
		slot_clear(a, victim);
		victim->pid = pid;
	}
	return victim;
}

static struct ls_web_proc *slot_hold(struct ls_web_agents *a, pid_t pid)
{
	struct ls_web_proc *p;

	pthread_mutex_lock(&a->lock);
	p = slot_for(a, pid);
	if (p) {
		p->users++;
		p->used_ns = now_ns();
	}
	pthread_mutex_unlock(&a->lock);
	return p;
}

static void slot_unhold(struct ls_web_agents *a, struct ls_web_proc *p)
{
	pthread_mutex_lock(&a->lock);
	p->users--;
	pthread_mutex_unlock(&a->lock);
}

/* The cached snapshot if fresh enough and complete enough, referenced. */
static struct ls_web_snap *cached(struct ls_web_agents *a,
				  struct ls_web_proc *p, int blocks)
{
	struct ls_web_snap *s = NULL;

	pthread_mutex_lock(&a->lock);
	if (p->cur && now_ns() - p->cur->fetched_ns < a->ttl_ns &&
	    (p->cur->blocks || !blocks)) {
		s = p->cur;
		s->refs++;
	}
	pthread_mutex_unlock(&a->lock);
	return s;
}

/*
 * The memory budget is taken (ls_snapshot_set_budget): drop what idle
 * slots cache (no request holds them) so that their snapshots give their
 * share back as their last users put them.  How many slots were cleared.
 */
static size_t shed(struct ls_web_agents *a)
{
	size_t i, n = 0;

	pthread_mutex_lock(&a->lock);
	for (i = 0; i < LS_WEB_CACHE_SLOTS; i++) {
		struct ls_web_proc *p = &a->slots[i];

		if (!p->users && (p->cur || p->base)) {
			slot_clear(a, p);
			n++;
		}
	}
	pthread_mutex_unlock(&a->lock);
	return n;
}

static struct ls_web_snap *fetch(struct ls_web_agents *a, pid_t pid,
				 int blocks, struct ls_web_reply *rep)
{
	struct ls_web_snap *s = calloc(1, sizeof(*s));
	char err[1024];
	int r;

	if (!s) {
		ls_web_error(rep, 500, "out of memory");
		return NULL;
	}
	r = ls_client_snapshot(pid, blocks, &s->snap, err, sizeof(err));
	if (r == -ENOBUFS && shed(a))
		r = ls_client_snapshot(pid, blocks, &s->snap, err, sizeof(err));
	if (r) {
		ls_web_error(rep, ls_web_status_of(r), "%s", err);
		free(s);
		return NULL;
	}
	s->blocks = blocks;
	s->fetched_ns = now_ns();
	s->refs = 1;
	return s;
}

static void install(struct ls_web_agents *a, struct ls_web_proc *p,
		    struct ls_web_snap *s)
{
	pthread_mutex_lock(&a->lock);
	snap_unref_locked(p->cur);
	p->cur = s;
	s->refs++;
	pthread_mutex_unlock(&a->lock);
}

struct ls_web_snap *ls_web_snap_get(struct ls_web_agents *a, pid_t pid,
				    int blocks, struct ls_web_reply *rep)
{
	struct ls_web_proc *p;
	struct ls_web_snap *s;

	if (ls_web_check_pid(pid, rep))
		return NULL;
	p = slot_hold(a, pid);
	if (!p) {		/* every slot busy: serve uncached */
		return fetch(a, pid, blocks, rep);
	}
	pthread_mutex_lock(&p->fetch);
	s = cached(a, p, blocks);
	if (!s && p->stuck_until > now_ns())
		ls_web_error(rep, 504, "pid %d: its agent did not answer in "
			     "time; not asked again for a few seconds", (int)pid);
	else if (!s && (s = fetch(a, pid, blocks, rep)))
		install(a, p, s);
	else if (!s && rep->status == 504)
		p->stuck_until = now_ns() + STUCK_NS;
	pthread_mutex_unlock(&p->fetch);
	slot_unhold(a, p);
	return s;
}

void ls_web_snap_put(struct ls_web_agents *a, struct ls_web_snap *s)
{
	pthread_mutex_lock(&a->lock);
	snap_unref_locked(s);
	pthread_mutex_unlock(&a->lock);
}

void ls_web_agents_forget(struct ls_web_agents *a, pid_t pid)
{
	size_t i;

	pthread_mutex_lock(&a->lock);
	for (i = 0; i < LS_WEB_CACHE_SLOTS; i++)
		if (a->slots[i].pid == pid) {
			snap_unref_locked(a->slots[i].cur);
			a->slots[i].cur = NULL;
		}
	pthread_mutex_unlock(&a->lock);
}

/* ----------------------------------------------------------- symbolization */

/* The symbolizer still fits s: same process (start time) and module map. */
static int sym_fits(const struct ls_web_proc *p, const struct ls_web_snap *s)
{
	const struct lsnap_header *b;

	if (!p->sym || !p->base)
		return 0;
	b = &p->base->snap.hdr;
	return b->pid == s->snap.hdr.pid &&
	       b->start_mono_ns == s->snap.hdr.start_mono_ns &&
	       b->module_gen == s->snap.hdr.module_gen;
}

static int sym_rebuild(struct ls_web_agents *a, struct ls_web_proc *p,
		       struct ls_web_snap *s)
{
	ls_symbolizer_free(p->sym);
	pthread_mutex_lock(&a->lock);
	snap_unref_locked(p->base);
	p->base = s;
	s->refs++;
	pthread_mutex_unlock(&a->lock);
	p->sym = ls_symbolizer_new(&s->snap);
	return p->sym ? 0 : -ENOMEM;
}

int ls_web_with_symbolizer(struct ls_web_agents *a, pid_t pid,
			   struct ls_web_snap *s,
			   int (*fn)(const struct ls_snapshot *snap,
				     struct ls_symbolizer *sym, void *arg),
			   void *arg)
{
	struct ls_symbolizer *own;
	struct ls_web_proc *p = slot_hold(a, pid);
	int r;

	if (!p) {		/* no slot: a symbolizer of its own */
		if (!(own = ls_symbolizer_new(&s->snap)))
			return -ENOMEM;
		r = fn(&s->snap, own, arg);
		ls_symbolizer_free(own);
		return r;
	}
	pthread_mutex_lock(&p->symlock);
	r = sym_fits(p, s) ? 0 : sym_rebuild(a, p, s);
	if (!r)
		r = fn(&s->snap, p->sym, arg);
	pthread_mutex_unlock(&p->symlock);
	slot_unhold(a, p);
	return r;
}
