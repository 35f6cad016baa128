/*
 * live.c - the sharded live-block table.
 */
#include <errno.h>
#include <string.h>
#include "live.h"
#include "sys.h"

#define SHARD_INIT 16		/* slots when a shard is first used */

struct shard {
	ls_lock_t lock;
	uint32_t pad_;
	uint64_t mask;		/* slots - 1; 0 while unallocated */
	uint64_t count;
	struct ls_live_entry *slots;
} __attribute__((aligned(LS_CACHELINE)));

static struct shard shards[LS_LIVE_SHARDS];

/* Block addresses are 16-byte aligned with structure in the high bits:
 * a multiplicative hash spreads them; the top byte picks the shard. */
static inline uint64_t addr_hash(uint64_t a)
{
	return (a >> 4) * 0x9e3779b97f4a7c15ULL;
}

static inline struct shard *shard_of(uint64_t h)
{
	return &shards[h >> 56];
}

static void place(struct ls_live_entry *slots, uint64_t mask,
		  const struct ls_live_entry *e)
{
	uint64_t i = addr_hash(e->addr) & mask;

	while (slots[i].addr)
		i = (i + 1) & mask;
	slots[i] = *e;
}

static int grow(struct shard *s)
{
	uint64_t nslots = s->mask ? (s->mask + 1) * 2 : SHARD_INIT;
	struct ls_live_entry *n = ls_sys_map(nslots * sizeof(*n));
	uint64_t i;

	if (!n)
		return -ENOMEM;
	for (i = 0; s->mask && i <= s->mask; i++)
		if (s->slots[i].addr)
			place(n, nslots - 1, &s->slots[i]);
	if (s->mask)
		ls_sys_unmap(s->slots, (s->mask + 1) * sizeof(*n));
	s->slots = n;
	s->mask = nslots - 1;
	return 0;
}

/* Slot holding addr, or the empty slot ending its probe run. */
static inline uint64_t probe(const struct shard *s, uint64_t h, uint64_t addr)
{
	uint64_t i = h & s->mask;

	while (s->slots[i].addr && s->slots[i].addr != addr)
		i = (i + 1) & s->mask;
	return i;
}

void ls_live_prefetch(uint64_t addr)
{
	uint64_t h = addr_hash(addr);
	const struct shard *s = shard_of(h);
	const struct ls_live_entry *slots = __atomic_load_n(&s->slots,
							     __ATOMIC_RELAXED);
	uint64_t mask = __atomic_load_n(&s->mask, __ATOMIC_RELAXED);

	__builtin_prefetch(s, 1);
	if (slots)
		__builtin_prefetch(&slots[h & mask], 1);
}

int ls_live_insert(const struct ls_live_entry *e, struct ls_live_entry *old)
{
	uint64_t h = addr_hash(e->addr), i;
	struct shard *s = shard_of(h);
	int ret = 0;

	ls_lock(&s->lock);
	if ((s->count + 1) * 4 > (s->mask + 1) * 3 && grow(s)) {
		ret = -ENOMEM;
		goto out;
	}
	i = probe(s, h, e->addr);
	if (s->slots[i].addr) {
		*old = s->slots[i];
		ret = 1;
	} else {
		s->count++;
	}
	s->slots[i] = *e;
out:
	ls_unlock(&s->lock);
	return ret;
}

/* Backward-shift deletion keeps probe runs intact without tombstones. */
static void delete_at(struct shard *s, uint64_t i)
{
	uint64_t j = i, k;

	for (;;) {
		j = (j + 1) & s->mask;
		if (!s->slots[j].addr)
			break;
		k = addr_hash(s->slots[j].addr) & s->mask;
		/* Move j into the hole at i unless its home k lies
		 * cyclically in (i, j]. */
		if (i <= j ? (i < k && k <= j) : (i < k || k <= j))
			continue;
		s->slots[i] = s->slots[j];
		i = j;
	}
	s->slots[i].addr = 0;
	s->count--;
}

int ls_live_remove(uint64_t addr, struct ls_live_entry *out)
{
	uint64_t h = addr_hash(addr), i;
	struct shard *s = shard_of(h);
	int found = 0;

	ls_lock(&s->lock);
	if (!s->mask)
		goto out;
	i = probe(s, h, addr);
	if (s->slots[i].addr) {
		*out = s->slots[i];
		delete_at(s, i);
		found = 1;
	}
out:
	ls_unlock(&s->lock);
	return found;
}

size_t ls_live_copy_shard(unsigned idx, struct ls_live_entry *buf, size_t cap)
{
	struct shard *s = &shards[idx];
	size_t n, i;

	ls_lock(&s->lock);
	n = s->count;
	if (n <= cap && s->mask) {
		size_t k = 0;

		for (i = 0; i <= s->mask; i++)
			if (s->slots[i].addr)
				buf[k++] = s->slots[i];
	}
	ls_unlock(&s->lock);
	return n;
}

size_t ls_live_count(void)
{
	size_t n = 0;
	unsigned i;

	for (i = 0; i < LS_LIVE_SHARDS; i++)
		n += __atomic_load_n(&shards[i].count, __ATOMIC_RELAXED);
	return n;
}

size_t ls_live_mapped(void)
{
	size_t n = 0;
	unsigned i;

	for (i = 0; i < LS_LIVE_SHARDS; i++) {
		uint64_t m = __atomic_load_n(&shards[i].mask, __ATOMIC_RELAXED);

		n += m ? (m + 1) * sizeof(struct ls_live_entry) : 0;
	}
	return n;
}

void ls_live_clear(void (*fn)(const struct ls_live_entry *, void *), void *arg)
{
	unsigned i;
	uint64_t j;

	for (i = 0; i < LS_LIVE_SHARDS; i++) {
		struct shard *s = &shards[i];

		ls_lock(&s->lock);
		for (j = 0; s->mask && j <= s->mask; j++)
			if (s->slots[j].addr && fn)
				fn(&s->slots[j], arg);
		if (s->mask)
			memset(s->slots, 0, (s->mask + 1) * sizeof(*s->slots));
		s->count = 0;
		ls_unlock(&s->lock);
	}
}

void ls_live_lock_all(void)
{
	unsigned i;

	for (i = 0; i < LS_LIVE_SHARDS; i++)
		ls_lock(&shards[i].lock);
}

void ls_live_unlock_all(void)
{
	unsigned i;

	for (i = 0; i < LS_LIVE_SHARDS; i++)
		ls_unlock(&shards[i].lock);
}

void ls_live_reset_child(void)
{
	unsigned i;

	for (i = 0; i < LS_LIVE_SHARDS; i++)
		ls_lock_reset(&shards[i].lock);
}
