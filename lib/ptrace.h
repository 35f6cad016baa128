/*
 * ptrace.h - stopping every thread of another process for a moment.
 *
 * Built once for the two features that need it: `leakscope attach`, which
 * stops the target to load the agent at a safe point, and `leakscope check`,
 * which stops it to take every thread's registers and fork a still image to
 * scan.  Both want the shortest pause, so the contract is: stop, do the
 * least possible, resume, and say how long the threads were held.
 *
 * Not for use inside an allocation hook (it is the tracer's side).  Not
 * thread-safe: one struct ls_world per tracing thread, and ptrace(2) ties
 * a tracee to the thread that attached it, so stop, work and resume must
 * happen on the same thread.
 */
#ifndef LEAKSCOPE_PTRACE_H
#define LEAKSCOPE_PTRACE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

enum ls_world_thread_state {
	LS_THREAD_RUNNING,	/* seized, asked to stop, not stopped yet */
	LS_THREAD_STOPPED,
	LS_THREAD_DETACHED,
};

struct ls_world_thread {
	pid_t tid;
	enum ls_world_thread_state state;
	int pending_sig;		/* a signal the thread was about to
					   take when it stopped: delivered
					   when it is let go */
	struct user_regs_struct regs;	/* as stopped; fs_base is the TLS
					   pointer on x86-64 */
	int regs_dirty;			/* set by the caller after changing
					   regs: ls_world_resume writes them
					   back before letting go */
};

struct ls_world_opts {
	int timeout_ms;		/* for every thread to stop; 0 = 2000 */
	pid_t skip_tid;		/* a thread left running (for example the
				   agent's control thread), 0 = none */
};

struct ls_world {
	pid_t pid;
	struct ls_world_thread *threads;	/* owned */
	size_t nthreads;
	uint64_t stopped_ns;	/* CLOCK_MONOTONIC when the first thread
				   was asked to stop */
	uint64_t resumed_ns;	/* ... when the last one was let go */
};

/*
 * Seize and stop every thread of pid (all of /proc/PID/task, again until
 * no new thread appears, so threads created during the stop are caught),
 * except opts->skip_tid, and read their registers.  Returns 0, or a
 * negative errno with a one-line reason in err, every thread already let
 * go: -EPERM (not allowed: the reason names Yama's ptrace_scope value and
 * what to do, or the owner), -EBUSY (another tracer is attached), -ESRCH
 * (no such process, a thread id, or it exited meanwhile), -ETIMEDOUT (a
 * thread did not stop in time), -ENOMEM.  A thread that exits during the
 * stop is simply not in w->threads, nor is a zombie leader (one that
 * called pthread_exit while other threads run on).
 *
 * A thread this process already traces is left out: its caller holds it
 * (attach keeps the thread it runs its calls on).
 *
 * Signals: a thread found about to take a signal keeps it (pending_sig,
 * delivered at resume); a process stopped by job control stays stopped.
 */
int ls_world_stop(pid_t pid, const struct ls_world_opts *opts,
		  struct ls_world *w, char *err, size_t errlen);

/*
 * Write back the registers marked dirty and detach every thread, which
 * then runs on from where it was (a thread stopped in a system call
 * restarts it).  Sets w->resumed_ns.  Returns 0, or the first negative
 * errno met (every thread is let go all the same; a thread that exited
 * meanwhile is not an error).
 */
int ls_world_resume(struct ls_world *w);

/* The pause in nanoseconds: resumed_ns - stopped_ns, 0 before resume. */
uint64_t ls_world_pause_ns(const struct ls_world *w);

/*
 * The one-line reason PTRACE_SEIZE of pid failed with errno e, given the
 * text of /proc/sys/kernel/yama/ptrace_scope (NULL: the kernel has no
 * Yama), our effective uid and pid's owner (-1: unknown): for EPERM the
 * owner when it is another user, else Yama's scope and what to do about
 * it.  A pure function, for the tests, which cannot set the scope.
 */
void ls_world_denied_reason(pid_t pid, int e, const char *yama, uid_t euid,
			    long owner, char *err, size_t errlen);

/* Free what w owns (not a resume); accepts a zeroed world. */
void ls_world_release(struct ls_world *w);

#endif /* LEAKSCOPE_PTRACE_H */
