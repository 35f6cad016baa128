/*
 * site.c - the interned stack table.
 */
#include <string.h>
#include "../common/lsnap.h"
#include "arena.h"
#include "lockrank.h"
#include "modules.h"
#include "site.h"
#include "sys.h"

#define BUCKETS (1u << 16)
#define ID_CHUNK 4096u
#define ID_CHUNKS 4096u		/* 16M sites at most */

static struct ls_site_rec *buckets[BUCKETS];
static struct ls_site_rec **by_id[ID_CHUNKS];
static uint32_t nsites;
static ls_lock_t insert_lock = LS_LOCK_INIT;

uint64_t ls_site_hash(const uint64_t *pcs, uint32_t n, uint32_t kind)
{
	uint64_t h = 0x9ae16a3b2f90404fULL ^ ((uint64_t)kind << 32) ^ n;
	uint32_t i;

	for (i = 0; i < n; i++) {
		h ^= pcs[i];
		h *= 0xff51afd7ed558ccdULL;
		h ^= h >> 29;
	}
	return h ? h : 1;
}

static struct ls_site_rec *lookup(const uint64_t *pcs, uint32_t n, uint32_t kind,
			      uint64_t hash)
{
	struct ls_site_rec *s = __atomic_load_n(&buckets[hash & (BUCKETS - 1)],
					    __ATOMIC_ACQUIRE);

	for (; s; s = __atomic_load_n(&s->next, __ATOMIC_ACQUIRE))
		if (ls_site_matches(s, pcs, n, kind, hash))
			return s;
	return NULL;
}

static struct ls_site_rec *create(const uint64_t *pcs, uint32_t n, uint32_t kind,
			      uint64_t hash)
{
	uint32_t id = nsites, chunk = id / ID_CHUNK;
	struct ls_site_rec *s;

	if (chunk >= ID_CHUNKS)
		return NULL;
	if (!by_id[chunk]) {
		struct ls_site_rec **c = ls_arena_alloc(ID_CHUNK * sizeof(*c));

		if (!c)
			return NULL;
		__atomic_store_n(&by_id[chunk], c, __ATOMIC_RELEASE);
	}
	s = ls_arena_alloc(sizeof(*s) + n * sizeof(uint64_t));
	if (!s)
		return NULL;
	s->hash = hash;
	s->id = id;
	s->kind = kind;
	s->gen = ls_modules_gen();
	s->nframes = n;
	memcpy(s->frames, pcs, n * sizeof(uint64_t));
	s->next = buckets[hash & (BUCKETS - 1)];
	__atomic_store_n(&by_id[chunk][id % ID_CHUNK], s, __ATOMIC_RELEASE);
	__atomic_store_n(&buckets[hash & (BUCKETS - 1)], s, __ATOMIC_RELEASE);
	__atomic_store_n(&nsites, id + 1, __ATOMIC_RELEASE);
	return s;
}

struct ls_site_rec *ls_site_intern(const uint64_t *pcs, uint32_t n, uint32_t kind,
			       uint64_t hash)
{
	struct ls_site_rec *s = lookup(pcs, n, kind, hash);

	if (s)
		return s;
	ls_lock_ranked(&insert_lock, LS_RANK_SITE);
	s = lookup(pcs, n, kind, hash);
	if (!s)
		s = create(pcs, n, kind, hash);
	ls_unlock_ranked(&insert_lock, LS_RANK_SITE);
	return s;
}

struct ls_site_rec *ls_site_get(uint32_t id)
{
	struct ls_site_rec **c;

	if (id >= __atomic_load_n(&nsites, __ATOMIC_ACQUIRE))
		return NULL;
	c = __atomic_load_n(&by_id[id / ID_CHUNK], __ATOMIC_ACQUIRE);
	return c ? __atomic_load_n(&c[id % ID_CHUNK], __ATOMIC_ACQUIRE) : NULL;
}

uint32_t ls_site_count(void)
{
	return __atomic_load_n(&nsites, __ATOMIC_ACQUIRE);
}

void ls_site_lock_all(void)
{
	ls_lock_ranked(&insert_lock, LS_RANK_SITE);
}

void ls_site_unlock_all(void)
{
	ls_unlock_ranked(&insert_lock, LS_RANK_SITE);
}

void ls_site_reset_child(void)
{
	ls_lock_reset(&insert_lock);
}
