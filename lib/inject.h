/*
 * inject.h - loading the agent into a running process (`leakscope
 * attach`), with ptrace only; docs/ATTACH.md tells the whole story.
 *
 *  1. Checks that need no stop: a 64-bit x86-64, dynamically linked
 *     target with ld.so and libc mapped, the agent not preloaded.
 *  2. Stop 1: every thread stopped (lib/ptrace.h), an int3 written at the
 *     entry of malloc, free, calloc and realloc, every thread let run
 *     under ptrace (new threads and fork children followed).
 *  3. The first thread to reach a breakpoint while no dlopen or dlclose
 *     is under way (_r_debug.r_state) is a safe point: it holds no
 *     allocator lock and no loader lock.  Stop 2: the others are stopped,
 *     the breakpoints removed, the others let go.  Without a breakpoint
 *     hit within the timeout, a thread blocked all along in a waiting
 *     system call (read, poll, epoll_wait, nanosleep, accept, ...) is
 *     taken instead; else the attach fails and nothing was changed.
 *  4. On that thread, with the others running: dlopen(agent), then
 *     leakscope_attach(settings) (common/attach.h).
 *  5. Stop 3, the switch: every thread but the agent's control thread
 *     stopped, the GOT slots the agent listed written, all let go.
 *  6. The safe thread gets its registers back and runs on.
 *
 * The tracing is done by a worker process of its own session, forked for
 * the attach: no signal to the caller (SIGINT, SIGTERM, SIGHUP,
 * SIGQUIT, forwarded; SIGKILL, seen by the worker as its parent's death)
 * or to its process group can end the tracer while a breakpoint is in
 * the target: the worker restores every byte it wrote and lets every
 * thread go first (-EINTR).  The caller's handlers of those signals are
 * replaced for the duration.  Not thread-safe.
 */
#ifndef LEAKSCOPE_INJECT_H
#define LEAKSCOPE_INJECT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ls_inject_opts {
	const char *agent;	/* the agent's path, as this process sees it */
	const char *settings;	/* "key=value" lines for leakscope_attach */
	int timeout_ms;		/* for a safe point; 0 = 5000 */
};

struct ls_inject_result {
	uint64_t pause_ns[3];	/* the three stops of every thread */
	pid_t safe_tid;		/* the thread the calls ran on */
	char safe_point[64];	/* "malloc entry", "blocked in read()" */
	uint32_t nslots;	/* GOT slots the agent listed */
	uint32_t switched;	/* ... and the switch wrote */
	uint64_t start_wall_ns;	/* when tracking began (CLOCK_REALTIME) */
	int reused;		/* the agent was still loaded from an
				   earlier attach */
};

/*
 * Attach to pid.  Returns 0, or a negative errno with a one-line reason
 * in err: those of ls_world_stop, -ENOEXEC (32-bit, statically linked,
 * no dynamic loader or libc), -EEXIST (the agent is already there:
 * preloaded, or attached and active), -EAGAIN (stopped by job control:
 * attaching would run it), -ETIMEDOUT (no safe point in time;
 * the target is as it was), -ESRCH (it exited meanwhile), -EIO (a call in
 * the target failed; reason says which), -EINTR (a signal came: the
 * target is as it was).  When the agent had started but
 * the switch failed, it is asked to detach again before returning.
 */
int ls_inject_attach(pid_t pid, const struct ls_inject_opts *opts,
		     struct ls_inject_result *res, char *err, size_t errlen);

/* The signal (SIGINT, SIGTERM, SIGHUP, SIGQUIT) that came during the
 * last ls_inject_attach(), 0 if none: it returned -EINTR when the signal
 * stopped it, and the caller is to end by that signal. */
int ls_inject_interrupted(void);

#endif
