/*
 * reachrun.c - the scan's drivers: the inventory (the blocks of the live
 * tables gathered, sorted and indexed, the maps, the agent's own memory,
 * the allocator's cached free chunks), taken by the concurrent mark
 * (reachcm.c) and by the fork image's child, and the child's whole scan
 * (reachfork.c): inventory, roots (reachroots.c), mark, cliques and sums
 * (reach.c).  It calls reach.c, reachheap.c and reachroots.c; only
 * reachcm.c and reachfork.c call it.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include "heapmodel.h"
#include "live.h"
#include "reach.h"
#include "reachint.h"
#include "sys.h"

/* --- 1. gather --------------------------------------------------------- */

/* Shard i into buf: under its lock in the live process, without in a
 * frozen image. */
static size_t copy_shard(const struct scan *sc, unsigned i,
			 struct ls_live_entry *buf, size_t cap, int *torn)
{
	if (sc->safe)
		return ls_live_copy_shard(i, buf, cap);
	return ls_live_copy_shard_frozen(i, buf, cap, torn);
}

static int gather(struct scan *sc, int *torn)
{
	size_t cap = ls_live_count() + 4096, n = 0, k;
	struct ls_live_entry *buf;
	unsigned i;

	buf = ls_scan_grab(sc, cap * sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < LS_LIVE_SHARDS; i++) {
		k = copy_shard(sc, i, buf + n, cap - n, torn);
		if (n + k > cap) {
			size_t ncap = (n + k) * 2;
			struct ls_live_entry *b = ls_scan_grab(sc, ncap * sizeof(*b));

			if (!b)
				return -ENOMEM;
			memcpy(b, buf, n * sizeof(*b));
			ls_scan_drop(sc, buf, cap * sizeof(*b));
			buf = b;
			cap = ncap;
			k = copy_shard(sc, i, buf + n, cap - n, torn);
		}
		n += k;
	}
	sc->blk = buf;
	sc->n = n;
	return 0;
}

static int sort_blocks(struct scan *sc)
{
	return ls_scan_radix_sort(sc, sc->blk, sc->n);
}

/* The blocks, sorted and indexed, the maps, the agent's own memory. */
int ls_scan_take_inventory(struct scan *sc, int *torn)
{
	int r = gather(sc, torn);

	if (!r)
		r = sort_blocks(sc);
	if (!r)
		r = ls_scan_index_blocks(sc);
	if (!r)
		r = ls_scan_parse_maps(sc);
	if (!r)		/* after ls_scan_parse_maps: our mappings so far are noted */
		ls_scan_note_own(sc);
	if (!r)		/* the fork image's child reads the register as it froze */
		r = ls_scan_note_alloc_maps(sc, !sc->safe);
	if (!r)		/* reads the heaps as ls_scan_parse_maps found them */
		r = ls_scan_note_fastbins(sc);
	return r;
}

int ls_scan_run_scan(struct scan *sc, const struct lsnap_check_thread *th,
		    uint32_t nth, uint64_t self_sp, uint64_t self_red,
		    struct ls_reach_result *res)
{
	uint64_t t0 = ls_now_ns(CLOCK_MONOTONIC);
	int r;

	sc->stack.elem = sizeof(uint32_t);
	r = ls_scan_take_inventory(sc, &res->torn);
	if (r)
		return r;
	ls_scan_mark_roots(sc, th, nth, self_sp, self_red);
	ls_scan_mark_all(sc);
	r = ls_scan_cliques(sc);
	if (!r)
		r = ls_scan_sum_up(sc, res);
	res->totals.scan_ns = ls_now_ns(CLOCK_MONOTONIC) - t0;
	res->totals.root_bytes = sc->root_bytes;
	res->totals.heap_bytes = sc->heap_bytes;
	res->totals.mem_bytes = sc->peak;
	res->totals.nthreads = nth;
	ls_scan_how.allocator = ls_heapmodel()->id;
	ls_scan_how.alloc_root_bytes = sc->alloc_root;
	ls_scan_how.alloc_unscanned_bytes = sc->alloc_unscanned;
	res->how = ls_scan_how;
	return r;
}
