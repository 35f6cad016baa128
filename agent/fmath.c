/*
 * fmath.c - logarithm, exp(x)-1 and rounding without libm (fmath.h).
 *
 * ls_log: x = (1 + f) 2^e with 1 + f in [sqrt(1/2), sqrt(2)); with
 * s = f/(2+f), log(1+f) = 2 atanh(s) = f - f^2/2 + s (f^2/2 + R), where
 * R = sum 2 s^2k / (2k+1) converges by a factor s^2 < 0.03 a term (13
 * terms reach below 2^-60) and f, exact, carries most of the result.
 * ls_expm1: the series near 0 (no cancellation), else
 * (2^k - 1) + 2^k expm1(r) with x = k ln2 + r, |r| <= ln2/2, ln2 split in
 * a high part exact in k * hi and a low part, so that the reduction
 * loses nothing.
 */
#include <string.h>
#include "fmath.h"

#define LN2_HI 6.93147180369123816490e-01	/* 0x3fe62e42fee00000 */
#define LN2_LO 1.90821492927058770002e-10	/* ln2 - LN2_HI */
#define SQRT1_2 0.70710678118654752440

static uint64_t bits_of(double x)
{
	uint64_t b;

	memcpy(&b, &x, sizeof(b));
	return b;
}

static double of_bits(uint64_t b)
{
	double x;

	memcpy(&x, &b, sizeof(x));
	return x;
}

/* 2^k for k in [-1022, 1023]: a normal double built from its exponent. */
static double pow2(int k)
{
	return of_bits((uint64_t)(k + 1023) << 52);
}

double ls_log(double x)
{
	uint64_t b = bits_of(x);
	int e;
	double f, s, z, hfsq, r, term;

	if (!(x > 0))
		return -1.0 / 0.0;
	if (b >> 52 == 0) {	/* subnormal: scale into the normal range */
		x *= pow2(54);
		b = bits_of(x);
		e = -54;
	} else {
		e = 0;
	}
	e += (int)(b >> 52) - 1023;
	f = of_bits((b & ((1ull << 52) - 1)) | (1023ull << 52));	/* [1, 2) */
	if (f > 2 * SQRT1_2) {
		f *= 0.5;
		e++;
	}
	f -= 1;			/* exact: log(x) = e ln2 + log(1 + f) */
	s = f / (2 + f);
	z = s * s;
	hfsq = 0.5 * f * f;
	r = 0;
	term = z;
	for (int k = 3; k <= 27; k += 2) {
		r += 2 * term / k;
		term *= z;
	}
	/* log(1+f) = f - hfsq + s (hfsq + r): f exact, the rest small */
	return (double)e * LN2_HI -
	       ((hfsq - (s * (hfsq + r) + (double)e * LN2_LO)) - f);
}

/* exp(x) - 1 for |x| <= ln2/2 + a little: its series in Horner's form,
 * x (1 + x/2 (1 + x/3 (1 + ...))), 20 terms (below 1e-25). */
static double expm1_small(double x)
{
	double p = 1;

	for (int n = 20; n >= 2; n--)
		p = 1 + p * x / n;
	return x * p;
}

double ls_expm1(double x)
{
	double r, em1, p;
	int k;

	if (x != x)
		return x;
	if (x <= -40)
		return -1;
	if (x > 709.78)
		return 1.0 / 0.0;
	if (x > -0.34 && x < 0.34)
		return expm1_small(x);
	k = (int)(x / (LN2_HI + LN2_LO) + (x < 0 ? -0.5 : 0.5));
	r = (x - k * LN2_HI) - k * LN2_LO;
	em1 = expm1_small(r);
	if (k > 1023)		/* x near the top: 2^k in two steps */
		return (em1 + 1) * pow2(k - 1) * 2 - 1;
	p = pow2(k);
	if (k > 52)		/* 2^k - 1 is no longer exact */
		return (em1 + 1) * p - 1;
	/* 2^k (1 + em1) - 1 = (2^k - 1) + 2^k em1, the first term exact */
	return (p - 1) + p * em1;
}

int64_t ls_llround(double x)
{
	int64_t i = (int64_t)x;	/* toward zero; x - i is then exact */

	if (x >= 0)
		return x - (double)i >= 0.5 ? i + 1 : i;
	return (double)i - x >= 0.5 ? i - 1 : i;
}
