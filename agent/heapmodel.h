/*
 * heapmodel.h - what the reachability scan knows of the allocator behind
 * malloc (docs/REACHABILITY.md, "Heap models"): one model per allocator,
 * chosen once when the agent starts (preloaded or attached).
 *
 * The scan sorts the allocator's memory four ways: its own bookkeeping,
 * tracked blocks (classified), untracked blocks allocated before tracking
 * began (roots: they hold what they point to) and free memory (not
 * scanned: it keeps stale pointers).  A model says how much of that it
 * can tell apart:
 *
 *   glibc     (glibcheap.h) every heap walked chunk by chunk: in-use
 *             untracked chunks are roots; free chunks (bins, tcache,
 *             fastbins), headers and the arena structs are not scanned;
 *   jemalloc  (jeheap.c) recognised by its mallctl("version"); no header
 *             precedes a block, so every tracked block is cut out alone.
 *             The anonymous mappings jemalloc made while the agent
 *             tracked (the agent's register of mappings, by the mmap
 *             call's caller) hold only blocks allocated since, all
 *             tracked, its free regions and extents, and its own state:
 *             not scanned.  The rest of its memory (mapped before an
 *             attach) holds untracked blocks that cannot be told from
 *             free regions from outside: scanned as roots;
 *   tcmalloc  recognised by its tc_version(); as other: it maps with raw
 *             system calls and sbrk, which no hook sees;
 *   other     every tracked block cut out alone, the rest of the
 *             allocator's memory scanned as roots.
 *
 * Whatever a model cannot tell apart is scanned, never skipped: a stale
 * word may hide a leak, none can make one up.  The check reports, with
 * their sizes, the allocator's memory scanned as roots (conservatively)
 * and the memory not scanned (struct lsnap_reach_how).
 */
#ifndef LEAKSCOPE_AGENT_HEAPMODEL_H
#define LEAKSCOPE_AGENT_HEAPMODEL_H

#include <stddef.h>
#include <stdint.h>
#include "../common/lsnap.h"

struct ls_heapmodel {
	enum lsnap_heap_alloc id;
	const char *name;
	/* glibc's chunk headers and heaps may be read: the scan walks
	 * glibc's heaps and cuts the allocator's memory around a block by
	 * its header.  Otherwise each block is cut out alone. */
	int chunk_headers;
	char version[48];	/* the allocator's own, when it says */
	/* The mappings the allocator makes hold nothing but its blocks,
	 * its free memory and its own state: it is a shared object, not
	 * part of the program (whose own mappings would be taken for it). */
	int own_maps;
	/* Its entry points that allocate without calling malloc (which
	 * the agent hooks), NULL-ended: a block they return is untracked. */
	const char *const *bypass;
};

/*
 * Choose the model: glibc's when malloc is libc's (and learn its tcache
 * key and main arena, glibcheap.h), jemalloc's when the object behind
 * malloc answers mallctl("version"), else "other".  Calls the allocator:
 * once, from a program thread at the agent's start, never in a hook.
 */
void ls_heapmodel_learn(void);

/* The model chosen; glibc's until ls_heapmodel_learn() ran.  Safe in the
 * copy-on-write child (no lock, no allocation). */
const struct ls_heapmodel *ls_heapmodel(void);

/*
 * May the scan leave the allocator's own mappings out of the roots?  Only
 * under a model with own_maps, when no loaded object but the allocator
 * refers to one of its bypass entry points that resolves into it
 * (jemalloc's mallocx; its operator new is hooked).  Walks the loaded objects (dl_iterate_phdr, dlsym): from the
 * control thread before a check, never in a hook or in the fork child.
 */
int ls_heapmodel_maps_known(void);

/* jeheap.c: jemalloc's entry points that bypass malloc. */
extern const char *const ls_jeheap_bypass[];

/* jeheap.c: is the allocator behind malloc jemalloc?  1 and its version
 * in ver (cap bytes), else 0. */
int ls_jeheap_detect(char *ver, size_t cap);

#endif
