/*
 * flame-bench.c - the flame graph builder and SVG writer on synthetic
 * profiles: N stacks of 8 to 23 frames drawn from 200 function names
 * (the outer four fixed, as main and its first callers are), each with
 * 1 to 100000 bytes.  Prints, per N, the time to add the stacks, the
 * time to write the SVG, the frames drawn and the file's size.
 *
 *   make -C bench flame-bench
 *
 * Deterministic (fixed seed); the times are the best of 3 runs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../lib/flamegraph.h"

#define NAMES 200
#define REPS 3

static char names[NAMES][32];

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static struct ls_flame *build(int nstacks)
{
	struct ls_flame *fg = ls_flame_new();
	struct ls_flame_frame f[24];
	unsigned seed = 1;
	int s, i, depth;

	for (s = 0; fg && s < nstacks; s++) {
		struct ls_flame_value v = { .bytes = 1 + rand_r(&seed) % 100000, .blocks = 1 };

		depth = 8 + rand_r(&seed) % 16;
		for (i = 0; i < depth; i++) {
			f[i].name = names[i < 4 ? i : rand_r(&seed) % (i * 8) % NAMES];
			f[i].module = "libbench.so";
			f[i].kind = LS_FLAME_KIND_CODE;
		}
		if (ls_flame_add(fg, f, (size_t)depth, LS_FLAME_ROOT_FIRST, &v))
			abort();
	}
	return fg;
}

static void one(int nstacks)
{
	double best_add = 1e9, best_svg = 1e9, t0, t1, t2;
	size_t len = 0, drawn = 0;
	int r;

	for (r = 0; r < REPS; r++) {
		struct ls_flame_opts o = { 0 };
		char *buf = NULL;
		FILE *mem = open_memstream(&buf, &len);
		struct ls_flame *fg;
		const char *p;

		t0 = now();
		fg = build(nstacks);
		t1 = now();
		if (!fg || !mem || ls_flame_write_svg(mem, fg, &o))
			abort();
		fclose(mem);
		t2 = now();
		best_add = t1 - t0 < best_add ? t1 - t0 : best_add;
		best_svg = t2 - t1 < best_svg ? t2 - t1 : best_svg;
		for (drawn = 0, p = strstr(buf, "</script>"); p && (p = strstr(p, "<g class=\"f\"")); p++)
			drawn++;
		ls_flame_free(fg);
		free(buf);
	}
	printf("%8d stacks  add %8.1f ms  svg %8.1f ms  %7zu frames drawn  %6.1f MB\n",
	       nstacks, best_add * 1e3, best_svg * 1e3, drawn, (double)len / 1e6);
}

int main(void)
{
	static const int sizes[] = { 100, 1000, 10000, 100000 };
	size_t i;

	for (i = 0; i < NAMES; i++)
		snprintf(names[i], sizeof(names[i]), "bench_function_%zu", i);
	for (i = 0; i < sizeof(sizes) / sizeof(*sizes); i++)
		one(sizes[i]);
	return 0;
}
