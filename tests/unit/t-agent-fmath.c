/*
 * t-agent-fmath.c - the agent's own log, expm1 and llround
 * (agent/fmath.c) against glibc's libm, the oracle: point by point over
 * millions of arguments, and as the sampler uses them, the distribution
 * of exponential gaps of mean T drawn with each (same mean, same
 * quantiles; and the exponential law's own) and the estimates 1/p(s) of sampled blocks.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "../../agent/fmath.h"
#include "tap.h"

#define DRAWS 4000000
#define T 524288.0		/* the default sample rate */

static uint64_t rng = 0x243f6a8885a308d3ull;

static uint64_t next(void)
{
	uint64_t z = (rng += 0x9e3779b97f4a7c15ull);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
	return z ^ (z >> 31);
}

/* u in (0, 1], as agent/sample.c draws it. */
static double unit(void)
{
	return ((next() >> 11) + 1) * (1.0 / 9007199254740992.0);
}

/* Distance in units in the last place between two finite doubles. */
static uint64_t ulps(double a, double b)
{
	int64_t x, y;

	if (a == b)
		return 0;
	memcpy(&x, &a, 8);
	memcpy(&y, &b, 8);
	if (x < 0)
		x = INT64_MIN - x;
	if (y < 0)
		y = INT64_MIN - y;
	return x > y ? (uint64_t)(x - y) : (uint64_t)(y - x);
}

static void log_points(void)
{
	uint64_t worst = 0;
	double at = 0, x;

	for (int i = 0; i < DRAWS; i++) {
		x = unit();
		if (ulps(ls_log(x), log(x)) > worst)
			worst = ulps(ls_log(x), log(x)), at = x;
	}
	/* Across the whole range: tiny, subnormal, huge, near 1. */
	for (int e = -1074; e < 1024; e++) {
		for (int j = 0; j < 64; j++) {
			x = ldexp(1 + j / 64.0, e);
			if (ulps(ls_log(x), log(x)) > worst)
				worst = ulps(ls_log(x), log(x)), at = x;
		}
	}
	for (int j = -100000; j < 100000; j++) {	/* around 1 */
		x = 1 + ldexp(j, -45);
		if (ulps(ls_log(x), log(x)) > worst)
			worst = ulps(ls_log(x), log(x)), at = x;
	}
	if (!ok(worst <= 2, "log: within 2 ulp of libm over the sampler's "
		"(0, 1] and over 4.9e-324..1.7e308"))
		printf("#   %" PRIu64 " ulp at %.17g\n", worst, at);
	ok(ls_log(1) == 0 && isinf(ls_log(0)) && ls_log(0) < 0,
	   "log(1) = 0, log(0) = -inf");
}

static void expm1_points(void)
{
	uint64_t worst = 0;
	double at = 0, x;

	for (int i = 0; i < DRAWS; i++) {
		/* -s/T for sizes 1 B .. 64 MiB at T: the estimator's range */
		x = -ldexp(unit(), -(int)(next() % 40)) * 128;
		if (ulps(ls_expm1(x), expm1(x)) > worst)
			worst = ulps(ls_expm1(x), expm1(x)), at = x;
	}
	for (x = -45; x < 709; x += 0.0009765625) {
		if (ulps(ls_expm1(x), expm1(x)) > worst)
			worst = ulps(ls_expm1(x), expm1(x)), at = x;
	}
	if (!ok(worst <= 2, "expm1: within 2 ulp of libm over -128..0 at "
		"every scale and over -45..709"))
		printf("#   %" PRIu64 " ulp at %.17g\n", worst, at);
	ok(ls_expm1(0) == 0 && ls_expm1(-1e-300) == -1e-300 &&
	   ls_expm1(-1000) == -1, "expm1 at 0, at -1e-300 and far below");
}

