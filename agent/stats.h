/*
 * stats.h - a site's figures beyond "live" as a reader sees them: its
 * live bytes at the process's peak, its temporary allocations and its
 * size and lifetime histograms, from the site's flushed counters plus
 * the threads' pending entries.
 *
 * For the snapshot writer and the post-mortem sampler, each under its
 * own lock; not for hooks.
 */
#ifndef LEAKSCOPE_AGENT_STATS_H
#define LEAKSCOPE_AGENT_STATS_H

#include <stddef.h>
#include <stdint.h>
#include "../common/lsnap.h"
#include "site.h"
#include "thread.h"

/*
 * The threads' pending entries summed by site.  Only sites that have a
 * pending entry get a row: at most LS_PENDING per thread record, found
 * through a small open-addressing index by site id.  (It used to be an
 * array by site id, 384 bytes for every site of the process: 11 MiB for
 * the 20k sites of a Python run, most of them with nothing pending.)
 */
struct ls_stats_row {
	int64_t peak_b, peak_k;
	uint64_t temp_b, temp_k;
	uint64_t hist[LS_PENDING_SIZE_HIST + LS_PENDING_LIFE_HIST];	/* pending entries count no
						   higher buckets */
};

struct ls_stats_sums {
	uint32_t nslots;	/* index slots, a power of two */
	uint32_t cap, used;	/* rows */
	uint32_t *index;	/* site id + 1, or 0 */
	uint32_t *row_of;	/* the row of each index slot */
	struct ls_stats_row *rows;
	size_t mapped;
};

/* Room for the pending entries of every thread record, all zero.  0, or
 * -ENOMEM when it could not grow: the sums are then zeroed at their old
 * size (entries beyond it count nothing there: ls_stats_add_pending
 * skips them, and those sites show their flushed counters only). */
int ls_stats_fit(struct ls_stats_sums *s);
void ls_stats_release(struct ls_stats_sums *s);
struct ls_stats_sums *ls_stats_shared(void);
/* Add one pending entry (an ls_thread_each_pending callback's work). */
void ls_stats_add_pending(struct ls_stats_sums *s, const struct ls_pending *p);
/*
 * Site's figures into *r and hist (size histogram, then lifetime), in
 * bytes and blocks (unscaled).  Returns whether there is anything: a
 * figure or a histogram count not 0.
 */
int ls_stats_site(const struct ls_stats_sums *s, const struct ls_site_rec *site,
		  struct lsnap_site_stats *r,
		  uint64_t hist[2 * LS_HIST_BUCKETS]);

#endif
