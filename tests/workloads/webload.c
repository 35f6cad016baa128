/*
 * webload.c - ground truth for the web view (tests/integration/t_web.py):
 * allocates only when told, so that two readers (the web API and
 * `leakscope report`) see one state.
 *
 * Reads one-byte commands on stdin and answers each with the same byte on
 * stdout once it is done (read(2)/write(2), no stdio):
 *
 *   'a'  site_web_big    5 blocks of 10000 bytes   (50000 bytes per 'a')
 *   'b'  site_web_small  3 blocks of 100 bytes     (300 bytes per 'b')
 *   't'  tmp_churn       100 blocks allocated and freed: nothing left
 *   'q'  (or end of input) exit 0
 *
 * Between commands it blocks in read(): nothing allocates or frees, so
 * every snapshot taken then holds exactly what the commands left.
 */
#include <stdlib.h>
#include <unistd.h>
#include "wl.h"

/* volatile: gcc drops a malloc whose block is only stored where nothing
 * reads it */
static void *volatile keep[1 << 16];
static size_t nkeep;

static void hold(void *p)
{
	if (nkeep < sizeof(keep) / sizeof(keep[0]))
		keep[nkeep++] = p;
}

WL_SITE static void site_web_big(void)
{
	for (int i = 0; i < wl_n(5); i++) {
		void *p = malloc(10000); /* @site_web_big */
		hold(p);
		WL_BARRIER();
	}
}

WL_SITE static void site_web_small(void)
{
	for (int i = 0; i < wl_n(3); i++) {
		void *p = malloc(100); /* @site_web_small */
		hold(p);
		WL_BARRIER();
	}
}

WL_HELPER static void tmp_churn(void)
{
	for (int i = 0; i < wl_n(100); i++) {
		wl_sink = malloc((size_t)i * 13 + 1);
		free(wl_sink);
	}
}

int main(void)
{
	char c;

	while (read(0, &c, 1) == 1 && c != 'q') {
		if (c == 'a')
			site_web_big();
		else if (c == 'b')
			site_web_small();
		else if (c == 't')
			tmp_churn();
		else
			continue;
		if (write(1, &c, 1) != 1)
			return 1;
	}
	return 0;
}
