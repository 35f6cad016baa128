/*
 * sample.c - byte sampling.
 */
#include <errno.h>
#include "fmath.h"
#include "lockrank.h"
#include "sample.h"
#include "sys.h"

/*
 * Filter size: 2^16 counters at T = 512 KiB, more for smaller T (more
 * recorded blocks), within [2^16, 2^22].  Every free() reads one random
 * bit of the summary (a bit per counter, an eighth of their size), so it
 * must stay in the caches: 2^20 counters read directly cost the churn
 * 1.10x where 2^16 cost 1.04x (docs/PERFORMANCE.md).
 */
#define FILTER_BITS_MIN 16
#define FILTER_BITS_MAX 22
#define FILTER_BASE_RATE (512u << 10)

uint64_t ls_sample_rate;
/* The counting filter (sample.h, ls_sample_summary). */
static uint8_t *ls_sample_filter;
uint64_t *ls_sample_summary;
unsigned ls_sample_shift = 64 - FILTER_BITS_MIN;
static uint64_t seed_base;
static ls_lock_t filter_lock = LS_LOCK_INIT;

int ls_sample_init(uint64_t rate, uint64_t seed)
{
	unsigned bits = FILTER_BITS_MIN;
	uint64_t r;

	if (!rate)
		return 0;
	for (r = rate; r < FILTER_BASE_RATE && bits < FILTER_BITS_MAX; r *= 2)
		bits++;
	ls_sample_filter = ls_sys_map(((size_t)1 << bits) +
				      ((size_t)1 << bits) / 8);
	if (!ls_sample_filter)
		return -ENOMEM;
	ls_sample_summary = (uint64_t *)(void *)(ls_sample_filter +
						 ((size_t)1 << bits));
	ls_sample_shift = 64 - bits;
	seed_base = seed ? seed : ls_now_ns(CLOCK_MONOTONIC) ^ (uint64_t)getpid() << 32;
	ls_sample_rate = rate;
	return 0;
}

/* splitmix64: a good 64-bit stream from any seed, cheap. */
static uint64_t next_u64(struct ls_thread *t)
{
	uint64_t z = (t->rng += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

/* An exponential gap of mean T, at least 1 byte. */
static uint64_t gap(struct ls_thread *t)
{
	/* u in (0, 1]: never log(0). */
	double u = ((next_u64(t) >> 11) + 1) * (1.0 / 9007199254740992.0);
	double g = -ls_log(u) * (double)ls_sample_rate;

	return g < 1 ? 1 : g > 1e18 ? (uint64_t)1e18 : (uint64_t)g;
}

int ls_sample_hit(struct ls_thread *t, uint64_t size)
{
	if (!t->rng) {
		/* First allocation of this thread: start its own stream and
		 * place its first sample point.  Seeded by the order in which
		 * threads first allocate, not their ids, so that a seeded run
		 * of a deterministic program samples the same blocks. */
		t->rng = seed_base ^ ((uint64_t)t->ordinal * 0xd6e8feb86659fd93ULL);
		if (!t->rng)
			t->rng = 1;
		t->sample_left = gap(t);
		if (t->sample_left > size) {
			t->sample_left -= size;
			return 0;
		}
	}
	/* A point fell in this block.  Memorylessness: the next point past
	 * its end is a fresh exponential gap away. */
	t->sample_left = gap(t);
	return size != 0;
}

/*
 * The summary is exact: after every mark or unmark, under filter_lock,
 * a bit is set if and only if its counter is not zero.
 * Why the lock-free reader never misses a recorded block A:
 *
 * - A is marked (its counter raised, then its bit set, in one store W of
 *   the summary word) before the allocation that returned A
 *   returns.  The program's own hand-over of A to whichever thread frees
 *   it happens after that, so that thread's load of the word reads W or
 *   a store that came after W in the word's modification order.
 * - Every store after W to that word is made under filter_lock by a
 *   mark or unmark that kept A's bit as its counter says: A's counter
 *   stays at least 1 until A itself is unmarked, which happens only once
 *   A left the live table (its free or realloc, after that load, or a
 *   reset that forgot it).  A counter at 255 stays there, and so does
 *   its bit.  So every such store has A's bit set.
 *
 * Unmark of a colliding address, a neighbour's bit in the same word, a
 * saturated counter: none can make the word read 0 for A.  Without the
 * lock, an unmark that saw the counter reach 0 could clear the bit after
 * a mark of A had raised the counter and found the bit still set, and
 * two changes of one word could lose each other's bit
 * (tests/unit/t-agent-sample.c finds both).
 */
static void set_summary(uint32_t slot, int on)
{
	uint64_t *w = &ls_sample_summary[slot / 64];
	uint64_t bit = 1ull << (slot % 64);

	__atomic_store_n(w, on ? *w | bit : *w & ~bit, __ATOMIC_RELAXED);
}

void ls_sample_mark(uint64_t addr)
{
	uint32_t slot = ls_sample_slot(addr);
	uint8_t *c = &ls_sample_filter[slot];

	ls_lock_ranked(&filter_lock, LS_RANK_SAMPLE);
	/* Saturates at 255 and then stays: never a false negative. */
	if (*c != 255)
		__atomic_store_n(c, *c + 1, __ATOMIC_RELAXED);
	set_summary(slot, 1);
	ls_unlock_ranked(&filter_lock, LS_RANK_SAMPLE);
}

void ls_sample_unmark(uint64_t addr)
{
	uint32_t slot = ls_sample_slot(addr);
	uint8_t *c = &ls_sample_filter[slot];

	ls_lock_ranked(&filter_lock, LS_RANK_SAMPLE);
	if (*c != 255 && *c != 0) {
		__atomic_store_n(c, *c - 1, __ATOMIC_RELAXED);
		if (!*c)
			set_summary(slot, 0);
	}
	ls_unlock_ranked(&filter_lock, LS_RANK_SAMPLE);
}

void ls_sample_lock_all(void)
{
	ls_lock_ranked(&filter_lock, LS_RANK_SAMPLE);
}

void ls_sample_unlock_all(void)
{
	ls_unlock_ranked(&filter_lock, LS_RANK_SAMPLE);
}

void ls_sample_reset_child(void)
{
	ls_lock_reset(&filter_lock);
}

void ls_sample_est_sampled(uint64_t size, int64_t *bytes, int64_t *blocks)
{
	double p;

	if (!size) {		/* never sampled; count it plainly */
		*bytes = 0;
		*blocks = LS_SAMPLE_SCALE;
		return;
	}
	p = -ls_expm1(-(double)size / (double)ls_sample_rate);
	*bytes = ls_llround((double)size * LS_SAMPLE_SCALE / p);
	*blocks = ls_llround(LS_SAMPLE_SCALE / p);
}
