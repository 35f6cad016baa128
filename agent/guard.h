/*
 * guard.h - the per-thread recursion guard.
 *
 * Set while the agent works inside a hook, and for good on the agent's own
 * thread: any allocation made meanwhile (by libunwind, by libc on the
 * agent's behalf, by a signal handler that interrupted a hook) goes
 * straight to the real allocator, untracked.  That is what keeps the
 * agent's own memory out of reports and its locks from being taken twice
 * by one thread.  initial-exec TLS: no allocation on first access.
 */
#ifndef LEAKSCOPE_AGENT_GUARD_H
#define LEAKSCOPE_AGENT_GUARD_H

extern __thread int ls_guard_depth;

static inline int ls_guard_held(void)
{
	return ls_guard_depth != 0;
}

static inline void ls_guard_enter(void)
{
	ls_guard_depth++;
	__asm__ volatile("" ::: "memory");
}

static inline void ls_guard_leave(void)
{
	__asm__ volatile("" ::: "memory");
	ls_guard_depth--;
}

#endif
