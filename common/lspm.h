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
#define LSPM_VERSION 3		/* 1: a history row for every site, by id;
				   2: no peak, temporaries, histograms */
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
} __attribute__((packed));

/* A site's peak, temporaries and histograms (lsnap.h), fixed size. */
struct lspm_site_stats {
	struct lsnap_site_stats s;	/* s.nbuckets = LSNAP_HIST_BUCKETS */
	uint64_t size_hist[LSNAP_HIST_BUCKETS];
	uint64_t life_hist[LSNAP_HIST_BUCKETS];
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

#endif
