/*
 * agent.c - the agent's life cycle: start-up, fork, exit, reset.  The
 * hooks' bookkeeping is track.c's, an attach session session.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <linux/futex.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "../common/contract.h"
#include "../common/runtime.h"
#include "agent.h"
#include "arena.h"
#include "attach.h"
#include "control.h"
#include "dllock.h"
#include "exec.h"
#include "figures.h"
#include "../common/cfi.h"
#include "heapmodel.h"
#include "live.h"
#include "lockrank.h"
#include "guard.h"
#include "mmaps.h"
#include "modules.h"
#include "pmfile.h"
#include "reach.h"
#include "real.h"
#include "rundir.h"
#include "sample.h"
#include "capture.h"
#include "snapwrite.h"
#include "sys.h"
#include "thread.h"
#include "tick.h"

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
	__atomic_store_n(&waker_tid, 0, __ATOMIC_RELEASE);
	__atomic_store_n(&waker_state, WAKER_SLEEPING, __ATOMIC_RELEASE);
	/* On failure the first hook after LS_CHILD_MIN_LIFE_NS does it. */
	if (ls_sys_thread_start(child_waker, 128 << 10))
		__atomic_store_n(&waker_state, WAKER_NONE, __ATOMIC_RELEASE);
}

/* The fork handlers' locks, by rank (lockrank.h). */
static const struct {
	void (*lock_all)(void);
	void (*unlock_all)(void);
	void (*reset_child)(void);
} ranked[LS_RANK_COUNT] = {
#define RANK(r, m) \
	[LS_RANK_##r] = { ls_##m##_lock_all, ls_##m##_unlock_all, \
			  ls_##m##_reset_child }
	RANK(MODULES, modules), RANK(MMAPS, mmaps), RANK(SITE, site),
	RANK(THREAD, thread), RANK(ARENA, arena), RANK(LIVE, live),
	RANK(SAMPLE, sample),
#undef RANK
};

static void fork_prepare(void)
{
	int r;

	/* Not the snapshot lock: a slow reader of a snapshot must not be
	 * able to hold up the program's fork(). */
	ls_guard_enter();
	for (r = 0; r < LS_RANK_COUNT; r++)
		ranked[r].lock_all();
}

static void fork_parent(void)
{
	int r;

	for (r = LS_RANK_COUNT - 1; r >= 0; r--)
		ranked[r].unlock_all();
	ls_guard_leave();
}

static void fork_child(void)
{
	int r;

	ls_tick_forget_child();	/* the ticker stayed in the parent */
	for (r = LS_RANK_COUNT - 1; r >= 0; r--)
		ranked[r].reset_child();
	ls_rank_forget_all();
	ls_snapwrite_reset_child();
	ls_figures_reset_child();
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

void ls_agent_atfork(void)
{
	pthread_atfork(fork_prepare, fork_parent, fork_child);
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

/* Does this process have every glibc function the agent calls?  Not when
 * its glibc is older than 2.34 and the program did not load libdl.so.2
 * or libpthread.so.0 (glibcver.h): one line says so, once. */
static int glibc_complete(void)
{
	static int said;
	const char *fn = ls_glibc_missing();

	if (fn && !__atomic_exchange_n(&said, 1, __ATOMIC_ACQ_REL))
		ls_state_note("agent off: this glibc has %s in libdl.so.2 or "
			      "libpthread.so.0, which the program did not load; "
			      "preload that library before the agent", fn);
	return !fn;
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
	if (!glibc_complete()) {
		__atomic_store_n(&ls_agent.state, LS_DISABLED, __ATOMIC_RELEASE);
		goto out;
	}
	ls_state_read_config();
	ls_figures_init();
	ls_cfi_init();
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
	ls_agent_atfork();
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

static void at_quick_exit_report(void)
{
	ls_agent_exit_report();
}

__attribute__((constructor(101)))
static void ls_agent_start(void)
{
	int saved = errno, expect = LS_OFF;

	/* Loaded by `leakscope attach`: rest until leakscope_attach(). */
	if (!glibc_complete() || !ls_attach_preloaded()) {
		__atomic_compare_exchange_n(&ls_agent.state, &expect, LS_DISABLED,
					    0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE);
		return;
	}
	if (!ls_agent_core_start())
		return;
	ls_guard_enter();
	ls_modules_refresh();	/* what loaded since an early start */
	ls_heapmodel_learn();
	ls_dllock_learn();
	ls_reach_learn_segments();
	ls_exec_init();
	/* quick_exit ends through libc's own _exit, which no hook sees:
	 * this handler, registered before the program's, runs after them. */
	at_quick_exit(at_quick_exit_report);
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
	if (keep)	/* else the file goes unread */
		ls_pm_tick_exit();
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
