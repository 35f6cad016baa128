/*
 * alloc-api.c - one leaking site per interposed allocator entry point and
 * per libc function that allocates on the program's behalf, plus the C
 * semantics the agent must leave unchanged.
 *
 * Every site is reached as main -> api_stage -> api_dispatch -> site_X, and
 * the allocating call carries a "@site_X" marker comment so the tests can
 * find its line.  Expected outstanding memory at exit, per site (the site is
 * the first frame in this program; for strdup/getline/asprintf frames[0] is
 * in libc and site_X is the next program frame):
 *
 *   site                     bytes  blocks  how
 *   site_malloc                384     3    malloc(128) x 3
 *   site_calloc                200     1    calloc(25, 8)
 *   site_realloc_null          300     1    realloc(NULL, 300) acts as malloc
 *   site_realloc_grow         2000     1    realloc of a malloc(1000) made in
 *                                           tmp_realloc_src: the block moves
 *   site_realloc_shrink         50     1    realloc(5000-byte block, 50)
 *   site_realloc_fail_orig     555     1    malloc(555); a later realloc to a
 *                                           huge size fails, block stays here
 *   site_reallocarray          330     1    reallocarray(NULL, 10, 33)
 *   site_posix_memalign       1000     1    posix_memalign(&p, 64, 1000)
 *   site_aligned_alloc         512     1    aligned_alloc(256, 512)
 *   site_memalign              700     1    memalign(128, 700)
 *   site_valloc                900     1    valloc(900)
 *   site_pvalloc              8192     1    pvalloc(5000): rounded to 4096
 *   site_strdup                 30     1    strdup of a 29-char string
 *   site_getline               120     1    getline's first buffer (glibc
 *                                           allocates 120 for a short line)
 *   site_asprintf               20     1    asprintf of a 19-char string
 *
 * Nothing allocated by a tmp_* function is outstanding at exit, and none of
 * the failed calls (calloc overflow, reallocarray overflow, realloc to a
 * huge size, posix_memalign with alignment 3) may create a site.
 *
 * Calls the program makes at least (the agent may count libc's own calls
 * too): see API_MIN_CALLS in tests/integration/t_alloc_api.py.
 *
 * Exit status 0, or 2 with a message on stderr when a semantic check fails.
 */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "wl.h"

/* Sizes kept in volatiles so the compiler cannot fold or warn about the
 * deliberately impossible requests. */
static volatile size_t huge_size = SIZE_MAX - 4096;
static volatile size_t half_max = SIZE_MAX / 2;
static volatile size_t bad_align = 3;
/* A NULL the compiler cannot see: gcc rewrites a literal realloc(NULL, n)
 * into malloc(n) and deletes a literal free(NULL). */
static void *volatile null_ptr;

WL_SITE static void site_malloc(void)
{
	for (int i = 0; i < wl_n(3); i++) {
		void *p = malloc(128); /* @site_malloc */
		WL_CHECK(p != NULL, "malloc(128) failed");
		wl_sink = p;
	}
}

WL_SITE static void site_calloc(void)
{
	unsigned char *p = calloc(25, 8); /* @site_calloc */
	WL_CHECK(p != NULL, "calloc(25, 8) failed");
	for (int i = 0; i < 200; i++)
		WL_CHECK(p[i] == 0, "calloc byte %d is %d", i, p[i]);
	wl_sink = p;
}

WL_SITE static void site_realloc_null(void)
{
	void *p = realloc(null_ptr, 300); /* @site_realloc_null */
	WL_CHECK(p != NULL, "realloc(NULL, 300) failed");
	memset(p, 1, 300);
	wl_sink = p;
}

WL_HELPER static char *tmp_realloc_src(size_t n)
{
	char *p = malloc(n);
	WL_CHECK(p != NULL, "malloc(%zu) failed", n);
	memset(p, 'r', n);
	wl_sink = p;
	return p;
}

WL_SITE static void site_realloc_grow(void)
{
	char *p = tmp_realloc_src(1000);
	char *q = realloc(p, 2000); /* @site_realloc_grow */
	WL_CHECK(q != NULL, "realloc(p, 2000) failed");
	WL_CHECK(q[0] == 'r' && q[999] == 'r', "realloc lost the contents");
	wl_sink = q;
}

