/*
 * agent.c - start-up, configuration, bookkeeping, fork and exit.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "../common/attach.h"
#include "../common/lsnap.h"
#include "../common/contract.h"
#include "../common/runtime.h"
#include "agent.h"
#include "arena.h"
#include "attach.h"
#include "control.h"
#include "exec.h"
#include "figures.h"
#include "heapmodel.h"
#include "guard.h"
#include "live.h"
#include "mmaps.h"
#include "modules.h"
#include "pmfile.h"
#include "reach.h"
#include "real.h"
#include "rundir.h"
#include "sample.h"
#include "site.h"
#include "snapwrite.h"
#include "capture.h"
#include "sys.h"
#include "thread.h"
#include "tick.h"

/* --- bookkeeping, called from hooks ------------------------------------ */

static struct ls_site_rec *intern(struct ls_thread *t, const uint64_t *pcs,
			      uint32_t n, uint32_t kind)
{
	uint64_t h = ls_site_hash(pcs, n, kind);
	struct ls_site_rec **slot = &t->stack_cache[h & (LS_STACK_CACHE - 1)];
	struct ls_site_rec *s = *slot;

	if (s && ls_site_matches(s, pcs, n, kind, h))
		return s;
	s = ls_site_intern(pcs, n, kind, h);
	if (s)
		*slot = s;
	return s;
}

/* The memo did not know this walk: capture, intern, remember. */
static __attribute__((noinline))
struct ls_site_rec *capture_new(struct ls_thread *t, uint32_t kind)
{
	uint64_t pcs[LS_DEPTH_MAX];
	struct ls_site_rec *s;
	int n = ls_capture_site(pcs, ls_agent.depth, kind, &t->start,
				      &s);

	if (!s) {
		s = intern(t, pcs, (uint32_t)n, kind);
		if (s)
			ls_capture_remember(s);
	}
	return s;
}

static inline __attribute__((always_inline))
struct ls_site_rec *capture_site(struct ls_thread *t, uint32_t kind)
{
	struct ls_site_rec *s = NULL;

	/* Usually the memo knows the walk: no capture, no interning. */
	if (t->start.sp)
		s = ls_likely(ls_capture_memo_direct) ?
		    ls_unwind_memo_get(&t->start,
				       ls_capture_want_from(ls_agent.depth),
				       kind) :
		    ls_capture_memo(&t->start, ls_agent.depth, kind);
	if (!s)
		s = capture_new(t, kind);
	t->start.sp = 0;	/* used: a capture that did not set it starts
				 * where it is */
	return s;
}

/*
 * The bookkeeping below takes the sample rate as an argument, read once
 * per event: ls_sample_rate only changes before the agent is on.  The
 * hot paths (ls_track_malloc, ls_track_free) pass a literal 0 in full
 * tracking, so that their copy of the code has no test of the rate left
 * (each was a load and a branch, reloaded after every call the compiler
 * could not see into): ls_sample_est_at() for that rate.
 */

/* A recorded block goes away: settle its site (ev: LS_EV_*). */
static inline __attribute__((always_inline))
void settle_replaced(struct ls_thread *t, const struct ls_live_entry *old,
		     unsigned ev, uint64_t rate)
{
	int64_t b, k;

	ls_sample_est_at(rate, old->size, &b, &k);
	ls_thread_site_delta(t, old->site, NULL, -b, -k, 0, 0, ev);
}

/* Allocation calls this thread has made (recorded or not): a block is a
 * temporary when it is freed before the count moves on. */
static inline uint64_t alloc_calls(const struct ls_thread *t)
{
	return t->calls[LS_FN_MALLOC] + t->calls[LS_FN_CALLOC] +
	       t->calls[LS_FN_REALLOC] + t->calls[LS_FN_REALLOCARRAY] +
	       t->calls[LS_FN_POSIX_MEMALIGN] + t->calls[LS_FN_ALIGNED_ALLOC] +
	       t->calls[LS_FN_MEMALIGN] + t->calls[LS_FN_VALLOC] +
	       t->calls[LS_FN_PVALLOC];
}

/* A block freed by the program: its lifetime, and whether it was this
 * thread's latest allocation (heaptrack's "temporary"). */
static inline __attribute__((always_inline))
unsigned free_event(const struct ls_thread *t, const struct ls_live_entry *e,
		    uint64_t rate)
{
	uint32_t now = ls_tick_now();
	unsigned ev = LS_EV_LIFE(ls_hist_bucket_below63(now > e->birth ?
							now - e->birth : 0));

	/* In full tracking every allocation sets last_addr, and no other
	 * block can have that address while it lives: the address says it
	 * all.  Sampled, the unrecorded allocations count through calls[]. */
	if (e->addr == t->last_addr &&
	    (!rate || alloc_calls(t) == t->last_allocs))
		ev |= LS_EV_TEMP;
	return ev;
}

