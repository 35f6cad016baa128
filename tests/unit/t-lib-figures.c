/*
 * t-lib-figures.c - the bound on a snapshot's figures
 * (ls_snapshot_check_figures, lib/snapshot.h) and the saturating sums of
 * lib/util.h, at their edges: what the fuzzers (tests/fuzz/) found
 * overflowing int64 in the reports.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "../../lib/snapshot.h"
#include "../../lib/util.h"
#include "tap.h"

#define MAX ((int64_t)LS_FIGURES_MAX)

static struct ls_site sites[3];
static struct ls_reach_figs reach[3];
static struct ls_block blocks[2];
static struct ls_snapshot snap = { .sites = sites, .nsites = 3,
				   .blocks = blocks, .nblocks = 2 };

static int check(void)
{
	char err[128] = "";
	int r = ls_snapshot_check_figures(&snap, err, sizeof(err));

	return r ? (strchr(err, '\n') || !err[0] ? -1000 : r) : 0;
}

static void reset(void)
{
	memset(sites, 0, sizeof(sites));
	memset(reach, 0, sizeof(reach));
	memset(blocks, 0, sizeof(blocks));
	sites[0].id = 1;
	sites[1].id = 2;
	sites[2].id = 3;
}

int main(void)
{
	reset();
	ok(!check(), "zero figures pass");
	sites[0].live_bytes = MAX;
	ok(!check(), "one site at 2^60 live bytes passes");
	sites[1].live_bytes = 1;
	ok(check() == -EINVAL, "2^60 + 1 over two sites: -EINVAL, one line");
	sites[1].live_bytes = -1;
	ok(check() == -EINVAL, "negative figures count by their size");
	reset();
	sites[2].live_blocks = INT64_MIN;
	ok(check() == -EINVAL, "INT64_MIN live blocks: -EINVAL");
	reset();
	sites[0].allocated_bytes = UINT64_MAX;
	ok(check() == -EINVAL, "2^64 - 1 allocated bytes: -EINVAL");
	reset();
	sites[0].stats.temp_blocks = (uint64_t)MAX + 1;
	ok(check() == -EINVAL, "temporary blocks over 2^60: -EINVAL");
	reset();
	sites[1].reach = &reach[1];
	sites[2].reach = &reach[2];
	reach[1].bytes[2] = (uint64_t)MAX / 2 + 1;
	reach[2].bytes[2] = (uint64_t)MAX / 2;
	ok(check() == -EINVAL, "a category's bytes over 2^60 in all: -EINVAL");
	reach[2].bytes[2]--;
	ok(!check(), "... and exactly 2^60: passes");
	reset();
	blocks[0].size = (uint64_t)MAX;
	blocks[1].size = 1;
	ok(check() == -EINVAL, "block sizes over 2^60 in all: -EINVAL");
	blocks[1].size = 0;
	ok(!check(), "... at 2^60: passes");

	is_u64((uint64_t)ls_add_sat(INT64_MAX, 1), (uint64_t)INT64_MAX,
	       "INT64_MAX + 1 holds at INT64_MAX");
	is_u64((uint64_t)ls_add_sat(INT64_MIN, -1), (uint64_t)INT64_MIN,
	       "INT64_MIN - 1 holds at INT64_MIN");
	is_u64((uint64_t)ls_add_sat(-5, 3), (uint64_t)-2, "-5 + 3 = -2");
	is_u64((uint64_t)ls_sub_sat(INT64_MIN, 1), (uint64_t)INT64_MIN,
	       "INT64_MIN - 1 (sub) holds at INT64_MIN");
	is_u64((uint64_t)ls_sub_sat(0, INT64_MIN), (uint64_t)INT64_MAX,
	       "0 - INT64_MIN holds at INT64_MAX");
	is_u64((uint64_t)ls_add_sat_u(1, UINT64_MAX), (uint64_t)INT64_MAX,
	       "an unsigned 2^64 - 1 holds at INT64_MAX");
	is_u64((uint64_t)ls_add_sat_u(-10, 4), (uint64_t)-6, "-10 + 4u = -6");
	return tap_done();
}
