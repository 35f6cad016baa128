/*
 * arena.c - bump allocation over kernel mappings for the agent's own data.
 */
#include <stdint.h>
#include "arena.h"
#include "lockrank.h"
#include "sys.h"

#define ARENA_CHUNK (1u << 20)

static ls_lock_t arena_lock = LS_LOCK_INIT;
static char *arena_cur, *arena_end;
static size_t arena_total;

void *ls_arena_alloc(size_t size)
{
	void *p = NULL;

	size = (size + 15) & ~(size_t)15;
	ls_lock_ranked(&arena_lock, LS_RANK_ARENA);
	if ((size_t)(arena_end - arena_cur) < size) {
		size_t len = size > ARENA_CHUNK ? size : ARENA_CHUNK;
		char *c = ls_sys_map(len);

		if (!c)
			goto out;
		arena_cur = c;
		arena_end = c + len;
		arena_total += len;
	}
	p = arena_cur;
	arena_cur += size;
out:
	ls_unlock_ranked(&arena_lock, LS_RANK_ARENA);
	return p;
}

size_t ls_arena_mapped(void)
{
	return __atomic_load_n(&arena_total, __ATOMIC_RELAXED);
}

void ls_arena_lock_all(void)
{
	ls_lock_ranked(&arena_lock, LS_RANK_ARENA);
}

void ls_arena_unlock_all(void)
{
	ls_unlock_ranked(&arena_lock, LS_RANK_ARENA);
}

void ls_arena_reset_child(void)
{
	ls_lock_reset(&arena_lock);
}