/*
 * A table entry in four stores.  Written as a compound literal, GCC merges
 * the size and tid bit-fields into the stack slot one at a time (18
 * instructions per allocation); the word is built here instead.  The
 * x86-64 psABI allocates bit-fields from the least significant bit of
 * their unit: size is the word's low 40 bits, tid the high 24
 * (tests/integration/t_tick.py reads both back from a snapshot).
 */
static inline void entry_make(struct ls_live_entry *e, uint64_t addr,
			      uint64_t size, uint32_t tid, uint32_t site,
			      uint32_t birth)
{
	uint64_t w = (size & ((1ull << 40) - 1)) | (uint64_t)tid << 40;

	e->addr = addr;
	memcpy((char *)e + sizeof(e->addr), &w, sizeof(w));
	e->site = site;
	e->birth = birth;
}

static inline __attribute__((always_inline))
void insert(struct ls_thread *t, struct ls_site_rec *s, void *p, size_t size,
	    uint64_t rate)
{
	struct ls_live_entry e, old;
	int64_t b, k;
	int r;

	_Static_assert(sizeof(e) == 24, "entry: addr, size:40 tid:24, site, birth");
	entry_make(&e, (uint64_t)(uintptr_t)p, size, (uint32_t)t->tid, s->id,
		   ls_tick_now());
	r = ls_live_insert(&e, &old);
	if (r < 0) {
		ls_agent_drop();
		return;
	}
	if (r == 1)
		settle_replaced(t, &old, 0, rate);
	else if (rate)
		ls_sample_mark(e.addr);
	t->last_addr = e.addr;
	if (rate)
		t->last_allocs = alloc_calls(t);
	ls_sample_est_at(rate, size, &b, &k);
	ls_thread_site_delta(t, s->id, s, b, k, (uint64_t)b, (uint64_t)k,
			     LS_EV_SIZE(ls_hist_bucket_below63(size)));
	/* The entry's copy of p, in a frame that may lie right under the
	 * program's (ls_track_malloc): see hooks.c, malloc_slow. */
	e.addr = 0;
	__asm__ volatile("" :: "r"(&e) : "memory");
}

/*
 * The guard and errno are taken here rather than in a wrapper in hooks.c
 * (one call fewer per event).  Nothing relied on that call boundary: the
 * guard's increment and decrement carry their own compiler barriers
 * (guard.h), the capture and the table are opaque calls that the saved
 * errno's store cannot be moved above, and the hook has called the real
 * function before it calls this (hooks.c says why in that order).
 */
static inline __attribute__((always_inline))
void record(struct ls_thread *t, void *p, size_t size, uint64_t rate)
{
	int e = *t->err;
	struct ls_site_rec *s;

	ls_guard_enter();
	ls_live_prefetch((uint64_t)(uintptr_t)p);	/* under the capture */
	s = capture_site(t, LSNAP_KIND_HEAP);
	if (s)
		insert(t, s, p, size, rate);
	else
		ls_agent_drop();
	ls_guard_leave();
	*t->err = e;
}

__attribute__((noinline))
void ls_track_alloc(struct ls_thread *t, void *p, size_t size)
{
	record(t, p, size, ls_sample_rate);
}

/*
 * The block p a malloc or calloc returned: recorded in full tracking, and
 * sampled when a sample point falls in it.  Inlined into ls_track_malloc
 * and ls_track_calloc, so LS_UNWIND_HERE() describes their frame.
 */
static inline __attribute__((always_inline))
void *record_new(struct ls_thread *t, void *p, size_t size)
{
	if (!p)
		return p;
	if (ls_likely(!ls_sample_rate)) {
		t->start = LS_UNWIND_HERE();	/* the program's call */
		record(t, p, size, 0);
	} else if (ls_sample_take(t, size)) {
		t->start = LS_UNWIND_HERE();
		record(t, p, size, ls_sample_rate);
	}
	return p;
}

/*
 * The hooks' slow paths reach these by tail calls (agent.h): the caller
 * is the program, and LS_UNWIND_HERE() is its call into malloc.  The
 * bookkeeping is inline, in this one frame (with its registers saved
 * once), instead of a call from the hook's frame into ls_track_alloc's.
 */
__attribute__((noinline))
void *ls_track_malloc(size_t n, struct ls_thread *t)
{
	int e = *t->err;
	void *p;

	ls_thread_count(t, LS_FN_MALLOC);
	p = ls_real.malloc(n);
	ls_thread_keep_errno(t->err, e, p);
	return record_new(t, p, n);
}

__attribute__((noinline))
void *ls_track_calloc(size_t n, size_t m, struct ls_thread *t)
{
	int e = *t->err;
	void *p;

	ls_thread_count(t, LS_FN_CALLOC);
	p = ls_real.calloc(n, m);
	ls_thread_keep_errno(t->err, e, p);
	return record_new(t, p, n * m);
}

/* Take p out of the live table; in sampled mode the filter answers for
 * almost every block that was never recorded. */
