/*
 * exitstop.h - every other thread of this process stopped, with its
 * registers, for the check at exit.
 *
 * A thread group cannot ptrace itself, so a tracer child does it, as
 * LeakSanitizer's StopTheWorld does: a copy-on-write child (no exit
 * signal: the program gets no SIGCHLD) that PTRACE_SEIZEs and
 * PTRACE_INTERRUPTs each thread, reads its registers, hands them up a
 * pipe, and holds the threads until told to let them go.  A thread
 * stopped in a system call restarts it when let go, as after a stop by
 * a debugger; no signal reaches the program.  A signal a thread was
 * about to take when it stopped is delivered at the detach.
 *
 * Not in an allocation hook: the caller must hold no lock and take none
 * while the threads are stopped (one of them may hold it).
 */
#ifndef LEAKSCOPE_AGENT_EXITSTOP_H
#define LEAKSCOPE_AGENT_EXITSTOP_H

#include <stdint.h>
#include <sys/types.h>
#include "../common/lsnap.h"

struct ls_exitstop {
	pid_t tracer;		/* 0 when none runs */
	int go;			/* the write end the tracer waits on */
};

/*
 * Stop every thread of this process but the caller, up to cap, and put
 * their registers in th (sp the real stack pointer, regs every general
 * register as PTRACE_GETREGS gives them).  Returns how many, with the
 * threads held until ls_exitstop_release(); or a negative errno with
 * every thread running and nothing to release: -EPERM (ptrace refused:
 * another tracer, Yama's ptrace_scope 2 or 3, a process that is not
 * dumpable), -E2BIG (more than cap threads), -ETIMEDOUT (a thread did
 * not stop within half a second: uninterruptible sleep), or the error
 * of a pipe, clone or read.
 */
int ls_exitstop_stop(struct ls_exitstop *es, struct lsnap_check_thread *th,
		     uint32_t cap);

/* Let the threads go and reap the tracer.  Accepts a zeroed es. */
void ls_exitstop_release(struct ls_exitstop *es);

#endif /* LEAKSCOPE_AGENT_EXITSTOP_H */
