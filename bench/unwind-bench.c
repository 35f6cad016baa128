/*
 * unwind-bench.c - ns per stack capture 15 frames below a thread's start,
 * in code built without frame pointers: the agent's unwinder against
 * libunwind's unw_backtrace (per-thread caching) and glibc's backtrace().
 *
 * Four stack shapes, because the agent's unwinder takes the frames it
 * walked before, and whose stack words are unchanged, from its frame
 * cache without walking them:
 *   same    every capture from the same stack (a tight allocation loop);
 *   inner   the innermost 4 frames alternate between call paths, the
 *           outer ones stay (one allocation site, many callers below);
 *   outer   the 2 outermost of the 15 frames alternate (an allocation
 *           wrapper reached from several places);
 *   all     every frame differs from the previous capture's (each was
 *           seen in some earlier capture, as in any loop);
 *   fresh   an alloca of varying size below the thread start moves every
 *           frame's sp, over 256 places: the cache never helps, every
 *           capture is a full walk (the worst case).
 * The harness alone (method "none") is timed too and subtracted.
 *
 * Build and run: make -C bench unwind-bench (frame pointers off on
 * purpose; it links the agent's unwind.o, cfi.o and sys.o).
 *
 * libunwind is dlopen()ed, as the agent does: linking libunwind.so.8 would
 * interpose its own weak backtrace() over glibc's.
 */
#include <execinfo.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "../common/cfi.h"
#include "../agent/libunwind-load.h"
#include "../agent/unwind.h"

#define DEPTH 15
#define INNER 4
#define PATHS 16
#define MAXF 64
#define NOFP __attribute__((noipa, optimize("omit-frame-pointer")))

enum method { NONE, OURS, LIBUNWIND, GLIBC, NMETHODS };
enum shape { SAME, INNER_VARY, OUTER_VARY, ALL_VARY, FRESH, NSHAPES };

static const char *const method_names[NMETHODS] = {
	"none (the harness alone)", "leakscope",
	"libunwind, per-thread cache", "glibc backtrace()",
};
static const char *const shape_names[NSHAPES] = {
	"same", "inner", "outer", "all", "fresh"
};

static ls_unw_backtrace_fn unw_bt;

struct run {
	_Alignas(64) enum method m;	/* one cache line per thread */
	enum shape shape;
	long n;
	double ns;
	int frames;
	uint64_t sum;		/* keeps the captures observable */
};

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

NOFP static int capture(struct run *r)
{
	uint64_t pcs[MAXF];
	void *bt[MAXF];
	int f = 0;

	switch (r->m) {
	case OURS:
		f = ls_unwind_capture(pcs, MAXF, 0);
		r->sum += pcs[f - 1];
		break;
	case LIBUNWIND:
		f = unw_bt(bt, MAXF);
		break;
	case GLIBC:
		f = backtrace(bt, MAXF);
		break;
	default:
		f = 1;
	}
	return f;
}

/* Which of the 4 copies the frame at depth d takes in capture i. */
static inline int pick(const struct run *r, int d, long i)
{
	unsigned long u = (unsigned long)i;

	if (r->shape == INNER_VARY && d <= INNER)
		return (int)((u + (unsigned)d) & 3);
	if (r->shape == OUTER_VARY && d >= DEPTH - 1)
		return (int)((d == DEPTH ? u : u >> 2) & 3);
	if (r->shape == ALL_VARY)	/* each level differs every time */
		return (int)((u + (unsigned)d) & 3);
	return 0;
}

static int (*const paths[4])(int, struct run *, long);

/* Frameless frames with small stack frames and saved registers, no %rbp
 * chain; four copies so that call paths can differ. */
#define DESCEND(name) \
NOFP static int name(int d, struct run *r, long i) \
{ \
	volatile char pad[24]; \
	int f; \
	pad[d % 24] = (char)d; \
	f = d > 1 ? paths[pick(r, d - 1, i)](d - 1, r, i) : capture(r); \
	r->sum += (uint64_t)pad[d % 24]; \
	return f; \
}

DESCEND(path0)
DESCEND(path1)
DESCEND(path2)
DESCEND(path3)

static int (*const paths[4])(int, struct run *, long) = {
	path0, path1, path2, path3
};

