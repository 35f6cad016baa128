/*
 * basic.c - four leaking sites of distinct block sizes and nothing else:
 * the ground truth for the report options (--top, --min-size, --max-size,
 * --show-allocs, --depth, --format, --fail-on-leak).
 *
 * Stacks: main -> basic_run -> basic_step -> site_X.  Expected outstanding
 * at exit (no libc site: the program uses no stdio):
 *
 *   site         bytes  blocks  block size
 *   site_large   65536     1      65536
 *   site_medium   8192     2       4096
 *   site_ten      1000    10        100
 *   site_small      48     3         16
 *   total        74776    16
 *
 * Freed temporaries (tmp_*) leave nothing.  An optional argument is the
 * exit status (to test that --fail-on-leak keeps a non-zero status).
 */
#include <stdlib.h>
#include "wl.h"

#define BASIC_TOTAL_BYTES 74776

WL_SITE static void site_large(void)
{
	wl_sink = malloc(65536); /* @site_large */
}

WL_SITE static void site_medium(void)
{
	for (int i = 0; i < wl_n(2); i++)
		wl_sink = malloc(4096); /* @site_medium */
}

WL_SITE static void site_ten(void)
{
	for (int i = 0; i < wl_n(10); i++)
		wl_sink = malloc(100); /* @site_ten */
}

WL_SITE static void site_small(void)
{
	for (int i = 0; i < wl_n(3); i++)
		wl_sink = malloc(16); /* @site_small */
}

WL_HELPER static void tmp_churn(void)
{
	for (int i = 0; i < 1000; i++) {
		wl_sink = malloc((size_t)(i % 97) * 13 + 1);
		free(wl_sink);
	}
}

WL_HELPER static void basic_step(void)
{
	site_large();
	site_medium();
	site_ten();
	site_small();
	tmp_churn();
	WL_BARRIER();
}

WL_HELPER static void basic_run(void)
{
	basic_step();
	WL_BARRIER();
}

int main(int argc, char **argv)
{
	basic_run();
	WL_BARRIER();
	return argc > 1 ? atoi(argv[1]) : 0;
}
