/*
 * unwind-bench.c - ns per stack capture at depth 15, code without frame
 * pointers: the agent's unwinder (warm, cold, two threads) against
 * libunwind's unw_backtrace (per-thread caching) and glibc's backtrace().
 *
 * Build (after the agent objects exist; frame pointers off on purpose):
 *   gcc -O2 -g -fomit-frame-pointer -D_GNU_SOURCE -o build/bench/unwind-bench \
 *       bench/unwind-bench.c build/agent/unwind.o build/agent/sys.o -ldl -lpthread
 *
 * libunwind is dlopen()ed, as the agent does: linking libunwind.so.8 would
 * interpose its own weak backtrace() over glibc's.
 */
#include <dlfcn.h>
#include <execinfo.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include "../agent/unwind.h"

#define DEPTH 15
#define MAXF 64
#define NOFP __attribute__((noipa, optimize("omit-frame-pointer")))

enum method { OURS, OURS_COLD, LIBUNWIND, GLIBC };

static const char *const names[] = {
	"leakscope, warm caches", "leakscope, cold (invalidated each time)",
	"libunwind unw_backtrace, UNW_CACHE_PER_THREAD", "glibc backtrace()",
};

static int (*unw_bt)(void **, int);
static volatile uint64_t sink;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int load_libunwind(void)
{
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	int (*policy)(void *, int);
	void **as;

	if (!h)
		return -1;
	unw_bt = (int (*)(void **, int))dlsym(h, "unw_backtrace");
	policy = (int (*)(void *, int))dlsym(h, "_ULx86_64_set_caching_policy");
	as = dlsym(h, "_ULx86_64_local_addr_space");
	if (!unw_bt || !policy || !as)
		return -1;
	policy(*as, 2);		/* UNW_CACHE_PER_THREAD */
	return 0;
}

/* n captures with method m; returns the frames of the last one. */
NOFP static int leaf(enum method m, long n)
{
	uint64_t pcs[MAXF];
	void *bt[MAXF];
	int f = 0;
	long i;

	for (i = 0; i < n; i++) {
		switch (m) {
		case OURS_COLD:
			ls_unwind_invalidate();
			/* fall through */
		case OURS:
			f = ls_unwind_capture(pcs, MAXF, 0);
			break;
		case LIBUNWIND:
			f = unw_bt(bt, MAXF);
			break;
		case GLIBC:
			f = backtrace(bt, MAXF);
			break;
		}
		sink += (uint64_t)f;
	}
	return f;
}

/* Frameless frames between main and the capture: a realistic mix of
 * small stack frames and saved registers, no %rbp chain. */
NOFP static int descend(int d, enum method m, long n)
{
	volatile char pad[16 + 8 * (DEPTH % 5)];
	int r;

	pad[d % sizeof(pad)] = (char)d;
	r = d > 1 ? descend(d - 1, m, n) : leaf(m, n);
	sink += (uint64_t)pad[d % sizeof(pad)];
	return r;
}

struct run {
	enum method m;
	long n;
	double ns;
	int frames;
};

static void *run_one(void *arg)
{
	struct run *r = arg;
	uint64_t t0;

	descend(DEPTH, r->m, r->n / 10 + 1);		/* warm up */
	t0 = now_ns();
	r->frames = descend(DEPTH, r->m, r->n);
	r->ns = (double)(now_ns() - t0) / (double)r->n;
	return NULL;
}

static void report(const char *name, const struct run *r, double base)
{
	printf("%-48s %9.1f %5d %8.2f %8.1fx\n", name, r->ns, r->frames,
	       r->ns / r->frames, r->ns / base);
}

/* The warm capture from two threads at once: per-thread cost. */
static void two_threads(long n, double base)
{
	struct run r[2] = { { OURS, n, 0, 0 }, { OURS, n, 0, 0 } };
	pthread_t t[2];
	int i;

	for (i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, run_one, &r[i]);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	r[0].ns = (r[0].ns + r[1].ns) / 2;
	report("leakscope, warm, 2 threads at once (each)", &r[0], base);
}

int main(void)
{
	static const long iters[] = { 2000000, 20000, 1000000, 100000 };
	struct run r;
	double base = 0;
	int m;

	if (load_libunwind() < 0 || ls_unwind_init() < 0) {
		fprintf(stderr, "unwind-bench: cannot load libunwind.so.8\n");
		return 1;
	}
	printf("depth %d below main, no frame pointers\n", DEPTH);
	printf("%-48s %9s %5s %8s %9s\n", "method", "ns/stack", "frames",
	       "ns/frame", "vs ours");
	for (m = OURS; m <= GLIBC; m++) {
		memset(&r, 0, sizeof(r));
		r.m = (enum method)m;
		r.n = iters[m];
		run_one(&r);
		if (m == OURS)
			base = r.ns;
		report(names[m], &r, base);
	}
	two_threads(iters[OURS], base);
	return 0;
}
