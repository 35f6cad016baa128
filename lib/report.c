/*
 * report.c - filters, aggregation and sorting of a snapshot's sites.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "report.h"
#include "symbolize.h"
#include "trend.h"
#include "util.h"

/* Per-site sums over the blocks that pass the filters. */
struct agg {
	struct ls_reach_figs reach;
	int64_t bytes, blocks;
	double est_bytes, est_blocks;	/* sampled mode */
	size_t nblk;
};

/* Site ids to indexes into snap->sites, for the block -> site join. */
struct site_idx {
	uint32_t id;
	uint32_t i;
};

const char *const ls_report_by_names[] = {
	"live", "peak", "allocated", "temporary", NULL,
};

uint64_t ls_hist_lo(unsigned b)
{
	return b ? 1ull << (b - 1) : 0;
}

double ls_report_per_second(const struct ls_snapshot *snap, uint64_t v)
{
	uint64_t span = snap->hdr.mono_ns > snap->hdr.start_mono_ns ?
		snap->hdr.mono_ns - snap->hdr.start_mono_ns : 0;

	return span ? (double)v * 1e9 / (double)span : 0;
}

/* The figure a site is sorted by. */
static void site_key(const struct ls_site *s, int by, int64_t *bytes,
		     int64_t *blocks)
{
	switch (by) {
	case LS_BY_PEAK:
		*bytes = s->stats.peak_bytes;
		*blocks = s->stats.peak_blocks;
		break;
	case LS_BY_ALLOCATED:
		*bytes = (int64_t)s->allocated_bytes;
		*blocks = (int64_t)s->allocated_blocks;
		break;
	case LS_BY_TEMPORARY:
		*bytes = (int64_t)s->stats.temp_bytes;
		*blocks = (int64_t)s->stats.temp_blocks;
		break;
	default:
		*bytes = s->live_bytes;
		*blocks = s->live_blocks;
	}
}

void ls_report_opts_finish(struct ls_report_opts *opts)
{
	opts->need_blocks = opts->min_age_ns || opts->min_size ||
		opts->max_size || opts->show_allocs;
}

static const char *const kind_words[LSNAP_REACH_KINDS] = {
	"definite", "indirect", "possible", "reachable",
};
static const char *const kind_names[LSNAP_REACH_KINDS] = {
	"definitely lost", "indirectly lost", "possibly lost",
	"still reachable",
};

const char *ls_reach_kind_word(unsigned kind)
{
	return kind < LSNAP_REACH_KINDS ? kind_words[kind] : "none";
}

const char *ls_reach_kind_name(unsigned kind)
{
	return kind < LSNAP_REACH_KINDS ? kind_names[kind] : "not classified";
}

const char *ls_reach_heur_name(unsigned heur)
{
	static const char *const names[LSNAP_HEUR_KINDS] = {
		"none", "stdstring", "length64", "newarray",
		"multipleinheritance",
	};

	return heur < LSNAP_HEUR_KINDS ? names[heur] : "none";
}

const char *ls_reach_fallback_text(unsigned why, const char **word)
{
	static const char *const words[LSNAP_FALLBACKS] = {
		NULL, "kernel", "log", "budget", "overrun", "error",
	};
	static const char *const texts[LSNAP_FALLBACKS] = {
		NULL,
		"the kernel lacks asynchronous write-protection "
		"(userfaultfd WP_ASYNC, Linux 6.7+)",
		"the program outran the change log (a record was lost)",
		"the concurrent method's last rescan would have held the "
		"threads longer than the pause budget",
		"the concurrent method's last rescan ran past the pause budget "
		"and was abandoned",
		"the concurrent mark failed (out of memory, or the maps "
		"unreadable)",
	};

	if (why >= LSNAP_FALLBACKS)
		why = LSNAP_FALLBACK_ERROR;
	if (word)
		*word = words[why];
	return texts[why];
}

const char *ls_heap_alloc_name(unsigned id)
{
	static const char *const names[LSNAP_ALLOCS] = {
		"glibc", "jemalloc", "other", "tcmalloc",
	};

	return id < LSNAP_ALLOCS ? names[id] : "other";
}

