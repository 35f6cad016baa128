/*
 * jeheap.c - jemalloc as the reachability scan sees it (heapmodel.h).
 *
 * jemalloc puts no header before a block: a small block is one region
 * of a slab of equal regions, a large one an extent of whole pages, and
 * which regions are free is known only to the slab's metadata, kept
 * apart from the slab in jemalloc's own base allocations, whose layout
 * changes from release to release.  So the model recognises jemalloc
 * (its mallctl("version") answers, from the object that defines malloc)
 * and the scan does not read glibc's chunk headers into its memory: a
 * tracked block is cut out alone (scanned once reached), and the rest,
 * blocks allocated before tracking began, free regions and jemalloc's
 * data, is scanned as roots.  A word there that looks like the start of
 * a tracked block keeps it reachable: a pre-attach record's pointer to a
 * value allocated since (live data) does, and so may a stale pointer in
 * a free region or a thread cache (a leak hidden, never one made up).
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "heapmodel.h"
#include "real.h"

typedef int (*mallctl_fn)(const char *, void *, size_t *, void *, size_t);

int ls_jeheap_detect(char *ver, size_t cap)
{
	mallctl_fn ctl;
	const char *v = NULL;
	size_t len = sizeof(v);

	if (!ls_real_alloc_lo && !ls_real_alloc_hi)
		return 0;	/* malloc is libc's */
	ctl = (mallctl_fn)(uintptr_t)ls_real_lookup("mallctl");
	if (!ctl || !ls_real_by_allocator((uintptr_t)ctl))
		return 0;	/* not the allocator's own mallctl */
	if (ctl("version", &v, &len, NULL, 0) || len != sizeof(v) || !v)
		return 0;
	if (cap) {
		strncpy(ver, v, cap - 1);
		ver[cap - 1] = 0;
	}
	return 1;
}
