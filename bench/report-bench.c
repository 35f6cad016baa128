/*
 * report-bench.c - what one report costs, per process, when every report
 * symbolizes from scratch (as each report did before the symbolizer pool)
 * and when the reports of one run share lib/symbolize.h's pool (as `run`,
 * `watch` and `top` do now).
 *
 *   report-bench REPS SNAPSHOT...
 *
 * Each snapshot stands for one traced process of a run.  For each mode,
 * REPS times: build and render every snapshot's text report to /dev/null,
 * timing each; prints, per mode, the median time of the first report and
 * of the later ones, in milliseconds, and the heap the symbolizers held
 * after the last report of a round (mallinfo2: the pool's, or the last
 * fresh symbolizer's, with libdw's indexes and inflated sections), one
 * line each:
 *
 *   fresh first 71.2 later 69.8 heap_kib 5120
 *   pooled first 70.9 later 3.1 heap_kib 6144
 */
#include <errno.h>
#include <malloc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../lib/render.h"

static size_t heap_bytes(void)
{
	struct mallinfo2 mi = mallinfo2();

	return mi.uordblks + mi.hblkhd;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec * 1e3 + (double)ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, size_t n)
{
	qsort(v, n, sizeof(*v), cmp_double);
	return n ? (n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2) : 0;
}

/* One report of snap to out; its time in ms, < 0 on failure.  *held:
 * the heap the symbolizer (and pool) held before it was freed, over base. */
static double one(const struct ls_snapshot *snap, struct ls_sympool *pool,
		  FILE *out, size_t base, size_t *held)
{
	struct ls_report_opts o = { 0 };
	struct ls_symbolizer *sym;
	struct ls_report rep;
	double t0 = now_ms();
	int r;

	ls_report_opts_finish(&o);
	if (ls_report_build(snap, &o, &rep))
		return -1;
	sym = pool ? ls_symbolizer_new_shared(snap, pool) :
		     ls_symbolizer_new(snap);
	r = ls_report_render(out, &rep, &o, sym);
	t0 = now_ms() - t0;
	ls_report_release(&rep);
	*held = heap_bytes() - base;
	ls_symbolizer_free(sym);
	return r ? -1 : t0;
}

/* Every snapshot once, as the reports of one run; times into first and
 * later. */
static int run(struct ls_snapshot *s, size_t n, int pooled, FILE *out,
	       double *first, double *later, size_t *nlater, size_t *held)
{
	size_t base = heap_bytes(), i;
	struct ls_sympool *pool = pooled ? ls_sympool_new() : NULL;
	double t;

	for (i = 0; i < n; i++) {
		t = one(&s[i], pool, out, base, held);
		if (t < 0)
			return -1;
		if (i)
			later[(*nlater)++] = t;
		else
			*first = t;
	}
	ls_sympool_free(pool);
	return 0;
}

static int mode(struct ls_snapshot *s, size_t n, int reps, int pooled,
		FILE *out)
{
	double *first = calloc((size_t)reps, sizeof(double));
	double *later = calloc((size_t)reps * n, sizeof(double));
	size_t nlater = 0, held = 0;
	int i, ret = -1;

	if (!first || !later)
		goto out;
	for (i = 0; i < reps; i++)
		if (run(s, n, pooled, out, &first[i], later, &nlater, &held))
			goto out;
	printf("%s first %.1f later %.1f heap_kib %zu\n",
	       pooled ? "pooled" : "fresh", median(first, (size_t)reps),
	       median(later, nlater), held / 1024);
	ret = 0;
out:
	free(first);
	free(later);
	return ret;
}

int main(int argc, char **argv)
{
	int reps = argc > 2 ? atoi(argv[1]) : 0, i, ret = 1;
	size_t n = argc > 2 ? (size_t)(argc - 2) : 0;
	struct ls_snapshot *s = calloc(n ? n : 1, sizeof(*s));
	FILE *out = fopen("/dev/null", "w");
	char err[1024];

	if (reps < 1 || n < 2 || !s || !out) {
		fprintf(stderr, "usage: report-bench REPS SNAPSHOT SNAPSHOT...\n");
		return 2;
	}
	for (i = 0; i < (int)n; i++)
		if (ls_snapshot_load(argv[i + 2], &s[i], err, sizeof(err))) {
			fprintf(stderr, "report-bench: %s\n", err);
			goto out;
		}
	if (!mode(s, n, reps, 0, out) && !mode(s, n, reps, 1, out))
		ret = 0;
out:
	for (i = 0; i < (int)n; i++)
		ls_snapshot_release(&s[i]);
	free(s);
	fclose(out);
	return ret;
}
