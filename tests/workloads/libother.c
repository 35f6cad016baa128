/*
 * libother.c - loaded by dlopen-leak.c after libleaky.so is unloaded, so it
 * may be mapped at the addresses libleaky.so had; it stays loaded.
 *
 * libother_run() leaks 1234 bytes in 1 block from site_in_libother
 * (site_in_libother -> other_helper -> libother_run -> call_lib).
 */
#include <stdlib.h>
#include "wl.h"

WL_SITE static void site_in_libother(void)
{
	wl_sink = malloc(1234); /* @site_in_libother */
}

WL_HELPER static void other_helper(void)
{
	site_in_libother();
	WL_BARRIER();
}

WL_HELPER void libother_run(void)
{
	other_helper();
	WL_BARRIER();
}
