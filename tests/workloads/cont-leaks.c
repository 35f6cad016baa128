/*
 * cont-leaks.c - a program to run in a container and attach to from
 * outside it (tests/integration/t_containers.py).  Started WITHOUT the
 * agent; it reads one-letter commands on stdin and answers each with one
 * line on stdout:
 *
 *   r  "ready <n>": before attach, nothing allocated yet
 *   l  after attach, leaks (each its own site; the pointers dropped):
 *        site_request     7 x 1200       =  8400 bytes
 *        site_session     3 x 16*64      =  3072   calloc
 *        site_name        5 x 20         =   100   strdup of 19 chars
 *        site_buffer      1 x 5000       =  5000   realloc(NULL, ...)
 *      and fills a cache that stays reachable from a global:
 *        cache_fill       10 x 512       =  5120   (live, not lost)
 *      and churns temporaries freed at once (tmp_churn): nothing left
 *   q  "bye <checksum>" and exit 0
 *
 * Output is deterministic: the same bytes whether or not anybody
 * attached, in a container or not.
 */
#include <stdint.h>
#include "wl.h"

#define CACHE 10

static void *cache[CACHE];
static unsigned long checksum;

static void say(const char *what, unsigned long n)
{
	char line[64];
	int len = snprintf(line, sizeof(line), "%s %lu\n", what, n);

	if (write(1, line, (size_t)len) != len)
		exit(3);
}

WL_SITE static void site_request(void)
{
	for (int i = 0; i < wl_n(7); i++) {
		char *p = malloc(1200);	/* @site_request */

		WL_CHECK(p, "malloc failed");
		p[0] = (char)i;
		checksum += (unsigned char)p[0];
		wl_sink = p;
	}
}

WL_SITE static void site_session(void)
{
	for (int i = 0; i < wl_n(3); i++) {
		char *p = calloc(16, 64);	/* @site_session */

		WL_CHECK(p && !p[1023], "calloc failed or not zeroed");
		wl_sink = p;
	}
}

WL_SITE static void site_name(void)
{
	for (int i = 0; i < wl_n(5); i++) {
		char *p = strdup("container-sessions-");	/* @site_name */

		WL_CHECK(p && strlen(p) == 19, "strdup failed");
		checksum += strlen(p);
		wl_sink = p;
	}
}

WL_SITE static void site_buffer(void)
{
	char *p = realloc(NULL, 5000);	/* @site_buffer */

	WL_CHECK(p, "realloc failed");
	memset(p, 1, 5000);
	checksum += (unsigned char)p[4999];
	wl_sink = p;
}

WL_SITE static void cache_fill(void)
{
	for (int i = 0; i < wl_n(CACHE); i++) {
		cache[i] = malloc(512);	/* @cache_fill */
		WL_CHECK(cache[i], "malloc failed");
		memset(cache[i], i, 512);
	}
}

WL_SITE static void tmp_churn(void)
{
	for (int i = 0; i < wl_n(50); i++) {
		char *p = malloc(64 + (size_t)i);

		WL_CHECK(p, "malloc failed");
		p[0] = 1;
		checksum += (unsigned char)p[0];
		free(p);
	}
}

int main(void)
{
	char c;

	while (read(0, &c, 1) == 1) {
		switch (c) {
		case 'r':
			say("ready", checksum);
			break;
		case 'l':
			site_request();
			site_session();
			site_name();
			site_buffer();
			cache_fill();
			tmp_churn();
			wl_sink = NULL;	/* the last site's block is lost too */
			say("leaked", checksum);
			break;
		case 'q':
			for (int i = 0; i < CACHE; i++)
				checksum += cache[i] ? ((unsigned char *)cache[i])[1] : 0;
			say("bye", checksum);
			return 0;
		}
	}
	return 0;
}
