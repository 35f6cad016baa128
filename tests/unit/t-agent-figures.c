/*
 * t-agent-figures.c - the rationed allocator counts (agent/figures.c):
 * a heap that is quick to count is counted every time; once a count took
 * LS_MALLINFO_SLOW_NS or more (a million chunks scattered in a fast bin),
 * the next call gives the last figures back without counting, even after
 * the heap changed; a fork child goes on with the parent's ration.
 */
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../../agent/figures.h"
#include "tap.h"

#define CHUNKS 1000000

static uint64_t last_ns(void)
{
	uint64_t ns, n;

	ls_figures_mallinfo_ration(&ns, &n);
	return ns;
}

static uint64_t skipped(void)
{
	uint64_t ns, n;

	ls_figures_mallinfo_ration(&ns, &n);
	return n;
}

/* Chunks of 32 bytes freed in a shuffled order: one fast bin whose list
 * jumps about the heap, as in tests/workloads/fastbins.c. */
static void fill_fastbin(void **p, long n)
{
	uint64_t x = 7;
	long i, j;
	void *t;

	for (i = 0; i < n; i++)
		p[i] = malloc(24);
	for (i = n - 1; i > 0; i--) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		j = (long)((x >> 33) % (uint64_t)(i + 1));
		t = p[i];
		p[i] = p[j];
		p[j] = t;
	}
	for (i = 0; i < n; i++)
		free(p[i]);
}

int main(void)
{
	struct lsnap_mallinfo a, b, c;
	void **p = malloc(CHUNKS * sizeof(*p)), *q[64];
	pid_t child;
	int st, i;

	if (!p)
		return 1;
	ls_figures_mallinfo(&a);
	ok(last_ns() < LS_MALLINFO_SLOW_NS,
	   "a small heap counts in under 1 ms (%" PRIu64 " ns)",
	   last_ns());
	ls_figures_mallinfo(&b);
	is_u64(skipped(), 0, "quick counts: none skipped");

	fill_fastbin(p, CHUNKS);
	ls_figures_mallinfo(&a);
	ok(a.smblks >= CHUNKS - 8, "the fast bin counted (%" PRIu64 " chunks)",
	   a.smblks);
	ok(last_ns() >= LS_MALLINFO_SLOW_NS,
	   "%d scattered chunks take 1 ms or more (%" PRIu64 " ns)", CHUNKS,
	   last_ns());

	/* Take chunks back out of the fast bin: a new count would differ. */
	for (i = 0; i < 64; i++)
		q[i] = malloc(24);
	ls_figures_mallinfo(&b);
	is_u64(skipped(), 1, "the next call right after: skipped");
	ok(memcmp(&a, &b, sizeof(a)) == 0, "and given the last figures");
	ls_figures_mallinfo(&c);
	is_u64(skipped(), 2, "and the one after");
	is_u64(c.smblks, a.smblks, "still the counted fast bin");

	/* A fork child keeps the parent's ration (its handler frees the
	 * lock, which a thread of the parent may have held). */
	child = fork();
	if (child == 0) {
		ls_figures_reset_child();
		ls_figures_mallinfo(&b);
		_exit(skipped() == 3 &&
		      memcmp(&a, &b, sizeof(a)) == 0 ? 0 : 1);
	}
	ok(child > 0 && waitpid(child, &st, 0) == child && WIFEXITED(st) &&
	   WEXITSTATUS(st) == 0, "a fork child's call: skipped too, with the parent's figures");

	for (i = 0; i < 64; i++)
		free(q[i]);
	free(p);
	return tap_done();
}