static inline __attribute__((always_inline))
int take(uint64_t addr, struct ls_live_entry *e, uint64_t rate)
{
	if (rate && !ls_sample_maybe(addr))
		return 0;
	if (!ls_live_remove(addr, e))
		return 0;
	if (rate)
		ls_sample_unmark(addr);
	return 1;
}

/*
 * As ls_track_alloc: guard and errno here.  The real free runs between
 * the removal and the settling: on a large heap the removal's table
 * lines miss, and nothing the real free does depends on them, so the
 * core runs free's work while they arrive (python3 with
 * PYTHONMALLOC=malloc, docs/PERFORMANCE.md).  The order that matters is
 * kept: the entry is out of the table, under its shard's lock, before
 * the real free can hand the block to another thread, whose insert of
 * the same address must not find it.  The guard is not held across the
 * real free (an allocator under the agent may munmap in it, which must
 * be seen), and errno is the one the real free leaves, as without the
 * agent.
 */
static inline __attribute__((always_inline))
void untrack(void *p, struct ls_thread *t, uint64_t rate)
{
	int err = *t->err, got;
	struct ls_live_entry e;

	ls_guard_enter();
	got = take((uint64_t)(uintptr_t)p, &e, rate);
	ls_guard_leave();
	*t->err = err;
	ls_real.free(p);
	if (got) {
		err = *t->err;
		ls_guard_enter();
		settle_replaced(t, &e, free_event(t, &e, rate), rate);
		ls_guard_leave();
		*t->err = err;
	}
}

__attribute__((noinline))
void ls_track_free(void *p, struct ls_thread *t)
{
	if (ls_likely(!ls_sample_rate))
		untrack(p, t, 0);
	else
		untrack(p, t, ls_sample_rate);
}

int ls_track_take(struct ls_thread *t, void *p, void *saved)
{
	struct ls_live_entry *e = saved;

	_Static_assert(sizeof(*e) == LS_TRACK_SAVED, "saved entry size");
	if (!take((uint64_t)(uintptr_t)p, e, ls_sample_rate))
		return 0;
	settle_replaced(t, e, 0, ls_sample_rate);	/* resized, not ended */
	return 1;
}

void ls_track_restore(struct ls_thread *t, const void *saved)
{
	const struct ls_live_entry *e = saved;
	struct ls_site_rec *s = ls_site_get(e->site);
	struct ls_live_entry old;
	int64_t b, k;

	if (!s || ls_live_insert(e, &old) < 0)
		return;
	if (ls_sample_rate)
		ls_sample_mark(e->addr);
	/* Back as it was: live again, but not a new allocation. */
	ls_sample_est(e->size, &b, &k);
	ls_thread_site_delta(t, s->id, s, b, k, 0, 0, 0);
}

/*
 * A change of a mapping site.  Allocator chunks and reservations are
 * not live memory: their sites keep their bytes, but the global live
 * figure (and so the peak) never sees them.  The slow path updates the
 * site alone (the inline one adds to live_delta).
 */
static void mapping_delta(struct ls_thread *t, struct ls_site_rec *s,
			  int64_t dbytes, int64_t dblocks, uint64_t abytes,
			  uint64_t ablocks, unsigned ev)
{
	if (lsnap_kind_live(s->kind))
		ls_thread_site_delta(t, s->id, s, dbytes, dblocks, abytes,
				     ablocks, ev);
	else
		ls_thread_site_delta_slow(t, s->id, s, dbytes, dblocks,
					  abytes, ablocks, ev);
}

void ls_track_mmap(struct ls_thread *t, void *p, size_t len, uint32_t kind)
{
	struct ls_site_rec *s = capture_site(t, kind);
	struct ls_live_entry e = {
		.addr = (uint64_t)(uintptr_t)p,
		.size = len,
		.birth = ls_tick_now(),
		.tid = (uint32_t)t->tid,
	};

	if (!s) {
		ls_agent_drop();
		return;
	}
	e.site = s->id;
	/* Mappings are few and large: always recorded, weight 1. */
	if (ls_mmaps_add(&e))
		ls_agent_drop();
	else
		mapping_delta(t, s, (int64_t)len * ls_sample_scale(),
			      ls_sample_scale(),
			      len * (uint64_t)ls_sample_scale(),
			      (uint64_t)ls_sample_scale(),
			      LS_EV_SIZE(ls_hist_bucket(len)));
}

static void mmap_changed(uint32_t site, int64_t dbytes, int64_t dblocks,
			 void *arg)
{
	struct ls_site_rec *s = ls_site_get(site);

	if (s)
		mapping_delta(arg, s, dbytes * ls_sample_scale(),
			      dblocks * ls_sample_scale(), 0, 0, 0);
}

void ls_track_munmap(struct ls_thread *t, void *p, size_t len)
{
	ls_mmaps_remove((uint64_t)(uintptr_t)p, len, mmap_changed, t);
}

static int kind_of(uint32_t site, uint32_t kind)
{
	struct ls_site_rec *s = ls_site_get(site);

	return s && s->kind == kind;
}

