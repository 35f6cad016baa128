/*
 * libmallocx.c - a library that allocates with jemalloc's mallocx, which
 * no hook of the agent sees: loaded into a program whose malloc is
 * jemalloc, it makes the agent scan jemalloc's mappings as roots again
 * (agent/jeheap.c; tests/integration/t_reach_jemalloc.py dlopens it after
 * a first check).  mallocx is left undefined here: jemalloc defines it.
 */
#include <stddef.h>

void *mallocx(size_t size, int flags);

void *lib_mallocx(size_t n)
{
	return mallocx(n, 0);
}