WL_SITE static void site_realloc_shrink(void)
{
	char *p = tmp_realloc_src(5000);
	char *q = realloc(p, 50); /* @site_realloc_shrink */
	WL_CHECK(q != NULL, "realloc(p, 50) failed");
	WL_CHECK(q[0] == 'r' && q[49] == 'r', "realloc lost the contents");
	wl_sink = q;
}

WL_HELPER static void tmp_realloc_fail(char *p)
{
	errno = 0;
	void *q = realloc(p, huge_size);
	WL_CHECK(q == NULL, "realloc to SIZE_MAX-4096 succeeded");
	WL_CHECK(errno == ENOMEM, "failed realloc set errno %d, not ENOMEM",
		 errno);
	WL_CHECK(p[0] == 'f' && p[554] == 'f',
		 "failed realloc changed the old block");
	WL_BARRIER();
}

WL_SITE static void site_realloc_fail_orig(void)
{
	char *p = malloc(555); /* @site_realloc_fail_orig */
	WL_CHECK(p != NULL, "malloc(555) failed");
	memset(p, 'f', 555);
	wl_sink = p;
	tmp_realloc_fail(p);
	wl_sink = p;
}

WL_SITE static void site_reallocarray(void)
{
	void *p = reallocarray(null_ptr, 10, 33); /* @site_reallocarray */
	WL_CHECK(p != NULL, "reallocarray(NULL, 10, 33) failed");
	wl_sink = p;
}

WL_SITE static void site_posix_memalign(void)
{
	void *p = NULL;
	int rc = posix_memalign(&p, 64, 1000); /* @site_posix_memalign */
	WL_CHECK(rc == 0 && p != NULL, "posix_memalign(64, 1000) returned %d",
		 rc);
	WL_CHECK((uintptr_t)p % 64 == 0, "%p is not 64-aligned", p);
	wl_sink = p;
}

WL_SITE static void site_aligned_alloc(void)
{
	void *p = aligned_alloc(256, 512); /* @site_aligned_alloc */
	WL_CHECK(p != NULL, "aligned_alloc(256, 512) failed");
	WL_CHECK((uintptr_t)p % 256 == 0, "%p is not 256-aligned", p);
	wl_sink = p;
}

WL_SITE static void site_memalign(void)
{
	void *p = memalign(128, 700); /* @site_memalign */
	WL_CHECK(p != NULL, "memalign(128, 700) failed");
	WL_CHECK((uintptr_t)p % 128 == 0, "%p is not 128-aligned", p);
	wl_sink = p;
}

WL_SITE static void site_valloc(void)
{
	void *p = valloc(900); /* @site_valloc */
	WL_CHECK(p != NULL, "valloc(900) failed");
	WL_CHECK((uintptr_t)p % 4096 == 0, "%p is not page-aligned", p);
	wl_sink = p;
}

WL_SITE static void site_pvalloc(void)
{
	void *p = pvalloc(5000); /* @site_pvalloc */
	WL_CHECK(p != NULL, "pvalloc(5000) failed");
	WL_CHECK((uintptr_t)p % 4096 == 0, "%p is not page-aligned", p);
	wl_sink = p;
}

WL_SITE static void site_strdup(void)
{
	static const char text[] = "leakscope strdup ground truth";
	WL_CHECK(strlen(text) == 29, "strdup text is %zu chars", strlen(text));
	char *p = strdup(text); /* @site_strdup */
	WL_CHECK(p != NULL && strcmp(p, text) == 0, "strdup failed");
	wl_sink = p;
}

WL_SITE static void site_getline(void)
{
	static char input[] = "a short line\nsecond\n";
	FILE *f = fmemopen(input, strlen(input), "r");
	WL_CHECK(f != NULL, "fmemopen failed");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n = getline(&line, &cap, f); /* @site_getline */
	WL_CHECK(n == 13, "getline returned %zd", n);
	WL_CHECK(cap == 120, "getline buffer is %zu bytes, the ground truth "
		 "assumes glibc's initial 120", cap);
	fclose(f);
	wl_sink = line;
}

WL_SITE static void site_asprintf(void)
{
	char *s = NULL;
	int n = asprintf(&s, "asprintf %s %d", "leak", 12345); /* @site_asprintf */
	WL_CHECK(n == 19 && s != NULL, "asprintf returned %d", n);
	WL_CHECK(strcmp(s, "asprintf leak 12345") == 0, "asprintf wrote '%s'", s);
	wl_sink = s;
}

