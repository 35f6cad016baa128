/*
 * tracemodel.c - records of the eBPF tracer into the snapshot model (see
 * tracemodel.h).
 *
 * Sites are interned by (kind, frames) in an open-addressing index; heap
 * and kernel blocks live in an address-keyed table with linear probing and
 * backward-shift deletion; mappings are kept in a list, because munmap()
 * may take any part of one or several of them.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "tracemodel.h"

static const char *const fn_names[LS_KFN_END] = {
#define LS_INTERPOSE(sym, NAME, field, ret, params, attr, kind, real, got, export) \
	LS_IP_COUNTED_##kind([LS_TFN_##NAME] = #sym,)
#include "../common/interpose.def"
	[LS_KFN_KMALLOC] = "kmalloc",
	[LS_KFN_CACHE] = "kmem_cache", [LS_KFN_PAGE] = "page",
	[LS_KFN_PERCPU] = "percpu",
};

const char *ls_trace_fn_name(unsigned fn)
{
	return fn < LS_KFN_END && fn_names[fn] ? fn_names[fn] : "?";
}

struct tsite {
	uint64_t hash;
	uint32_t kind, gen, nframes;
	uint64_t *frames;
	double live_bytes, live_blocks;
	uint64_t alloc_bytes, alloc_blocks;
	int combined;		/* counted by the kernel (per stack id) */
	/* Its live figures when the model's live total last peaked (when
	 * peak_gen is the model's; else live_* are still those), its
	 * temporaries and histograms, as the agent keeps them (thread.h). */
	uint32_t peak_gen;
	double peak_bytes, peak_blocks;
	uint64_t temp_bytes, temp_blocks;
	uint64_t size_hist[LSNAP_HIST_BUCKETS], life_hist[LSNAP_HIST_BUCKETS];
};

/* Each thread's latest allocation, for temporaries: by tid, direct
 * mapped (a collision forgets one: a temporary missed, never invented). */
#define LAST_SLOTS 1024
struct tlast {
	uint32_t tid;
	uint64_t addr;
};

struct tblock {
	uint64_t addr;		/* 0: empty slot */
	uint64_t size, ts;
	uint32_t site, tid;
};

struct ls_tmodel {
	struct ls_tmodel_opts o;
	struct ls_stackcopy *sc;

	struct tsite *sites;
	size_t nsites, capsites;
	uint32_t *index;	/* site number + 1, 0 empty */
	size_t index_cap;

	struct tblock *blocks;	/* heap and kernel blocks */
	size_t nblocks, capblocks;
	struct tblock *maps;	/* mappings */
	size_t nmaps, capmaps;

	uint64_t calls[LS_KFN_END];
	uint64_t unknown_frees, no_stack, refreshes;
	uint64_t start_ns, last_refresh_ns;
	struct lsnap_totals totals;
	double live_est;
	uint32_t peak_gen;	/* bumped at each new peak of live_est */
	double peak_est;
	uint64_t peak_ns, now_ns;	/* the peak's time; the event's */
	int any_combined;	/* a site counted by the kernel: no peaks */
	struct tlast last[LAST_SLOTS];
};

