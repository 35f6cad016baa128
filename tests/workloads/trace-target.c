/*
 * trace-target.c - ground truth for `leakscope trace --event alloc`
 * (tests/integration/t_trace.py), traced from outside with eBPF.
 *
 *   trace-target wait   say "ready", wait for a byte on stdin, run the
 *                       sites, say "done", wait for stdin to close, exit 0
 *   trace-target exit   the same, but exit right after "done" (the
 *                       process is gone before the report)
 *   trace-target now    run the sites at once and exit 0 (for -c)
 *
 * Outstanding after the sites ran, per site (first program frame):
 *   site_malloc          400 bytes in 4 blocks
 *   site_calloc          240 bytes in 2 blocks   (calloc(3, 40) twice)
 *   site_realloc_grow   1000 bytes in 1 block    (its 16-byte tmp_make
 *                                                 block moved by realloc)
 *   site_realloc_fail     80 bytes in 1 block    (malloc; the realloc
 *                                                 that fails keeps it)
 *   site_reallocarray    120 bytes in 1 block
 *   site_posix_memalign  256 bytes in 1 block
 *   site_aligned_alloc   192 bytes in 1 block
 *   site_memalign        160 bytes in 1 block
 *   site_valloc          300 bytes in 1 block
 *   site_pvalloc         100 bytes in 1 block    (the size asked for)
 *   site_big          300000 bytes in 1 block    (glibc's own mmap inside
 *                                                 malloc is not a site)
 *   site_deep             64 bytes in 1 block, called through
 *                          deep_3 <- deep_2 <- deep_1 <- run_sites <- main
 *   site_mmap           8192 bytes in 1 mapping  (3 pages, the last one
 *                                                 unmapped again)
 * Every tmp_* function frees what it allocates.
 */
#include <malloc.h>
#include <stdint.h>
#include <sys/mman.h>
#include "wl.h"

WL_SITE static void site_malloc(void)
{
	for (int i = 0; i < wl_n(4); i++) {
		wl_sink = malloc(100);	/* @site_malloc */
		WL_BARRIER();
	}
}

WL_SITE static void site_calloc(void)
{
	for (int i = 0; i < wl_n(2); i++) {
		wl_sink = calloc(3, 40);
		WL_BARRIER();
	}
}

WL_HELPER static void *tmp_make(size_t n)
{
	void *p = malloc(n);

	WL_BARRIER();
	return p;
}

WL_SITE static void site_realloc_grow(void)
{
	void *p = tmp_make(16);

	wl_sink = realloc(p, 1000);
	WL_CHECK(wl_sink != NULL, "realloc grow");
	WL_BARRIER();
}

WL_SITE static void site_realloc_fail(void)
{
	void *p = malloc(80);
	void *q;

	WL_BARRIER();
	q = realloc(p, SIZE_MAX / 2);
	WL_CHECK(q == NULL, "a huge realloc should fail");
	wl_sink = p;
	WL_BARRIER();
}

WL_HELPER static void tmp_realloc_zero(void)
{
	void *p = malloc(50);

	WL_BARRIER();
	wl_sink = realloc(p, 0);
	WL_BARRIER();
}

WL_SITE static void site_reallocarray(void)
{
	wl_sink = reallocarray(NULL, 10, 12);
	WL_BARRIER();
}

WL_SITE static void site_posix_memalign(void)
{
	void *p = NULL;

	WL_CHECK(posix_memalign(&p, 64, 256) == 0, "posix_memalign");
	wl_sink = p;
	WL_BARRIER();
}

WL_SITE static void site_aligned_alloc(void)
{
	wl_sink = aligned_alloc(64, 192);
	WL_BARRIER();
}

WL_SITE static void site_memalign(void)
{
	wl_sink = memalign(32, 160);
	WL_BARRIER();
}

WL_SITE static void site_valloc(void)
{
	wl_sink = valloc(300);
	WL_BARRIER();
}

WL_SITE static void site_pvalloc(void)
{
	wl_sink = pvalloc(100);
	WL_BARRIER();
}

WL_SITE static void site_big(void)
{
	wl_sink = malloc(300000);
	WL_BARRIER();
}

WL_SITE static void site_deep(void)
{
	wl_sink = malloc(64);
	WL_BARRIER();
}

WL_HELPER static void deep_3(void) { site_deep(); WL_BARRIER(); }
WL_HELPER static void deep_2(void) { deep_3(); WL_BARRIER(); }
WL_HELPER static void deep_1(void) { deep_2(); WL_BARRIER(); }

WL_SITE static void site_mmap(void)
{
	char *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	WL_CHECK(p != MAP_FAILED, "mmap");
	WL_CHECK(munmap(p + 2 * 4096, 4096) == 0, "munmap");
	wl_sink = p;
	WL_BARRIER();
}

WL_HELPER static void tmp_churn(void)
{
	for (int i = 0; i < wl_n(50); i++) {
		void *p = malloc(64), *q = calloc(2, 16), *r = NULL;

		WL_CHECK(posix_memalign(&r, 32, 48) == 0, "posix_memalign");
		p = realloc(p, 128);
		free(p);
		free(q);
		free(r);
		WL_BARRIER();
	}
}

WL_HELPER static void run_sites(void)
{
	site_malloc();
	site_calloc();
	site_realloc_grow();
	site_realloc_fail();
	tmp_realloc_zero();
	site_reallocarray();
	site_posix_memalign();
	site_aligned_alloc();
	site_memalign();
	site_valloc();
	site_pvalloc();
	site_big();
	deep_1();
	site_mmap();
	tmp_churn();
	WL_BARRIER();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "now";
	char c;

	if (strcmp(mode, "now")) {
		wl_say(1, "ready\n");
		if (read(0, &c, 1) != 1)
			return 1;
	}
	run_sites();
	if (!strcmp(mode, "now"))
		return 0;
	wl_say(1, "done\n");
	if (!strcmp(mode, "exit"))
		return 0;
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
