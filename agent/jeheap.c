/*
 * jeheap.c - jemalloc as the reachability scan sees it (heapmodel.h).
 *
 * jemalloc puts no header before a block: a small block is one region
 * of a slab of equal regions, a large one an extent of whole pages, and
 * which regions are free is known only to the slab's metadata, kept
 * apart from the slab in jemalloc's own base allocations, whose layout
 * changes from release to release; its public interfaces (mallctl's
 * experimental.utilization queries) give a slab's count of free regions,
 * never which.  So the model recognises jemalloc (its mallctl("version")
 * answers, from the object that defines malloc) and works by mappings:
 * every mapping jemalloc makes comes from an mmap call in its own object,
 * which the agent's hook registers while it tracks (extents, base
 * blocks: everything jemalloc maps).  What such a mapping holds besides
 * tracked blocks, each cut out alone and scanned once reached, is free
 * regions and extents, thread caches' stacks of pointers and jemalloc's
 * metadata (an extent's record points to a large block's start): not
 * scanned, so their stale pointers hide no leak.  Memory jemalloc mapped
 * before the agent tracked (before an attach) holds untracked blocks
 * among its free regions and is scanned as roots: a pre-attach record's
 * pointer to a value allocated since keeps it reachable, and a stale
 * word there may hide a leak, never make one up.
 *
 * A block that jemalloc hands out without malloc (mallocx) is not
 * tracked: when a loaded object refers to such an entry point that
 * resolves into jemalloc, its mappings are scanned as roots again
 * (ls_heapmodel_maps_known()).  C++'s operator new, which jemalloc
 * defines too, is hooked (agent/hooks.c) and its blocks tracked.
 */
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include "heapmodel.h"
#include "real.h"

const char *const ls_jeheap_bypass[] = {
	"mallocx", "rallocx", "xallocx",
	NULL
};

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
