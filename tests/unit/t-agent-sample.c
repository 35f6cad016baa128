/*
 * t-agent-sample.c - sampled mode's filter of recorded blocks
 * (agent/sample.c): its one-bit-per-group summary, which free()'s fast
 * path reads, never says "not recorded" of a recorded block, while
 * threads mark and unmark addresses that share its counter or its
 * summary bit, handing blocks to each other as a program does.
 */
#include <pthread.h>
#include <string.h>
#include "../../agent/sample.h"
#include "tap.h"

#define ADDRS 24		/* colliding addresses, half a counter's */
#define THREADS 4
#define ROUNDS 2000000		/* per thread */

static uint64_t addr[ADDRS];
/* Each address: 0 free, 1 being recorded, 2 recorded, 3 being freed. */
static int state[ADDRS];
static unsigned missed[THREADS], handed[THREADS];

/* Addresses that share one summary bit: the first half in one counter,
 * the second spread over the group's other counters (when it has
 * others; else all in one counter). */
static void colliding(void)
{
	uint64_t a = 0x7f0000001000ull;
	uint32_t g0 = ls_sample_group(a), s0 = ls_sample_slot(a);
	unsigned same = 0, other = 0;
	int groups = 64 - ls_sample_shift > LS_SAMPLE_SUMMARY_BITS;

	for (; same + other < ADDRS; a += 16) {
		if (ls_sample_group(a) != g0)
			continue;
		if (ls_sample_slot(a) == s0 && (same < ADDRS / 2 || !groups))
			addr[same++] = a;
		else if (ls_sample_slot(a) != s0 && other < ADDRS / 2)
			addr[ADDRS / 2 + other++] = a;
	}
}

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

/* Record (mark, then publish) or free (take, check, unmark) addresses
 * at random: a free that reads "not recorded" would leave the block in
 * the live table for ever. */
static void *hammer(void *arg)
{
	unsigned n = (unsigned)(uintptr_t)arg, i;
	uint64_t x = 0x2545f4914f6cdd1dULL * (n + 1);

	for (i = 0; i < ROUNDS; i++) {
		unsigned k = (unsigned)(next(&x) % ADDRS);
		int want = 0;

		if (__atomic_compare_exchange_n(&state[k], &want, 1, 0,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED)) {
			ls_sample_mark(addr[k]);
			__atomic_store_n(&state[k], 2, __ATOMIC_RELEASE);
			continue;
		}
		want = 2;
		if (__atomic_compare_exchange_n(&state[k], &want, 3, 0,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED)) {
			missed[n] += !ls_sample_maybe(addr[k]);
			handed[n]++;
			ls_sample_unmark(addr[k]);
			__atomic_store_n(&state[k], 0, __ATOMIC_RELEASE);
		}
	}
	return NULL;
}

static void run(const char *what)
{
	pthread_t th[THREADS];
	unsigned i, miss = 0, frees = 0, left = 0;

	memset(state, 0, sizeof(state));
	memset(missed, 0, sizeof(missed));
	memset(handed, 0, sizeof(handed));
	colliding();
	for (i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, hammer, (void *)(uintptr_t)i);
	for (i = 0; i < THREADS; i++) {
		pthread_join(th[i], NULL);
		miss += missed[i];
		frees += handed[i];
	}
	ok(frees > ROUNDS / 4 && miss == 0, "%s: %u frees of recorded "
	   "blocks from %u threads, %u missed", what, frees, THREADS, miss);
	/* Free what is still recorded: the bit must then clear. */
	for (i = 0; i < ADDRS; i++)
		if (state[i] == 2) {
			left += !ls_sample_maybe(addr[i]);
			ls_sample_unmark(addr[i]);
		}
	ok(left == 0 && !ls_sample_maybe(addr[0]),
	   "%s: the rest still seen (%u missed), then the bit clears", what,
	   left);
}

int main(void)
{
	uint64_t a;
	unsigned n;

	/* The default rate: a bit per counter. */
	ok(ls_sample_init(512 << 10, 1) == 0 && 64 - ls_sample_shift == 16,
	   "2^16 counters at 512 KiB");
	ok(!ls_sample_maybe(0x1000), "nothing recorded yet");
	run("a bit per counter");

	/* 8 KiB: 2^22 counters, 64 under each summary bit. */
	ok(ls_sample_init(8 << 10, 1) == 0 && 64 - ls_sample_shift == 22,
	   "2^22 counters at 8 KiB");
	run("a bit per 64 counters");

	/* One counter of a group back to 0 leaves the bit while another
	 * counter of the group is not. */
	colliding();
	a = addr[ADDRS - 1];
	ok(ls_sample_slot(a) != ls_sample_slot(addr[0]) &&
	   ls_sample_group(a) == ls_sample_group(addr[0]),
	   "two counters under one bit");
	ls_sample_mark(addr[0]);
	ls_sample_mark(a);
	ls_sample_unmark(a);
	ok(ls_sample_maybe(addr[0]) && ls_sample_maybe(a),
	   "one counter back to 0, the other not: the bit stays");
	ls_sample_unmark(addr[0]);
	ok(!ls_sample_maybe(addr[0]), "both at 0: the bit clears");

	/* Saturated: a counter at 255 stays, and so does its bit. */
	for (n = 0; n < 300; n++)
		ls_sample_mark(addr[0]);
	for (n = 0; n < 300; n++)
		ls_sample_unmark(addr[0]);
	ok(ls_sample_maybe(addr[0]), "a saturated counter keeps its bit");
	return tap_done();
}