static int is_reserved(uint32_t site)
{
	return kind_of(site, LSNAP_KIND_RESERVED);
}

static int is_program_map(uint32_t site)
{
	return kind_of(site, LSNAP_KIND_MMAP);
}

int ls_track_mremap(struct ls_thread *t, void *old, size_t oldlen, void *p,
		    size_t newlen, uint32_t kind)
{
	uint32_t site;

	/* A moved or grown reservation stays one: mremap keeps the
	 * protection, and the new pages get it too. */
	if (ls_mmaps_site_at((uint64_t)(uintptr_t)old, &site) &&
	    is_reserved(site) && kind == LSNAP_KIND_MMAP)
		kind = LSNAP_KIND_RESERVED;
	if (!ls_mmaps_remove((uint64_t)(uintptr_t)old, oldlen, mmap_changed, t))
		return 0;
	ls_track_mmap(t, p, newlen, kind);
	return 1;
}

/*
 * Committing part of a reservation with mprotect() (V8, wasm runtimes,
 * glibc's own heaps) is the same as mapping over it with MAP_FIXED: the
 * pieces become the program's mappings, at the mprotect call's site;
 * making the program's mapping inaccessible (decommit, a guard area)
 * turns it into reserved address space.  Protection changes between
 * accessible modes, and allocator chunks, change nothing.
 */
void ls_track_mprotect(struct ls_thread *t, void *p, size_t len, int prot)
{
	int none = prot == PROT_NONE;
	uint64_t at = (uint64_t)(uintptr_t)p, end = at + len, lo, hi;
	struct ls_unwind_start start = t->start;

	while (at < end && ls_mmaps_take(at, end - at, none ? is_program_map :
					 is_reserved, mmap_changed, t, &lo, &hi)) {
		t->start = start;	/* each piece from the caller */
		ls_track_mmap(t, (void *)(uintptr_t)lo, hi - lo, none ?
			      LSNAP_KIND_RESERVED : LSNAP_KIND_MMAP);
		at = hi;
	}
}

/* --- fork ---------------------------------------------------------------- */

/* The exit snapshot's file, opened before the process became a user
 * who cannot write into the out dir; -1 when it was not. */
static int exit_fd = -1;

/*
 * A pre-fork worker may never allocate again after fork (it sits in
 * epoll_wait), so a hook cannot be relied on to give it a control
 * socket.  The fork child handler therefore starts one small thread that
 * sleeps until the child has lived LS_CHILD_MIN_LIFE_NS and then does
 * what the first hook after that would do (ls_agent_child_control: the
 * first of the two wins).  Why a thread created here is safe: glibc runs
 * pthread_atfork child handlers after it has reset its own locks (malloc
 * arenas, the thread-stack cache, stdio) in the child, so pthread_create
 * and the real malloc work, and the guard is held, so nothing the
 * thread's creation allocates is tracked.  A timer signal would need a
 * signal taken from the program; SIGEV_THREAD timers create their thread
 * the same way, only later.  A child that execs loses the thread with
 * the rest of its image, one that exits sooner kills it in exit_group():
 * neither leaves a file.  The thread takes no signal meant for the
 * program.  The child is two-threaded for that second: a call that needs
 * a single-threaded process (unshare(CLONE_NEWUSER), setns) would fail
 * with EINVAL, so those calls retire the waker first (switch.c,
 * ls_agent_threads_pause()).
 */
static int waker_state;		/* WAKER_*; the futex the waker sleeps on */
static pid_t waker_tid;		/* its kernel tid, once it runs */

enum { WAKER_NONE, WAKER_SLEEPING, WAKER_RETIRE };

static void *child_waker(void *arg)
{
	struct timespec at;
	uint64_t due = ls_agent.fork_mono + LS_CHILD_MIN_LIFE_NS;
	int expect = WAKER_SLEEPING;

	(void)arg;
	ls_guard_enter();	/* for good: nothing this thread does is tracked */
	__atomic_store_n(&waker_tid, ls_gettid(), __ATOMIC_RELEASE);
	at.tv_sec = (time_t)(due / 1000000000ull);
	at.tv_nsec = (long)(due % 1000000000ull);
	/* Until due, or until told to retire (a FUTEX_WAKE). */
	while (__atomic_load_n(&waker_state, __ATOMIC_ACQUIRE) == WAKER_SLEEPING &&
	       ls_now_ns(CLOCK_MONOTONIC) < due)
		syscall(SYS_futex, &waker_state, FUTEX_WAIT_BITSET_PRIVATE,
			WAKER_SLEEPING, &at, NULL, FUTEX_BITSET_MATCH_ANY);
	if (__atomic_load_n(&waker_state, __ATOMIC_ACQUIRE) == WAKER_SLEEPING)
		ls_agent_child_control();
	__atomic_compare_exchange_n(&waker_state, &expect, WAKER_NONE, 0,
				    __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
	return NULL;
}

/* End the waker (if it runs) and wait until the kernel has let it go. */
static void retire_waker(void)
{
	int old = __atomic_exchange_n(&waker_state, WAKER_RETIRE,
				      __ATOMIC_ACQ_REL);
	int i;

	if (old == WAKER_SLEEPING) {
		syscall(SYS_futex, &waker_state, FUTEX_WAKE_PRIVATE, 1);
		/* Created a moment ago: it may not have said who it is. */
		for (i = 0; i < 1000 && !__atomic_load_n(&waker_tid,
							 __ATOMIC_ACQUIRE); i++)
			ls_sys_sleep_ms(1);
	}
	if (__atomic_load_n(&waker_tid, __ATOMIC_ACQUIRE))
		ls_sys_wait_thread_gone(waker_tid);
	__atomic_store_n(&waker_tid, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&waker_state, WAKER_NONE, __ATOMIC_RELEASE);
}

static void start_child_waker(void)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;

	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, 128 << 10);
	__atomic_store_n(&waker_tid, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&waker_state, WAKER_SLEEPING, __ATOMIC_RELEASE);
	/* On failure the first hook after LS_CHILD_MIN_LIFE_NS does it. */
	if (pthread_create(&th, &attr, child_waker, NULL))
		__atomic_store_n(&waker_state, WAKER_NONE, __ATOMIC_RELEASE);
	pthread_attr_destroy(&attr);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
}