int ls_reach_parse_kinds(const char *s, unsigned *bits, char *err,
			 size_t errlen)
{
	unsigned k, b = 0;
	size_t len;

	while (*s) {
		len = strcspn(s, ",");
		for (k = 0; k < LSNAP_REACH_KINDS; k++)
			if (len == strlen(kind_words[k]) &&
			    !strncmp(s, kind_words[k], len))
				break;
		/* valgrind's --show-leak-kinds=all */
		if (len == 3 && !strncmp(s, "all", 3)) {
			b = (1u << LSNAP_REACH_KINDS) - 1;
		} else if (k == LSNAP_REACH_KINDS) {
			snprintf(err, errlen, "unknown kind '%.*s' (expected "
				 "definite, indirect, possible, reachable or "
				 "all)", (int)(len > 64 ? 64 : len), s);
			return -EINVAL;
		} else {
			b |= 1u << k;
		}
		s += len + (s[len] == ',');
	}
	if (!b) {
		snprintf(err, errlen, "no kind given (expected definite, "
			 "indirect, possible, reachable or all)");
		return -EINVAL;
	}
	*bits = b;
	return 0;
}

/* The kinds a report keeps: every kind without --only. */
static unsigned kinds_kept(const struct ls_report_opts *o)
{
	return o->only ? o->only : (1u << LSNAP_REACH_KINDS) - 1;
}

static int block_passes(const struct ls_snapshot *snap,
			const struct ls_report_opts *o, const struct ls_block *b)
{
	if (snap->has_reach && o->only &&
	    (b->reach >= LSNAP_REACH_KINDS || !(o->only & 1u << b->reach)))
		return 0;
	if (ls_block_age_ns(snap, b) < o->min_age_ns)
		return 0;
	if (b->size < o->min_size)
		return 0;
	return !o->max_size || b->size <= o->max_size;
}

static int cmp_idx(const void *a, const void *b)
{
	const struct site_idx *x = a, *y = b;

	return x->id < y->id ? -1 : x->id > y->id;
}

static struct site_idx *index_sites(const struct ls_snapshot *snap)
{
	struct site_idx *ix = malloc((snap->nsites ? snap->nsites : 1) *
				     sizeof(*ix));
	size_t i;

	if (!ix)
		return NULL;
	for (i = 0; i < snap->nsites; i++) {
		ix[i].id = snap->sites[i].id;
		ix[i].i = (uint32_t)i;
	}
	qsort(ix, snap->nsites, sizeof(*ix), cmp_idx);
	return ix;
}

static long site_index(const struct site_idx *ix, size_t n, uint32_t id)
{
	struct site_idx key = { .id = id };
	const struct site_idx *hit = bsearch(&key, ix, n, sizeof(*ix), cmp_idx);

	return hit ? (long)hit->i : -1;
}

/*
 * Poisson byte sampling picks a block of size s with probability
 * 1 - exp(-s / rate); weighting each sampled block by the inverse gives
 * unbiased estimates of bytes and blocks (docs/SAMPLING.md).  Mappings
 * are always recorded: weight 1.
 */
static double sample_weight(const struct ls_snapshot *snap,
			    const struct ls_site *site, uint64_t size)
{
	double p;

	if (snap->hdr.mode != LSNAP_MODE_SAMPLED || !snap->hdr.sample_rate ||
	    site->kind != LSNAP_KIND_HEAP)
		return 1.0;
	p = -expm1(-(double)size / (double)snap->hdr.sample_rate);
	return p > 0 ? 1.0 / p : 1.0;
}

static void add_block(struct agg *a, const struct ls_snapshot *snap,
		      const struct ls_site *site, const struct ls_block *b)
{
	double w = sample_weight(snap, site, b->size);

	a->bytes = ls_add_sat_u(a->bytes, b->size);
	a->blocks++;
	a->est_bytes += w * (double)b->size;
	a->est_blocks += w;
	a->nblk++;
	if (b->reach < LSNAP_REACH_KINDS) {
		a->reach.bytes[b->reach] += b->size;
		a->reach.blocks[b->reach]++;
	}
}

int ls_report_site_listed(const struct ls_site *s, int by)
{
	int64_t b, k;

	/* Allocator chunks and reservations: in the totals, apart. */
	if (!lsnap_kind_live(s->kind))
		return 0;
	site_key(s, by, &b, &k);
	return k > 0 || b > 0;
}

