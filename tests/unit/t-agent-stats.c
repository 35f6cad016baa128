/*
 * t-agent-stats.c - the readers' sums of the threads' pending entries
 * (agent/stats.c): exact per site, sized by the pending entries that can
 * exist and not by the number of sites.
 */
#include <string.h>
#include "../../agent/stats.h"
#include "tap.h"

#define SITES 20000

static struct ls_site_rec *site[SITES];

static void make_sites(void)
{
	uint64_t pcs[4];
	uint32_t i;

	for (i = 0; i < SITES; i++) {
		pcs[0] = 0x401000;
		pcs[1] = 0x402000 + i;
		pcs[2] = 0x403000;
		pcs[3] = i;
		site[i] = ls_site_intern(pcs, 4, 0, ls_site_hash(pcs, 4, 0));
	}
}

/* A pending entry of site s: n allocations of 100 bytes (size bucket 7),
 * t of them temporaries, freed within a tick (lifetime bucket 0). */
static struct ls_pending pending(struct ls_site_rec *s, unsigned n,
				 unsigned t)
{
	struct ls_pending p;

	memset(&p, 0, sizeof(p));
	p.site = s;
	p.key = ls_pending_key(s->id);
	p.events = (uint8_t)n;
	p.live_blocks = (int64_t)(n - t);
	p.live_bytes = 100 * (int64_t)(n - t);
	p.ended_blocks = t;	/* n allocated */
	p.ended_bytes = 100ull * t;
	p.temp_blocks = t;
	p.temp_bytes = 100ull * t;
	p.size_hist[7] = (uint8_t)n;
	p.life_hist[0] = (uint8_t)t;
	/* Changed since the last peak: its live deltas are its part of
	 * the peak. */
	p.peak_gen = ls_peak.gen + 1;
	return p;
}

int main(void)
{
	struct ls_stats_sums sums;
	struct lsnap_site_stats r;
	uint64_t h[2 * LS_HIST_BUCKETS];
	struct ls_pending p;
	uint32_t i, rows, bad = 0;

	memset(&sums, 0, sizeof(sums));
	make_sites();
	ok(site[SITES - 1] && ls_site_count() == SITES, "%u sites", SITES);

	ok(ls_stats_fit(&sums) == 0, "the sums fit");
	rows = sums.cap;
	/* No thread record in this test: room for 4 records' entries. */
	is_u64(rows, 4 * LS_PENDING, "rows for the pending entries of 4 records");
	ok(sums.mapped <= (size_t)4 * LS_PENDING *
			  (sizeof(struct ls_stats_row) + 16),
	   "%zu bytes mapped for %u sites: sized by the pending entries, not "
	   "by the sites (384 bytes a site before)", sums.mapped, SITES);

	/* Three entries of site 5 (three threads), one of every other
	 * site up to rows - 1. */
	for (i = 0; i < 3; i++) {
		p = pending(site[5], 10 + i, 2);
		ls_stats_add_pending(&sums, &p);
	}
	for (i = 0; i < rows - 1; i++)
		if (i != 5) {
			p = pending(site[i], 1, 1);
			ls_stats_add_pending(&sums, &p);
		}
	ok(ls_stats_site(&sums, site[5], &r, h), "site 5 has figures");
	ok(r.temp_blocks == 6 && r.temp_bytes == 600 && h[7] == 33 &&
	   h[LS_HIST_BUCKETS] == 6,
	   "three threads' entries of one site summed: 6 temporaries, 33 "
	   "sizes in bucket 7, 6 lifetimes in bucket 0 (%llu, %llu, %llu)",
	   (unsigned long long)r.temp_blocks, (unsigned long long)h[7],
	   (unsigned long long)h[LS_HIST_BUCKETS]);
	ok(r.peak_bytes == 2700 && r.peak_blocks == 27,
	   "bytes and blocks at the peak: the live deltas (%lld, %lld)",
	   (long long)r.peak_bytes, (long long)r.peak_blocks);
	for (i = 0; i < rows - 1; i++) {
		if (i == 5)
			continue;
		ls_stats_site(&sums, site[i], &r, h);
		bad += r.temp_blocks != 1 || h[7] != 1 || r.peak_blocks != 0;
	}
	ok(bad == 0, "%u other sites, one entry each, each exact (%u wrong)",
	   rows - 2, bad);

	/* Full: a new site's entry is skipped, its figures are its flushed
	 * counters only (here none). */
	p = pending(site[rows - 1], 1, 1);
	ls_stats_add_pending(&sums, &p);
	p = pending(site[rows], 1, 1);
	ls_stats_add_pending(&sums, &p);
	ok(!ls_stats_site(&sums, site[rows], &r, h) && r.temp_blocks == 0,
	   "beyond the rows, an entry is left out, not misfiled");
	ls_stats_site(&sums, site[rows - 1], &r, h);
	ok(r.temp_blocks == 1, "the last row was taken");

	/* The next reader starts from zero. */
	ok(ls_stats_fit(&sums) == 0 && sums.used == 0, "refit: empty");
	ls_stats_site(&sums, site[5], &r, h);
	ok(r.temp_blocks == 0 && h[7] == 0, "refit: site 5 sums nothing");
	ls_stats_release(&sums);
	return tap_done();
}