static void fork_prepare(void)
{
	/* Not the snapshot lock: a slow reader of a snapshot must not be
	 * able to hold up the program's fork(). */
	ls_guard_enter();
	ls_modules_lock_all();
	ls_mmaps_lock_all();
	ls_site_lock_all();
	ls_thread_lock_all();
	ls_arena_lock_all();
	ls_live_lock_all();
	ls_sample_lock_all();	/* a leaf, taken under a shard lock */
}

static void fork_parent(void)
{
	ls_sample_unlock_all();
	ls_live_unlock_all();
	ls_arena_unlock_all();
	ls_thread_unlock_all();
	ls_site_unlock_all();
	ls_mmaps_unlock_all();
	ls_modules_unlock_all();
	ls_guard_leave();
}

static void fork_child(void)
{
	ls_tick_forget_child();	/* the ticker stayed in the parent */
	ls_sample_reset_child();
	ls_live_reset_child();
	ls_arena_reset_child();
	ls_site_reset_child();
	ls_mmaps_reset_child();
	ls_modules_reset_child();
	ls_snapwrite_reset_child();
	ls_figures_reset_child();
	ls_thread_reset_child();
	ls_capture_atfork_child();
	ls_attach_reset_child();
	ls_agent.pid = getpid();
	if (exit_fd >= 0)	/* the parent's report */
		close(exit_fd);
	exit_fd = -1;
	ls_control_forget_child();
	ls_pm_forget_child();
	ls_agent.fork_mono = ls_now_ns(CLOCK_MONOTONIC);
	ls_agent.control_pending = ls_agent.control && ls_agent.runtime_dir[0];
	if (ls_agent.control_pending)
		start_child_waker();
	ls_guard_leave();
}

/* --- start and end -------------------------------------------------------- */

/* The control socket and the post-mortem file, or a note saying why
 * there are none (the CLI would otherwise only find no socket). */
static void start_control(void)
{
	const char *dir = ls_agent.runtime_dir;
	int r;

	/* A worker that setuid()ed since its dir was chosen (common/runtime.h):
	 * the CLI looks in the new user's dir too. */
	if (dir[0] && ls_runtime_dir_owned((unsigned)geteuid(),
					   ls_agent.runtime_dir,
					   sizeof(ls_agent.runtime_dir)) < 0)
		ls_agent.runtime_dir[0] = 0;
	if (!dir[0]) {
		ls_state_note("no control socket, no post-mortem file: the "
			      "runtime dir's path is too long");
		return;
	}
	r = ls_rundir_prepare(ls_agent.runtime_dir, sizeof(ls_agent.runtime_dir));
	if (r) {
		ls_state_note("no control socket, no post-mortem file: runtime "
			      "dir '%s': %s%s", dir, strerror(-r), r == -EPERM ?
			      " (not a directory of this user's, mode 0700)" : "");
		return;
	}
	r = ls_pm_open(dir, ls_agent.period_ms, ls_agent.hist_len);
	if (r)
		ls_state_note("no post-mortem file in '%s': %s", dir,
			      strerror(-r));
	r = ls_control_start(ls_agent_reset);
	if (r)
		ls_state_note("no control socket in '%s': %s", dir,
			      strerror(-r));
}

/*
 * What tracking needs, done by whichever comes first: the agent's
 * constructor, or the first allocation the agent sees.  ld.so runs the
 * constructors of a program's own dependencies before those of the
 * preloaded agent, so libstdc++'s emergency pool or a library's
 * constructor would otherwise allocate unseen.  Nothing here starts a
 * thread or touches the environment: a constructor of another library
 * may be running.  Returns whether the agent is on.
 */
