/*
 * reachheap.c - the scan's reader of the allocator's memory (heapmodel.h):
 * glibc's chunk headers around a tracked block, its heaps walked chunk by
 * chunk (glibcheap.h) with the chunks cached in fastbins noted, and what
 * of it is scanned as roots or not scanned at all.
 */
#include <errno.h>
#include <fcntl.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <poll.h>
#include <stdio.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <linux/userfaultfd.h>
#include "../common/contract.h"
#include "state.h"
#include "exitstop.h"
#include "figures.h"
#include "glibcheap.h"
#include "heapmodel.h"
#include "live.h"
#include "mmaps.h"
#include "real.h"
#include "modules.h"
#include "reach.h"
#include "reachint.h"
#include "site.h"
#include "snapwrite.h"
#include "sys.h"
#include "unwind.h"

/* The bytes of the tracked blocks that start in [s, e). */
uint64_t ls_scan_tracked_bytes(const struct scan *sc, uint64_t s, uint64_t e)
{
	uint64_t sum = 0;
	size_t i;

	for (i = ls_scan_first_block_from(sc, s); i < sc->n && sc->addr[i] < e; i++)
		sum += sc->blk[i].size;
	return sum;
}

#define CHUNK_MMAPPED 2ull
#define CHUNK_NON_MAIN 4ull

/* glibc's request2size(): the chunk a request of size bytes gets. */
static uint64_t chunk_for(uint64_t size)
{
	uint64_t cs = (size + 8 + 15) & ~15ull;

	return cs < 32 ? 32 : cs;
}

static int chunk_in_use(struct scan *sc, uint64_t p, uint64_t size,
			uint64_t end);

/*
 * The allocator's memory around block i, in region [gs, ge), outside
 * the glibc heaps ls_scan_mark_region() found: not a root (its free chunks keep
 * stale pointers; its blocks are scanned when reached).  From glibc's
 * chunk header before the block: a chunk of its own mapping gives
 * exactly that mapping (kernels merge adjacent anonymous mappings, so
 * the region may hold a thread stack or a program's arena too); an
 * arena chunk the region from its 64 MiB-aligned heap start (a thread
 * arena's) or whole (the main arena's).  A header that is not glibc's
 * (jemalloc, tcmalloc...) gives the block alone: the rest of the
 * allocator's memory stays a root, which can hide a leak behind a stale
 * pointer but never makes one up.
 */
void ls_scan_heap_range(struct scan *sc, size_t i, uint64_t gs,
		       uint64_t ge, uint64_t *xs, uint64_t *xe, int *arena)
{
	uint64_t a = sc->addr[i], size = sc->blk[i].size, hdr, cs, pre;

	*arena = 0;
	*xs = a;
	*xe = a + (size ? size : 1);
	if (!ls_heapmodel()->chunk_headers || a < gs + 16 || (a & 15) ||
	    ls_scan_peek(sc, a - 8, &hdr))
		return;
	cs = hdr & ~7ull;
	if (hdr & CHUNK_MMAPPED) {
		/* memalign's offset */
		if (ls_scan_peek(sc, a - 16, &pre))
			return;
		if ((cs & 4095) || pre > (1ull << 20) || a - 16 - pre < gs ||
		    a - 16 + cs > ge || a - 16 + cs < a + size)
			return;
		*xs = a - 16 - pre;
		*xe = a - 16 + cs;
		return;
	}
	if (!chunk_in_use(sc, a - 16, size, ge))
		return;
	*xs = gs;
	*xe = ge;
	*arena = hdr & CHUNK_NON_MAIN ? 2 : 1;	/* a thread's, the main one */
	if ((hdr & CHUNK_NON_MAIN) && (a & ~(HEAP_MAX_SIZE - 1)) > gs)
		*xs = a & ~(HEAP_MAX_SIZE - 1);
}


/* --- glibc's heaps (glibcheap.h) ----------------------------------------- */

