/*
 * reach-writes.c - a heap under heavy writes, for the concurrent check's
 * bounded pause (docs/REACHABILITY.md, "A bounded pause"):
 * bench/pause-bench and tests/integration/t_check_pause.py.
 *
 *   reach-writes MIB BLOCKS [THREADS [REPLACE]]
 *
 * BLOCKS blocks of MIB MiB in all (sizes 16 to 2 * mean - 16), each
 * listed in a table (a tracked block) and each block's first word
 * pointing to another block.  Then THREADS threads (default 2) rewrite
 * the heap at full speed, each its own share of the table: a random
 * block's words get pointers to other blocks (a store every few
 * nanoseconds, scattered over the whole heap), and one rewrite in
 * REPLACE (default 16; 0 never) replaces the block by a new one of the
 * same size (malloc, copy, free the old), so the check's change log and
 * its blocks allocated during the mark are busy too.  Every block stays
 * reachable from the table: nothing leaks.
 *
 * Writes "ready <pid>\n" to fd 1 once the heap is built and the writers
 * run, then runs until end of file on fd 0.  The writers' rewrites are
 * counted: on end of input it writes "rewrites <n>\n" to fd 1.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

struct share {
	pthread_t th;
	unsigned idx, nthreads;
	uint64_t seed, rewrites;
};

static void **volatile *table;
static size_t *sizes;
static uint64_t nblocks, replace_every = 16;
static volatile int stop;

static uint64_t next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static void *writer(void *arg)
{
	struct share *sh = arg;
	uint64_t mine = nblocks / sh->nthreads;

	while (!stop) {
		uint64_t i = next(&sh->seed) % mine * sh->nthreads + sh->idx;
		void **b = table[i], **nb;
		size_t w, words = sizes[i] / 8;

		if (replace_every && sh->rewrites % replace_every == 0) {
			nb = malloc(sizes[i]);
			if (!nb)
				continue;
			memcpy(nb, b, sizes[i]);
			table[i] = nb;
			free(b);
			b = nb;
		}
		for (w = 0; w < words && w < 8; w++)
			b[w] = table[next(&sh->seed) % nblocks];
		sh->rewrites++;
	}
	return NULL;
}

int main(int argc, char **argv)
{
	uint64_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 64;
	uint64_t mean, seed = 88172645463325252ull, i, total = 0;
	unsigned nthreads = argc > 3 ? (unsigned)atoi(argv[3]) : 2, t;
	struct share *sh;
	char line[64];

	nblocks = argc > 2 ? strtoull(argv[2], NULL, 10) : 500000;
	if (argc > 4)
		replace_every = strtoull(argv[4], NULL, 10);
	if (!mib || !nblocks || !nthreads || nthreads > 64) {
		fputs("usage: reach-writes MIB BLOCKS [THREADS [REPLACE]]\n",
		      stderr);
		return 2;
	}
	mean = (mib << 20) / nblocks;
	if (mean < 32)
		mean = 32;
	table = malloc(nblocks * sizeof(*table));
	sizes = malloc(nblocks * sizeof(*sizes));
	sh = calloc(nthreads, sizeof(*sh));
	if (!table || !sizes || !sh)
		return 1;
	for (i = 0; i < nblocks; i++) {
		size_t size = (16 + (size_t)(next(&seed) % (2 * mean - 31))) &
			      ~(size_t)7, k;
		void **b = malloc(size);

		if (!b)
			return 1;
		for (k = 1; k < size / 8; k++)
			b[k] = (void *)(uintptr_t)(k & 0xff);
		b[0] = i ? table[next(&seed) % i] : NULL;
		table[i] = b;
		sizes[i] = size;
	}
	for (t = 0; t < nthreads; t++) {
		sh[t].idx = t;
		sh[t].nthreads = nthreads;
		sh[t].seed = seed + t * 0x9e3779b97f4a7c15ull;
		if (pthread_create(&sh[t].th, NULL, writer, &sh[t]))
			return 1;
	}
	snprintf(line, sizeof(line), "ready %d\n", (int)getpid());
	if (write(1, line, strlen(line)) < 0)
		return 1;
	while (read(0, line, sizeof(line)) > 0)
		;
	stop = 1;
	for (t = 0; t < nthreads; t++) {
		pthread_join(sh[t].th, NULL);
		total += sh[t].rewrites;
	}
	snprintf(line, sizeof(line), "rewrites %llu\n",
		 (unsigned long long)total);
	return write(1, line, strlen(line)) < 0;
}
