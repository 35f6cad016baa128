/*
 * trend.c - growth labels for a site's live-byte history.
 *
 * Window minima (long series only), Mann-Kendall on the whole series and on
 * its older half, Theil-Sen slopes of the whole and of each half, and
 * statistics of the series' floor: how far it rose, how wide the churn on
 * top of it is, and how much of the rise came in one step.  docs/TRENDS.md
 * explains each threshold and how it was chosen.
 */
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "trend.h"

/* Longer series are cut into windows and reduced to their minima. */
#define TR_MAX_POINTS 128
/* Mann-Kendall significance, two-sided; the floor checks add the rest. */
#define TR_ALPHA 0.05
/* Growth counts only if it is at least this many times the churn spread. */
#define TR_MATERIAL 1.0
/* The churn spread is this quantile of the excess over the floor. */
#define TR_CHURN_QUANTILE 0.9
/* Shape exponent bands: saturating < LO <= linear <= HI < exponential. */
#define TR_SHAPE_LO 0.5
#define TR_SHAPE_HI 1.5
/* Shape of log(bytes) that still reads as a steady doubling. */
#define TR_LOG_SHAPE_HI 2.5
/* Share of the floor's rise in one step that makes it a one-off step. */
#define TR_ONE_STEP 0.4
/* A sample below this fraction of its neighbours is a glitch. */
#define TR_GLITCH 0.5
#define TR_SHAPE_CLAMP 9.0

struct tr_series {
	double y[TR_MAX_POINTS];	/* window minima, oldest first */
	double f[TR_MAX_POINTS];	/* y with a one-sample glitch filled */
	size_t m, h;			/* points; points in each half */
	double dt;			/* seconds between points */
	double *pairs;			/* scratch, m(m-1)/2 doubles */
};

struct tr_features {
	double z, p;			/* Mann-Kendall, whole series */
	double p_up;			/* best p of a test that says "up" */
	double slope, slope1, slope2;	/* Theil-Sen: whole, older, recent */
	double shape;
	double rise, churn;		/* floor: rise between thirds, churn */
	double jump, steady;		/* floor: largest step share, rest */
};

static void tr_swap(double *a, double *b)
{
	double t = *a;

	*a = *b;
	*b = t;
}

static double tr_median3(double a, double b, double c)
{
	if (a > b)
		tr_swap(&a, &b);
	if (b > c)
		b = c;
	return a > b ? a : b;
}

/*
 * The k-th smallest of a[0..n), leaving a[0..k) <= a[k] <= a(k..n).  Three
 * way partitioning because slopes of a flat series are mostly equal.
 */
static double tr_select(double *a, size_t n, size_t k)
{
	size_t lo = 0, hi = n;

	while (hi - lo > 1) {
		double piv = tr_median3(a[lo], a[lo + (hi - lo) / 2], a[hi - 1]);
		size_t lt = lo, i = lo, gt = hi;

		while (i < gt) {
			if (a[i] < piv)
				tr_swap(&a[lt++], &a[i++]);
			else if (a[i] > piv)
				tr_swap(&a[i], &a[--gt]);
			else
				i++;
		}
		if (k < lt)
			hi = lt;
		else if (k >= gt)
			lo = gt;
		else
			return piv;
	}
	return a[k];
}

static double tr_median(double *a, size_t n)
{
	double hi = tr_select(a, n, n / 2), lo;

	if (n % 2)
		return hi;
	lo = a[0];
	for (size_t i = 1; i < n / 2; i++)
		if (a[i] > lo)
			lo = a[i];
	return 0.5 * (lo + hi);
}

static double tr_min(const double *a, size_t n)
{
	double lo = a[0];

	for (size_t i = 1; i < n; i++)
		if (a[i] < lo)
			lo = a[i];
	return lo;
}

/* Median of the pairwise slopes of y[0..m), per point. */
static double tr_theil_sen(const double *y, size_t m, double *pairs)
{
	size_t c = 0;

	if (m < 2)
		return 0;
	for (size_t i = 0; i + 1 < m; i++)
		for (size_t j = i + 1; j < m; j++)
			pairs[c++] = (y[j] - y[i]) / (double)(j - i);
	return tr_median(pairs, c);
}

