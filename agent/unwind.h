/*
 * unwind.h - the agent's own x86_64 stack unwinder.
 *
 * Walks the calling thread's stack with the .eh_frame CFI of each module,
 * so code built without frame pointers (Debian's libc and most packages)
 * gives full stacks.  Each return address is reduced once to a compact
 * rule (cfi.h) and cached: a per-thread direct-mapped cache in front of a
 * global lock-free hash table.  On top of that, each thread keeps a frame
 * cache: the frames of its earlier walks as a tree indexed by (pc, sp).
 * A walk that reaches a known frame re-reads the stack words the earlier
 * walk read above it, and takes every frame whose words are unchanged
 * without walking it; only frames that changed are walked.  See
 * docs/UNWINDING.md for the design and its measurements.
 *
 * Crash-proof by construction: every stack read is bounded to a range of
 * the calling thread's stack proven readable by a syscall probe, and to
 * the words at or above the frame being left; each frame's CFA must rise
 * strictly within that range; CFI is read only from modules that
 * _dl_find_object() knows, each read bounded to the module.  A wrong or
 * stale rule can cost frames, it cannot make the unwinder fault.
 *
 * x86_64 Linux with glibc 2.35 or later only.
 */
#ifndef LEAKSCOPE_AGENT_UNWIND_H
#define LEAKSCOPE_AGENT_UNWIND_H

#include <stdint.h>

/* Deepest capture one call stores; larger max values are clamped, and
 * so is skip. */
#define LS_UNWIND_MAX_FRAMES 1024

/*
 * Once, at the agent's start, outside any hook, before other threads
 * capture: maps the global rule table (2 MiB of address space, touched as
 * it fills) and creates the thread-exit key that recycles per-thread
 * caches.  Returns 0 or -errno (-ENOMEM: no table; captures then still
 * work, uncached).  Calling it again is a no-op.
 */
int ls_unwind_init(void);
/* Give the calling thread its caches now rather than at its first walk
 * (the thread that starts the agent: before the program runs, so that a
 * program that limits its address space right away keeps its room). */
void ls_unwind_thread_prepare(void);

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
 * lock; errno is left alone.  A thread's first call maps its caches
 * (about 1.1 MiB of address space, touched as used, given back to a
 * pool when the thread exits).
 * Thread-safe.  May be called before ls_unwind_init(); it then works
 * uncached.
 */
int ls_unwind_capture(uint64_t *pcs, int max, int skip);

/*
 * As ls_unwind_capture(), for a walk the agent makes for itself (the
 * check at exit looking for exit()'s caller), not an allocation's: it is
 * not counted in the walks of the snapshot's UNWIND record and leaves
 * the frame cache and the memo alone.
 */
int ls_unwind_capture_own(uint64_t *pcs, int max, int skip);

/*
 * Where a walk starts: a frame's pc (a return address), sp and %rbp.
 * LS_UNWIND_HERE() gives the state of the function that called the
 * function it is used in, exactly: __builtin_frame_address makes GCC give
 * that function a frame pointer, so [fp] is the caller's %rbp, fp + 8 the
 * return address and fp + 16 the caller's sp.  Used in an always-inline
 * helper it describes the function the helper is inlined into.
 */
struct ls_unwind_start {
	uint64_t pc, sp, rbp;	/* sp 0: none */
};

#define LS_UNWIND_HERE() ((struct ls_unwind_start){			\
	.pc = (uint64_t)(uintptr_t)__builtin_return_address(0),		\
	.sp = (uint64_t)(uintptr_t)((uint64_t *)__builtin_frame_address(0) + 2), \
	.rbp = *(uint64_t *)__builtin_frame_address(0) })

/*
 * ls_unwind_capture() through the walk memo, from *st or from the caller.
 *
 * A hook passes in st the state of the program frame that called it
 * (LS_UNWIND_HERE()), so that neither the memo nor the walk spend anything
 * on the agent's own frames: pcs[0] is then st->pc itself (the return
 * address into that frame) and the walk's frames follow.  st must describe
 * a live frame of the calling thread, above the caller of this function;
 * NULL, or one at or below it, makes the walk start at the caller, as
 * ls_unwind_capture() does.
 *
 * key tells apart callers that attach different values to the same
 * stack.  hint is any word that tends to tell walks from the same state
 * apart (a hook's return address); it only spreads entries.  When an
 * earlier walk from the same state (pc, sp and, if the walk used it,
 * %rbp), with the same key, max and skip, had a value attached by
 * ls_unwind_memo_put(), and every stack word that walk read still holds
 * what it held, the walk would give the same frames: *val is set to that
 * value and 0 is returned, pcs untouched.  Otherwise *val is NULL and the
 * stack is captured; the caller may then attach a value to that walk with
 * ls_unwind_memo_put() before its next capture.  Walks that passed a
 * signal frame, left the thread's own stack or met a pc outside every
 * module are not kept.  Same safety as ls_unwind_capture(), and the same
 * per-thread caches.
 */
int ls_unwind_capture_memo_from(const struct ls_unwind_start *st,
				uint64_t *pcs, int max, int skip, uint32_t key,
				uint64_t hint, void **val);

/*
 * The memo alone, for a hook's fast path: the value
 * ls_unwind_capture_memo_from(st, pcs, max, 0, key, st->pc, &val) would
 * give without walking, or NULL (then call that, with the same st, max
 * and key: that capture then walks without asking the memo again).  st
 * must describe a live frame above the caller, as for that function; a
 * NULL st, or one below this function's own frame, gives NULL.
 */
void *ls_unwind_memo_get(const struct ls_unwind_start *st, int max,
			 uint32_t key);

/* Attach val (not NULL) to the calling thread's last walk by
 * ls_unwind_capture_memo_from(), if it can be kept.  Hook-safe. */
void ls_unwind_memo_put(void *val);

/* Walks done and captures the memo answered, by every thread with caches
 * (counters of exited threads stay in their recycled caches). */
void ls_unwind_counts(uint64_t *walks, uint64_t *memo_hits);

/* Walks that took their outer part from an earlier walk's suffix (the
 * walk memo keyed by frame, docs/UNWINDING.md), by every thread. */
uint64_t ls_unwind_suffix_takes(void);

/*
 * Forget every cached rule and frame, because a module was unmapped
 * (dlclose) and another one may later be mapped at its addresses.
 * Captures running meanwhile in other threads notice and redo their walk
 * uncached.  Not for hooks or signal handlers (it calls madvise under a
 * lock); thread-safe otherwise.
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
