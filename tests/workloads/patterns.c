/*
 * patterns.c - allocation patterns whose accounting is easy to get wrong.
 *
 * Stacks: main -> patterns_run -> patterns_stage -> site_X.  Expected
 * outstanding at exit:
 *
 *   site             bytes     blocks  how
 *   site_big         67108864    1     malloc(64 MiB): glibc serves it
 *                                      with its own mmap, yet it is a heap
 *                                      block of exactly the requested size
 *   site_chain_grow     32768    1     a malloc(32) made in tmp_chain_start
 *                                      grown by 10 reallocs, doubling: only
 *                                      the final size, at the realloc site
 *
 * tmp_churn makes 100,000 malloc/free pairs of mixed sizes (8 B to 200 KiB,
 * some above glibc's mmap threshold, up to 64 blocks live at a time) and
 * leaves nothing; no tmp_* function may appear in any site.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "wl.h"

#define CHURN_PAIRS 100000

WL_SITE static void site_big(void)
{
	char *p = malloc(64u << 20); /* @site_big */
	WL_CHECK(p != NULL, "malloc(64 MiB) failed");
	p[0] = 1;
	p[(64u << 20) - 1] = 1;
	wl_sink = p;
}

WL_HELPER static char *tmp_chain_start(void)
{
	char *p = malloc(32);
	WL_CHECK(p != NULL, "malloc(32) failed");
	memset(p, 'c', 32);
	wl_sink = p;
	return p;
}

WL_SITE static void site_chain_grow(void)
{
	char *p = tmp_chain_start();
	size_t n = 32;
	for (int i = 0; i < wl_n(10); i++) {
		n *= 2;
		char *q = realloc(p, n); /* @site_chain_grow */
		WL_CHECK(q != NULL, "realloc to %zu failed", n);
		WL_CHECK(q[0] == 'c' && q[31] == 'c', "realloc lost the contents");
		p = q;
		wl_sink = p;
	}
	WL_CHECK(n == 32768, "chain ended at %zu", n);
}

WL_HELPER static void tmp_churn(void)
{
	void *ring[64] = { 0 };
	uint32_t x = 12345;

	for (int i = 0; i < CHURN_PAIRS; i++) {
		x = x * 1103515245u + 12345u;
		size_t n = 8 + (x >> 8) % 4096;
		if (i % 1000 == 0)
			n = 200 * 1024;
		int slot = i % 64;
		free(ring[slot]);
		ring[slot] = malloc(n);
		WL_CHECK(ring[slot] != NULL, "malloc(%zu) failed", n);
		*(volatile char *)ring[slot] = 1;
	}
	for (int i = 0; i < 64; i++) {
		wl_sink = ring[i];
		free(wl_sink);
	}
}

WL_HELPER static void patterns_stage(void)
{
	site_big();
	site_chain_grow();
	tmp_churn();
	WL_BARRIER();
}

WL_HELPER static void patterns_run(void)
{
	patterns_stage();
	WL_BARRIER();
}

int main(void)
{
	patterns_run();
	WL_BARRIER();
	return 0;
}
