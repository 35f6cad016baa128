/*
 * early-ctor.c - a program linked with libearly.so, whose constructor
 * leaks before the agent's constructor has run.
 *
 *   site               bytes  blocks
 *   site_lib_ctor      12345     1    in libearly.so, before main
 *   site_main_early      100     1    main -> site_main_early
 */
#include <stdlib.h>
#include "wl.h"

extern void *early_lib_block;

WL_SITE static void site_main_early(void)
{
	wl_sink = malloc(100); /* @site_main_early */
}

int main(void)
{
	WL_CHECK(early_lib_block != NULL, "the library's constructor did not run");
	site_main_early();
	return 0;
}
