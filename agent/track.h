/*
 * track.h - the bookkeeping the hooks call (track.c).
 *
 * The hooks (hooks.c) do: guard, call the real function, and on success
 * call one ls_track_* function.  Those capture the stack, intern the site,
 * update the live table and the thread's counters.  Nothing here does I/O
 * or symbolization; snapshots are written by the control thread or at
 * exit (snapwrite.h).
 */
#ifndef LEAKSCOPE_AGENT_TRACK_H
#define LEAKSCOPE_AGENT_TRACK_H

#include <stddef.h>
#include <stdint.h>
#include "thread.h"

/*
 * The recording of a new block p and of a freed one, called by the hooks
 * without the guard, out of line (the hooks' fast paths save no
 * register): each takes the guard and keeps errno itself.  ls_track_alloc
 * records p: in sampled mode the hook has already decided to.
 * ls_track_free takes p out of the table and then frees it (the real
 * free): the hook returns at once.
 */
void ls_track_alloc(struct ls_thread *t, void *p, size_t size);
void ls_track_free(void *p, struct ls_thread *t);
/*
 * C++'s operator delete of any variant, as the program called it: p and
 * up to two more integer-class arguments (a size, an alignment, a
 * nothrow tag), which the x86-64 calling convention passes in registers
 * whether or not the callee reads them.
 */
typedef void (*ls_release_fn)(void *p, uint64_t b, uint64_t c);
/* As ls_track_free, with rel(p, b, c) instead of the real free. */
void ls_track_delete(void *p, struct ls_thread *t, ls_release_fn rel,
		     uint64_t b, uint64_t c);
/*
 * malloc and calloc's common case whole, for a thread t that hooks.c's
 * common_case() cleared: count the call, call the real function, and
 * record the block (in sampled mode when a sample point falls in it).
 * One frame instead of the hook's slow path and ls_track_alloc's.  Must
 * be reached by tail calls only from the interposed function, so that
 * its caller is the program's frame (LS_UNWIND_HERE() inside).
 */
void *ls_track_malloc(size_t n, struct ls_thread *t);
void *ls_track_calloc(size_t n, size_t m, struct ls_thread *t);
/*
 * The same for C++'s operator new of an allocator that defines it
 * (agent/hooks.c): real(a, b, c), a the size.  No guard is held across
 * real, which may throw.
 */
typedef void *(*ls_new_fn)(uint64_t a, uint64_t b, uint64_t c);
void *ls_track_new(uint64_t a, uint64_t b, uint64_t c, struct ls_thread *t,
		   ls_new_fn real);
/* With the guard held: remove p before a realloc; fills *saved, returns
 * nonzero if tracked. */
int ls_track_take(struct ls_thread *t, void *p, void *saved);
/* Put back what ls_track_take() removed (the realloc failed). */
void ls_track_restore(struct ls_thread *t, const void *saved);

/* kind: LSNAP_KIND_MMAP, _ALLOCATOR or _RESERVED, as the hook chose. */
void ls_track_mmap(struct ls_thread *t, void *p, size_t len, uint32_t kind);
void ls_track_munmap(struct ls_thread *t, void *p, size_t len);
/* Returns nonzero if [old, old+len) held tracked anonymous memory. */
int ls_track_mremap(struct ls_thread *t, void *old, size_t oldlen, void *p,
		    size_t newlen, uint32_t kind);
/* A successful mprotect(p, len, prot): reserved <-> program mapping. */
void ls_track_mprotect(struct ls_thread *t, void *p, size_t len, int prot);

/*
 * Zero the 128 bytes below the stack pointer, from the frame of a hook
 * that has recorded a block, once the bookkeeping's calls have returned.
 * Their frames left words there (the new block's address among them,
 * in a saved register's slot), and when the hook's frame is the one
 * right under the program's, those words lie in the red zone of the
 * program's frame: a check scans a stopped thread's stack from its
 * stack pointer less that red zone, and a block the thread allocated
 * and dropped would be held by the agent's word (docs/REACHABILITY.md,
 * "Other threads at exit").  Nothing live lies there: the hook calls
 * functions, so the compiler keeps nothing below its stack pointer, and
 * the kernel puts a signal frame below the red zone.
 */
static inline __attribute__((always_inline)) void ls_track_clear_red_zone(void)
{
	__asm__ volatile("movq $0, -8(%%rsp)\n\tmovq $0, -16(%%rsp)\n\t"
			 "movq $0, -24(%%rsp)\n\tmovq $0, -32(%%rsp)\n\t"
			 "movq $0, -40(%%rsp)\n\tmovq $0, -48(%%rsp)\n\t"
			 "movq $0, -56(%%rsp)\n\tmovq $0, -64(%%rsp)\n\t"
			 "movq $0, -72(%%rsp)\n\tmovq $0, -80(%%rsp)\n\t"
			 "movq $0, -88(%%rsp)\n\tmovq $0, -96(%%rsp)\n\t"
			 "movq $0, -104(%%rsp)\n\tmovq $0, -112(%%rsp)\n\t"
			 "movq $0, -120(%%rsp)\n\tmovq $0, -128(%%rsp)"
			 ::: "memory");
}

/* Size of a live-table entry passed through ls_track_take(). */
#define LS_TRACK_SAVED 24

#endif
