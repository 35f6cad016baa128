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
	uint64_t frames[];
};

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
