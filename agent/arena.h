/*
 * arena.h - the agent's own long-lived memory: site records, frames,
 * thread records, module paths.  A bump allocator over kernel mappings.
 * Memory is never returned; what it holds lives as long as the process.
 *
 * Safe inside allocation hooks (takes a short spinlock, never the
 * program's allocator).
 */
#ifndef LEAKSCOPE_AGENT_ARENA_H
#define LEAKSCOPE_AGENT_ARENA_H

#include <stddef.h>

/* Zeroed memory aligned to 16 bytes, or NULL when the kernel refuses. */
void *ls_arena_alloc(size_t size);

/* Bytes the arena has taken from the kernel (for agent overhead stats). */
size_t ls_arena_mapped(void);

/* Fork handlers: hold the lock across fork, reset it in the child. */
void ls_arena_lock_all(void);
void ls_arena_unlock_all(void);
void ls_arena_reset_child(void);

#endif
