/*
 * fleetsites.c - many sites for the exporter's cardinality bound and its
 * scrape cost (tests/integration/t_fleet.py, bench/fleet-cost): 50 sites,
 * site_s00 .. site_s49, site_sK holding K + 1 blocks of 1000 bytes, then
 * sleeping for SECONDS (argument, default 60) with nothing allocated or
 * freed.  No stdio.
 */
#include <time.h>
#include "wl.h"

#define SITE(k)							\
	WL_SITE static void site_s##k(int n)			\
	{							\
		for (int i = 0; i < wl_n(n); i++) {		\
			wl_sink = malloc(1000);			\
			WL_BARRIER();				\
		}						\
	}
#define TEN(d) SITE(d##0) SITE(d##1) SITE(d##2) SITE(d##3) SITE(d##4) \
	       SITE(d##5) SITE(d##6) SITE(d##7) SITE(d##8) SITE(d##9)
TEN(0) TEN(1) TEN(2) TEN(3) TEN(4)

#define CALL(k) site_s##k(1 + 1##k - 100);
#define CALLS(d) CALL(d##0) CALL(d##1) CALL(d##2) CALL(d##3) CALL(d##4) \
		 CALL(d##5) CALL(d##6) CALL(d##7) CALL(d##8) CALL(d##9)

int main(int argc, char **argv)
{
	struct timespec t = { .tv_sec = argc > 1 ? atoi(argv[1]) : 60 };

	CALLS(0) CALLS(1) CALLS(2) CALLS(3) CALLS(4)
	nanosleep(&t, NULL);
	return 0;
}
