/*
 * site.h - allocation sites: distinct call stacks, interned.
 *
 * A site is created the first time a stack is seen and lives until the
 * process ends.  Lookups are lock-free (hash chains published with release
 * stores); creation takes a spinlock.  Each site carries counters that
 * threads flush into from their private pending caches (thread.h), so no
 * shared cache line is written on every allocation.
 *
 * Safe inside allocation hooks.
 */
#ifndef LEAKSCOPE_AGENT_SITE_H
#define LEAKSCOPE_AGENT_SITE_H

#include <stdint.h>
#include "../common/contract.h"	/* LS_DEPTH_MAX */

/*
 * Log2 histogram buckets: bucket 0 holds the value 0, bucket b (1..30)
 * the values [2^(b-1), 2^b), bucket 31 everything from 2^30.  Sizes in
 * bytes; lifetimes in ticks of 1/256 s (live.h), so bucket 0 is "freed
 * within the same tick".
 */
#define LS_HIST_BUCKETS 32
#define LS_SITE_PAIRS 4		/* counters kept in the site record */
static inline unsigned ls_hist_bucket(uint64_t v)
{
	unsigned b = v ? 64u - (unsigned)__builtin_clzll(v) : 0;

	return b < LS_HIST_BUCKETS - 1 ? b : LS_HIST_BUCKETS - 1;
}

struct ls_site_rec {
	struct ls_site_rec *next;	/* hash chain */
	uint64_t hash;
	uint32_t id;		/* dense, from 0 */
	uint32_t kind;		/* enum lsnap_site_kind */
	uint32_t gen;		/* module-map generation at creation */
	uint32_t nframes;
	/* Flushed counters: add the threads' pending caches for the total. */
	int64_t live_bytes, live_blocks;
	uint64_t alloc_bytes, alloc_blocks;
	/* Flushed under a stripe lock (thread.c), read racily: */
	uint32_t peak_gen;	/* peak_* valid when the current generation */
	uint32_t pad;
	int64_t peak_bytes, peak_blocks;	/* live at the peak */
	uint64_t temp_bytes, temp_blocks;	/* freed before the thread's
						   next allocation */
	/* The size histogram (allocations by size, counters 0-31) and
	 * the lifetime one (frees by lifetime, 32-63): the first counters
	 * that are not 0 in hist_pair (thread.c, ls_site_hist()), the rest
	 * in hist_more, mapped when a site needs it (most have one to
	 * three buckets that are not 0). */
	uint64_t hist_pair[LS_SITE_PAIRS];
	uint64_t *hist_more;		/* NULL, or [2 * LS_HIST_BUCKETS] */
	uint64_t frames[];
};

/* A hist_pair word: the counter's index in bits 58-63, its count in bits
 * 0-57 (a count past them goes on in hist_more); 0 when unused. */
#define LS_PAIR_SHIFT 58
#define LS_PAIR_COUNT ((1ull << LS_PAIR_SHIFT) - 1)

/* The site's 2 * LS_HIST_BUCKETS counters (size, then lifetime), read
 * racily as the threads add to them. */
static inline void ls_site_hist(const struct ls_site_rec *s, uint64_t *h)
{
	const uint64_t *more = __atomic_load_n(&s->hist_more, __ATOMIC_ACQUIRE);
	unsigned i;
	uint64_t w;

	for (i = 0; i < 2 * LS_HIST_BUCKETS; i++)
		h[i] = more ? __atomic_load_n(&more[i], __ATOMIC_RELAXED) : 0;
	for (i = 0; i < LS_SITE_PAIRS; i++) {
		w = __atomic_load_n(&s->hist_pair[i], __ATOMIC_RELAXED);
		if (w)
			h[w >> LS_PAIR_SHIFT] += w & LS_PAIR_COUNT;
	}
}

uint64_t ls_site_hash(const uint64_t *pcs, uint32_t n, uint32_t kind);

/*
 * The site for this stack, created if new.  NULL only when the agent's
 * memory is exhausted.  hash must be ls_site_hash(pcs, n, kind).
 */
struct ls_site_rec *ls_site_intern(const uint64_t *pcs, uint32_t n, uint32_t kind,
			       uint64_t hash);

/* Same stack? */
static inline int ls_site_matches(const struct ls_site_rec *s, const uint64_t *pcs,
				  uint32_t n, uint32_t kind, uint64_t hash)
{
	uint32_t i;

	if (s->hash != hash || s->nframes != n || s->kind != kind)
		return 0;
	for (i = 0; i < n; i++)
		if (s->frames[i] != pcs[i])
			return 0;
	return 1;
}

/* Site by id, or NULL. */
struct ls_site_rec *ls_site_get(uint32_t id);
/* Number of sites created so far. */
uint32_t ls_site_count(void);

void ls_site_lock_all(void);
void ls_site_unlock_all(void);
void ls_site_reset_child(void);

#endif