/* realloc(p, 0) frees p (glibc returns NULL). */
WL_HELPER static void tmp_realloc_zero(void)
{
	void *p = tmp_realloc_src(77);
	void *q = realloc(p, 0);
	WL_CHECK(q == NULL, "realloc(p, 0) returned %p, glibc frees and "
		 "returns NULL", q);
	WL_BARRIER();
}

WL_HELPER static void tmp_failures(void)
{
	errno = 0;
	void *p = calloc(half_max, 4);
	WL_CHECK(p == NULL, "calloc(SIZE_MAX/2, 4) succeeded");
	WL_CHECK(errno == ENOMEM, "calloc overflow set errno %d", errno);

	errno = 0;
	p = reallocarray(null_ptr, half_max, 4);
	WL_CHECK(p == NULL, "reallocarray(NULL, SIZE_MAX/2, 4) succeeded");
	WL_CHECK(errno == ENOMEM, "reallocarray overflow set errno %d", errno);

	void *q = (void *)&p;
	int rc = posix_memalign(&q, bad_align, 64);
	WL_CHECK(rc == EINVAL, "posix_memalign(alignment 3) returned %d", rc);
	WL_CHECK(q == (void *)&p, "posix_memalign failure changed *memptr");

	errno = 0;
	p = malloc(huge_size);
	WL_CHECK(p == NULL && errno == ENOMEM, "malloc(huge) gave %p errno %d",
		 p, errno);
	WL_BARRIER();
}

/* Success paths leave errno alone. */
WL_HELPER static void tmp_errno(void)
{
	errno = 1234;
	void *p = malloc(40);
	WL_CHECK(p != NULL && errno == 1234, "malloc changed errno to %d", errno);
	wl_sink = p;
	p = realloc(wl_sink, 4000);
	WL_CHECK(p != NULL && errno == 1234, "realloc changed errno to %d",
		 errno);
	wl_sink = p;
	free(wl_sink);
	WL_CHECK(errno == 1234, "free changed errno to %d", errno);
	p = calloc(3, 30);
	WL_CHECK(p != NULL && errno == 1234, "calloc changed errno to %d", errno);
	wl_sink = p;
	free(wl_sink);
	free(null_ptr);
	WL_CHECK(errno == 1234, "free(NULL) changed errno to %d", errno);
	errno = 0;
}

/* Each entry point once more, each block freed. */
WL_HELPER static void tmp_freed(void)
{
	void *p;
	wl_sink = malloc(10);
	free(wl_sink);
	wl_sink = calloc(2, 10);
	free(wl_sink);
	wl_sink = realloc(null_ptr, 10);
	wl_sink = realloc(wl_sink, 20);
	free(wl_sink);
	wl_sink = reallocarray(null_ptr, 2, 10);
	free(wl_sink);
	WL_CHECK(posix_memalign(&p, 32, 10) == 0, "posix_memalign failed");
	wl_sink = p;
	free(wl_sink);
	wl_sink = aligned_alloc(64, 64);
	free(wl_sink);
	wl_sink = memalign(64, 10);
	free(wl_sink);
	wl_sink = valloc(10);
	free(wl_sink);
	wl_sink = pvalloc(10);
	free(wl_sink);
	wl_sink = strdup("temporary");
	free(wl_sink);
	char *s = NULL;
	WL_CHECK(asprintf(&s, "%d", 42) == 2, "asprintf failed");
	wl_sink = s;
	free(wl_sink);
	free(null_ptr);
}

WL_HELPER static void api_dispatch(void)
{
	site_malloc();
	site_calloc();
	site_realloc_null();
	site_realloc_grow();
	site_realloc_shrink();
	site_realloc_fail_orig();
	site_reallocarray();
	site_posix_memalign();
	site_aligned_alloc();
	site_memalign();
	site_valloc();
	site_pvalloc();
	site_strdup();
	site_getline();
	site_asprintf();
	WL_BARRIER();
}

WL_HELPER static void api_stage(void)
{
	api_dispatch();
	tmp_realloc_zero();
	tmp_failures();
	tmp_errno();
	tmp_freed();
	WL_BARRIER();
}

int main(void)
{
	api_stage();
	WL_BARRIER();
	return 0;
}