static int tr_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* Variance of the Mann-Kendall S with the correction for tied values. */
static double tr_mk_var(const double *y, size_t m, double *scratch)
{
	double v = (double)m * (m - 1) * (2 * m + 5);

	memcpy(scratch, y, m * sizeof *y);
	qsort(scratch, m, sizeof *scratch, tr_cmp);
	for (size_t i = 0, j; i < m; i = j) {
		double t;

		for (j = i + 1; j < m && scratch[j] == scratch[i]; j++)
			;
		t = (double)(j - i);
		v -= t * (t - 1) * (2 * t + 5);
	}
	return v / 18;
}

/* z with continuity correction and its two-sided normal p-value. */
static void tr_mann_kendall(const double *y, size_t m, double *scratch,
			    double *z, double *p)
{
	long s = 0;
	double v;

	for (size_t i = 0; i + 1 < m; i++)
		for (size_t j = i + 1; j < m; j++)
			s += (y[j] > y[i]) - (y[j] < y[i]);
	v = tr_mk_var(y, m, scratch);
	*z = 0;
	*p = 1;
	if (s == 0 || v <= 0)
		return;
	*z = (double)(s > 0 ? s - 1 : s + 1) / sqrt(v);
	*p = erfc(fabs(*z) / M_SQRT2);
}

/*
 * Windows of k samples aligned on the newest one (the oldest n % k samples
 * are dropped), each reduced to its minimum: the floor survives, churn
 * spikes do not, and the pairwise statistics stay O(TR_MAX_POINTS^2).
 */
static void tr_window_minima(const int64_t *x, size_t n, double period_s,
			     struct tr_series *s)
{
	size_t k = (n + TR_MAX_POINTS - 1) / TR_MAX_POINTS, first;

	s->m = n / k;
	first = n - s->m * k;
	for (size_t j = 0; j < s->m; j++) {
		const int64_t *w = x + first + j * k;
		int64_t lo = w[0];

		for (size_t i = 1; i < k; i++)
			if (w[i] < lo)
				lo = w[i];
		s->y[j] = (double)lo;
	}
	s->h = s->m / 2;
	s->dt = period_s * (double)k;
}

/*
 * A sample below TR_GLITCH times both its neighbours is taken for a glitch,
 * such as a realloc caught between its free and its malloc, and replaced
 * by the lower neighbour: the floor statistics would read it as the floor
 * collapsing, while the rank statistics shrug it off.  Glitches are rare by
 * nature; a series with several such dips is one of temporaries coming and
 * going, and is left alone.  So is the newest sample: nothing confirms it
 * as a glitch, and a site holding nothing now is not leaking.
 */
static void tr_fill_glitch(struct tr_series *s)
{
	const double *y = s->y;
	size_t at = 0, count = 0;

	memcpy(s->f, y, s->m * sizeof *y);
	for (size_t i = 1; i + 1 < s->m; i++) {
		double nb = fmin(y[i - 1], y[i + 1]);

		if (nb > 0 && y[i] < TR_GLITCH * nb) {
			at = i;
			count++;
		}
	}
	if (count == 1)
		s->f[at] = fmin(y[at - 1], y[at + 1]);
}

/*
 * Churn spread: a high quantile of each point's excess over the highest
 * non-decreasing floor under the series, which is its suffix minimum.
 */
static double tr_churn(const struct tr_series *s, double *scratch)
{
	double lo = s->f[s->m - 1];
	size_t q = (size_t)(TR_CHURN_QUANTILE * (double)(s->m - 1) + 0.5);

	for (size_t i = s->m; i-- > 0;) {
		if (s->f[i] < lo)
			lo = s->f[i];
		scratch[i] = s->f[i] - lo;
	}
	return tr_select(scratch, s->m, q);
}

/* Floor of the newest third minus floor of the oldest third. */
static double tr_rise(const struct tr_series *s)
{
	size_t t = s->m / 3;

	return tr_min(s->f + s->m - t, t) - tr_min(s->f, t);
}

/*
 * Walk the floor, the suffix minimum of f held flat over the newest `hold`
 * points, and return its whole rise and its largest single step.
 */
