/*
 * lib-fixture.h - for the report library's unit tests: allocations that
 * abort rather than fail (a test's synthetic snapshot is never short of
 * memory), a site's history that rises by a step, and a caller/callee
 * pair whose call site is known, so that a real return address of the
 * test can be symbolized against ground truth.
 *
 *   LIB_FIXTURE_CALL_PAIR(ls_x_caller, ls_x_callee)
 *
 * defines, in the including file, seen_ra (the return address the callee
 * saw), call_line (the line of the call: the macro's own line, which is
 * where both __LINE__ and the call's debug line point) and the two
 * functions, global and never inlined, so that they are found by name.
 */
#ifndef LEAKSCOPE_TESTS_LIB_FIXTURE_H
#define LEAKSCOPE_TESTS_LIB_FIXTURE_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static inline void *xcalloc(size_t n, size_t size)
{
	void *p = calloc(n, size);

	if (!p)
		abort();
	return p;
}

static inline char *xstrdup(const char *s)
{
	char *p = strdup(s);

	if (!p)
		abort();
	return p;
}

/* A site's history of n samples: start, start + step, ... (the caller
 * owns it: a snapshot's release frees it). */
static inline int64_t *series(int64_t start, int64_t step, size_t n)
{
	int64_t *v = xcalloc(n, sizeof(*v));
	size_t i;

	for (i = 0; i < n; i++)
		v[i] = start + step * (int64_t)i;
	return v;
}

#define LIB_FIXTURE_CALL_PAIR(caller, callee)				\
static volatile uintptr_t seen_ra;					\
static int call_line;							\
__attribute__((noinline, noclone)) void callee(void)			\
{									\
	seen_ra = (uintptr_t)__builtin_return_address(0);		\
	__asm__ volatile("" ::: "memory");				\
}									\
__attribute__((noinline, noclone)) void caller(void)			\
{									\
	callee(); call_line = __LINE__;					\
	__asm__ volatile("" ::: "memory");				\
}

#endif
