/*
 * growth.c - ground truth for the growth trends: five sites with known
 * shapes over SECONDS (argument, default 24), sampled by the agent once
 * per second.
 *
 *   site_g_linear  leaks 8 KiB every 100 ms: linear at 81,920 B/s, with
 *                  temporaries from the same call site (up to 40 blocks of
 *                  8 KiB held 0-400 ms) as churn on top
 *   site_g_cache   a 64-slot cache of 4 KiB entries that fills during the
 *                  first 8 s, then only replaces entries: saturating
 *   site_g_double  live bytes double every 4 s (8 KiB, 16 KiB, ...):
 *                  exponential
 *   site_g_steady  a ring of 100 blocks of 1 KiB, filled before the loop
 *                  starts, then each replaced in turn: constant
 *   site_g_temp    allocated and freed at once: never growing
 *
 * The loop ticks every 10 ms; the pseudo-random churn is seeded by the
 * second argument (default 1) so runs differ but are reproducible.
 * Prints nothing; exits 0 after SECONDS unless killed.
 */
#include <stdlib.h>
#include <time.h>
#include "wl.h"

#define TICK_MS 10
#define CACHE_SLOTS 64
#define RING 100
#define TEMPS 40

static void *cache[CACHE_SLOTS];
static void *ring[RING];
static void *temps[TEMPS];
static int temp_left[TEMPS];
static void *doubled[1 << 12];
static size_t ndoubled;
static unsigned rng;

static unsigned rnd(void)
{
	rng = rng * 1103515245u + 12345u;
	return rng >> 16;
}

/* Each site stores through wl_sink after the call, so the call is not a
 * tail call and the site keeps its own frame. */
#define SITE(name, size)						\
	WL_SITE static void *name(size_t n)				\
	{								\
		void *p = malloc(size);					\
		wl_sink = p;						\
		WL_BARRIER();						\
		return p;						\
	}
SITE(site_g_linear, 8192)	/* @site_g_linear */
SITE(site_g_cache, 4096)	/* @site_g_cache */
SITE(site_g_double, 8192)	/* @site_g_double */
SITE(site_g_steady, 1024)	/* @site_g_steady */
SITE(site_g_temp, n)		/* @site_g_temp */

/* The one call site of site_g_linear: leaks and temporaries share the
 * stack, as a leak hidden in busy code does. */
WL_HELPER static void *linear_alloc(void)
{
	void *p = site_g_linear(0);

	WL_BARRIER();
	return p;
}

/* Slot TEMPS is the leak, the others temporaries; one call site serves
 * them all. */
WL_HELPER static void linear_take(int i)
{
	void *p = linear_alloc();

	WL_BARRIER();
	if (i == TEMPS) {
		wl_sink = p;
	} else {
		temps[i] = p;
		temp_left[i] = (int)(rnd() % 40);
	}
}

WL_HELPER static void linear_tick(long tick)
{
	int i, n = wl_n(TEMPS + 1);

	for (i = 0; i < n; i++) {
		int want;

		if (i < TEMPS && temps[i] && --temp_left[i] <= 0) {
			free(temps[i]);
			temps[i] = NULL;
		}
		want = i == TEMPS ? tick % 10 == 0 : !temps[i] && rnd() % 8 == 0;
		if (want)
			linear_take(i);
	}
}

WL_HELPER static void cache_tick(long tick)
{
	int slot = (int)(tick / 12) % CACHE_SLOTS;

	if (tick % 12)
		return;
	if (tick / 12 >= CACHE_SLOTS || !cache[slot]) {
		free(cache[slot]);		/* evict, once full */
		cache[slot] = site_g_cache(0);
	}
}

WL_HELPER static void double_tick(long tick)
{
	size_t want = (size_t)1 << (tick / 400);	/* blocks: 1,2,4,... */

	while (ndoubled < want && ndoubled < sizeof(doubled) / sizeof(*doubled))
		doubled[ndoubled++] = site_g_double(0);
}

WL_HELPER static void steady_tick(long tick)
{
	int i = (int)(tick % RING);

	free(ring[i]);
	ring[i] = site_g_steady(0);
}

WL_HELPER static void temp_tick(void)
{
	free(site_g_temp(16 + rnd() % 4000));
}

int main(int argc, char **argv)
{
	long seconds = argc > 1 ? atol(argv[1]) : 24, tick;
	struct timespec next;

	rng = argc > 2 ? (unsigned)atol(argv[2]) : 1;
	/* Full before the agent's first sample (1 s in): a ring that filled
	 * over the first 100 ticks read as saturating when a loaded machine
	 * delayed those ticks past that sample. */
	for (tick = 0; tick < RING; tick++)
		ring[tick] = site_g_steady(0);
	clock_gettime(CLOCK_MONOTONIC, &next);
	for (tick = 0; tick < seconds * 1000 / TICK_MS; tick++) {
		linear_tick(tick);
		cache_tick(tick);
		double_tick(tick);
		steady_tick(tick);
		temp_tick();
		WL_BARRIER();
		next.tv_nsec += TICK_MS * 1000000L;
		if (next.tv_nsec >= 1000000000L) {
			next.tv_nsec -= 1000000000L;
			next.tv_sec++;
		}
		clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &next, NULL);
	}
	return 0;
}