/* The words glibcheap.c asks for: through the window in the live
 * process; in the image in place, when the maps say they are there. */
static int gh_peek(void *ctx, uint64_t a, uint64_t *v)
{
	struct scan *sc = ctx;

	if (a & 7)
		return -1;
	if (sc->safe)
		return ls_scan_peek(sc, a, v);
	if (ls_scan_readable_until(sc, a) < a + 8)
		return -1;
	*v = *(const uint64_t *)(uintptr_t)a;
	return 0;
}

/*
 * Is the chunk at p, holding a block of size bytes, in use as glibc lays
 * it out: its size the one glibc gives such a request, the next chunk's
 * header (below end) saying its predecessor is in use?
 */
static int chunk_in_use(struct scan *sc, uint64_t p, uint64_t size,
			uint64_t end)
{
	uint64_t hdr, cs, nx;

	if (gh_peek(sc, p + 8, &hdr) || (hdr & CHUNK_MMAPPED))
		return 0;
	cs = hdr & ~7ull;
	return cs >= chunk_for(size) && cs < chunk_for(size) + 32 &&
	       p + cs + 16 <= end && !gh_peek(sc, p + cs + 8, &nx) && (nx & 1);
}

/* A walk astray at p resumes at the next tracked block's chunk. */
static uint64_t gh_resync(void *ctx, uint64_t p, uint64_t end)
{
	struct scan *sc = ctx;
	size_t i;

	for (i = ls_scan_first_block_from(sc, p + 17); i < sc->n && sc->addr[i] < end;
	     i++)
		if (chunk_in_use(sc, sc->addr[i] - 16, sc->blk[i].size, end))
			return sc->addr[i] - 16;
	return 0;
}

static uint64_t *fast_slot(const struct scan *sc, uint64_t chunk)
{
	uint64_t k = (chunk >> 4) * 0x9e3779b97f4a7c15ULL >> 20 & sc->fmask;

	while (sc->fast[k] && sc->fast[k] != chunk)
		k = (k + 1) & sc->fmask;
	return &sc->fast[k];
}

static void fast_add(void *ctx, uint64_t chunk)
{
	struct scan *sc = ctx;
	uint64_t *slot = fast_slot(sc, chunk);

	if (!*slot) {
		*slot = chunk;
		sc->nfast++;
	}
}

/* A walk asks in address order: a cursor into the sorted blocks. */
static int gh_tracked(void *ctx, uint64_t user)
{
	struct scan *sc = ctx;

	if (sc->wcur > 0 && sc->wcur <= sc->n && sc->addr[sc->wcur - 1] >= user)
		sc->wcur = ls_scan_first_block_from(sc, user);	/* went back */
	while (sc->wcur < sc->n && sc->addr[sc->wcur] < user)
		sc->wcur++;
	return sc->wcur < sc->n && sc->addr[sc->wcur] == user;
}

/* An in-use looking chunk that is not a tracked block: a root, unless
 * a fastbin holds it. */
static void gh_chunk(void *ctx, uint64_t user, uint64_t end)
{
	struct scan *sc = ctx;

	if (sc->fast && *fast_slot(sc, user - 16))
		return;
	sc->alloc_root += end - user;
	ls_scan_mark_piece(sc, user, end);
}

const struct ls_gh_ops *ls_scan_gh_ops(struct scan *sc)
{
	static struct ls_gh_ops ops = {
		.peek = gh_peek, .resync = gh_resync, .tracked = gh_tracked,
		.chunk = gh_chunk,
	};

	ops.ctx = sc;
	return &ops;
}

#define MAX_FAST (1u << 20)	/* fastbin chunks noted; the rest are roots */

