/*
 * reach-jemalloc.c - live data written after `leakscope attach` into
 * blocks allocated before it, under an allocator other than glibc's
 * (Debian's libjemalloc.so.2, LD_PRELOADed by the test), for
 * `leakscope check` (tests/integration/t_reach_jemalloc.py).
 *
 * Commands on fd 0, each answered by one line on fd 1:
 *
 *   p  before attach: a table of N records (site_pre_record, 48 bytes
 *      each, plus the table, 8 * N bytes), every record holding a value
 *      (site_pre_value, 16 to 1,000 bytes), as a key-value store holds
 *      its keys
 *   o  after attach: every record's value replaced by a new one
 *      (site_new_value, 16 to 1,000 bytes, the old one freed): the only
 *      pointer to each new value lies in a record allocated before the
 *      attach
 *   l  after attach: LEAKS blocks of site_leak (a 300-byte block each)
 *      whose pointers are dropped.  LEAKS temporaries of the same size
 *      are allocated before them and freed after: a thread cache that
 *      pops from a stack of pointers (jemalloc's) keeps each popped
 *      pointer in its slot until a free pushes over it, and these frees
 *      push over the leaks' (a stale pointer in the allocator's free
 *      memory hides a leak, docs/REACHABILITY.md)
 *
 * Ground truth after "p", attach, "o", "l" (every tracked block):
 *
 *   site               bytes               blocks  category
 *   site_new_value     sum of value_size   N       still reachable: a
 *                                                  pre-attach record
 *                                                  holds each
 *   site_leak          300 * LEAKS         LEAKS   definitely lost
 *
 * N is the first argument (default 2000); the program answers "o" with
 * the byte total of the new values.  No stdio.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "wl.h"

#define LEAKS 5

struct record {
	uint64_t key;
	char *value;
	uint64_t len;
	uint64_t pad[3];
};

static struct record **volatile table;
static int n_records = 2000;

static uint64_t value_size(int i, int round)
{
	return 16 + (uint64_t)((i * 7919 + round * 104729) % 985);
}

WL_SITE static struct record *site_pre_record(void)
{
	struct record *r = calloc(1, sizeof(*r)); /* @site_pre_record */

	WL_BARRIER();
	return r;
}

WL_SITE static char *site_pre_value(uint64_t n)
{
	char *v = malloc(n); /* @site_pre_value */

	WL_BARRIER();
	return v;
}

WL_SITE static char *site_new_value(uint64_t n)
{
	char *v = malloc(n); /* @site_new_value */

	WL_BARRIER();
	return v;
}

WL_SITE static void site_leak(void)
{
	char *v = malloc(300); /* @site_leak */

	WL_CHECK(v, "malloc(300) failed");
	memset(v, 0x5a, 300);
	wl_sink = v;
	WL_BARRIER();
}

static void populate(void)
{
	struct record **t = malloc(sizeof(*t) * (size_t)n_records);
	int i;

	WL_CHECK(t, "malloc of the table failed");
	for (i = 0; i < wl_n(n_records); i++) {
		t[i] = site_pre_record();
		WL_CHECK(t[i], "calloc of a record failed");
		t[i]->key = (uint64_t)i;
		t[i]->len = value_size(i, 0);
		t[i]->value = site_pre_value(t[i]->len);
		WL_CHECK(t[i]->value, "malloc of a value failed");
		memset(t[i]->value, 'a' + i % 26, t[i]->len);
	}
	table = t;
}

static uint64_t overwrite(void)
{
	uint64_t total = 0;
	int i;

	for (i = 0; i < wl_n(n_records); i++) {
		struct record *r = table[i];
		char *v;

		r->len = value_size(i, 1);
		v = site_new_value(r->len);
		WL_CHECK(v, "malloc of a new value failed");
		memset(v, 'A' + i % 26, r->len);
		free(r->value);
		r->value = v;
		total += r->len;
	}
	return total;
}

int main(int argc, char **argv)
{
	char c, nl;
	int i;

	if (argc > 1)
		n_records = atoi(argv[1]);
	WL_CHECK(n_records > 0, "usage: reach-jemalloc [N]");
	while (read(0, &c, 1) == 1) {
		if (c == '\n')
			continue;
		if (read(0, &nl, 1) != 1)
			break;
		if (c == 'p') {
			populate();
			wl_say(1, "done p\n");
		} else if (c == 'o') {
			wl_say(1, "done o %llu\n",
			       (unsigned long long)overwrite());
		} else if (c == 'l') {
			char *tmp[LEAKS];

			for (i = 0; i < wl_n(LEAKS); i++) {
				tmp[i] = malloc(300);
				WL_CHECK(tmp[i], "malloc(300) failed");
			}
			for (i = 0; i < wl_n(LEAKS); i++)
				site_leak();
			wl_sink = NULL;
			for (i = LEAKS - 1; i >= 0; i--)
				free(tmp[i]);
			wl_say(1, "done l\n");
		} else {
			wl_say(1, "unknown %c\n", c);
		}
	}
	return 0;
}