static int site_has_live(const struct ls_site *s)
{
	return ls_report_site_listed(s, LS_BY_LIVE);
}

/* Room for n sites, and for their reachability figures when the
 * snapshot has them: -ENOMEM, or 0. */
static int alloc_sites(const struct ls_snapshot *snap, struct ls_report *rep,
		       size_t n)
{
	rep->sites = calloc(n ? n : 1, sizeof(*rep->sites));
	if (snap->has_reach)
		rep->site_reach = calloc(n ? n : 1, sizeof(*rep->site_reach));
	return !rep->sites || (snap->has_reach && !rep->site_reach) ?
		-ENOMEM : 0;
}

/* The report's site r (at its place in rep->sites) from snapshot site s. */
static void fill_site(struct ls_report *rep, struct ls_report_site *r,
		      const struct ls_site *s)
{
	memset(r, 0, sizeof(*r));
	if (rep->site_reach) {
		r->reach = &rep->site_reach[r - rep->sites];
		memset(r->reach, 0, sizeof(*r->reach));
	}
	r->site = s;
	r->live_bytes = s->live_bytes;
	r->live_blocks = s->live_blocks;
	r->allocated_bytes = s->allocated_bytes;
	r->allocated_blocks = s->allocated_blocks;
}

/*
 * With a check, a site's figures are those of the kinds kept; a mapping
 * (not classified) is kept only without --only.
 */
static void keep_kinds(const struct ls_snapshot *snap,
		       const struct ls_report_opts *o, struct ls_report_site *r)
{
	unsigned k, keep = kinds_kept(o);
	int64_t bytes = 0, blocks = 0;

	if (!snap->has_reach || r->site->kind == LSNAP_KIND_MMAP) {
		if (snap->has_reach && o->only)
			r->live_bytes = r->live_blocks = 0;
		return;
	}
	*r->reach = *ls_site_reach(r->site);
	for (k = 0; k < LSNAP_REACH_KINDS; k++) {
		if (!(keep & 1u << k)) {
			r->reach->bytes[k] = r->reach->blocks[k] = 0;
			continue;
		}
		bytes = ls_add_sat_u(bytes, r->reach->bytes[k]);
		blocks = ls_add_sat_u(blocks, r->reach->blocks[k]);
	}
	if (!(keep & 1u << LSNAP_REACH_DEFINITE))
		r->reach->indirect_bytes = r->reach->indirect_blocks = 0;
	if (o->only) {
		r->live_bytes = bytes;
		r->live_blocks = blocks;
	}
}

static int from_sites(const struct ls_snapshot *snap,
		      const struct ls_report_opts *o, struct ls_report *rep)
{
	size_t i, n = 0;

	for (i = 0; i < snap->nsites; i++)
		n += ls_report_site_listed(&snap->sites[i], o->by);
	if (alloc_sites(snap, rep, n))
		return -ENOMEM;
	for (i = 0; i < snap->nsites; i++) {
		struct ls_report_site *r;

		if (!ls_report_site_listed(&snap->sites[i], o->by))
			continue;
		r = &rep->sites[rep->nsites];
		fill_site(rep, r, &snap->sites[i]);
		keep_kinds(snap, o, r);
		rep->nsites += o->by != LS_BY_LIVE ||
			       r->live_blocks > 0 || r->live_bytes > 0;
	}
	return 0;
}

