/*
 * fastbins.c - a heap that is slow to count, and a thread that notices.
 *
 *   fastbins CHUNKS SECONDS [SLOW_MS]
 *
 * Frees CHUNKS blocks of 24 bytes, which glibc keeps in one fast bin
 * (past the 7 its per-thread cache holds), then for SECONDS does rounds
 * of 8 mallocs and 8 frees of 400 bytes: the cache holds 7 of them, so
 * each round takes the arena's lock twice (one malloc, one free).  It
 * prints the slowest round and how many took over SLOW_MS (default 20):
 *
 *   fastbins chunks=C rounds=R max_ms=M slow=K count_ms=N schedstat=S
 *
 * A round's time leaves out what the thread spent waiting for a CPU
 * (run_delay of /proc/thread-self/schedstat): on a loaded machine a
 * preempted round is not one that waited for the lock.  schedstat=0
 * when the kernel does not give it (the times are then wall times).
 *
 * mallinfo2() walks every chunk of every bin under that lock: with a
 * million chunks in a fast bin, a call holds it for tens of ms, and every
 * round that meets one waits as long.  Nothing here calls it before the
 * end, when one call is timed (count_ms) to show what a count costs on
 * this heap; a tracker that counts on its own shows up as slow rounds.  The heap is never
 * consolidated (no request of the large-bin range, no free that merges
 * into the top chunk: a guard block follows the 400-byte ones), so the
 * fast bin stays as long as the run.
 *
 *   site           bytes  blocks  at exit
 *   site_guard     400    1
 *   (the 24-byte blocks and the rounds' blocks are all freed)
 */
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include "wl.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* ms this thread has waited on a run queue (0 without schedstat). */
static double runq_ms(int fd)
{
	char buf[96];
	ssize_t n = fd < 0 ? -1 : pread(fd, buf, sizeof(buf) - 1, 0);
	unsigned long long run, wait;

	if (n <= 0)
		return 0;
	buf[n] = 0;
	return sscanf(buf, "%llu %llu", &run, &wait) == 2 ? wait / 1e6 : 0;
}

WL_SITE static void *site_guard(void)
{
	return malloc(400); /* @site_guard */
}

/* Freed in a shuffled order, so that the fast bin's list jumps about
 * the heap as a real program's does: counting it is a cache miss a
 * chunk (in address order the hardware prefetcher hides them). */
WL_HELPER static void fill(void **small, long n)
{
	uint64_t x = 42;
	long i, j;
	void *p;

	for (i = 0; i < n; i++)
		small[i] = malloc(24);
	for (i = n - 1; i > 0; i--) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		j = (long)((x >> 33) % (uint64_t)(i + 1));
		p = small[i];
		small[i] = small[j];
		small[j] = p;
	}
	for (i = 0; i < n; i++)
		free(small[i]);
}

int main(int argc, char **argv)
{
	long chunks = argc > 1 ? atol(argv[1]) : 1000000;
	double secs = argc > 2 ? atof(argv[2]) : 3.0, end, t, worst = 0;
	double slow_ms = argc > 3 ? atof(argv[3]) : 20.0;
	void *r[8], **small;
	long rounds = 0, slow = 0;
	int i, fd = open("/proc/thread-self/schedstat", O_RDONLY | O_CLOEXEC);
	double q;

	/* The round's blocks first, from the top chunk, then the guard
	 * after them: a freed one never borders the top. */
	for (i = 0; i < 8; i++)
		r[i] = malloc(400);
	wl_sink = site_guard();
	small = malloc((size_t)chunks * sizeof(*small));
	WL_CHECK(small != NULL, "no memory for %ld pointers", chunks);
	for (i = 0; i < 8; i++)
		free(r[i]);
	fill(small, chunks);
	free(small);	/* large: an mmap of its own, no consolidation */
	end = now_ms() + secs * 1e3;
	while ((t = now_ms()) < end) {
		q = runq_ms(fd);
		for (i = 0; i < 8; i++)
			r[i] = malloc(400);
		for (i = 0; i < 8; i++)
			free(r[i]);
		t = now_ms() - t - (runq_ms(fd) - q);
		if (t > worst)
			worst = t;
		slow += t > slow_ms;
		rounds++;
	}
	t = now_ms();
	(void)mallinfo2();
	t = now_ms() - t;
	printf("fastbins chunks=%ld rounds=%ld max_ms=%.1f slow=%ld count_ms=%.1f "
	       "schedstat=%d\n", chunks, rounds, worst, slow, t, fd >= 0);
	return 0;
}
