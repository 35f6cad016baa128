/*
 * fmath.h - the few floating-point functions the agent needs, written
 * here so that the agent needs nothing beyond libc and the loader (a
 * distroless or slim image may carry no libm.so.6).
 *
 * Accuracy: within 2 ulp of glibc's libm over the ranges the sampler
 * uses (tests/unit/t-agent-fmath.c measures it over millions of points).
 * Pure functions: no errno, no state; safe inside allocation hooks.
 */
#ifndef LEAKSCOPE_AGENT_FMATH_H
#define LEAKSCOPE_AGENT_FMATH_H

#include <stdint.h>

/* Natural logarithm of x > 0 (finite); x <= 0 gives -infinity. */
double ls_log(double x);

/* exp(x) - 1, exact to the last bits near 0; x <= -40 gives -1. */
double ls_expm1(double x);

/* x rounded to the nearest integer, halves away from zero, as llround();
 * |x| must be below 2^63. */
int64_t ls_llround(double x);

#endif
