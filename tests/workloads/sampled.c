/*
 * sampled.c - ground truth for --sample-rate: known totals per site, with
 * mixed block sizes at one site and a churn of freed temporaries between
 * them, so the sampler's byte stream interleaves sites the way a real
 * program's does.
 *
 *   site             bytes     blocks  sizes
 *   site_s_small   1,920,000   40,000  48
 *   site_s_mixed   9,223,200    1,000  16,100,1000,5000,40000 repeating
 *   site_s_large   4,194,304       16  262144
 *   site_s_onemib  1,048,576      256  4096
 *
 * Temporaries (tmp_s_churn): 300,000 blocks of 8..2055 bytes, all freed.
 * The allocations are interleaved round-robin; the program is single
 * threaded and deterministic, so a seeded run samples the same blocks.
 */
#include <stdlib.h>
#include "wl.h"

static const size_t mixed[5] = { 16, 100, 1000, 5000, 40000 };

WL_SITE static void site_s_small(void) { wl_sink = malloc(48); }
WL_SITE static void site_s_mixed(int i) { wl_sink = malloc(mixed[i % 5]); }
WL_SITE static void site_s_large(void) { wl_sink = malloc(262144); }
WL_SITE static void site_s_onemib(void) { wl_sink = malloc(4096); }

WL_HELPER static void tmp_s_churn(unsigned *x)
{
	void *p;

	*x = *x * 1103515245u + 12345u;
	p = malloc(8 + (*x >> 16) % 2048);
	wl_sink = p;
	free(p);
}

WL_HELPER static void run(void)
{
	unsigned x = 1;
	int i;

	for (i = 0; i < 40000; i++) {
		site_s_small();
		if (i < 1000)
			site_s_mixed(i);
		if (i % 2500 == 0)
			site_s_large();
		if (i % 156 == 0 && i / 156 < 256)
			site_s_onemib();
		for (int k = 0; k < 7; k++)
			tmp_s_churn(&x);
		WL_BARRIER();
	}
	tmp_s_churn(&x);
	WL_BARRIER();
}

int main(void)
{
	run();
	WL_BARRIER();
	return 0;
}
