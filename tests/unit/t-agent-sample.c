/*
 * t-agent-sample.c - sampled mode's filter of recorded blocks
 * (agent/sample.c): its one-bit-per-counter summary, which free()'s fast
 * path reads, never says "not recorded" of a recorded block, while
 * threads mark and unmark addresses that share its counter or its
 * summary word, handing blocks to each other as a program does.
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

/* Addresses that share one counter (the first half) or one word of the
 * summary (the second: other counters, other bits of that word). */
static void colliding(void)
{
	uint64_t a = 0x7f0000001000ull;
	uint32_t s0 = ls_sample_slot(a);
	unsigned same = 0, word = 0;

	for (; same + word < ADDRS; a += 16) {
		uint32_t s = ls_sample_slot(a);

		if (s == s0 && same < ADDRS / 2)
			addr[same++] = a;
		else if (s != s0 && s / 64 == s0 / 64 && word < ADDRS / 2)
			addr[ADDRS / 2 + word++] = a;
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
	unsigned n;

	/* The default rate: 2^16 counters, an 8 KiB summary. */
	ok(ls_sample_init(512 << 10, 1) == 0 && 64 - ls_sample_shift == 16,
	   "2^16 counters at 512 KiB");
	ok(!ls_sample_maybe(0x1000), "nothing recorded yet");
	run("2^16 counters");

	/* 8 KiB: 2^22 counters. */
	ok(ls_sample_init(8 << 10, 1) == 0 && 64 - ls_sample_shift == 22,
	   "2^22 counters at 8 KiB");
	run("2^22 counters");

	/* A neighbour in the same word changes nothing. */
	colliding();
	ls_sample_mark(addr[0]);
	ls_sample_mark(addr[ADDRS - 1]);
	ls_sample_unmark(addr[ADDRS - 1]);
	ok(ls_sample_maybe(addr[0]) && !ls_sample_maybe(addr[ADDRS - 1]),
	   "a neighbour's bit in the same word cleared, this one kept");
	ls_sample_mark(addr[1]);
	ls_sample_unmark(addr[0]);
	ok(ls_sample_maybe(addr[0]), "two blocks in one counter, one gone: "
	   "still set");
	ls_sample_unmark(addr[1]);
	ok(!ls_sample_maybe(addr[0]), "both gone: the bit clears");

	/* Saturated: a counter at 255 stays, and so does its bit. */
	for (n = 0; n < 300; n++)
		ls_sample_mark(addr[0]);
	for (n = 0; n < 300; n++)
		ls_sample_unmark(addr[0]);
	ok(ls_sample_maybe(addr[0]), "a saturated counter keeps its bit");
	return tap_done();
}