static uint64_t mix(uint64_t h, uint64_t v)
{
	h ^= v + 0x9e3779b97f4a7c15ULL + (h << 6) + (h >> 2);
	return h * 0xff51afd7ed558ccdULL;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

int ls_tmodel_new(const struct ls_tmodel_opts *o, struct ls_stackcopy *sc,
		  struct ls_tmodel **out)
{
	struct ls_tmodel *m = calloc(1, sizeof(*m));

	*out = NULL;
	if (!m)
		return -ENOMEM;
	m->o = *o;
	if (m->o.max_frames <= 0 || m->o.max_frames > LSNAP_MAX_FRAMES)
		m->o.max_frames = LSNAP_MAX_FRAMES;
	m->sc = sc;
	m->start_ns = mono_ns();
	*out = m;
	return 0;
}

void ls_tmodel_free(struct ls_tmodel *m)
{
	size_t i;

	if (!m)
		return;
	for (i = 0; i < m->nsites; i++)
		free(m->sites[i].frames);
	free(m->sites);
	free(m->index);
	free(m->blocks);
	free(m->maps);
	free(m);
}

void ls_tmodel_counts(const struct ls_tmodel *m, uint64_t *unknown_frees,
		      uint64_t *no_stack)
{
	*unknown_frees = m->unknown_frees;
	*no_stack = m->no_stack;
}

/* ------------------------------------------------------------------ */
/* Sites.                                                              */

static int index_grow(struct ls_tmodel *m)
{
	size_t cap = m->index_cap ? 2 * m->index_cap : 1024, i, j;
	uint32_t *ix = calloc(cap, sizeof(*ix));

	if (!ix)
		return -ENOMEM;
	for (i = 0; i < m->nsites; i++) {
		j = m->sites[i].hash & (cap - 1);
		while (ix[j])
			j = (j + 1) & (cap - 1);
		ix[j] = (uint32_t)i + 1;
	}
	free(m->index);
	m->index = ix;
	m->index_cap = cap;
	return 0;
}

/* The site of these frames, created if new; -ENOMEM or its number. */
static long site_of(struct ls_tmodel *m, uint32_t kind, const uint64_t *pcs,
		    uint32_t n)
{
	uint32_t gen = m->sc ? ls_stackcopy_gen(m->sc) : 0;
	uint64_t h = mix(kind, n);
	struct tsite *s;
	size_t j, i;

	for (i = 0; i < n; i++)
		h = mix(h, pcs[i]);
	if (2 * (m->nsites + 1) > m->index_cap && index_grow(m))
		return -ENOMEM;
	for (j = h & (m->index_cap - 1); m->index[j];
	     j = (j + 1) & (m->index_cap - 1)) {
		s = &m->sites[m->index[j] - 1];
		if (s->hash == h && s->kind == kind && s->nframes == n &&
		    !memcmp(s->frames, pcs, n * sizeof(*pcs)))
			return (long)m->index[j] - 1;
	}
	if (m->nsites == m->capsites) {
		size_t cap = m->capsites ? 2 * m->capsites : 256;
		struct tsite *g = realloc(m->sites, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		m->sites = g;
		m->capsites = cap;
	}
	s = &m->sites[m->nsites];
	memset(s, 0, sizeof(*s));
	s->frames = malloc((n ? n : 1) * sizeof(*pcs));
	if (!s->frames)
		return -ENOMEM;
	memcpy(s->frames, pcs, n * sizeof(*pcs));
	s->hash = h;
	s->kind = kind;
	s->gen = gen;
	s->nframes = n;
	m->index[j] = (uint32_t)m->nsites + 1;
	return (long)m->nsites++;
}

/* Sampled blocks stand for 1 / (1 - exp(-size / rate)) blocks
 * (docs/SAMPLING.md); mappings and growth records are never sampled. */
static double weight(const struct ls_tmodel *m, uint32_t kind, uint64_t size)
{
	double p;

	if (!m->o.sample_rate || kind != LSNAP_KIND_HEAP)
		return 1.0;
	p = -expm1(-(double)size / (double)m->o.sample_rate);
	return p > 0 ? 1.0 / p : 1.0;
}

/* Before s's live figures change: keep those of the peak, once. */
static void touch(const struct ls_tmodel *m, struct tsite *s)
{
	if (s->peak_gen == m->peak_gen)
		return;
	s->peak_gen = m->peak_gen;
	s->peak_bytes = s->live_bytes;
	s->peak_blocks = s->live_blocks;
}

static unsigned hist_bucket(uint64_t v)
{
	unsigned b = v ? 64u - (unsigned)__builtin_clzll(v) : 0;

	return b < LSNAP_HIST_BUCKETS - 1 ? b : LSNAP_HIST_BUCKETS - 1;
}

static void site_add(struct ls_tmodel *m, uint32_t site, uint64_t size,
		     int sign)
{
	struct tsite *s = &m->sites[site];
	double w = weight(m, s->kind, size);

	touch(m, s);
	if (sign > 0)
		s->size_hist[hist_bucket(size)]++;
	s->live_bytes += sign * w * (double)size;
	s->live_blocks += sign * w;
	m->live_est += sign * w * (double)size;
	if (sign > 0) {
		s->alloc_bytes += (uint64_t)llround(w * (double)size);
		s->alloc_blocks += (uint64_t)llround(w);
		m->totals.allocated_bytes += (uint64_t)llround(w * (double)size);
		m->totals.allocated_blocks += (uint64_t)llround(w);
		if (m->live_est > (double)m->totals.peak_live_bytes)
			m->totals.peak_live_bytes = (uint64_t)llround(m->live_est);
		if (m->live_est > m->peak_est) {
			m->peak_est = m->live_est;
			m->peak_gen++;
			m->peak_ns = m->now_ns;
		}
	}
}

/* ------------------------------------------------------------------ */
/* Blocks by address.                                                  */

static size_t slot_of(uint64_t addr, size_t cap)
{
	return (size_t)((addr * 0x9e3779b97f4a7c15ULL) >> 20) & (cap - 1);
}

static int blocks_grow(struct ls_tmodel *m)
{
	size_t cap = m->capblocks ? 2 * m->capblocks : 4096, i, j;
	struct tblock *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (i = 0; i < m->capblocks; i++) {
		if (!m->blocks[i].addr)
			continue;
		for (j = slot_of(m->blocks[i].addr, cap); t[j].addr;
		     j = (j + 1) & (cap - 1))
			;
		t[j] = m->blocks[i];
	}
	free(m->blocks);
	m->blocks = t;
	m->capblocks = cap;
	return 0;
}

static struct tblock *block_find(struct ls_tmodel *m, uint64_t addr)
{
	size_t j;

	if (!m->capblocks)
		return NULL;
	for (j = slot_of(addr, m->capblocks); m->blocks[j].addr;
	     j = (j + 1) & (m->capblocks - 1))
		if (m->blocks[j].addr == addr)
			return &m->blocks[j];
	return NULL;
}

/* Remove the block in slot b, shifting the probe chain back. */
static void block_drop(struct ls_tmodel *m, struct tblock *b)
{
	size_t cap = m->capblocks, i = (size_t)(b - m->blocks), j = i, k;

	for (;;) {
		m->blocks[i].addr = 0;
		do {
			j = (j + 1) & (cap - 1);
			if (!m->blocks[j].addr) {
				m->nblocks--;
				return;
			}
			k = slot_of(m->blocks[j].addr, cap);
		} while (i <= j ? (i < k && k <= j) : (i < k || k <= j));
		m->blocks[i] = m->blocks[j];
		i = j;
	}
}

static int block_add(struct ls_tmodel *m, const struct tblock *nb)
{
	struct tblock *b = block_find(m, nb->addr);
	size_t j;

	if (b) {		/* a free we never saw: the old block is gone */
		site_add(m, b->site, b->size, -1);
		*b = *nb;
		return 0;
	}
	if (2 * (m->nblocks + 1) > m->capblocks && blocks_grow(m))
		return -ENOMEM;
	for (j = slot_of(nb->addr, m->capblocks); m->blocks[j].addr;
	     j = (j + 1) & (m->capblocks - 1))
		;
	m->blocks[j] = *nb;
	m->nblocks++;
	return 0;
}

/* tid freed b (ended: not a realloc's move): its lifetime, and whether
 * it was the thread's latest allocation (a temporary).  Sampled, the
 * allocations between are not all seen: no temporaries then. */
static void block_ended(struct ls_tmodel *m, const struct tblock *b,
			uint32_t tid)
{
	struct tsite *s = &m->sites[b->site];
	struct tlast *l = &m->last[tid % LAST_SLOTS];
	uint64_t ticks = m->now_ns > b->ts ? (m->now_ns - b->ts) /
		(1000000000u / LSNAP_LIFE_TICKS_PER_S) : 0;

	s->life_hist[hist_bucket(ticks)]++;
	if (!m->o.sample_rate && l->tid == tid && l->addr == b->addr &&
	    b->tid == tid) {
		s->temp_bytes += b->size;
		s->temp_blocks++;
	}
}

static void block_free(struct ls_tmodel *m, uint64_t addr, uint32_t tid,
		       int ended)
{
	struct tblock *b = block_find(m, addr);

	if (!b) {
		m->unknown_frees++;
		return;
	}
	if (ended)
		block_ended(m, b, tid);
	site_add(m, b->site, b->size, -1);
	block_drop(m, b);
}

/* ------------------------------------------------------------------ */
/* Mappings by range.                                                  */

static int map_add(struct ls_tmodel *m, const struct tblock *nb)
{
	if (m->nmaps == m->capmaps) {
		size_t cap = m->capmaps ? 2 * m->capmaps : 64;
		struct tblock *g = realloc(m->maps, cap * sizeof(*g));

		if (!g)
			return -ENOMEM;
		m->maps = g;
		m->capmaps = cap;
	}
	m->maps[m->nmaps++] = *nb;
	return 0;
}

/* munmap(addr, len): every mapping loses its part inside the range; one
 * cut in its middle becomes two. */
static int map_cut(struct ls_tmodel *m, uint64_t addr, uint64_t len)
{
	uint64_t end = addr + ((len + 4095) & ~4095ULL);
	size_t i;

	for (i = 0; i < m->nmaps; i++) {
		struct tblock *b = &m->maps[i], tail;
		uint64_t bend = b->addr + b->size;

		if (b->addr >= end || bend <= addr)
			continue;
		touch(m, &m->sites[b->site]);
		m->sites[b->site].live_bytes -= (double)b->size;
		m->live_est -= (double)b->size;
		tail = *b;
		if (b->addr < addr && bend > end) {
			tail.addr = end;
			tail.size = bend - end;
			b->size = addr - b->addr;
			m->sites[b->site].live_bytes += (double)(b->size + tail.size);
			m->live_est += (double)(b->size + tail.size);
			return map_add(m, &tail);
		}
		if (b->addr < addr) {
			b->size = addr - b->addr;
		} else if (bend > end) {
			b->addr = end;
			b->size = bend - end;
		} else {
			m->sites[b->site].live_blocks -= 1;
			*b = m->maps[--m->nmaps];
			i--;
			continue;
		}
		m->sites[b->site].live_bytes += (double)b->size;
		m->live_est += (double)b->size;
	}
	return 0;
}

static void map_move(struct ls_tmodel *m, uint64_t old, uint64_t addr,
		     uint64_t size)
{
	size_t i;

	for (i = 0; i < m->nmaps; i++) {
		struct tblock *b = &m->maps[i];

		if (b->addr != old)
			continue;
		touch(m, &m->sites[b->site]);
		m->sites[b->site].live_bytes += (double)size - (double)b->size;
		m->live_est += (double)size - (double)b->size;
		b->addr = addr;
		b->size = size;
		return;
	}
}

/* ------------------------------------------------------------------ */
/* Records.                                                            */

static uint32_t kind_of(const struct ls_trace_event *e)
{
	switch (e->type) {
	case LS_TEV_MMAP:
		return LSNAP_KIND_MMAP;
	case LS_TEV_BRK:
		return LSNAP_KIND_BRK;
	case LS_TEV_FAULT:
		return LSNAP_KIND_FAULT;
	case LS_TEV_KALLOC:
		return LSNAP_KIND_KERNEL;
	}
	return LSNAP_KIND_HEAP;
}

/* A walk that stops at once may have met code loaded since the map was
 * read: read it again, at most ten times a second.  1 if it did. */
static int maybe_refresh(struct ls_tmodel *m)
{
	uint64_t now = mono_ns();

	if (now - m->last_refresh_ns < 100000000ULL)
		return 0;
	m->last_refresh_ns = now;
	m->refreshes++;
	ls_stackcopy_refresh(m->sc);
	return 1;
}

static uint32_t frames_of(struct ls_tmodel *m, const struct ls_trace_event *e,
			  size_t len, uint64_t *pcs)
{
	struct ls_stackregs r = { e->ip, e->sp, e->bp,
				  !!(e->flags & LS_TEV_F_EXACT) };
	size_t have = (len - sizeof(*e)) / 8, n = e->nips;
	int got;

	if (n > have)
		n = have;
	if (n || (e->flags & LS_TEV_F_KERNEL)) {
		if (n > (size_t)m->o.max_frames)
			n = (size_t)m->o.max_frames;
		memcpy(pcs, e->data, n * 8);
		return (uint32_t)n;
	}
	if (!m->sc || !e->stack_len ||
	    e->stack_len > len - sizeof(*e))
		return 0;
	got = ls_stackcopy_unwind(m->sc, &r, e->data, e->stack_len, pcs,
				  m->o.max_frames);
	if (got <= 1 && maybe_refresh(m))
		got = ls_stackcopy_unwind(m->sc, &r, e->data, e->stack_len,
					  pcs, m->o.max_frames);
	return got > 0 ? (uint32_t)got : 0;
}

static int record_block(struct ls_tmodel *m, const struct ls_trace_event *e,
			size_t len)
{
	uint64_t pcs[LSNAP_MAX_FRAMES];
	uint32_t kind = kind_of(e), n = frames_of(m, e, len, pcs);
	struct tblock b = { e->addr, e->size, e->ts, 0, e->tid };
	long site;

	if (!n)
		m->no_stack++;
	site = site_of(m, kind, pcs, n);
	if (site < 0)
		return (int)site;
	b.site = (uint32_t)site;
	site_add(m, b.site, e->size, 1);
	if (kind == LSNAP_KIND_HEAP)
		m->last[e->tid % LAST_SLOTS] = (struct tlast){ e->tid, e->addr };
	switch (kind) {
	case LSNAP_KIND_BRK:
	case LSNAP_KIND_FAULT:
		return 0;
	case LSNAP_KIND_MMAP:
		return map_add(m, &b);
	}
	return block_add(m, &b);
}

/* exec(): the old image's blocks and mappings are gone, and its modules. */
static void forget_image(struct ls_tmodel *m)
{
	size_t i;

	for (i = 0; i < m->capblocks; i++)
		if (m->blocks[i].addr)
			site_add(m, m->blocks[i].site, m->blocks[i].size, -1);
	memset(m->blocks, 0, m->capblocks * sizeof(*m->blocks));
	m->nblocks = 0;
	for (i = 0; i < m->nmaps; i++) {
		touch(m, &m->sites[m->maps[i].site]);
		m->sites[m->maps[i].site].live_bytes -= (double)m->maps[i].size;
		m->sites[m->maps[i].site].live_blocks -= 1;
		m->live_est -= (double)m->maps[i].size;
	}
	m->nmaps = 0;
	if (m->sc)
		ls_stackcopy_exec(m->sc);
}

int ls_tmodel_event(struct ls_tmodel *m, const struct ls_trace_event *e,
		    size_t len)
{
	if (e->fn < LS_KFN_END)
		m->calls[e->fn]++;
	m->now_ns = e->ts;
	switch (e->type) {
	case LS_TEV_REALLOC:
		if (e->old)
			block_free(m, e->old, e->tid, 0);
		/* fall through */
	case LS_TEV_ALLOC:
	case LS_TEV_MMAP:
	case LS_TEV_BRK:
	case LS_TEV_FAULT:
	case LS_TEV_KALLOC:
		return record_block(m, e, len);
	case LS_TEV_FREE:
	case LS_TEV_KFREE:
		block_free(m, e->addr, e->tid, 1);
		return 0;
	case LS_TEV_MUNMAP:
		return map_cut(m, e->addr, e->size);
	case LS_TEV_MREMAP:
		map_move(m, e->old, e->addr, e->size);
		return 0;
	case LS_TEV_EXEC:
		forget_image(m);
		return 0;
	}
	return 0;
}

void ls_tmodel_combined_reset(struct ls_tmodel *m)
{
	size_t i;

	for (i = 0; i < m->nsites; i++) {
		struct tsite *s = &m->sites[i];

		if (!s->combined)
			continue;
		m->live_est -= s->live_bytes;
		s->live_bytes = s->live_blocks = 0;
		s->alloc_bytes = s->alloc_blocks = 0;
	}
}

int ls_tmodel_combined(struct ls_tmodel *m, const uint64_t *ips, uint32_t n,
		       const struct ls_trace_comb *c)
{
	long site;
	struct tsite *s;

	if (n > (uint32_t)m->o.max_frames)
		n = (uint32_t)m->o.max_frames;
	site = site_of(m, LSNAP_KIND_HEAP, ips, n);
	if (site < 0)
		return (int)site;
	s = &m->sites[site];
	s->combined = 1;
	m->any_combined = 1;
	/* Stack ids can merge only what the frames already merge: add. */
	s->live_bytes += (double)c->bytes;
	s->live_blocks += (double)c->blocks;
	s->alloc_bytes += c->alloc_bytes;
	s->alloc_blocks += c->alloc_blocks;
	m->live_est += (double)c->bytes;
	return 0;
}

/* ------------------------------------------------------------------ */
/* The snapshot.                                                       */

/* Peak, temporaries, histograms; the snapshot's moment is the peak when
 * the live total passed the last one since (a mapping grown in place). */
static int snap_stats(const struct ls_tmodel *m, const struct tsite *s,
		      struct ls_snapshot *snap, struct ls_site *d)
{
	int at_peak = s->peak_gen == m->peak_gen && m->live_est <= m->peak_est;

	d->stats.peak_bytes = llround(at_peak ? s->peak_bytes : s->live_bytes);
	d->stats.peak_blocks = llround(at_peak ? s->peak_blocks :
				       s->live_blocks);
	d->stats.temp_bytes = s->temp_bytes;
	d->stats.temp_blocks = s->temp_blocks;
	return ls_snapshot_set_hist(snap, d, s->size_hist, s->life_hist,
				    LSNAP_HIST_BUCKETS);
}

/* The peak record: the sites' sums (none with kernel-counted sites). */
static void snap_peak(const struct ls_tmodel *m, struct ls_snapshot *snap)
{
	size_t i;

	if (m->any_combined)
		return;
	snap->has_peak = 1;
	snap->peak.peak_mono_ns = m->live_est > m->peak_est ? snap->hdr.mono_ns :
				  m->peak_ns;
	for (i = 0; i < snap->nsites; i++) {
		snap->peak.sites_bytes += snap->sites[i].stats.peak_bytes;
		snap->peak.sites_blocks += snap->sites[i].stats.peak_blocks;
	}
}

static int snap_sites(const struct ls_tmodel *m, struct ls_snapshot *snap)
{
	size_t i;

	snap->sites = calloc(m->nsites ? m->nsites : 1, sizeof(*snap->sites));
	if (!snap->sites)
		return -ENOMEM;
	for (i = 0; i < m->nsites; i++) {
		const struct tsite *s = &m->sites[i];
		struct ls_site *d = &snap->sites[i];

		d->id = (uint32_t)i + 1;
		d->kind = s->kind;
		d->gen = s->gen;
		d->nframes = s->nframes;
		d->live_bytes = llround(s->live_bytes);
		d->live_blocks = llround(s->live_blocks);
		d->allocated_bytes = s->alloc_bytes;
		d->allocated_blocks = s->alloc_blocks;
		if (snap_stats(m, s, snap, d))
			return -ENOMEM;
		d->frames = malloc((s->nframes ? s->nframes : 1) * 8);
		if (!d->frames)
			return -ENOMEM;
		memcpy(d->frames, s->frames, s->nframes * 8);
		snap->nsites++;
	}
	return 0;
}

static void snap_block(struct ls_snapshot *snap, const struct tblock *b)
{
	struct ls_block *d = &snap->blocks[snap->nblocks++];

	d->addr = b->addr;
	d->size = b->size;
	d->birth_ns = b->ts;
	d->site = b->site + 1;
	d->tid = b->tid;
}

static int snap_blocks(const struct ls_tmodel *m, struct ls_snapshot *snap)
{
	size_t i;

	snap->blocks = calloc(m->nblocks + m->nmaps + 1, sizeof(*snap->blocks));
	if (!snap->blocks)
		return -ENOMEM;
	for (i = 0; i < m->capblocks; i++)
		if (m->blocks[i].addr)
			snap_block(snap, &m->blocks[i]);
	for (i = 0; i < m->nmaps; i++)
		snap_block(snap, &m->maps[i]);
	snap->has_blocks = 1;
	return 0;
}

static int snap_calls(const struct ls_tmodel *m, struct ls_snapshot *snap)
{
	size_t i;

	snap->calls = calloc(LS_KFN_END, sizeof(*snap->calls));
	if (!snap->calls)
		return -ENOMEM;
	for (i = 0; i < LS_KFN_END; i++) {
		if (!m->calls[i])
			continue;
		strncpy(snap->calls[snap->ncalls].name, ls_trace_fn_name((unsigned)i),
			LSNAP_CALL_NAME);
		snap->calls[snap->ncalls++].count = m->calls[i];
	}
	return 0;
}

static int snap_argv(struct ls_snapshot *snap, char *const *argv)
{
	size_t n = 0, i;

	while (argv && argv[n])
		n++;
	snap->argv = calloc(n + 1, sizeof(*snap->argv));
	if (!snap->argv)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		if (!(snap->argv[snap->argc++] = strdup(argv[i])))
			return -ENOMEM;
	return 0;
}

static int snap_kernel_module(struct ls_snapshot *snap)
{
	struct ls_module *g = realloc(snap->modules,
				      (snap->nmodules + 1) * sizeof(*g));

	if (!g)
		return -ENOMEM;
	snap->modules = g;
	g += snap->nmodules;
	memset(g, 0, sizeof(*g));
	g->lo = 0xffff800000000000ULL;
	g->hi = UINT64_MAX;
	g->gen_to = LSNAP_GEN_LOADED;
	g->path = strdup(LS_KERNEL_MODULE);
	if (!g->path)
		return -ENOMEM;
	snap->nmodules++;
	return 0;
}

static void snap_header(const struct ls_tmodel *m, uint64_t now_ns,
			struct ls_snapshot *snap)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	snap->hdr.pid = (uint32_t)m->o.pid;
	snap->hdr.wall_ns = (uint64_t)ts.tv_sec * 1000000000ULL +
			    (uint64_t)ts.tv_nsec;
	snap->hdr.mono_ns = now_ns;
	snap->hdr.start_mono_ns = m->start_ns;
	snap->hdr.sample_rate = m->o.sample_rate;
	snap->hdr.mode = m->o.sample_rate ? LSNAP_MODE_SAMPLED : LSNAP_MODE_FULL;
	snap->hdr.reason = LSNAP_REASON_REQUEST;
	snap->hdr.source = LSNAP_SOURCE_EBPF;
	snap->hdr.max_depth = (uint32_t)m->o.max_frames;
	snap->hdr.module_gen = m->sc ? ls_stackcopy_gen(m->sc) : 0;
	snap->totals = m->totals;
	snap->totals.live_bytes = m->live_est > 0 ? (uint64_t)llround(m->live_est) : 0;
	snap->totals.live_blocks = m->nblocks + m->nmaps;
	snap->has_totals = 1;
}

int ls_tmodel_snapshot(const struct ls_tmodel *m, uint64_t now_ns,
		       char *const *argv, struct ls_snapshot *snap)
{
	int ret;

	memset(snap, 0, sizeof(*snap));
	snap_header(m, now_ns, snap);
	ret = snap_sites(m, snap);
	if (!ret)
		snap_peak(m, snap);
	if (!ret)
		ret = snap_blocks(m, snap);
	if (!ret)
		ret = snap_calls(m, snap);
	if (!ret)
		ret = snap_argv(snap, argv);
	if (!ret && m->sc)
		ret = ls_stackcopy_modules(m->sc, snap);
	if (!ret)
		ret = snap_kernel_module(snap);
	if (ret)
		ls_snapshot_release(snap);
	return ret;
}
