/*
 * peaks.c - ground truth for peak consumers, temporary allocations and
 * the size and lifetime histograms.  One thread; every figure
 * below is exact in full tracking.
 *
 *   peaks [wait]
 *
 * In order:
 *   keep_sized()  allocates and keeps until exit 10 x 24 B, 20 x 1000 B
 *                 and 5 x 70000 B = 370240 bytes in 35 blocks, from
 *                 three call lines of main (three sites); size
 *                 histogram: bucket 5 ([16, 32)) 10, bucket 10 ([512,
 *                 1024)) 20, bucket 17 ([65536, 131072)) 5.
 *   make_temps()  1000 x (malloc 100 B, free it at once): 1000 temporary
 *                 allocations, 100000 bytes, and nothing else; every
 *                 lifetime well under 1 s (lifetime buckets below 8).
 *   fill_peak()   200 x 40000 B = 8000000 bytes, then marker() keeps 8 B
 *                 (so that no fill block is freed right after its own
 *                 allocation: fill_peak has 0 temporaries), then every
 *                 fill block is freed.  The process's live total peaks
 *                 just before the first of those frees: 370240 + 8000000
 *                 + 8 = 8370248 bytes in 236 blocks, of which fill_peak
 *                 holds 8000000 bytes in 200 blocks, keep_sized 370240
 *                 in 35, marker 8 in 1.  Nothing is allocated at a larger
 *                 total later.
 *   hold()        8 x 64 B held for 600 ms, then freed: 8 lifetimes of
 *                 at least 0.6 s (lifetime bucket 8, [0.5 s, 1 s), or
 *                 later if the machine stalls the sleep); 1 temporary of
 *                 64 bytes: the last block, freed with no allocation
 *                 after it (the others were followed by one).
 *
 * Then, with "wait", it writes "ready\n" on stdout and sleeps until
 * killed; else it exits (keep_sized and marker leak: 370248 bytes).
 */
#include <time.h>
#include "wl.h"

#define FILL 200
#define HELD 8

static void *kept[64];
static void *fill[FILL];

WL_SITE void *keep_sized(size_t n)
{
	void *p = malloc(n);

	wl_sink = p;
	return p;
}

WL_SITE void make_temps(int n)
{
	int i;

	for (i = 0; i < wl_n(n); i++) {
		void *p = malloc(100);

		wl_sink = p;
		free(p);
	}
}

WL_SITE void *fill_peak(void)
{
	void *p = malloc(40000);

	wl_sink = p;
	return p;
}

WL_SITE void *marker(void)
{
	void *p = malloc(8);

	wl_sink = p;
	return p;
}

WL_SITE void *hold(void)
{
	void *p = malloc(64);

	wl_sink = p;
	return p;
}

int main(int argc, char **argv)
{
	struct timespec ts = { 0, 600 * 1000 * 1000 };
	void *held[HELD];
	int i, k = 0;

	for (i = 0; i < wl_n(10); i++)
		kept[k++] = keep_sized(24);
	for (i = 0; i < wl_n(20); i++)
		kept[k++] = keep_sized(1000);
	for (i = 0; i < wl_n(5); i++)
		kept[k++] = keep_sized(70000);
	make_temps(1000);
	for (i = 0; i < wl_n(FILL); i++)
		fill[i] = fill_peak();
	kept[k++] = marker();
	for (i = 0; i < wl_n(FILL); i++)
		free(fill[i]);
	for (i = 0; i < wl_n(HELD); i++)
		held[i] = hold();
	nanosleep(&ts, NULL);
	for (i = 0; i < wl_n(HELD); i++)
		free(held[i]);
	if (argc > 1 && !strcmp(argv[1], "wait")) {
		wl_say(1, "ready\n");
		for (;;)
			pause();
	}
	return 0;
}
