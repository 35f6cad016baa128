/*
 * stats.c - peak, temporary and histogram figures of a site for readers.
 */
#include <errno.h>
#include <string.h>
#include "sample.h"
#include "stats.h"
#include "sys.h"

#define WORDS (4 + 2 * LS_PENDING_HIST)	/* uint64_t per site */

static struct ls_stats_sums shared;

struct ls_stats_sums *ls_stats_shared(void)
{
	return &shared;
}

int ls_stats_fit(struct ls_stats_sums *s, uint32_t n)
{
	uint32_t cap = n + n / 2;	/* room to grow, as the snapshot's
					   other working memory (snapwrite.c) */
	uint64_t *p;
	int ret = 0;

	if (n <= s->cap)
		goto zero;
	p = ls_sys_map((size_t)cap * WORDS * 8);
	if (!p) {
		ret = -ENOMEM;
		goto zero;
	}
	ls_stats_release(s);
	s->cap = cap;
	s->mapped = (size_t)cap * WORDS * 8;
	s->peak_b = (int64_t *)p;
	s->peak_k = s->peak_b + cap;
	s->temp_b = (uint64_t *)(s->peak_k + cap);
	s->temp_k = s->temp_b + cap;
	s->hist = s->temp_k + cap;
zero:
	if (s->mapped)
		memset(s->peak_b, 0, s->mapped);
	return ret;
}

void ls_stats_release(struct ls_stats_sums *s)
{
	if (s->mapped)
		ls_sys_unmap(s->peak_b, s->mapped);
	memset(s, 0, sizeof(*s));
}

void ls_stats_add_pending(struct ls_stats_sums *s, const struct ls_pending *p)
{
	uint32_t id = p->site->id;
	uint64_t *h;
	int64_t pb, pk;
	unsigned i;

	if (id >= s->cap)
		return;
	ls_pending_at_peak(p, &pb, &pk);
	s->peak_b[id] += pb;
	s->peak_k[id] += pk;
	s->temp_b[id] += p->temp_bytes;
	s->temp_k[id] += p->temp_blocks;
	h = s->hist + (size_t)id * 2 * LS_PENDING_HIST;
	for (i = 0; i < LS_PENDING_HIST; i++) {
		h[i] += p->size_hist[i];
		h[LS_PENDING_HIST + i] += p->life_hist[i];
	}
}

static uint64_t load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

int ls_stats_site(const struct ls_stats_sums *s, const struct ls_site_rec *site,
		  struct lsnap_site_stats *r, uint64_t hist[2 * LS_HIST_BUCKETS])
{
	uint32_t id = site->id;
	int in = id < s->cap;
	const uint64_t *h = in ? s->hist + (size_t)id * 2 * LS_PENDING_HIST :
				 NULL;
	int64_t pb, pk;
	uint64_t any = 0;
	unsigned i;

	ls_site_at_peak(site, &pb, &pk);
	memset(r, 0, sizeof(*r));
	r->site = id;
	r->nbuckets = LS_HIST_BUCKETS;
	r->peak_bytes = ls_sample_unscale(pb + (in ? s->peak_b[id] : 0));
	r->peak_blocks = ls_sample_unscale(pk + (in ? s->peak_k[id] : 0));
	r->temp_bytes = (uint64_t)ls_sample_unscale((int64_t)
		(load(&site->temp_bytes) + (in ? s->temp_b[id] : 0)));
	r->temp_blocks = (uint64_t)ls_sample_unscale((int64_t)
		(load(&site->temp_blocks) + (in ? s->temp_k[id] : 0)));
	for (i = 0; i < LS_HIST_BUCKETS; i++) {
		int pend = h && i < LS_PENDING_HIST;

		hist[i] = load(&site->size_hist[i]) + (pend ? h[i] : 0);
		hist[LS_HIST_BUCKETS + i] = load(&site->life_hist[i]) +
			(pend ? h[LS_PENDING_HIST + i] : 0);
		any |= hist[i] | hist[LS_HIST_BUCKETS + i];
	}
	return any || r->peak_bytes || r->peak_blocks || r->temp_blocks;
}