int ls_agent_core_start(void)
{
	extern char **environ;
	int expect = LS_OFF, saved = errno;

	/* Before libc has set up the environment there are no settings to
	 * read yet: a later call starts the agent. */
	if (!environ ||
	    !__atomic_compare_exchange_n(&ls_agent.state, &expect, LS_STARTING,
					 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return ls_agent_on();
	ls_guard_enter();
	ls_real_init();
	ls_state_read_config();
	if (ls_thread_init() || !ls_real.free) {
		__atomic_store_n(&ls_agent.state, LS_DISABLED, __ATOMIC_RELEASE);
		goto out;
	}
	if (ls_sample_init(ls_agent.sample_rate,
			   ls_state_env_u64(LS_ENV_SAMPLE_SEED, 0)))
		ls_agent.sample_rate = 0;
	ls_real_find_allocator();
	ls_modules_refresh();
	ls_capture_init();
	ls_state_read_cmdline();
	ls_agent.pid = getpid();
	ls_agent.start_mono = ls_now_ns(CLOCK_MONOTONIC);
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	/* The starting thread's record and caches, and the exit snapshot's
	 * working memory, before the program can use up its address space;
	 * the sampler grows the latter as the process grows. */
	ls_thread_self();
	ls_unwind_thread_prepare();
	ls_snapwrite_lock();
	ls_snapwrite_prepare();
	ls_snapwrite_unlock();
	__atomic_store_n(&ls_agent.state, LS_ON, __ATOMIC_RELEASE);
out:
	ls_guard_leave();
	errno = saved;
	return ls_agent_on();
}

__attribute__((constructor(101)))
static void ls_agent_start(void)
{
	int saved = errno, expect = LS_OFF;

	/* Loaded by `leakscope attach`: rest until leakscope_attach(). */
	if (!ls_attach_preloaded()) {
		__atomic_compare_exchange_n(&ls_agent.state, &expect, LS_DISABLED,
					    0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
		return;
	}
	if (!ls_agent_core_start())
		return;
	ls_guard_enter();
	ls_modules_refresh();	/* what loaded since an early start */
	ls_heapmodel_learn();
	ls_exec_init();
	ls_state_restore_environment();
	if (ls_agent.control)
		start_control();
	ls_guard_leave();
	errno = saved;
}

/* With --leak-check the categorized snapshot; without, or when the check
 * could not run, the plain one over whatever the check began. */
static int write_checked(int fd)
{
	if (ls_agent.leak_check)
		ls_tick_wait_idle();	/* a still control thread (tick.h) */
	if (ls_agent.leak_check &&
	    !ls_reach_at_exit(fd, ls_agent.exit_blocks, ls_control_tid() != 0))
		return 0;
	if (ls_agent.leak_check &&
	    (ftruncate(fd, 0) || lseek(fd, 0, SEEK_SET) < 0))
		return -errno;
	return ls_snapwrite(fd, LSNAP_REASON_EXIT, ls_agent.exit_blocks);
}

static void exit_snapshot_path(char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%d-%llu" LS_SUFFIX_SNAP, ls_agent.out_dir,
		 (int)ls_agent.pid, (unsigned long long)ls_agent.start_mono);
}

/*
 * A worker about to setuid() away from the user that made the out dir
 * (`leakscope run` as root makes it 0700) could create nothing there at
 * exit: the file is created now, under its final name, since no rename
 * will be possible then.  Until the exit it is empty, and `leakscope
 * run` skips an empty one (a worker killed before its exit).
 */
void ls_agent_open_exit_report(void)
{
	char path[PATH_MAX + 64];

	if (exit_fd >= 0 || !ls_agent.out_dir[0])
		return;
	exit_snapshot_path(path, sizeof(path));
	exit_fd = ls_sys_fd_high(open(path, O_WRONLY | O_CREAT | O_EXCL |
				      O_NOFOLLOW | O_CLOEXEC, 0600));
}

static void write_exit_snapshot(void)
{
	char path[PATH_MAX + 64], tmp[PATH_MAX + 80];
	int fd;

	if (exit_fd >= 0) {	/* opened before a user switch */
		if (write_checked(exit_fd))
			(void)!ftruncate(exit_fd, 0);
		close(exit_fd);
		exit_fd = -1;
		return;
	}
	exit_snapshot_path(path, sizeof(path));
	snprintf(tmp, sizeof(tmp), "%s" LS_SUFFIX_TMP, path);
	unlink(tmp);	/* a leftover of a pid's earlier life */
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC,
		  0600);
	if (fd < 0)
		return;
	if (write_checked(fd)) {
		close(fd);
		unlink(tmp);
		return;
	}
	if (close(fd))
		unlink(tmp);
	else
		rename(tmp, path);
}

/* Under `leakscope run`, every process reports at exit except a forked
 * child that lived less than LS_CHILD_MIN_LIFE_NS (common/contract.h). */
static int wants_exit_snapshot(void)
{
	if (!ls_agent.out_dir[0])
		return 0;
	if (!ls_agent.fork_mono || ls_agent.all_children)
		return 1;
	return ls_now_ns(CLOCK_MONOTONIC) - ls_agent.fork_mono >=
	       LS_CHILD_MIN_LIFE_NS;
}

void ls_agent_exit_report(void)
{
	int expect = LS_ON, saved = errno, want, keep;

	if (getpid() != ls_agent.pid)
		return;
	ls_reach_note_exit_frame(__builtin_frame_address(0));
	ls_guard_enter();
	if (!__atomic_compare_exchange_n(&ls_agent.state, &expect, LS_DONE, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		goto out;
	/* A worker that became another user cannot write into the out dir
	 * `leakscope run` made as root (0700): its post-mortem file in its
	 * own runtime dir stays instead, so the exit state is not lost. */
	want = wants_exit_snapshot();
	keep = ls_agent.keep_pm || (want && exit_fd < 0 &&
				    access(ls_agent.out_dir, W_OK | X_OK));
	ls_snapwrite_lock();
	if (keep || want)	/* else the file goes unread */
		ls_pm_tick_exit(keep);
	ls_pm_close(keep);
	ls_snapwrite_unlock();
	if (want)
		write_exit_snapshot();
	else if (exit_fd >= 0)	/* left empty: skipped */
		close(exit_fd);
	ls_control_stop();
out:
	ls_guard_leave();
	errno = saved;
}

/* Forget every block seen so far (`leakscope reset`). */
static void forget(const struct ls_live_entry *e, void *arg)
{
	struct ls_site_rec *s = ls_site_get(e->site);
	int64_t b, k;

	if (!s)
		return;
	if (arg) {		/* a mapping: weight 1 */
		b = (int64_t)e->size * ls_sample_scale();
		k = ls_sample_scale();
	} else {
		ls_sample_est(e->size, &b, &k);
		if (ls_sample_rate)
			ls_sample_unmark(e->addr);
	}
	__atomic_sub_fetch(&s->live_bytes, b, __ATOMIC_RELAXED);
	__atomic_sub_fetch(&s->live_blocks, k, __ATOMIC_RELAXED);
	ls_thread_live_adjust(-b);
}

void ls_agent_reset(void)
{
	ls_live_clear(forget, NULL);
	ls_mmaps_clear(forget, (void *)1);
	ls_thread_reset_peak();
	ls_snapwrite_lock();
	ls_pm_restart();
	ls_snapwrite_unlock();
}

__attribute__((destructor(101)))
static void ls_agent_stop(void)
{
	ls_agent_exit_report();
}

void ls_agent_child_control(void)
{
	int saved = errno;

	if (ls_now_ns(CLOCK_MONOTONIC) - ls_agent.fork_mono <
	    LS_CHILD_MIN_LIFE_NS || ls_agent.pid != getpid())
		return;
	if (!__atomic_exchange_n(&ls_agent.control_pending, 0, __ATOMIC_ACQ_REL) ||
	    !ls_agent_on())
		return;
	ls_guard_enter();
	start_control();
	ls_guard_leave();
	errno = saved;
}

/* --- attach ------------------------------------------------------------------ */

void ls_agent_setting(const char *key, size_t klen, const char *value)
{
	char *end;
	unsigned long long n = strtoull(value, &end, 10);
	int num = *value && !*end;

#define IS(k) (klen == strlen(k) && !memcmp(key, k, klen))
	if (IS(LS_ATTACH_KEY_DEPTH) && num)
		ls_agent.depth = n < LS_DEPTH_MIN ? LS_DEPTH_MIN :
				 n > LS_DEPTH_MAX ? LS_DEPTH_MAX : (int)n;
	else if (IS(LS_ATTACH_KEY_SAMPLE_RATE) && num)
		ls_agent.sample_rate = n;
	else if (IS(LS_ATTACH_KEY_PERIOD_MS) && num && n >= LS_PERIOD_MS_MIN &&
		 n <= LS_PERIOD_MS_MAX)
		ls_agent.period_ms = (uint32_t)n;
	else if (IS(LS_ATTACH_KEY_HISTORY) && num && n >= LS_HISTORY_MIN &&
		 n <= LS_HISTORY_MAX)
		ls_agent.hist_len = (uint32_t)n;
	else if (IS(LS_ATTACH_KEY_RUNTIME_DIR) && strlen(value) < PATH_MAX)
		strcpy(ls_agent.runtime_dir, value);
#undef IS
}

/* What must be set up once per process, whichever session comes first. */
static int attach_once(char *err, size_t errlen)
{
	static int done;
	static uint64_t first_rate;

	if (done) {
		if (ls_agent.sample_rate != first_rate) {
			snprintf(err, errlen, "the agent in this process was first "
				 "attached with sample rate %llu: attach with the "
				 "same rate", (unsigned long long)first_rate);
			return -EINVAL;
		}
		ls_agent_reset();
		return 0;
	}
	if (ls_thread_init()) {
		snprintf(err, errlen, "no thread key left in the process");
		return -EAGAIN;
	}
	if (ls_sample_init(ls_agent.sample_rate, 0))
		ls_agent.sample_rate = 0;
	first_rate = ls_agent.sample_rate;
	ls_capture_init();
	ls_state_read_cmdline();
	pthread_atfork(fork_prepare, fork_parent, fork_child);
	ls_control_on_detach(ls_agent_detach);
	done = 1;
	return 0;
}

int ls_agent_start_attached(char *err, size_t errlen)
{
	int r;

	ls_real_rebind_default();
	if (!ls_real.free) {
		snprintf(err, errlen, "the process's malloc and free not found");
		return -ENOENT;
	}
	if (!ls_agent.runtime_dir[0]) {
		snprintf(err, errlen, "no runtime directory given");
		return -EINVAL;
	}
	r = attach_once(err, errlen);
	if (r)
		return r;
	ls_modules_refresh();
	ls_heapmodel_learn();
	ls_agent.pid = getpid();
	ls_agent.start_mono = ls_now_ns(CLOCK_MONOTONIC);
	ls_agent.attach_wall_ns = ls_now_ns(CLOCK_REALTIME);
	r = ls_rundir_prepare(ls_agent.runtime_dir, sizeof(ls_agent.runtime_dir));
	if (r) {
		snprintf(err, errlen, "runtime directory %s: %s",
			 ls_agent.runtime_dir, strerror(-r));
		return r;
	}
	__atomic_store_n(&ls_agent.state, LS_ON, __ATOMIC_RELEASE);
	ls_pm_open(ls_agent.runtime_dir, ls_agent.period_ms, ls_agent.hist_len);
	r = ls_control_start(ls_agent_reset);
	if (r) {
		__atomic_store_n(&ls_agent.state, LS_DISABLED, __ATOMIC_RELEASE);
		ls_pm_close(0);
		snprintf(err, errlen, "cannot start the control thread: %s",
			 strerror(-r));
	}
	return r;
}

static void attach_fail(struct ls_attach_result *res, const char *why)
{
	res->status = LS_ATTACH_FAILED;
	snprintf(res->reason, sizeof(res->reason), "%s", why);
}

/* `leakscope attach`'s call, on a thread it holds at a safe point. */
__attribute__((visibility("default")))
struct ls_attach_result *leakscope_attach(const char *settings)
{
	struct ls_attach_result *res = ls_attach_result();
	int saved = errno;

	ls_guard_enter();
	memset(res, 0, sizeof(*res));
	res->version = LS_ATTACH_VERSION;
	if (ls_attach_preloaded())
		res->status = LS_ATTACH_PRELOADED;
	else if (ls_agent_on())
		res->status = LS_ATTACH_ACTIVE;
	else if (ls_attach_prepare(ls_agent_modules_changed))
		attach_fail(res, "dlopen, dlsym or the agent's own hooks not found");
	else {
		/* The defaults of ls_state_read_config(), which did not run. */
		ls_agent.depth = LS_DEPTH_DEFAULT;
		ls_agent.sample_rate = 0;
		ls_agent.period_ms = LS_PERIOD_MS_DEFAULT;
		ls_agent.hist_len = LS_HISTORY_DEFAULT;
		ls_attach_parse(settings, ls_agent_setting);
		if (ls_agent_start_attached(res->reason, sizeof(res->reason))) {
			res->status = LS_ATTACH_FAILED;
		} else {
			ls_attach_list();
			res->control_tid = (uint32_t)ls_control_tid_wait();
			res->start_wall_ns = ls_agent.attach_wall_ns;
		}
	}
	ls_guard_leave();
	errno = saved;
	return res;
}

int ls_agent_detach(char *err, size_t errlen)
{
	int expect = LS_ON;

	if (!ls_agent.attach_wall_ns) {
		snprintf(err, errlen, "not attached (started with the agent "
			 "preloaded): nothing to detach");
		return -EINVAL;
	}
	ls_attach_restore();
	if (!__atomic_compare_exchange_n(&ls_agent.state, &expect, LS_DISABLED,
					 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		snprintf(err, errlen, "not tracking");
		return -EINVAL;
	}
	ls_snapwrite_lock();
	ls_pm_close(0);
	ls_pm_forget_child();	/* unmapped: a new attach opens a new file */
	ls_snapwrite_unlock();
	ls_control_stop();
	return 0;
}

void ls_agent_modules_changed(void)
{
	ls_modules_refresh();
	ls_capture_invalidate();
}

/* --- single-threaded moments and user switches (switch.c) ----------------- */

int ls_agent_threads_pause(void)
{
	retire_waker();
	return ls_control_pause();
}

void ls_agent_threads_resume(int paused)
{
	if (paused)
		ls_control_resume();
	/* A child younger than LS_CHILD_MIN_LIFE_NS still waits for its
	 * control socket: a new waker. */
	if (ls_agent.control_pending && ls_agent.fork_mono &&
	    ls_agent.pid == getpid())
		start_child_waker();
}
