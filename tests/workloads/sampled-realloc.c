/*
 * sampled-realloc.c - ground truth for realloc in sampled mode
 * (--sample-rate), whose common case skips the live table: a realloc of
 * a block that was never recorded, to a size no sample point falls in.
 *
 *   site             live bytes  live blocks  how
 *   site_r_grow1              0            0  malloc(4096), then grown
 *   site_r_grow2              0            0  realloc to 8192, then grown
 *   site_r_grow3     16,384,000        1,000  realloc to 16384, kept
 *   site_r_null       1,024,000          500  realloc(NULL, 2048), kept
 *   tmp_r_chain               0            0  malloc, realloc twice, free
 *
 * Exact for any seed: the blocks of grow1 and grow2 were all moved on by
 * realloc, so whichever of them were recorded must have left the table
 * (recorded ones, 8 and 16 per run on average, take the slow path).
 * Calls: 1,000 + 2,000 malloc, 2,000 + 500 + 4,000 realloc, 2,000 free.
 */
#include <stdlib.h>
#include "wl.h"

/* Each stores its block before returning: the call is not a tail call,
 * so the site's frame is on the stack. */
WL_SITE static void *site_r_grow1(void) { return wl_sink = malloc(4096); }
WL_SITE static void *site_r_grow2(void *p) { return wl_sink = realloc(p, 8192); }
WL_SITE static void *site_r_grow3(void *p) { return wl_sink = realloc(p, 16384); }
/* Through a volatile: the compiler turns realloc(NULL, n) into malloc(n). */
static void *volatile no_block;
WL_SITE static void *site_r_null(void) { return wl_sink = realloc(no_block, 2048); }

WL_HELPER static void tmp_r_chain(unsigned i)
{
	void *p = malloc(64 + i % 512);

	p = realloc(p, 1024 + i % 4096);
	p = realloc(p, 32);
	wl_sink = p;
	free(p);
}

int main(void)
{
	static void *kept[1500];
	unsigned i;

	for (i = 0; i < 1000; i++) {
		void *p = site_r_grow1();

		WL_BARRIER();
		p = site_r_grow2(p);
		WL_BARRIER();
		kept[i] = site_r_grow3(p);
		WL_BARRIER();
		if (i % 2 == 0) {
			kept[1000 + i / 2] = site_r_null();
			WL_BARRIER();
		}
		tmp_r_chain(i);
		tmp_r_chain(i * 7);
		WL_BARRIER();
	}
	wl_sink = kept;
	return 0;
}
