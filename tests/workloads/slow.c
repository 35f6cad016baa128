/*
 * slow.c - runs about 2.5 s, leaking 1000 bytes every 100 ms, for the
 * periodic reports (--interval).
 *
 *   site        bytes  blocks  at exit (the periodic reports see a prefix)
 *   site_tick   25000    25
 */
#include <stdlib.h>
#include <time.h>
#include "wl.h"

WL_SITE static void site_tick(void)
{
	wl_sink = malloc(1000); /* @site_tick */
}

WL_HELPER static void tmp_temporaries(void)
{
	for (int i = 0; i < 100; i++) {
		wl_sink = malloc((size_t)i * 7 + 1);
		free(wl_sink);
	}
}

WL_HELPER static void slow_run(void)
{
	for (int i = 0; i < wl_n(25); i++) {
		struct timespec ts = { 0, 100 * 1000 * 1000 };
		site_tick();
		tmp_temporaries();
		while (nanosleep(&ts, &ts) != 0)
			;
	}
	WL_BARRIER();
}

int main(void)
{
	slow_run();
	WL_BARRIER();
	return 0;
}
