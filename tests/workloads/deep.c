/*
 * deep.c - a leak 100 recursive calls deep, for the frame limit (--depth).
 *
 *   site_deep   4242 bytes, 1 block
 *
 * Stack, innermost first: site_deep, descend x 100, deep_run, main, then
 * libc's start-up frames and _start.  The default limit (64 frames) keeps
 * site_deep and 63 descend frames; --depth 256 keeps all of them.
 */
#include <stdlib.h>
#include "wl.h"

#define DEPTH 100

WL_SITE static void site_deep(void)
{
	wl_sink = malloc(4242); /* @site_deep */
}

WL_HELPER static void descend(int n)
{
	if (n == 0)
		site_deep();
	else
		descend(n - 1);
	WL_BARRIER();
}

WL_HELPER static void deep_run(void)
{
	descend(wl_n(DEPTH - 1));
	WL_BARRIER();
}

int main(void)
{
	deep_run();
	WL_BARRIER();
	return 0;
}
