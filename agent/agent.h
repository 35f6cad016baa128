/*
 * agent.h - the agent's life cycle (agent.c): start, fork, exit, reset.
 */
#ifndef LEAKSCOPE_AGENT_AGENT_H
#define LEAKSCOPE_AGENT_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include "state.h"
#include "thread.h"

/*
 * Around a call that needs a single-threaded process: end the agent's
 * threads (the fork child's waker, the control thread), returning what
 * ls_agent_threads_resume() needs to start them again.  Not in a hook.
 */
int ls_agent_threads_pause(void);
void ls_agent_threads_resume(int paused);
/* Before the process becomes another user: create the exit snapshot's
 * file while the out dir is still writable.  Not in a hook. */
void ls_agent_open_exit_report(void);

/*
 * Start tracking, if nothing has yet: real functions, settings, tables,
 * unwinder; no thread, no environment change, no file (the constructor
 * adds those).  Called by the constructor and by the first hook that
 * finds the agent off, so that allocations made by other libraries'
 * constructors, which ld.so runs first, are seen.  Returns whether the
 * agent is on.  Hook-safe: guards itself and keeps errno.
 */
int ls_agent_core_start(void);

/* The process is ending: take a last growth sample, close the post-mortem
 * file, write the exit snapshot (under `leakscope run`), remove the
 * control socket.  Once per process; called from the destructor and from
 * _exit(). */
void ls_agent_exit_report(void);
/* Forget every live block (the control socket's "reset"); allocated
 * totals and call counts keep counting. */
void ls_agent_reset(void);
/*
 * In a fork child, the control thread and post-mortem file are started
 * from a hook once the child has lived LS_CHILD_MIN_LIFE_NS
 * (common/contract.h): children that exec or exit at once never create
 * files, a pre-fork worker becomes queryable.  Called with no guard
 * held, outside the real allocator.
 */
void ls_agent_child_control(void);

/* After dlclose(). */
void ls_agent_modules_changed(void);

/* Install the fork handlers (once per process, at start or at the first
 * attach). */
void ls_agent_atfork(void);

#endif