static void tr_floor_steps(const struct tr_series *s, size_t hold,
			   double *rise, double *step)
{
	double top = tr_min(s->f + s->m - hold, hold), lo = top, big = 0;

	for (size_t i = s->m - hold; i-- > 0;) {
		double v = fmin(s->f[i], lo);

		if (lo - v > big)
			big = lo - v;
		lo = v;
	}
	*rise = top - lo;
	*step = big;
}

/*
 * A one-off allocation shows as one step carrying most of the floor's
 * rise (jump) with little rise besides it (steady); a leak that began with
 * a burst has the step too, but keeps rising.  The steady part is measured
 * on the floor held flat over the newest third, where a minimum over the
 * few samples left would rise with the churn alone.
 */
static void tr_step_shares(const struct tr_series *s, struct tr_features *ft)
{
	double rise, step;

	tr_floor_steps(s, 1, &rise, &step);
	ft->jump = rise > 0 ? step / rise : 1;
	tr_floor_steps(s, s->m / 3, &rise, &step);
	ft->steady = rise - step;
}

/*
 * 1 + log3(b2 / b1): for bytes ~ t^p the slopes at the middles of the two
 * halves (t = T/4 and 3T/4) are in the ratio 3^(p-1).
 */
static double tr_shape(double b1, double b2)
{
	double p;

	if (b1 <= 0 && b2 <= 0)
		return 0;
	if (b1 <= 0)
		return TR_SHAPE_CLAMP;
	if (b2 <= 0)
		return -TR_SHAPE_CLAMP;
	p = 1 + log(b2 / b1) / log(3);
	return fmax(-TR_SHAPE_CLAMP, fmin(TR_SHAPE_CLAMP, p));
}

/* Does log(bytes) rise along a line, that is by a steady growth factor? */
static int tr_log_linear(const struct tr_series *s, double *pairs)
{
	double lg[TR_MAX_POINTS], g1, g2, p;

	for (size_t j = 0; j < s->m; j++) {
		if (s->y[j] <= 0)
			return 0;
		lg[j] = log(s->y[j]);
	}
	g1 = tr_theil_sen(lg, s->h, pairs);
	g2 = tr_theil_sen(lg + s->m - s->h, s->h, pairs);
	if (g1 <= 0 || g2 <= 0)
		return 0;
	p = tr_shape(g1, g2);
	return p >= TR_SHAPE_LO && p <= TR_LOG_SHAPE_HI;
}

static void tr_features(struct tr_series *s, struct tr_features *ft)
{
	double z1, p1;

	tr_mann_kendall(s->y, s->m, s->pairs, &ft->z, &ft->p);
	/* A cache fills in the older half; the flat rest dilutes the whole. */
	tr_mann_kendall(s->y, s->h, s->pairs, &z1, &p1);
	ft->p_up = ft->z > 0 ? ft->p : 1;
	if (z1 > 0 && p1 < ft->p_up)
		ft->p_up = p1;
	ft->slope = tr_theil_sen(s->y, s->m, s->pairs) / s->dt;
	ft->slope1 = tr_theil_sen(s->y, s->h, s->pairs) / s->dt;
	ft->slope2 = tr_theil_sen(s->y + s->m - s->h, s->h, s->pairs) / s->dt;
	ft->shape = tr_shape(ft->slope1, ft->slope2);
	tr_fill_glitch(s);
	ft->rise = tr_rise(s);
	ft->churn = tr_churn(s, s->pairs);
	tr_step_shares(s, ft);
}

/* Growth that churn alone could not produce. */
static int tr_material(double growth, double churn)
{
	return growth > 0 && growth >= TR_MATERIAL * churn;
}

static enum ls_trend_label tr_decide(const struct tr_series *s,
				     const struct tr_features *ft)
{
	double recent = ft->slope2 * s->dt * (double)(s->h - 1);

	if (!(ft->p_up < TR_ALPHA) || !tr_material(ft->rise, ft->churn))
		return LS_TREND_CONSTANT;
	/* Stopped, slowing down, or grew by one step only. */
	if (ft->shape < TR_SHAPE_LO || !tr_material(recent, ft->churn) ||
	    (ft->jump > TR_ONE_STEP && !tr_material(ft->steady, ft->churn)))
		return LS_TREND_SATURATING;
	/*
	 * NEEDSWORK: a container grown by realloc doubles its capacity at
	 * doubling intervals, so its live bytes show a few steps and read as
	 * saturating; its allocation count would tell.
	 */
	if (ft->shape > TR_SHAPE_HI && tr_log_linear(s, s->pairs))
		return LS_TREND_EXPONENTIAL;
	/* Includes accelerating but not doubling: a leak that started late. */
	return LS_TREND_LINEAR;
}

