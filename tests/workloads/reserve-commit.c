/*
 * reserve-commit.c - what beam.smp (and V8, wasm runtimes) do with
 * address space: reserve a large PROT_NONE range, commit and
 * decommit pieces of it with mmap(MAP_FIXED) and mprotect(), and grow a
 * reservation with mremap.  Every committed page is touched, so VmRSS
 * holds at least the live bytes.
 *
 * Expected outstanding at exit (R = 1 GiB, like beam's literal area):
 *
 *   site               kind      bytes          blocks  how
 *   site_reserve       reserved  R - 1 MiB      1       mmap(R, PROT_NONE),
 *                                - 64 KiB - 256 KiB       less what is
 *                                                         committed below
 *   site_commit_fixed  mmap      65536 + 524288 2       MAP_FIXED RW 64 KiB
 *                                                         and 1 MiB (beam)
 *   site_decommit      reserved  524288         1       MAP_FIXED PROT_NONE
 *                                                         over half the MiB
 *   site_commit_prot   mmap      131072         1       mprotect(RW) 256 KiB
 *   site_uncommit_prot reserved  131072         1       mprotect(PROT_NONE)
 *                                                         of half of it
 *   site_grow          reserved  33554432       1       mremap of a 16 MiB
 *                                                         reservation to 32
 *
 * Live totals: 720896 bytes in 3 blocks; reserved_bytes
 * R - 1114112 - 262144 + 524288 + 131072 + 33554432.  No malloc, no
 * stdio.
 */
#include <sys/mman.h>
#include "wl.h"

#define KIB 1024ul
#define MIB (1024ul * KIB)
#define RES (1024ul * MIB)

static void touch(char *p, size_t len)
{
	size_t i;

	for (i = 0; i < len; i += 4096)
		p[i] = 1;
}

WL_SITE static char *site_reserve(void)
{
	char *p = mmap(NULL, RES, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
		       -1, 0); /* @site_reserve */

	WL_CHECK(p != MAP_FAILED, "reservation failed");
	return p;
}

WL_SITE static void site_commit_fixed(char *at, size_t len)
{
	char *p = mmap(at, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED,
		       -1, 0); /* @site_commit_fixed */

	WL_CHECK(p == at, "MAP_FIXED commit failed");
	touch(p, len);
}

WL_SITE static void site_decommit(char *at, size_t len)
{
	char *p = mmap(at, len, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED | MAP_NORESERVE,
		       -1, 0); /* @site_decommit */

	WL_CHECK(p == at, "MAP_FIXED decommit failed");
}

WL_SITE static void site_commit_prot(char *at, size_t len)
{
	WL_CHECK(!mprotect(at, len, PROT_READ | PROT_WRITE),
		 "mprotect commit failed"); /* @site_commit_prot */
	touch(at, len);
}

WL_SITE static void site_uncommit_prot(char *at, size_t len)
{
	WL_CHECK(!mprotect(at, len, PROT_NONE),
		 "mprotect decommit failed"); /* @site_uncommit_prot */
}

WL_SITE static void site_grow(void)
{
	char *p = mmap(NULL, 16 * MIB, PROT_NONE,
		       MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	char *q;

	WL_CHECK(p != MAP_FAILED, "second reservation failed");
	q = mremap(p, 16 * MIB, 32 * MIB, MREMAP_MAYMOVE); /* @site_grow */
	WL_CHECK(q != MAP_FAILED, "mremap of the reservation failed");
	wl_sink = q;
}

int main(void)
{
	char *r = site_reserve();

	site_commit_fixed(r, 64 * KIB);
	WL_BARRIER();
	site_commit_fixed(r + 64 * KIB, MIB);
	WL_BARRIER();
	site_decommit(r + 64 * KIB + MIB / 2, MIB / 2);
	WL_BARRIER();
	site_commit_prot(r + 8 * MIB, 256 * KIB);
	WL_BARRIER();
	site_uncommit_prot(r + 8 * MIB + 128 * KIB, 128 * KIB);
	WL_BARRIER();
	site_grow();
	WL_BARRIER();
	return 0;
}
