/*
 * trace-pairs.c - the workload of bench/trace-cost: malloc(64) + free()
 * pairs at the bottom of a call chain, built without frame pointers.
 *
 *   trace-pairs N DEPTH   say "ready", wait for a byte on stdin, run N
 *                         pairs DEPTH frames below main, print
 *                         "ns_per_pair X", wait for stdin to close
 */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static void *volatile sink;

__attribute__((noinline, noipa)) static void pair(void)
{
	void *p = malloc(64);

	sink = p;
	free(p);
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline, noipa)) static void down(int depth, long n)
{
	if (depth > 0) {
		down(depth - 1, n);
		__asm__ __volatile__("" ::: "memory");
		return;
	}
	for (long i = 0; i < n; i++)
		pair();
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 1000000;
	int depth = argc > 2 ? atoi(argv[2]) : 8;
	double t0;
	char c;

	if (write(1, "ready\n", 6) != 6 || read(0, &c, 1) != 1)
		return 1;
	t0 = now();
	down(depth, n);
	printf("ns_per_pair %.1f\n", (now() - t0) / (double)n);
	fflush(stdout);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
