/*
 * noleak.c - allocates through several entry points and frees everything:
 * zero bytes and zero blocks outstanding at exit, so --fail-on-leak must
 * exit 0.  No stdio, so libc leaves nothing behind either.
 */
#include <stdlib.h>
#include <string.h>
#include "wl.h"

WL_HELPER static void tmp_work(int round)
{
	char *a = malloc(100 + (size_t)round);
	char *b = calloc(10, 10);
	char *c = strdup("no leak here");
	WL_CHECK(a && b && c, "allocation failed");
	a = realloc(a, 5000);
	WL_CHECK(a != NULL, "realloc failed");
	wl_sink = a;
	free(wl_sink);
	wl_sink = b;
	free(wl_sink);
	wl_sink = c;
	free(wl_sink);
}

WL_HELPER static void noleak_run(void)
{
	for (int i = 0; i < 200; i++)
		tmp_work(i);
	WL_BARRIER();
}

int main(void)
{
	noleak_run();
	WL_BARRIER();
	return 0;
}
