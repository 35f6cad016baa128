/*
 * trend.h - label how one site's live bytes grow over time.
 *
 * The agent samples each site's live bytes at a fixed period into a bounded
 * history; ls_trend_classify() reads such a series and says whether the
 * site is flat, filled up and stopped (a cache), grows steadily (a leak) or
 * grows by doubling, with a rate in bytes per second.  It is built to
 * ignore churn: temporaries that come and go add positive noise on top of
 * the memory a site really keeps, so the statistics are rank based and the
 * materiality checks look at the floor of the series.  The method, every
 * threshold and the accuracy measured on synthetic series are in
 * docs/TRENDS.md.
 */
#ifndef LEAKSCOPE_TREND_H
#define LEAKSCOPE_TREND_H

#include <stddef.h>
#include <stdint.h>

enum ls_trend_label {
	LS_TREND_CONSTANT,	/* no material growth (flat, noise, shrinking) */
	LS_TREND_SATURATING,	/* grew, then stopped or keeps slowing down */
	LS_TREND_LINEAR,	/* grows at a steady rate: the leak shape */
	LS_TREND_EXPONENTIAL,	/* grows by a steady factor: doubling */
	LS_TREND_UNKNOWN,	/* too few samples (see nsamples) */
};

/* Below this many samples the label is LS_TREND_UNKNOWN. */
#define LS_TREND_MIN_SAMPLES 5

struct ls_trend {
	enum ls_trend_label label;
	/*
	 * Theil-Sen slope: over the whole series for CONSTANT and LINEAR,
	 * over the recent half for SATURATING (about 0 once full) and
	 * EXPONENTIAL (the current growth) and for a LINEAR leak that started
	 * late.  Negative when the site shrinks (then labelled CONSTANT).
	 */
	double bytes_per_second;
	/*
	 * 0..1, a ranking score rather than a calibrated probability: one
	 * minus the evidence for growth (Mann-Kendall, floor rise) for
	 * CONSTANT, that evidence times the margin of the shape from its
	 * thresholds for the growing labels; 0 for UNKNOWN.
	 */
	double confidence;
	/* Mann-Kendall over the samples used (nsamples), two-sided p. */
	double mk_z, mk_p;
	/*
	 * 1 + log3(slope of the recent half / slope of the older half): 1 for
	 * a straight line, above 1.5 accelerating, below 0.5 slowing down.
	 * Clamped to [-9, 9]; 9 when only the recent half grows, -9 when only
	 * the older half does, 0 when neither does.  Always finite.
	 */
	double shape;
	/*
	 * Samples the label rests on: n less the leading samples of 0 (the
	 * site did not exist yet; a history starts with the program), or n
	 * when every sample is 0 (then CONSTANT).  UNKNOWN when below
	 * LS_TREND_MIN_SAMPLES.
	 */
	size_t nsamples;
};

/*
 * Classify a series of n live-byte samples, oldest first, taken every
 * period_s seconds.  Series longer than 128 samples are reduced to at most
 * 128 window minima first: 3000 samples cost about 0.25 ms.
 * Deterministic: the same input gives the same output, bit for bit.
 *
 * Returns 0 and fills *out (UNKNOWN when fewer than LS_TREND_MIN_SAMPLES
 * samples follow the leading zeros; live_bytes may be NULL when n is
 * below LS_TREND_MIN_SAMPLES), -EINVAL when out is NULL, live_bytes is
 * NULL with n >= LS_TREND_MIN_SAMPLES, or period_s is not a positive finite
 * number, and -ENOMEM.  Thread-safe (no shared state); allocates with
 * malloc, so not for the agent's allocation hooks or signal handlers.
 */
int ls_trend_classify(const int64_t *live_bytes, size_t n, double period_s,
		      struct ls_trend *out);

/* "constant", "saturating", "linear", "exponential", "unknown"; never NULL. */
const char *ls_trend_name(enum ls_trend_label label);

#endif
