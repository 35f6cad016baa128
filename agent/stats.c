/*
 * stats.c - peak, temporary and histogram figures of a site for readers.
 */
#include <errno.h>
#include <string.h>
#include "sample.h"
#include "stats.h"
#include "sys.h"

static struct ls_stats_sums shared;

struct ls_stats_sums *ls_stats_shared(void)
{
	return &shared;
}

static size_t sums_bytes(uint32_t nslots, uint32_t cap)
{
	return (size_t)nslots * 2 * sizeof(uint32_t) +
	       (size_t)cap * sizeof(struct ls_stats_row);
}

int ls_stats_fit(struct ls_stats_sums *s)
{
	/* Records may be claimed while the caller sums: room for a few
	 * more, and half the index slots free.  No more rows than sites
	 * (and those interned meanwhile): many threads times LS_PENDING
	 * would otherwise map hundreds of MiB for a program of few sites. */
	uint32_t limit = (ls_thread_records() + 4) * LS_PENDING, nslots = 1024;
	uint32_t cap = ls_site_count() + LS_PENDING * 8;
	char *p;
	int ret = 0;

	if (cap > limit)
		cap = limit;
	/* A program still interning sites would outgrow each fit by a few
	 * rows and remap at every sample: grow by at least half. */
	if (cap > s->cap && cap < s->cap + s->cap / 2)
		cap = s->cap + s->cap / 2 < limit ? s->cap + s->cap / 2 : limit;

	while (nslots < cap * 2)
		nslots *= 2;
	if (cap <= s->cap)
		goto zero;
	p = ls_sys_map(sums_bytes(nslots, cap));
	if (!p) {
		ret = -ENOMEM;
		goto zero;
	}
	ls_stats_release(s);
	s->nslots = nslots;
	s->cap = cap;
	s->mapped = sums_bytes(nslots, cap);
	s->rows = (struct ls_stats_row *)(void *)p;
	s->index = (uint32_t *)(void *)(s->rows + cap);
	s->row_of = s->index + nslots;
zero:
	if (s->mapped) {
		memset(s->rows, 0, s->used * sizeof(struct ls_stats_row));
		memset(s->index, 0, s->nslots * sizeof(uint32_t));
	}
	s->used = 0;
	return ret;
}

void ls_stats_release(struct ls_stats_sums *s)
{
	if (s->mapped)
		ls_sys_unmap(s->rows, s->mapped);
	memset(s, 0, sizeof(*s));
}

static inline uint32_t home(const struct ls_stats_sums *s, uint32_t id)
{
	return (uint32_t)(((uint64_t)id * 0x9e3779b97f4a7c15ULL) >> 40) &
	       (s->nslots - 1);
}

/* Site id's row, created when create is set and there is room; NULL. */
static struct ls_stats_row *row(struct ls_stats_sums *s, uint32_t id,
				int create)
{
	uint32_t i, n;

	if (!s->nslots)
		return NULL;
	for (i = home(s, id), n = 0; n < s->nslots;
	     i = (i + 1) & (s->nslots - 1), n++) {
		if (s->index[i] == id + 1)
			return &s->rows[s->row_of[i]];
		if (!s->index[i])
			break;
	}
	if (!create || n == s->nslots || s->used == s->cap)
		return NULL;
	s->index[i] = id + 1;
	s->row_of[i] = s->used;
	return &s->rows[s->used++];
}

void ls_stats_add_pending(struct ls_stats_sums *s, const struct ls_pending *p)
{
	struct ls_stats_row *r = row(s, p->site->id, 1);
	int64_t pb, pk;
	unsigned i;

	if (!r)
		return;
	ls_pending_at_peak(p, &pb, &pk);
	r->peak_b += pb;
	r->peak_k += pk;
	r->temp_b += p->temp_bytes;
	r->temp_k += p->temp_blocks;
	for (i = 0; i < LS_PENDING_SIZE_HIST; i++)
		r->hist[i] += p->size_hist[i];
	for (i = 0; i < LS_PENDING_LIFE_HIST; i++)
		r->hist[LS_PENDING_SIZE_HIST + i] += p->life_hist[i];
}

static uint64_t load(const uint64_t *p)
{
	return __atomic_load_n(p, __ATOMIC_RELAXED);
}

int ls_stats_site(const struct ls_stats_sums *s, const struct ls_site_rec *site,
		  struct lsnap_site_stats *r, uint64_t hist[2 * LS_HIST_BUCKETS])
{
	const struct ls_stats_row *p = row((struct ls_stats_sums *)s,
					   site->id, 0);
	int64_t pb, pk;
	uint64_t any = 0;
	unsigned i;

	ls_site_at_peak(site, &pb, &pk);
	memset(r, 0, sizeof(*r));
	r->site = site->id;
	r->nbuckets = LS_HIST_BUCKETS;
	r->peak_bytes = ls_sample_unscale(pb + (p ? p->peak_b : 0));
	r->peak_blocks = ls_sample_unscale(pk + (p ? p->peak_k : 0));
	r->temp_bytes = (uint64_t)ls_sample_unscale((int64_t)
		(load(&site->temp_bytes) + (p ? p->temp_b : 0)));
	r->temp_blocks = (uint64_t)ls_sample_unscale((int64_t)
		(load(&site->temp_blocks) + (p ? p->temp_k : 0)));
	ls_site_hist(site, hist);
	for (i = 0; i < LS_HIST_BUCKETS; i++) {
		hist[i] += p && i < LS_PENDING_SIZE_HIST ? p->hist[i] : 0;
		hist[LS_HIST_BUCKETS + i] += p && i < LS_PENDING_LIFE_HIST ?
			p->hist[LS_PENDING_SIZE_HIST + i] : 0;
		any |= hist[i] | hist[LS_HIST_BUCKETS + i];
	}
	return any || r->peak_bytes || r->peak_blocks || r->temp_blocks;
}
