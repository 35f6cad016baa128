/*
 * many-sites.c - 256 allocation sites held for a while: `many-sites MS`
 * walks every path of an 8-level binary call tree (site_left/site_right
 * at each level, 256 distinct stacks), leaks 16 bytes at each leaf, and
 * repeats the walk (freeing nothing more) for MS milliseconds, so that
 * every growth sample sees all 256 sites holding memory.  Prints
 * "sites 256 sum S" (S: a checksum of the bytes written) and exits 0.
 */
#include <stdint.h>
#include <stdlib.h>
#include <time.h>
#include "wl.h"

#define LEVELS 8

static uint64_t sum;

WL_HELPER static void walk(unsigned path, int level);

WL_SITE static void site_left(unsigned path, int level)
{
	walk(path, level + 1);
	WL_BARRIER();
}

WL_SITE static void site_right(unsigned path, int level)
{
	walk(path, level + 1);
	WL_BARRIER();
}

WL_HELPER static void walk(unsigned path, int level)
{
	unsigned char *p;
	int i;

	if (level == LEVELS) {
		p = malloc(16); /* @site_leaf */
		WL_CHECK(p != NULL, "malloc(16)");
		for (i = 0; i < 16; i++)
			p[i] = (unsigned char)(path + i);
		for (i = 0; i < 16; i++)
			sum += p[i];
		wl_sink = p;
		return;
	}
	if (path >> level & 1)
		site_right(path, level);
	else
		site_left(path, level);
	WL_BARRIER();
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int main(int argc, char **argv)
{
	double end = now_ms() + (argc > 1 ? atof(argv[1]) : 0);
	unsigned path, rounds = 0;

	do {
		for (path = 0; path < 1u << LEVELS; path++)
			walk(path, 0);
		rounds++;
		if (rounds > 1) {	/* keep the checksum that of one walk */
			struct timespec ts = { 0, 2000000 };

			nanosleep(&ts, NULL);
		}
	} while (now_ms() < end);
	wl_say(1, "sites %u sum %llu\n", 1u << LEVELS,
	       (unsigned long long)(sum / rounds));
	return 0;
}