static double tr_rate(enum ls_trend_label label, const struct tr_features *ft)
{
	if (label == LS_TREND_CONSTANT)
		return ft->slope;
	if (label == LS_TREND_LINEAR && ft->shape <= TR_SHAPE_HI)
		return ft->slope;
	return ft->slope2;
}

/* Evidence of growth in 0..1: trend significance times floor rise. */
static double tr_evidence(const struct tr_features *ft)
{
	if (ft->rise <= 0)
		return 0;
	if (ft->churn <= 0)
		return 1 - ft->p_up;
	return (1 - ft->p_up) * fmin(1, ft->rise / ft->churn);
}

/* 0.5 on a shape threshold, 1 at half a unit or more inside the band. */
static double tr_margin(enum ls_trend_label label, double shape)
{
	double d;

	switch (label) {
	case LS_TREND_SATURATING:
		d = TR_SHAPE_LO - shape;
		break;
	case LS_TREND_LINEAR:
		d = fmin(shape - TR_SHAPE_LO, TR_SHAPE_HI - shape);
		break;
	case LS_TREND_EXPONENTIAL:
		d = shape - TR_SHAPE_HI;
		break;
	default:
		return 1;
	}
	return 0.5 + 0.5 * fmin(1, fmax(0, d) / 0.5);
}

/* Classify x[0..n), n >= LS_TREND_MIN_SAMPLES, into out. */
static int tr_classify(const int64_t *x, size_t n, double period_s,
		       struct ls_trend *out)
{
	struct tr_series s;
	struct tr_features ft;
	double e;

	tr_window_minima(x, n, period_s, &s);
	s.pairs = malloc(sizeof(double) * s.m * (s.m - 1) / 2);
	if (!s.pairs)
		return -ENOMEM;
	tr_features(&s, &ft);
	out->label = tr_decide(&s, &ft);
	free(s.pairs);
	out->bytes_per_second = tr_rate(out->label, &ft);
	out->mk_z = ft.z;
	out->mk_p = ft.p;
	out->shape = ft.shape;
	e = tr_evidence(&ft);
	out->confidence = out->label == LS_TREND_CONSTANT ?
		1 - e : e * tr_margin(out->label, ft.shape);
	return 0;
}

int ls_trend_classify(const int64_t *live_bytes, size_t n, double period_s,
		      struct ls_trend *out)
{
	size_t unborn = 0;

	if (!out || !(period_s > 0) || !isfinite(period_s) ||
	    (!live_bytes && n >= LS_TREND_MIN_SAMPLES))
		return -EINVAL;
	memset(out, 0, sizeof *out);
	out->label = LS_TREND_UNKNOWN;
	out->mk_p = 1;
	out->nsamples = n;
	if (n < LS_TREND_MIN_SAMPLES)
		return 0;
	/*
	 * A history starts with the program, a site with its first call: the
	 * zeros before it say nothing about how the site grows.
	 */
	while (unborn < n && live_bytes[unborn] <= 0)
		unborn++;
	if (unborn == n) {
		out->label = LS_TREND_CONSTANT;
		out->confidence = 1;
		return 0;
	}
	out->nsamples = n - unborn;
	if (out->nsamples < LS_TREND_MIN_SAMPLES)
		return 0;
	return tr_classify(live_bytes + unborn, n - unborn, period_s, out);
}

const char *ls_trend_name(enum ls_trend_label label)
{
	static const char *const names[] = {
		[LS_TREND_CONSTANT] = "constant",
		[LS_TREND_SATURATING] = "saturating",
		[LS_TREND_LINEAR] = "linear",
		[LS_TREND_EXPONENTIAL] = "exponential",
		[LS_TREND_UNKNOWN] = "unknown",
	};

	if ((unsigned)label >= sizeof names / sizeof names[0])
		return "unknown";
	return names[label];
}
