/*
 * libleaky.c - a library that dlopen-leak.c loads, calls and dlclose()s.
 *
 * libleaky_run() leaks 4321 bytes in 1 block from site_in_libleaky
 * (stack: site_in_libleaky -> leaky_helper -> libleaky_run -> the
 * program's call_lib) and frees a temporary.  site_in_libleaky and
 * leaky_helper are static, named only in the library's .symtab and DWARF:
 * after dlclose() the report must still name them, so the symbolizer has
 * to remember the unloaded module and read its file.
 */
#include <stdlib.h>
#include "wl.h"

WL_SITE static void site_in_libleaky(void)
{
	wl_sink = malloc(4321); /* @site_in_libleaky */
}

WL_HELPER static void leaky_helper(void)
{
	site_in_libleaky();
	wl_sink = malloc(99);
	free(wl_sink);
	WL_BARRIER();
}

WL_HELPER void libleaky_run(void)
{
	leaky_helper();
	WL_BARRIER();
}