int ls_block_cmp_age(const void *a, const void *b)
{
	const struct ls_block *x = *(const struct ls_block *const *)a;
	const struct ls_block *y = *(const struct ls_block *const *)b;

	if (x->birth_ns != y->birth_ns)
		return x->birth_ns < y->birth_ns ? -1 : 1;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* Second pass for show_allocs: each kept site's blocks, oldest first. */
static int collect_blocks(const struct ls_snapshot *snap,
			  const struct ls_report_opts *o,
			  const struct site_idx *ix, const long *slot,
			  struct ls_report *rep)
{
	size_t i;

	for (i = 0; i < rep->nsites; i++) {
		struct ls_report_site *r = &rep->sites[i];

		r->blocks = calloc(r->nblocks, sizeof(*r->blocks));
		if (!r->blocks)
			return -ENOMEM;
		r->nblocks = 0;
	}
	for (i = 0; i < snap->nblocks; i++) {
		const struct ls_block *b = &snap->blocks[i];
		long si = site_index(ix, snap->nsites, b->site);
		struct ls_report_site *r;

		if (si < 0 || slot[si] < 0 || !block_passes(snap, o, b))
			continue;
		r = &rep->sites[slot[si]];
		r->blocks[r->nblocks++] = b;
	}
	for (i = 0; i < rep->nsites; i++)
		if (rep->sites[i].nblocks)	/* else blocks may be NULL */
			qsort(rep->sites[i].blocks, rep->sites[i].nblocks,
			      sizeof(*rep->sites[i].blocks), ls_block_cmp_age);
	return 0;
}

/* Turn the per-site sums into report sites; slot[i] gets the report
 * index of snap->sites[i], or -1. */
static int agg_to_sites(const struct ls_snapshot *snap, const struct agg *a,
			long *slot, struct ls_report *rep)
{
	int sampled = snap->hdr.mode == LSNAP_MODE_SAMPLED;
	size_t i, n = 0;

	for (i = 0; i < snap->nsites; i++)
		n += a[i].nblk > 0 && lsnap_kind_live(snap->sites[i].kind);
	if (alloc_sites(snap, rep, n))
		return -ENOMEM;
	for (i = 0; i < snap->nsites; i++) {
		struct ls_report_site *r;

		slot[i] = -1;
		if (!a[i].nblk || !lsnap_kind_live(snap->sites[i].kind))
			continue;
		slot[i] = (long)rep->nsites;
		r = &rep->sites[rep->nsites++];
		fill_site(rep, r, &snap->sites[i]);
		r->live_bytes = sampled ? llround(a[i].est_bytes) : a[i].bytes;
		r->live_blocks = sampled ? llround(a[i].est_blocks) : a[i].blocks;
		r->nblocks = a[i].nblk;
		if (!r->reach)
			continue;
		*r->reach = a[i].reach;
		/* What a lost block holds is the check's, not filtered. */
		if (r->reach->blocks[LSNAP_REACH_DEFINITE] ==
		    ls_site_reach(r->site)->blocks[LSNAP_REACH_DEFINITE]) {
			r->reach->indirect_bytes = ls_site_reach(r->site)->indirect_bytes;
			r->reach->indirect_blocks = ls_site_reach(r->site)->indirect_blocks;
		}
	}
	return 0;
}

static int any_live(const struct ls_snapshot *snap)
{
	size_t i;

	for (i = 0; i < snap->nsites; i++)
		if (site_has_live(&snap->sites[i]))
			return 1;
	return 0;
}

static int from_blocks(const struct ls_snapshot *snap,
		       const struct ls_report_opts *o, struct ls_report *rep)
{
	struct site_idx *ix = NULL;
	struct agg *a = NULL;
	long *slot = NULL;
	size_t i;
	int ret = -ENOMEM;

	if (!snap->has_blocks)
		return any_live(snap) ? -ENODATA : from_sites(snap, o, rep);
	ix = index_sites(snap);
	a = calloc(snap->nsites ? snap->nsites : 1, sizeof(*a));
	slot = calloc(snap->nsites ? snap->nsites : 1, sizeof(*slot));
	if (!ix || !a || !slot)
		goto out;
	for (i = 0; i < snap->nblocks; i++) {
		const struct ls_block *b = &snap->blocks[i];
		long si = site_index(ix, snap->nsites, b->site);

		/* A block of a site the snapshot did not list (created
		 * while it was written) cannot be attributed. */
		if (si >= 0 && block_passes(snap, o, b))
			add_block(&a[si], snap, &snap->sites[si], b);
	}
	ret = agg_to_sites(snap, a, slot, rep);
	if (!ret && o->show_allocs)
		ret = collect_blocks(snap, o, ix, slot, rep);
	if (!o->show_allocs)
		for (i = 0; i < rep->nsites; i++)
			rep->sites[i].nblocks = 0;
out:
	free(ix);
	free(a);
	free(slot);
	return ret;
}

/* Label each site's growth from its history, when the snapshot has one. */
static int classify(const struct ls_snapshot *snap, struct ls_report *rep)
{
	size_t i;
	int ret;

	if (!snap->has_history || !snap->history.period_ms || !rep->nsites)
		return 0;
	rep->site_trend = calloc(rep->nsites, sizeof(*rep->site_trend));
	if (!rep->site_trend)
		return -ENOMEM;
	for (i = 0; i < rep->nsites; i++) {
		struct ls_report_site *r = &rep->sites[i];

		if (!r->site->history)
			continue;
		ret = ls_trend_classify(r->site->history, r->site->nhistory,
					snap->history.period_ms / 1000.0,
					&rep->site_trend[i]);
		if (ret == -ENOMEM)
			return ret;
		if (!ret)
			r->trend = &rep->site_trend[i];
	}
	return 0;
}

static int grows(const struct ls_report_site *r)
{
	return r->trend && (r->trend->label == LS_TREND_LINEAR ||
			    r->trend->label == LS_TREND_EXPONENTIAL);
}

/* --growing: keep the sites whose history keeps rising. */
static void keep_growing(struct ls_report *rep)
{
	size_t i, n = 0;

	for (i = 0; i < rep->nsites; i++) {
		if (grows(&rep->sites[i]))
			rep->sites[n++] = rep->sites[i];
		else
			free(rep->sites[i].blocks);
	}
	rep->nsites = n;
}

static int cmp_report_site(const void *a, const void *b)
{
	const struct ls_report_site *x = a, *y = b;

	if (x->key_bytes != y->key_bytes)
		return x->key_bytes > y->key_bytes ? -1 : 1;
	if (x->key_blocks != y->key_blocks)
		return x->key_blocks > y->key_blocks ? -1 : 1;
	return x->site->id < y->site->id ? -1 : x->site->id > y->site->id;
}

/* Sift the heap's root down: the heap's root is its last site in
 * cmp_report_site's order, the first that --top would drop. */
static void heap_down(const struct ls_report_site *sites, size_t *h, size_t n,
		      size_t i)
{
	for (;;) {
		size_t l = 2 * i + 1, m = i, t;

		if (l < n && cmp_report_site(&sites[h[l]], &sites[h[m]]) > 0)
			m = l;
		if (l + 1 < n &&
		    cmp_report_site(&sites[h[l + 1]], &sites[h[m]]) > 0)
			m = l + 1;
		if (m == i)
			return;
		t = h[i];
		h[i] = h[m];
		h[m] = t;
		i = m;
	}
}

static int cmp_size(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * Sort the sites; with --top, only the first top of them: those are
 * picked with a heap of top (each other site costs one comparison with
 * its root), moved to the front and sorted there; the others follow in
 * no particular order (only sums and counts read them).  cmp_report_site
 * is a total order (site ids are unique), so the first top are the same
 * as a whole sort's.
 */
static void sort_sites(struct ls_report *rep, size_t top)
{
	struct ls_report_site *s = rep->sites, t;
	size_t n = rep->nsites, i, *h;

	if (!n)			/* never qsort(NULL, 0) */
		return;
	/* Without the heap's memory, the whole sort. */
	if (!top || top >= n / 2 || !(h = malloc(top * sizeof(*h)))) {
		qsort(s, n, sizeof(*s), cmp_report_site);
		return;
	}
	for (i = 0; i < top; i++)
		h[i] = i;
	for (i = top / 2; i-- > 0;)
		heap_down(s, h, top, i);
	for (i = top; i < n; i++)
		if (cmp_report_site(&s[i], &s[h[0]]) < 0) {
			h[0] = i;
			heap_down(s, h, top, 0);
		}
	/* Ascending, h[i] >= i: each swap takes a site from a place no
	 * earlier swap touched. */
	qsort(h, top, sizeof(*h), cmp_size);
	for (i = 0; i < top; i++)
		if (h[i] != i) {
			t = s[i];
			s[i] = s[h[i]];
			s[h[i]] = t;
		}
	free(h);
	qsort(s, top, sizeof(*s), cmp_report_site);
}

static void apply_top(struct ls_report *rep, size_t top)
{
	size_t i;

	if (!top || top >= rep->nsites)
		return;
	for (i = top; i < rep->nsites; i++) {
		free(rep->sites[i].blocks);
		rep->sites[i].blocks = NULL;
	}
	rep->nsites = top;
}

/* The whole process's histograms: every site's, kept by filters or not. */
static void sum_histograms(const struct ls_snapshot *snap, struct ls_report *rep)
{
	uint64_t size[LSNAP_HIST_BUCKETS], life[LSNAP_HIST_BUCKETS];
	size_t i, b;

	rep->has_histogram = snap->has_peak;
	for (i = 0; i < snap->nsites; i++) {
		ls_site_hist(snap, &snap->sites[i], size, life);
		for (b = 0; b < LSNAP_HIST_BUCKETS; b++) {
			rep->size_hist[b] += size[b];
			rep->life_hist[b] += life[b];
		}
	}
}

static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

/* The kept site of snapshot site id, or NULL. */
static struct ls_report_site *kept_site(struct ls_report *rep, uint32_t id)
{
	size_t i;

	for (i = 0; i < rep->nsites; i++)
		if (rep->sites[i].site->id == id)
			return &rep->sites[i];
	return NULL;
}

/*
 * LeakSanitizer's scope: the indirectly lost blocks that the suppressed
 * sites' definitely lost blocks hold (ids, n of them, sorted) are
 * suppressed too, whatever their own site.  A site left with nothing
 * goes.
 */
static void suppress_held(struct ls_report *rep, const uint32_t *ids,
			  size_t n)
{
	const struct ls_snapshot *snap = rep->snap;
	size_t i, k = 0;

	for (i = 0; i < snap->nreach_held; i++) {
		const struct lsnap_reach_held *h = &snap->reach_held[i];
		struct ls_report_site *r;
		uint64_t b, c;

		if (!bsearch(&h->leader_site, ids, n, sizeof(*ids), cmp_u32) ||
		    !(r = kept_site(rep, h->site)))
			continue;
		b = h->bytes < r->reach->bytes[LSNAP_REACH_INDIRECT] ?
		    h->bytes : r->reach->bytes[LSNAP_REACH_INDIRECT];
		c = h->blocks < r->reach->blocks[LSNAP_REACH_INDIRECT] ?
		    h->blocks : r->reach->blocks[LSNAP_REACH_INDIRECT];
		r->reach->bytes[LSNAP_REACH_INDIRECT] -= b;
		r->reach->blocks[LSNAP_REACH_INDIRECT] -= c;
		r->live_bytes -= (int64_t)b;
		r->live_blocks -= (int64_t)c;
		rep->supp_bytes += b;
		rep->supp_blocks += c;
	}
	for (i = 0; i < rep->nsites; i++) {
		if (rep->sites[i].live_blocks <= 0 &&
		    rep->sites[i].live_bytes <= 0) {
			free(rep->sites[i].blocks);
			continue;
		}
		rep->sites[k++] = rep->sites[i];
	}
	rep->nsites = k;
}

/* Leave out the sites a suppression matches (symbolized once here). */
static int suppress(struct ls_report *rep, struct ls_supp *supp)
{
	struct ls_symbolizer *sym = ls_symbolizer_new(rep->snap);
	uint32_t *ids = calloc(rep->nsites + 1, sizeof(*ids));
	size_t i, n = 0, nids = 0;

	if (!sym || !ids) {
		ls_symbolizer_free(sym);
		free(ids);
		return -ENOMEM;
	}
	for (i = 0; i < supp->n; i++)
		supp->e[i].hits = 0;
	for (i = 0; i < rep->nsites; i++) {
		struct ls_report_site *r = &rep->sites[i];

		if (ls_supp_match(supp, sym, r->site)) {
			rep->supp_bytes += (uint64_t)r->live_bytes;
			rep->supp_blocks += (uint64_t)r->live_blocks;
			rep->supp_sites++;
			ids[nids++] = r->site->id;
			free(r->blocks);
			continue;
		}
		rep->sites[n++] = *r;
	}
	rep->nsites = n;
	qsort(ids, nids, sizeof(*ids), cmp_u32);
	if (nids)
		suppress_held(rep, ids, nids);
	free(ids);
	ls_symbolizer_free(sym);
	return 0;
}

int ls_report_build(const struct ls_snapshot *snap,
		    const struct ls_report_opts *opts, struct ls_report *rep)
{
	size_t i;
	int ret;

	memset(rep, 0, sizeof(*rep));
	rep->snap = snap;
	rep->by = opts->by;
	if (opts->by != LS_BY_LIVE && opts->need_blocks)
		return -EINVAL;
	ret = (opts->need_blocks || (snap->has_reach && opts->only &&
				     snap->has_blocks)) ?
		from_blocks(snap, opts, rep) : from_sites(snap, opts, rep);
	if (!ret && opts->supp && opts->supp->n)
		ret = suppress(rep, opts->supp);
	for (i = 0; !ret && i < rep->nsites; i++) {
		struct ls_report_site *r = &rep->sites[i];

		if (opts->by == LS_BY_LIVE) {
			r->key_bytes = r->live_bytes;
			r->key_blocks = r->live_blocks;
		} else {
			site_key(r->site, opts->by, &r->key_bytes,
				 &r->key_blocks);
		}
	}
	if (!ret)
		ret = classify(snap, rep);
	if (!ret && opts->growing)
		keep_growing(rep);
	if (ret) {
		ls_report_release(rep);
		return ret;
	}
	sort_sites(rep, opts->top);
	rep->nsites_total = rep->nsites;
	for (i = 0; i < rep->nsites; i++) {
		static const struct ls_reach_figs none;
		const struct ls_reach_figs *f = rep->sites[i].reach ?
			rep->sites[i].reach : &none;
		unsigned k;

		rep->live_bytes = ls_add_sat(rep->live_bytes,
					     rep->sites[i].live_bytes);
		rep->live_blocks = ls_add_sat(rep->live_blocks,
					      rep->sites[i].live_blocks);
		rep->key_bytes = ls_add_sat(rep->key_bytes,
					    rep->sites[i].key_bytes);
		rep->key_blocks = ls_add_sat(rep->key_blocks,
					     rep->sites[i].key_blocks);
		for (k = 0; k < LSNAP_REACH_KINDS; k++) {
			rep->reach.bytes[k] += f->bytes[k];
			rep->reach.blocks[k] += f->blocks[k];
		}
		rep->reach.indirect_bytes += f->indirect_bytes;
		rep->reach.indirect_blocks += f->indirect_blocks;
	}
	if (opts->histogram)
		sum_histograms(snap, rep);
	apply_top(rep, opts->top);
	return 0;
}

void ls_report_release(struct ls_report *rep)
{
	size_t i, n;

	if (!rep)
		return;
	/* nsites_total is 0 when a build failed half-way. */
	n = rep->nsites > rep->nsites_total ? rep->nsites : rep->nsites_total;
	for (i = 0; rep->sites && i < n; i++)
		free(rep->sites[i].blocks);
	free(rep->sites);
	free(rep->site_reach);
	free(rep->site_trend);
	memset(rep, 0, sizeof(*rep));
}

int ls_report_leaks_over(const struct ls_snapshot *snap, uint64_t limit)
{
	uint64_t total = 0;
	size_t i;

	if (snap->has_totals) {
		total = snap->totals.live_bytes;
	} else {
		for (i = 0; i < snap->nsites; i++)
			if (snap->sites[i].live_bytes > 0 &&
			    lsnap_kind_live(snap->sites[i].kind))
				total += (uint64_t)snap->sites[i].live_bytes;
	}
	return total > limit;
}

void ls_report_gate(const struct ls_report *rep, unsigned kinds,
		    struct ls_gate *g)
{
	size_t i;
	unsigned k;

	memset(g, 0, sizeof(*g));
	g->reach = rep->snap->has_reach;
	/* Every site the filters kept, --top or not. */
	for (i = 0; i < rep->nsites_total; i++) {
		const struct ls_report_site *r = &rep->sites[i];
		uint64_t b = 0, n = 0;

		if (!g->reach) {
			if (r->live_bytes <= 0 && r->live_blocks <= 0)
				continue;
			g->bytes += (uint64_t)r->live_bytes;
			g->blocks += (uint64_t)r->live_blocks;
			g->sites++;
			continue;
		}
		for (k = 0; k < LSNAP_REACH_KINDS; k++)
			if (kinds & 1u << k) {
				b += r->reach->bytes[k];
				n += r->reach->blocks[k];
			}
		g->bytes += b;
		g->blocks += n;
		g->sites += n > 0;
	}
}

int ls_gate_trips(const struct ls_gate *g, uint64_t limit)
{
	return g->bytes > limit || (!limit && g->blocks);
}