/* The chunks glibc's fastbins hold (they look in use to a walk). */
int ls_scan_note_fastbins(struct scan *sc)
{
	uint64_t main = ls_glibcheap_main_arena();

	if (!main)
		return 0;
	sc->fmask = 4095;
	for (;;) {
		sc->fast = ls_scan_grab(sc, (sc->fmask + 1) * 8);
		if (!sc->fast)
			return -ENOMEM;
		sc->nfast = 0;
		/* at most half full: probes stay short */
		ls_gh_fastbins(ls_scan_gh_ops(sc), main, fast_add, (sc->fmask + 1) / 2);
		if (sc->nfast < (sc->fmask + 1) / 2 || sc->fmask + 1 >= 2 * MAX_FAST)
			return 0;
		ls_scan_drop(sc, sc->fast, (sc->fmask + 1) * 8);
		sc->fmask = sc->fmask * 2 + 1;
	}
}

/* The in-use chunks of glibc heap h that are not tracked blocks
 * (allocated before tracking began: `leakscope attach`, `reset`) are
 * roots: memory the program uses that is neither a tracked block nor
 * the agent's.  Its free chunks, cached ones included, are not. */
void ls_scan_walk_heap(struct scan *sc, const struct ls_gh_heap *h)
{
	uint64_t roots = sc->alloc_root, used;

	sc->wcur = ls_scan_first_block_from(sc, h->first);
	sc->resyncs += ls_gh_walk(ls_scan_gh_ops(sc), h, ls_glibcheap_tcache_key());
	used = sc->alloc_root - roots + ls_scan_tracked_bytes(sc, h->start, h->end);
	if (h->end - h->start > used)
		sc->alloc_unscanned += h->end - h->start - used;
}


/* --- the allocator's own mappings (heapmodel.h) ---------------------------- */

/*
 * The anonymous mappings the allocator made while the agent tracked, from
 * the agent's register (ls_mmaps_copy: a mapping's site is of the kind
 * LSNAP_KIND_ALLOCATOR when the mmap call came from the allocator's
 * object), merged into sc->amap.  None when the model does not know them
 * (ls_scan_prep.alloc_maps), when the agent ever dropped an event (a block
 * may be missing from the tables), or when the register was caught
 * mid-update in a frozen image: then all of it is scanned as roots.
 */
int ls_scan_note_alloc_maps(struct scan *sc, int frozen)
{
	struct ls_live_entry *e = NULL;
	size_t n, cap = 0, i;
	int torn = 0, r = 0;

	sc->amap.elem = sizeof(struct span);
	sc->amap.len = 0;
	if (!ls_scan_prep.alloc_maps ||
	    __atomic_load_n(&ls_agent_dropped, __ATOMIC_RELAXED))
		return 0;
	n = frozen ? ls_mmaps_copy_frozen(NULL, 0, &torn) : ls_mmaps_copy(NULL, 0);
	while (n > cap) {
		if (cap)
			ls_scan_drop(sc, e, cap * sizeof(*e));
		cap = n + 64;
		e = ls_scan_grab(sc, cap * sizeof(*e));
		if (!e)
			return -ENOMEM;
		n = frozen ? ls_mmaps_copy_frozen(e, cap, &torn) : ls_mmaps_copy(e, cap);
	}
	for (i = 0; !torn && i < n && n <= cap && !r; i++) {
		const struct ls_site_rec *s = ls_site_get(e[i].site);
		struct span *last = sc->amap.len ?
				    (struct span *)sc->amap.p + sc->amap.len - 1 : NULL;
		struct span sp = { e[i].addr, e[i].addr + e[i].size };

		if (!s || s->kind != LSNAP_KIND_ALLOCATOR)
			continue;
		if (last && last->end == sp.start)
			last->end = sp.end;
		else
			r = ls_scan_vec_push(sc, &sc->amap, &sp);
	}
	if (cap)
		ls_scan_drop(sc, e, cap * sizeof(*e));
	if (torn)
		sc->amap.len = 0;
	return r;
}

/* The first of sc->amap that ends after a. */
size_t ls_scan_amap_from(const struct scan *sc, uint64_t a)
{
	const struct span *p = sc->amap.p;
	size_t lo = 0, hi = sc->amap.len;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (p[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}