NOFP static int top(struct run *r, long i)
{
	size_t len = r->shape == FRESH ? 16 * (size_t)(i & 255) + 16 : 16;
	char *p = __builtin_alloca(len);

	__asm__ volatile("" : : "r"(p) : "memory");
	return paths[pick(r, DEPTH, i)](DEPTH, r, i);
}

/*
 * The fastest of BATCHES batches: the machine is shared, and interference
 * only ever adds time, so the minimum is the stable figure.
 */
#define BATCHES 9

static void *run_one(void *arg)
{
	struct run *r = arg;
	long i, b, per = r->n / BATCHES + 1;
	uint64_t t0;
	double ns;

	for (i = 0; i < per / 4 + PATHS; i++)		/* warm up */
		top(r, i);
	r->ns = 1e18;
	for (b = 0; b < BATCHES; b++) {
		t0 = now_ns();
		for (i = 0; i < per; i++)
			r->frames = top(r, i);
		ns = (double)(now_ns() - t0) / (double)per;
		if (ns < r->ns)
			r->ns = ns;
	}
	return NULL;
}

/* The descent alone, per shape and thread count: subtracted below. */
static double base_ns[NSHAPES][3];

static void report(const char *name, enum shape shape, int threads,
		   const struct run *r)
{
	double net = r->ns - base_ns[shape][threads];

	if (r->m == NONE) {
		base_ns[shape][threads] = r->ns;
		printf("%-34s %-6s %9.1f\n", name, shape_names[shape], r->ns);
		return;
	}
	printf("%-34s %-6s %9.1f %9.1f %6d %8.2f\n", name, shape_names[shape],
	       r->ns, net, r->frames, net / r->frames);
}

static void bench(enum method m, enum shape shape, long n, int threads)
{
	struct run r[2];
	pthread_t t[2];
	char name[64];
	int i;

	memset(r, 0, sizeof(r));
	for (i = 0; i < threads; i++) {
		r[i].m = m;
		r[i].shape = shape;
		r[i].n = n;
		pthread_create(&t[i], NULL, run_one, &r[i]);
	}
	for (i = 0; i < threads; i++)
		pthread_join(t[i], NULL);
	if (threads == 2)	/* the slower thread: contention shows */
		r[0].ns = r[0].ns > r[1].ns ? r[0].ns : r[1].ns;
	snprintf(name, sizeof(name), "%s%s", method_names[m],
		 threads == 2 ? ", 2 threads" : "");
	report(name, shape, threads, &r[0]);
}

/* What a cache miss costs: building the rule of each pc of a stack. */
static void rule_cost(void)
{
	uint64_t pcs[MAXF], t0;
	double best = 1e18, ns;
	int n = ls_unwind_capture(pcs, MAXF, 0), i, b, r, cacheable;

	for (b = 0; b < BATCHES; b++) {
		t0 = now_ns();
		for (r = 0; r < 2000; r++)
			for (i = 0; i < n; i++)
				ls_cfi_rule(pcs[i], 0, &cacheable);
		ns = (double)(now_ns() - t0) / (2000.0 * n);
		if (ns < best)
			best = ns;
	}
	printf("building one rule from .eh_frame (a cache miss): %.0f ns\n",
	       best);
}

int main(void)
{
	static const long iters[NMETHODS] = {
		2000000, 2000000, 1000000, 100000
	};
	int m, s, cached;

	unw_bt = ls_libunwind_load(&cached);
	if (!unw_bt || !cached || ls_unwind_init() < 0) {
		fprintf(stderr, "unwind-bench: cannot load libunwind.so.8\n");
		return 1;
	}
	printf("captures %d frames below a thread start, no frame pointers; "
	       "fastest of %d batches\n", DEPTH, BATCHES);
	printf("%-34s %-6s %9s %9s %6s %8s\n", "method", "stack", "ns/call",
	       "ns/stack", "frames", "ns/frame");
	for (m = 0; m < NMETHODS; m++)
		for (s = 0; s < NSHAPES; s++)
			bench((enum method)m, (enum shape)s, iters[m], 1);
	for (m = NONE; m <= LIBUNWIND; m++)
		for (s = 0; s < NSHAPES; s++)
			bench((enum method)m, (enum shape)s, iters[m], 2);
	rule_cost();
	return 0;
}