static void llround_points(void)
{
	static const double edge[] = {
		0.5, -0.5, 1.5, -2.5, 0.49999999999999994, -0.49999999999999994,
		4503599627370495.5, -4503599627370495.5, 4503599627370497.0,
		9007199254740993.0, 1e18, -1e18, 2.4999999999999996, 0,
	};
	int bad = 0;

	for (size_t i = 0; i < sizeof(edge) / sizeof(*edge); i++)
		bad += ls_llround(edge[i]) != llround(edge[i]);
	for (int i = 0; i < DRAWS; i++) {
		double x = ldexp(unit() - 0.5, (int)(next() % 62));

		bad += ls_llround(x) != llround(x);
	}
	ok(!bad, "llround: equal to libm on every edge and %d random points "
	   "(%d differ)", DRAWS, bad);
}

static int cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/*
 * The sampler's gaps -log(u) T drawn with each log from the same stream:
 * means equal to 1e-12 and to T within the statistics (sd of the mean
 * T/sqrt(n): 5 sd is 0.25%), every quantile from 0.1% to 99.99% equal
 * to 1e-12, and the whole-byte gaps the sampler keeps identical.
 */
static void gap_distribution(void)
{
	double *a = malloc(DRAWS * sizeof(double));
	double *b = malloc(DRAWS * sizeof(double));
	static const double q[] = { .001, .01, .1, .25, .5, .75, .9, .99,
				    .999, .9999 };
	double sa = 0, sb = 0, worst = 0;
	long same = 0;

	for (int i = 0; i < DRAWS; i++) {
		double u = unit();

		a[i] = -ls_log(u) * T;
		b[i] = -log(u) * T;
		sa += a[i];
		sb += b[i];
		same += (uint64_t)a[i] == (uint64_t)b[i];
	}
	ok(fabs(sa - sb) / sb < 1e-12, "gaps: mean %.3f with ls_log, %.3f "
	   "with libm", sa / DRAWS, sb / DRAWS);
	ok(fabs(sa / DRAWS - T) < 5 * T / sqrt(DRAWS), "gaps: mean %.1f is T "
	   "= %.0f within 5 standard errors", sa / DRAWS, T);
	ok(same == DRAWS, "gaps: the whole-byte gap is the same in %ld of %d "
	   "draws", same, DRAWS);
	qsort(a, DRAWS, sizeof(double), cmp);
	qsort(b, DRAWS, sizeof(double), cmp);
	for (size_t i = 0; i < sizeof(q) / sizeof(*q); i++) {
		size_t k = (size_t)(q[i] * DRAWS);
		double rel = fabs(a[k] - b[k]) / b[k];

		if (rel > worst)
			worst = rel;
		/* and the exponential law: quantile -ln(1-q) T within 5
		 * standard errors, sqrt(q / ((1-q) n)) / -ln(1-q) */
		if (!ok(fabs(a[k] / (-log1p(-q[i]) * T) - 1) <
			5 * sqrt(q[i] / ((1 - q[i]) * DRAWS)) / -log1p(-q[i]),
			"gaps: quantile %g is %.0f, the law's %.0f", q[i], a[k],
			-log1p(-q[i]) * T))
			break;
	}
	ok(worst < 1e-12, "gaps: quantiles 0.1%%..99.99%% equal to libm's "
	   "within %.1e", worst);
	free(a);
	free(b);
}

/* The estimates of a sampled block of s bytes: 1/p(s), s/p(s). */
static void estimates(void)
{
	int bad = 0;

	for (uint64_t s = 1; s < (1ull << 30); s = s * 5 / 4 + 1) {
		double p1 = -ls_expm1(-(double)s / T), p2 = -expm1(-(double)s / T);

		bad += ls_llround(s * 1000.0 / p1) != llround(s * 1000.0 / p2);
		bad += ls_llround(1000.0 / p1) != llround(1000.0 / p2);
	}
	ok(!bad, "estimates s/p(s) and 1/p(s) scaled by 1000: the same "
	   "integers as with libm from 1 B to 1 GiB (%d differ)", bad);
}

int main(void)
{
	log_points();
	expm1_points();
	llround_points();
	gap_distribution();
	estimates();
	return tap_done();
}
