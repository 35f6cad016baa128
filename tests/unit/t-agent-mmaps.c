/*
 * t-agent-mmaps.c - tracked mapping ranges: whole, head, tail and middle
 * unmaps, and the site deltas they report.
 */
#include <string.h>
#include "../../agent/mmaps.h"
#include "tap.h"

static int64_t dbytes[8], dblocks[8];

static void delta(uint32_t site, int64_t b, int64_t k, void *arg)
{
	dbytes[site] += b;
	dblocks[site] += k;
}

static void add(uint64_t addr, uint64_t len, uint32_t site)
{
	struct ls_live_entry e = { .addr = addr, .size = len, .site = site };

	ls_mmaps_add(&e);
	dbytes[site] += (int64_t)len;
	dblocks[site]++;
}

static size_t ranges(struct ls_live_entry *buf)
{
	return ls_mmaps_copy(buf, 64);
}

int main(void)
{
	struct ls_live_entry r[64];
	uint64_t P = 4096;

	add(10 * P, 10 * P, 1);
	add(100 * P, 4 * P, 2);
	is_u64(ranges(r), 2, "two ranges");
	is_u64(ls_mmaps_remove(10 * P, 2 * P, delta, NULL), 2 * P, "head unmap removes 2 pages");
	is_u64(dbytes[1], 8 * P, "site 1 lost the head");
	ls_mmaps_remove(18 * P, 2 * P, delta, NULL);
	is_u64(dbytes[1], 6 * P, "site 1 lost the tail");
	ls_mmaps_remove(14 * P, 1 * P, delta, NULL);
	is_u64(dbytes[1], 5 * P, "middle unmap: 5 pages left");
	is_u64(dblocks[1], 2, "middle unmap splits into 2 ranges");
	is_u64(ranges(r), 3, "three ranges now");
	ok(r[0].addr == 12 * P && r[0].size == 2 * P &&
	   r[1].addr == 15 * P && r[1].size == 3 * P,
	   "split ranges are [12,14) and [15,18) pages");
	is_u64(ls_mmaps_remove(0, 200 * P, delta, NULL), 9 * P, "unmapping everything covers all tracked bytes");
	ok(dbytes[1] == 0 && dblocks[1] == 0 && dbytes[2] == 0 && dblocks[2] == 0,
	   "sites back to zero");
	is_u64(ls_mmaps_remove(0, 200 * P, delta, NULL), 0, "unmapping untracked memory changes nothing");
	return tap_done();
}
