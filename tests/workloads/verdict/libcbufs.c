/*
 * libcbufs.c MODE - blocks the C library allocates for the program, and
 * pointers the program bends.
 *   0  strdup: one copy dropped (definitely lost), one kept in a global
 *   1  getline on an fmemopen stream, the stream closed: the line's
 *      buffer dropped (lost), a second line's kept in a global
 *   2  asprintf's string dropped (lost); open_memstream's buffer, the
 *      stream closed, dropped (lost)
 *   3  realloc chains: 10 -> 100 -> 1000 -> 200000 bytes (the last one
 *      mmapped) dropped (lost), another chain kept in a global;
 *      realloc(p, 0) of a 50-byte block (glibc frees it and returns NULL)
 *   4  aligned blocks: posix_memalign 100 bytes at 64 kept in a global
 *      (reachable), aligned_alloc 4096 at 4096 dropped (lost), memalign
 *      300 at 256 held only by a pointer 16 bytes in (possibly lost for
 *      memcheck, reachable for LeakSanitizer)
 *   5  hidden pointers: a 64-byte block whose only pointer is XORed with
 *      a constant, a 72-byte block whose only pointer carries a tag in its
 *      top byte: both definitely lost
 */
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include "v.h"

void *keep, *keep2;	/* external: stores to them stay */
uintptr_t hidden, tagged;

__attribute__((noinline)) static void dups(void)
{
	v_use(strdup("a string that is dropped"));
	keep = strdup("a string that is kept");
}

__attribute__((noinline)) static void lines(void)
{
	static char text[] = "first line\nsecond line\n";
	FILE *f = fmemopen(text, sizeof(text) - 1, "r");
	char *line = NULL;
	size_t cap = 0;

	if (!f || getline(&line, &cap, f) < 0)
		abort();
	v_use(line);
	line = NULL;
	cap = 0;
	if (getline(&line, &cap, f) < 0)
		abort();
	keep = line;
	fclose(f);
}

__attribute__((noinline)) static void prints(void)
{
	char *s, *buf;
	size_t n;
	FILE *f;

	if (asprintf(&s, "%d %s", 42, "formatted") < 0)
		abort();
	v_use(s);
	f = open_memstream(&buf, &n);
	if (!f)
		abort();
	fputs("written to a memory stream", f);
	fclose(f);
	v_use(buf);
}

__attribute__((noinline)) static void *chain(void)
{
	char *p = v_alloc(10);

	p = realloc(p, 100);
	p = realloc(p, 1000);
	p = realloc(p, 200000);
	if (!p)
		abort();
	p[199999] = 1;
	return p;
}

__attribute__((noinline)) static void reallocs(void)
{
	void *p;

	v_use(chain());
	keep = chain();
	p = v_alloc(50);
	p = realloc(p, 0);
	keep2 = p;
}

__attribute__((noinline)) static void aligned(void)
{
	void *p;

	if (posix_memalign(&p, 64, 100))
		abort();
	memset(p, 1, 100);
	keep = p;
	p = aligned_alloc(4096, 4096);
	if (!p)
		abort();
	memset(p, 2, 4096);
	v_use(p);
	p = memalign(256, 300);
	if (!p)
		abort();
	memset(p, 3, 300);
	keep2 = (char *)p + 16;
}

__attribute__((noinline)) static void hide(void)
{
	hidden = (uintptr_t)v_alloc(64) ^ 0x5a5a5a5a5a5aUL;
	tagged = (uintptr_t)v_alloc(72) | (0x3fUL << 56);
}

int main(int argc, char **argv)
{
	switch (v_mode(argc, argv)) {
	case 0: dups(); break;
	case 1: lines(); break;
	case 2: prints(); break;
	case 3: reallocs(); break;
	case 4: aligned(); break;
	case 5: hide(); break;
	}
	return 0;
}
