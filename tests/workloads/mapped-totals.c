/*
 * mapped-totals.c - which mappings count as live: linked with
 * libtinyalloc.so, so its malloc carves blocks out of 1 MiB chunks that
 * libtinyalloc maps itself.
 *
 * Expected outstanding at exit:
 *
 *   site             kind       bytes     blocks  how
 *   site_blocks      heap       3000000   30      malloc(100000) x 30
 *   site_prog_map    mmap       12288     1       the program's own mmap
 *   site_fixed       mmap       8192      1       MAP_FIXED read-write,
 *                                                 inside the reservation
 *   site_reserve     reserved   67100672  1       mmap(64 MiB, PROT_NONE)
 *                                                 less the 2 pages above
 *   site_big         -          0         0       malloc(600000), freed:
 *                                                 libtinyalloc maps it on
 *                                                 its own and its free()
 *                                                 unmaps it, inside the
 *                                                 program's free call (the
 *                                                 agent must see that
 *                                                 munmap: the allocator
 *                                                 total stays whole MiB)
 *   (libtinyalloc)   allocator  2 or 3 MiB        its chunks mapped while
 *                                                 traced: the 30 blocks
 *                                                 need 3000480 bytes with
 *                                                 headers; the first chunk
 *                                                 may be mapped by libc's
 *                                                 start-up before the
 *                                                 agent is on
 *
 * Live totals: 3020480 bytes in 32 blocks: the chunks and the
 * reservation are not live, shown apart as allocator_mapped_bytes and
 * reserved_bytes (67100672).  The program calls nothing that allocates
 * besides site_blocks and site_big (no stdio).
 */
#include <sys/mman.h>
#include "wl.h"

#define PG 4096
#define RESERVE (64u << 20)

WL_SITE static void site_blocks(void)
{
	int i;

	for (i = 0; i < wl_n(30); i++) {
		char *p = malloc(100000); /* @site_blocks */

		WL_CHECK(p != NULL, "malloc failed");
		p[0] = 1;
		wl_sink = p;
	}
}

WL_SITE static void site_big(void)
{
	char *p = malloc(600000); /* @site_big */

	WL_CHECK(p != NULL, "malloc failed");
	p[0] = 1;
	wl_sink = p;
	free(p);
}

WL_SITE static void site_prog_map(void)
{
	char *p = mmap(NULL, 3 * PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); /* @site_prog_map */

	WL_CHECK(p != MAP_FAILED, "mmap failed");
	p[0] = 1;
	wl_sink = p;
}

WL_SITE static char *site_reserve(void)
{
	char *p = mmap(NULL, RESERVE, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0); /* @site_reserve */

	WL_CHECK(p != MAP_FAILED, "reservation failed");
	return p;
}

WL_SITE static void site_fixed(char *in)
{
	char *p = mmap(in + 16 * PG, 2 * PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		       -1, 0); /* @site_fixed */

	WL_CHECK(p == in + 16 * PG, "MAP_FIXED mmap failed");
	p[0] = 1;
	wl_sink = p;
}

int main(void)
{
	site_blocks();
	WL_BARRIER();
	site_big();
	WL_BARRIER();
	site_prog_map();
	WL_BARRIER();
	site_fixed(site_reserve());
	WL_BARRIER();
	return 0;
}
