/*
 * mmap-sites.c - anonymous mappings as allocation sites (kind "mmap").
 *
 * Stacks: main -> mmap_run -> mmap_stage -> site_X.  Expected outstanding
 * at exit (lengths rounded up to 4096):
 *
 *   site                bytes  blocks  how
 *   site_mmap_middle    28672     2    8 pages, the 4th unmapped: a hole
 *                                      that splits the mapping in two
 *   site_mremap_grow    24576     1    2 pages mapped in tmp_mremap_orig,
 *                                      mremap'd to 6 pages here: the mapping
 *                                      moves to the mremap caller's stack
 *   site_mmap_head      16384     1    6 pages, the first 2 unmapped
 *   site_mmap_tail      12288     1    5 pages, the last 2 unmapped
 *   site_mmap_keep       8192     1    mmap(7000)
 *   site_mremap_shrink   4096     1    4 pages from tmp_mremap_orig,
 *                                      mremap'd down to 1 page here
 *
 * tmp_mmap_freed maps and fully unmaps 3 pages; tmp_mmap_file maps this
 * program's file (not anonymous: never a site) and leaves it mapped; a
 * failing mmap (length 0) creates nothing.  No tmp_* site may appear.
 *
 * Calls made at least: mmap 9 (one fails), munmap 4, mremap 2.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>
#include "wl.h"

#define PG 4096

WL_HELPER static char *tmp_anon(size_t len)
{
	char *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	WL_CHECK(p != MAP_FAILED, "mmap(%zu) failed", len);
	return p;
}

WL_SITE static void site_mmap_keep(void)
{
	char *p = mmap(NULL, 7000, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); /* @site_mmap_keep */
	WL_CHECK(p != MAP_FAILED, "mmap(7000) failed");
	p[6999] = 1;
	wl_sink = p;
}

WL_SITE static void site_mmap_tail(void)
{
	char *p = mmap(NULL, 5 * PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); /* @site_mmap_tail */
	WL_CHECK(p != MAP_FAILED, "mmap failed");
	WL_CHECK(munmap(p + 3 * PG, 2 * PG) == 0, "munmap tail failed");
	wl_sink = p;
}

WL_SITE static void site_mmap_head(void)
{
	char *p = mmap(NULL, 6 * PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); /* @site_mmap_head */
	WL_CHECK(p != MAP_FAILED, "mmap failed");
	WL_CHECK(munmap(p, 2 * PG) == 0, "munmap head failed");
	wl_sink = p + 2 * PG;
}

WL_SITE static void site_mmap_middle(void)
{
	char *p = mmap(NULL, 8 * PG, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0); /* @site_mmap_middle */
	WL_CHECK(p != MAP_FAILED, "mmap failed");
	WL_CHECK(munmap(p + 3 * PG, PG) == 0, "munmap middle failed");
	wl_sink = p;
}

WL_HELPER static char *tmp_mremap_orig(size_t pages)
{
	char *p = tmp_anon(pages * PG);
	p[0] = 'm';
	wl_sink = p;
	return p;
}

WL_SITE static void site_mremap_grow(void)
{
	char *p = tmp_mremap_orig(2);
	char *q = mremap(p, 2 * PG, 6 * PG, MREMAP_MAYMOVE); /* @site_mremap_grow */
	WL_CHECK(q != MAP_FAILED, "mremap grow failed");
	WL_CHECK(q[0] == 'm', "mremap lost the contents");
	q[6 * PG - 1] = 1;
	wl_sink = q;
}

WL_SITE static void site_mremap_shrink(void)
{
	char *p = tmp_mremap_orig(4);
	char *q = mremap(p, 4 * PG, PG, 0); /* @site_mremap_shrink */
	WL_CHECK(q == p, "mremap shrink moved or failed");
	wl_sink = q;
}

WL_HELPER static void tmp_mmap_freed(void)
{
	char *p = tmp_anon(3 * PG);
	p[0] = 1;
	WL_CHECK(munmap(p, 3 * PG) == 0, "munmap failed");
	WL_BARRIER();
}

WL_HELPER static void tmp_mmap_file(void)
{
	int fd = open("/proc/self/exe", O_RDONLY);
	WL_CHECK(fd >= 0, "cannot open /proc/self/exe");
	void *p = mmap(NULL, 3 * PG, PROT_READ, MAP_PRIVATE, fd, 0);
	WL_CHECK(p != MAP_FAILED, "file mmap failed");
	close(fd);
	wl_sink = p;
}

WL_HELPER static void tmp_mmap_fails(void)
{
	errno = 0;
	void *p = mmap(NULL, 0, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	WL_CHECK(p == MAP_FAILED && errno == EINVAL,
		 "mmap of length 0 gave %p errno %d", p, errno);
	WL_BARRIER();
}

WL_HELPER static void mmap_stage(void)
{
	site_mmap_keep();
	site_mmap_tail();
	site_mmap_head();
	site_mmap_middle();
	site_mremap_grow();
	site_mremap_shrink();
	tmp_mmap_freed();
	tmp_mmap_file();
	tmp_mmap_fails();
	WL_BARRIER();
}

WL_HELPER static void mmap_run(void)
{
	mmap_stage();
	WL_BARRIER();
}

int main(void)
{
	mmap_run();
	WL_BARRIER();
	return 0;
}
