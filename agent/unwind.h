/*
 * unwind.h - the agent's own x86_64 stack unwinder.
 *
 * Walks the calling thread's stack with the .eh_frame CFI of each module,
 * so code built without frame pointers (Debian's libc and most packages)
 * gives full stacks.  Each return address is reduced once to a compact
 * rule (where the CFA, the return address and the caller's %rbp are) and
 * the rule is cached: a per-thread direct-mapped cache in front of a
 * global lock-free hash table.  A warm capture costs a few ns per frame.
 * See docs/UNWINDING.md.
 *
 * Crash-proof by construction: every stack read is bounded to a range of
 * the calling thread's stack that was proven readable (once per thread,
 * by a syscall probe), each frame's CFA must rise strictly within that
 * range, and CFI is read only from modules _dl_find_object() knows, each
 * read bounded to the module.  A wrong or stale rule can cost frames, it
 * cannot make the unwinder fault.
 *
 * x86_64 Linux with glibc 2.35 or later only.
 */
#ifndef LEAKSCOPE_AGENT_UNWIND_H
#define LEAKSCOPE_AGENT_UNWIND_H

#include <stdint.h>

/* Deepest capture one call stores; larger max values are clamped. */
#define LS_UNWIND_MAX_FRAMES 1024

/*
 * Once, at the agent's start, outside any hook and before any other
 * thread calls ls_unwind_capture().  Maps the global rule table and
 * creates the thread-exit key that recycles per-thread caches.
 * Returns 0 or -errno (-ENOMEM: no table; captures then still work,
 * uncached).  Calling it again is a no-op.
 */
int ls_unwind_init(void);

/*
 * Store up to max return addresses of the calling thread in pcs,
 * innermost first, and return how many were stored (0..max).
 *
 * Let F be the function that calls ls_unwind_capture().  With skip == 0,
 * pcs[0] is F's own return address (what __builtin_return_address(0)
 * gives inside F), pcs[1] its caller's, and so on; skip drops that many
 * further innermost frames first.  So a malloc hook calling it directly
 * gets pcs[0] = the return address into the program code that called
 * malloc.  F is the machine frame: if F is inlined into its caller, that
 * caller is F.  F must not tail-call ls_unwind_capture().
 *
 * Frames are return addresses as the stack holds them (not minus one),
 * except the frame interrupted by a signal: after the sigreturn
 * trampoline's address comes the interrupted pc itself.  The walk stops
 * at the outermost frame (CFI marks the return address undefined: _start,
 * the thread start in clone), at a pc outside every module or without
 * usable CFI, or when a rule would leave the proven stack range.
 *
 * Safe inside allocation hooks and async-signal handlers, and
 * async-signal-safe itself: no allocation through malloc, no stdio, no
 * lock.  Memory comes from mmap (a thread's first call maps its cache),
 * errno is preserved.  Thread-safe.  May be called before
 * ls_unwind_init(); it then works uncached.
 */
int ls_unwind_capture(uint64_t *pcs, int max, int skip);

/*
 * Forget every cached rule, because a module was unmapped (dlclose) and
 * another one may later be mapped at its addresses.  Captures running
 * meanwhile in other threads notice and redo their walk uncached.
 * Not for hooks or signal handlers (it calls madvise under a lock);
 * thread-safe otherwise.
 */
void ls_unwind_invalidate(void);

/*
 * In a fork child, before the child allocates: free the per-thread caches
 * of the threads that did not survive the fork.  Optional (without it a
 * child merely never reuses them).  Not thread-safe by design: the child
 * has one thread.
 */
void ls_unwind_atfork_child(void);

#endif
