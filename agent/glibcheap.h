/*
 * glibcheap.h - glibc's malloc heaps as the reachability scan sees them
 * from outside (docs/REACHABILITY.md, "glibc's heaps"): where the main
 * arena and the thread arenas' heaps are, which chunks are in use, and
 * which of the chunks that look in use are in fact free, cached by a
 * tcache or a fastbin.
 *
 * Layout of glibc 2.26 to 2.38 on x86-64 (checked on Debian 12's 2.36):
 * a thread arena's heap is a 64 MiB-aligned mapping that starts with a
 * heap_info header (32 bytes before 2.35, 48 since), the first heap of
 * an arena holding the arena's struct malloc_state (2200 bytes) right
 * after it.  Every word read comes through the caller's reader, which
 * never faults (process_vm_readv in the live process, a guarded read in
 * the copy-on-write child), and every value is validated before it is
 * used: a wrong guess gives "not a heap", never a crash.
 *
 * ls_glibcheap_learn() calls malloc: once, from a program thread at the
 * agent's start (preloaded or attached), never in a hook.  The rest
 * allocates nothing, takes no lock, and may run in the child.
 */
#ifndef LEAKSCOPE_AGENT_GLIBCHEAP_H
#define LEAKSCOPE_AGENT_GLIBCHEAP_H

#include <stdint.h>

struct ls_gh_ops {
	/* The word at a (8-aligned) into *v; 0, or -1 when unreadable. */
	int (*peek)(void *ctx, uint64_t a, uint64_t *v);
	/* The walk went astray at chunk p: the next chunk known for sure
	 * after p and before end (a tracked block's), or 0. */
	uint64_t (*resync)(void *ctx, uint64_t p, uint64_t end);
	/* Is the block at user a tracked one?  Asked of every in-use chunk
	 * in address order within a walk. */
	int (*tracked)(void *ctx, uint64_t user);
	/* An in-use chunk whose memory is [user, end), not tracked; free
	 * chunks cached by a tcache (their key at user + 8) are not
	 * passed. */
	void (*chunk)(void *ctx, uint64_t user, uint64_t end);
	void *ctx;
};

/* A glibc heap: the allocator's memory [start, end) (headers, chunks,
 * the reserved tail), its chunks [first, top_end). */
struct ls_gh_heap {
	uint64_t start, end;
	uint64_t first, top_end;
	uint64_t arena;		/* its struct malloc_state */
};

/*
 * Learn glibc's per-process tcache key (2.34+): free a 48-byte chunk
 * of our own through the real free and read the word tcache_put()
 * stores at user offset 8.  Only when ls_real.malloc is libc's.  Then find the main
 * arena in libc's writable data (its empty bins link to themselves).
 * Either stays 0 when not found; the scan then does without.
 */
void ls_glibcheap_learn(void);

uint64_t ls_glibcheap_tcache_key(void);
uint64_t ls_glibcheap_main_arena(void);
/* The size of the main arena's struct, in libc's data: no root (its
 * top, last_remainder and bins point to chunk headers, which may lie
 * in the last word of the block before). */
uint64_t ls_glibcheap_arena_size(void);

/*
 * Is there a thread arena's heap at h (64 MiB-aligned), readable up to
 * limit?  Fills *out and returns 1 when every field of its heap_info is
 * consistent.
 */
int ls_gh_thread_heap(const struct ls_gh_ops *ops, uint64_t h, uint64_t limit,
		      struct ls_gh_heap *out);

/*
 * The main arena's heap, the [heap] mapping [start, end): 1 when the
 * main arena's top chunk lies in it (else the break is another
 * allocator's, or the program's own).
 */
int ls_gh_main_heap(const struct ls_gh_ops *ops, uint64_t start,
		    uint64_t end, struct ls_gh_heap *out);

/*
 * Walk the chunks of heap from first to top, calling ops->chunk for each
 * in-use chunk.  A size that makes no sense (a header being rewritten by
 * a running thread, a program that moved brk itself) resumes at
 * ops->resync.  Returns the number of such resumptions.
 */
unsigned ls_gh_walk(const struct ls_gh_ops *ops, const struct ls_gh_heap *heap,
		    uint64_t tcache_key);

/*
 * Every chunk in a fastbin of every arena (the ring from the main
 * arena), to fn: at most max chunks.  Chains are followed through
 * glibc's pointer mangling (2.32+) and checked link by link (alignment,
 * the bin's size).
 */
void ls_gh_fastbins(const struct ls_gh_ops *ops, uint64_t main_arena,
		    void (*fn)(void *ctx, uint64_t chunk), uint64_t max);

#endif
