/*
 * ctor-atexit.c - leaks before main and after it.
 *
 *   site          bytes  blocks  stack
 *   site_ctor       111     1    early_init (a constructor) -> ctor_step
 *                                -> site_ctor
 *   site_main       222     1    main -> main_step -> site_main
 *   site_atexit     333     1    late_fini (an atexit handler) ->
 *                                atexit_step -> site_atexit
 */
#include <stdlib.h>
#include "wl.h"

WL_SITE static void site_ctor(void)
{
	wl_sink = malloc(111); /* @site_ctor */
}

WL_SITE static void site_main(void)
{
	wl_sink = malloc(222); /* @site_main */
}

WL_SITE static void site_atexit(void)
{
	wl_sink = malloc(333); /* @site_atexit */
}

WL_HELPER static void ctor_step(void)
{
	site_ctor();
	WL_BARRIER();
}

WL_HELPER static void atexit_step(void)
{
	site_atexit();
	WL_BARRIER();
}

WL_HELPER static void late_fini(void)
{
	atexit_step();
	WL_BARRIER();
}

__attribute__((constructor)) WL_HELPER static void early_init(void)
{
	ctor_step();
	WL_BARRIER();
}

WL_HELPER static void main_step(void)
{
	site_main();
	WL_CHECK(atexit(late_fini) == 0, "atexit failed");
	WL_BARRIER();
}

int main(void)
{
	main_step();
	WL_BARRIER();
	return 0;
}
