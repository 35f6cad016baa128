/*
 * stopwait.h - waiting for the threads a tracer asked to stop
 * (PTRACE_INTERRUPT after PTRACE_SEIZE) until each has stopped, ended or
 * gone, or a deadline passes.  One loop for the agent's tracer child at
 * exit (agent/exitstop.c) and the command's stop of another process
 * (lib/ptrace.c), each with its own list of threads behind the callbacks.
 *
 * It calls only system-call wrappers (waitpid, sched_yield, nanosleep,
 * clock_gettime) and the callbacks: no allocation, no lock, no stdio, so
 * it may run in a copy-on-write child of a multithreaded process.
 */
#ifndef LEAKSCOPE_COMMON_STOPWAIT_H
#define LEAKSCOPE_COMMON_STOPWAIT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ls_stopwait {
	pid_t pid;		/* the process the threads belong to */
	uint64_t deadline;	/* CLOCK_MONOTONIC, in nanoseconds */
	void *list;		/* the callbacks' first argument */
	/* How many threads the list holds now. */
	size_t (*count)(void *list);
	/* Thread i's tid, or 0 once it is known to be stopped. */
	pid_t (*waiting)(void *list, size_t i);
	/* What waitpid said of thread i: 1 stopped, 0 still running,
	 * -1 it ended. */
	int (*note)(void *list, size_t i, int status);
	/* Thread i ended or is gone: remove it, the last moving to i. */
	void (*drop)(void *list, size_t i);
	/* Nonzero when thread tid of pid is gone or a zombie: a thread
	 * killed meanwhile gives no status while others are held stopped. */
	int (*gone)(pid_t pid, pid_t tid);
};

/*
 * Polls each thread not yet stopped (waitpid __WALL | WNOHANG), yielding
 * between rounds at first and then sleeping 50 us.  Returns 0 once none
 * is left running, or -ETIMEDOUT past the deadline with *left (when not
 * NULL) the number still running.
 */
int ls_stopwait(const struct ls_stopwait *sw, size_t *left);

#endif
