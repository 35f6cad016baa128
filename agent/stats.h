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

/* Per-site sums of the threads' pending entries, in counter units. */
struct ls_stats_sums {
	uint32_t cap;
	int64_t *peak_b, *peak_k;
	uint64_t *temp_b, *temp_k;
	uint64_t *hist;		/* [cap][2 * LS_PENDING_HIST]: pending
				   entries count no higher buckets */
	size_t mapped;
};

/* Room for n sites, all zero.  0, or -ENOMEM when it could not grow:
 * the sums are then zeroed at their old size (sites beyond it count
 * nothing there: ls_stats_add_pending skips them). */
int ls_stats_fit(struct ls_stats_sums *s, uint32_t n);
void ls_stats_release(struct ls_stats_sums *s);
/*
 * The sums the snapshot writer and the post-mortem sampler share: both
 * run under the snapshot lock (snapwrite.h), never at once.  Grown ahead
 * by ls_snapwrite_prepare(), from the agent's start, so that neither
 * needs memory the program may have used up.
 */
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
