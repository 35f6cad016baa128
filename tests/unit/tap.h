/*
 * tap.h - a minimal TAP producer for the C unit tests.
 *
 *   ok(cond, "what was checked %d", x);
 *   is_u64(got, want, "name");
 *   return tap_done();
 */
#ifndef LEAKSCOPE_TAP_H
#define LEAKSCOPE_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>

static int tap_n, tap_failed;

static inline int tap_okv(int cond, const char *fmt, va_list ap)
{
	tap_n++;
	if (!cond)
		tap_failed++;
	printf("%sok %d - ", cond ? "" : "not ", tap_n);
	vprintf(fmt, ap);
	putchar('\n');
	fflush(stdout);
	return cond;
}

static inline __attribute__((format(printf, 2, 3)))
int ok(int cond, const char *fmt, ...)
{
	va_list ap;
	int r;

	va_start(ap, fmt);
	r = tap_okv(cond, fmt, ap);
	va_end(ap);
	return r;
}

#define is_u64(got, want, ...) do { \
	uint64_t g_ = (uint64_t)(got), w_ = (uint64_t)(want); \
	if (!ok(g_ == w_, __VA_ARGS__)) \
		printf("#   got %" PRIu64 ", want %" PRIu64 "\n", g_, w_); \
} while (0)

static inline int tap_done(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
