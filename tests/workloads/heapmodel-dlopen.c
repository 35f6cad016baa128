/*
 * heapmodel-dlopen.c - a program that loads libraries when told, for
 * checks before and after a dlopen (tests/integration/t_reach_jemalloc.py,
 * under jemalloc) and for the cost of a check with many libraries loaded
 * (docs/perf-log/verdictmisc.md).
 *
 * Commands on fd 0, one a line, each answered by one line on fd 1:
 *
 *   a       100 blocks of 1,000 bytes and one of 1 MiB (site_kept), held
 *           in a global: still reachable
 *   d PATH  dlopen(PATH, RTLD_NOW): "done d PATH 1", or "done d PATH 0"
 *           when it failed
 *
 * No leak.  No stdio.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include "wl.h"

#define KEPT 101

static void *volatile kept[KEPT];

WL_SITE static void *site_kept(size_t n)
{
	void *p = malloc(n); /* @site_kept */

	WL_CHECK(p, "malloc(%zu) failed", n);
	memset(p, 0x5a, n);
	return p;
}

int main(void)
{
	char line[4096];
	size_t n = 0;
	int i;

	while (n < sizeof(line) && read(0, line + n, 1) == 1) {
		if (line[n] != '\n') {
			n++;
			continue;
		}
		line[n] = 0;
		n = 0;
		if (!strcmp(line, "a")) {
			for (i = 0; i < wl_n(KEPT - 1); i++)
				kept[i] = site_kept(1000);
			kept[KEPT - 1] = site_kept(1 << 20);
			wl_say(1, "done a\n");
		} else if (!strncmp(line, "d ", 2)) {
			wl_say(1, "done %s %d\n", line,
			       dlopen(line + 2, RTLD_NOW) != NULL);
		} else if (line[0]) {
			wl_say(1, "unknown %s\n", line);
		}
	}
	return 0;
}
