/*
 * lspm.h - the post-mortem file: the agent's site table and growth
 * history, kept in a file-backed shared mapping so that it outlives the
 * process (SIGKILL, the OOM killer).
 *
 * <runtime dir>/<pid>.pm is a sparse file of fixed layout: a header, then
 * regions at the offsets the header gives.  The agent's sampler updates it
 * in place once per period (default 1 s) between two increments of
 * header.seq: an odd seq means an update was in progress (a reader retries,
 * or after a crash accepts it as "torn").  All integers are native
 * little-endian; every offset and count is validated by readers.
 */
#ifndef LEAKSCOPE_LSPM_H
#define LEAKSCOPE_LSPM_H

#include <stdint.h>
#include "lsnap.h"

#define LSPM_MAGIC "LSPMORT"
#define LSPM_VERSION 4		/* 1: a history row for every site, by id;
				   2: no peak, temporaries, histograms;
				   3: a wide stats slot for every site and a
				   history row for every site that held
				   memory at a sample */
#define LSPM_HEADER_SIZE 65536
#define LSPM_CMDLINE_MAX 16384
#define LSPM_PATH_MAX 984	/* module entry = 1024 bytes */
#define LSPM_NCALLS 16

struct lspm_header {
	char magic[8];
	uint32_t version;
	uint32_t header_size;
	uint32_t pid, ppid;
	uint64_t start_wall_ns, start_mono_ns;
	uint32_t period_ms;	/* sampling period */
	uint32_t hist_len;	/* samples kept per site (ring) */
	uint64_t seq;		/* odd while an update is in progress */
	uint64_t ticks;		/* samples taken since start or the last
				   reset; sample k is in slot k % hist_len */
	uint64_t last_wall_ns, last_mono_ns;	/* time of the last sample */
	uint64_t first_mono_ns;	/* time of sample 0 */
	uint32_t mode, max_depth;
	uint64_t sample_rate;
	uint32_t nsites, sites_cap;
	uint32_t nmodules, modules_cap;
	uint64_t frames_used, frames_cap;
	uint64_t modules_off, sites_off, frames_off, hist_off;
	uint32_t nthreads, module_gen;
	uint32_t exited;	/* 1 once the process exited normally */
	uint32_t ncalls;
	struct lsnap_totals totals;
	struct lsnap_mallinfo mallinfo;
	struct lsnap_call calls[LSPM_NCALLS];
	uint32_t cmdline_len;
	char cmdline[LSPM_CMDLINE_MAX];
	/* Version 2: history rows only for sites that held memory at a
	 * sample.  rows_off: uint32_t hist_row[sites_cap], 0 = none yet,
	 * else 1 + the row; rows are handed out in order, never reused. */
	uint64_t rows_off;
	uint32_t rows_used, rows_cap;
	/* Version 3: stats_off: struct lspm_site_stats[sites_cap], by site
	 * id, written for the sites below nsites at each sample; the peak
	 * as lsnap_peak (all zero in older versions). */
	uint64_t stats_off;
	struct lsnap_peak peak;
	/* Allocation events missing from the figures: those the agent could
	 * not record, and the live blocks of sites the file could not hold
	 * (its regions are mapped as they fill, and can run out of address
	 * space).  0 in files written before it existed. */
	uint64_t dropped;
	/* Version 4: stats_off holds struct lspm_site_brief[sites_cap], by
	 * site id, instead of lspm_site_stats; wide_off holds struct
	 * lspm_site_stats[wide_cap], wide slots handed out in order, never
	 * reused, for sites whose histograms do not fit a brief slot.  A
	 * history row only for a site whose live bytes changed after it
	 * first held memory (lspm_hist_sample()).  tails_off holds struct
	 * lspm_tail[sites_cap], by site id. */
	uint64_t wide_off;
	uint32_t wide_used, wide_cap;
	uint64_t tails_off;
} __attribute__((packed));

/* A site's peak, temporaries and histograms (lsnap.h), fixed size. */
struct lspm_site_stats {
	struct lsnap_site_stats s;	/* s.nbuckets = LSNAP_HIST_BUCKETS */
	uint64_t size_hist[LSNAP_HIST_BUCKETS];
	uint64_t life_hist[LSNAP_HIST_BUCKETS];
} __attribute__((packed));

/*
 * Version 4: a site's stats in 64 bytes, and when it has no history row,
 * where its history starts.  Each used pair is a histogram bucket that is
 * not 0: bits 59-63 the bucket, bit 58 set for the lifetime histogram
 * (else the size histogram), bits 0-57 the count; an unused pair is 0.
 * A site with more buckets than pairs, or a count from 2^58, has a wide
 * slot (wide = 1 + its index), which then holds all its stats; the
 * brief slot's stats fields are not used.
 */
#define LSPM_BRIEF_PAIRS 3
#define LSPM_PAIR_LIFE (1ull << 58)
#define LSPM_PAIR_COUNT (LSPM_PAIR_LIFE - 1)
#define LSPM_PAIR_BUCKET_SHIFT 59

struct lspm_site_brief {
	int64_t peak_bytes, peak_blocks;
	uint64_t temp_bytes, temp_blocks;
	uint64_t pair[LSPM_BRIEF_PAIRS];
	uint32_t wide;		/* 0, or 1 + its slot in the wide region */
	uint32_t since;		/* without a history row: the sample from
				   which its live bytes have been what the
				   site record says (0 before it) */
} __attribute__((packed));

/*
 * Version 4: where a site's stack ends as an earlier site's does.  site 0:
 * the frames region holds all of its nframes frames; else the region
 * holds its first nframes - (n - skip) frames at frames_idx, and the rest
 * are the frames from index skip on of site `site - 1` (a smaller id),
 * whose stack has n frames: deep stacks share their outer frames (python3:
 * 735k frames in 19.7k stacks, 108k of them not the previous site's).
 */
struct lspm_tail {
	uint32_t site;		/* 0, or 1 + the earlier site's id */
	uint32_t skip;
} __attribute__((packed));

struct lspm_module {
	struct lsnap_module m;	/* m.path_len <= LSPM_PATH_MAX */
	char path[LSPM_PATH_MAX];
} __attribute__((packed));

struct lspm_site {
	uint32_t id, kind, gen, nframes;
	uint64_t frames_idx;	/* index into the frames region */
	int64_t live_bytes, live_blocks;
	uint64_t allocated_bytes, allocated_blocks;
} __attribute__((packed));

/* history: int64_t live_bytes[rows_cap][hist_len] at hist_off (version
 * 1: [sites_cap][hist_len], row = site id) */

/*
 * Sample t (counted from the first after start or reset, so slot
 * t % hist_len of a row) of a site's history in version 4: its row's if
 * it has one, else 0 before `since` and the site record's live bytes from
 * it on (a site gets a row when its live bytes change after it first
 * held memory: most hold what they got at start for good).
 */
static inline int64_t lspm_hist_sample(const int64_t *ring, uint32_t hist_len,
				       uint64_t t, uint64_t since, int64_t live)
{
	if (ring)
		return ring[t % hist_len];
	return t < since ? 0 : live;
}

#endif
