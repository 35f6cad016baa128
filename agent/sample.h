/*
 * sample.h - Poisson byte sampling (--sample-rate), docs/SAMPLING.md.
 *
 * Sample points fall on the stream of allocated bytes as a Poisson
 * process of mean gap T bytes, kept per thread; a block is recorded when
 * a point falls inside it, so a block of s bytes is recorded with
 * probability p(s) = 1 - exp(-s/T).  Recorded blocks stand for s/p(s)
 * bytes and 1/p(s) blocks: unbiased estimates.  Unrecorded blocks leave
 * no trace except in a counting filter keyed by address, which lets
 * free() skip the live table for almost every block it sees.
 *
 * All functions are safe inside allocation hooks.
 */
#ifndef LEAKSCOPE_AGENT_SAMPLE_H
#define LEAKSCOPE_AGENT_SAMPLE_H

#include <stdint.h>
#include "sys.h"
#include "thread.h"

/* Set T and the seed; maps the filter.  Outside hooks, at start. */
int ls_sample_init(uint64_t rate, uint64_t seed);

extern uint64_t ls_sample_rate;	/* T; 0 = full tracking */
/*
 * The counting filter of recorded blocks (sample.c): one-byte counters
 * indexed by a hash of the address (ls_sample_slot), changed only under a
 * lock by ls_sample_mark/unmark, and its summary, one bit per counter, set
 * exactly when the counter is not zero.  The fast path (ls_sample_maybe)
 * reads the summary only: at the default rate 2^16 bits, 8 KiB, stay in
 * the first-level cache, where the 64 KiB of counters did not.
 */
extern uint64_t *ls_sample_summary;
extern unsigned ls_sample_shift;	/* 64 - log2(filter counters) */

int ls_sample_hit(struct ls_thread *t, uint64_t size);

/* Should this allocation of size bytes be recorded? */
static inline int ls_sample_take(struct ls_thread *t, uint64_t size)
{
	if (ls_likely(t->sample_left > size)) {
		t->sample_left -= size;
		return 0;
	}
	return ls_sample_hit(t, size);
}

static inline uint32_t ls_sample_slot(uint64_t addr)
{
	return (uint32_t)(((addr >> 4) * 0x9e3779b97f4a7c15ULL) >>
			  ls_sample_shift);
}

/*
 * Might addr be a recorded block?  No false negatives: a block recorded
 * (ls_sample_mark) before the allocation returned, and not yet unmarked,
 * reads 1 in any thread the program hands it to (sample.c says why).
 * Lock-free; safe anywhere.
 */
static inline int ls_sample_maybe(uint64_t addr)
{
	uint32_t i = ls_sample_slot(addr);

	return (__atomic_load_n(&ls_sample_summary[i / 64], __ATOMIC_RELAXED) >>
		(i % 64)) & 1;
}
/* Count a recorded block in, or out of, the filter.  Take the filter's
 * lock (a leaf: nothing is called under it). */
void ls_sample_mark(uint64_t addr);
void ls_sample_unmark(uint64_t addr);
/* Fork handlers. */
void ls_sample_lock_all(void);
void ls_sample_unlock_all(void);
void ls_sample_reset_child(void);

/*
 * In sampled mode the site counters hold estimates as fixed point, in
 * units of 1/LS_SAMPLE_SCALE, so that the fractional weights of many small
 * blocks add up without rounding bias.  ls_sample_scale() is the divisor
 * a reader applies: LS_SAMPLE_SCALE when sampling, 1 in full tracking.
 */
#define LS_SAMPLE_SCALE 256
static inline int64_t ls_sample_scale(void)
{
	return ls_sample_rate ? LS_SAMPLE_SCALE : 1;
}

/* From counter units back to bytes or blocks, rounded to nearest. */
static inline int64_t ls_sample_unscale(int64_t v)
{
	int64_t d = ls_sample_scale();

	return v >= 0 ? (v + d / 2) / d : -((-v + d / 2) / d);
}

void ls_sample_est_sampled(uint64_t size, int64_t *bytes, int64_t *blocks);

/* What a recorded block of size bytes stands for, in counter units, at
 * sample rate rate: exactly (size, 1) in full tracking (rate 0).  The
 * hooks pass the rate they read once per event (track.c). */
static inline __attribute__((always_inline))
void ls_sample_est_at(uint64_t rate, uint64_t size, int64_t *bytes,
		      int64_t *blocks)
{
	if (ls_likely(!rate)) {
		*bytes = (int64_t)size;
		*blocks = 1;
		return;
	}
	ls_sample_est_sampled(size, bytes, blocks);
}

/* The same at the agent's rate. */
static inline void ls_sample_est(uint64_t size, int64_t *bytes, int64_t *blocks)
{
	ls_sample_est_at(ls_sample_rate, size, bytes, blocks);
}

#endif
