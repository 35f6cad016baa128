/*
 * aging.c - two leaks 300 ms apart, then exit at once: --min-age 200 must
 * keep site_old and drop site_young.
 *
 *   site         bytes  blocks  age at exit
 *   site_old      1111     1    >= 300 ms
 *   site_young    2222     1    ~0 ms
 */
#include <stdlib.h>
#include <time.h>
#include "wl.h"

WL_SITE static void site_old(void)
{
	wl_sink = malloc(1111); /* @site_old */
}

WL_SITE static void site_young(void)
{
	wl_sink = malloc(2222); /* @site_young */
}

WL_HELPER static void aging_run(void)
{
	struct timespec ts = { 0, 300 * 1000 * 1000 };
	site_old();
	while (nanosleep(&ts, &ts) != 0)
		;
	site_young();
	WL_BARRIER();
}

int main(void)
{
	aging_run();
	WL_BARRIER();
	return 0;
}
