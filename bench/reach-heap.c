/*
 * reach-heap.c - a heap to check: N blocks holding `heap` bytes in all,
 * linked so that a scan has real pointers to follow, for
 * bench/reach-bench (docs/REACHABILITY.md).
 *
 *   reach-heap MIB BLOCKS
 *
 * Block sizes are drawn from 16 to 2 * mean - 16 (mean = MIB MiB /
 * BLOCKS).  Every block's first word points to the next block of a long
 * chain hung from a global (so the mark follows about one pointer per
 * block, some 2% of the heap's words at a 400-byte mean, as in the
 * measurements of docs/REACHABILITY.md); the rest of each block is filled
 * with small integers, as data is.  One block in 1000 is cut loose
 * (definitely lost).  Writes "ready <pid>\n" to fd 1, then waits for end
 * of file on fd 0, touching nothing.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void **head;

int main(int argc, char **argv)
{
	uint64_t mib = argc > 1 ? strtoull(argv[1], NULL, 10) : 100;
	uint64_t n = argc > 2 ? strtoull(argv[2], NULL, 10) : 1000000;
	uint64_t mean = (mib << 20) / (n ? n : 1), seed = 88172645463325252ull;
	void **prev = NULL;
	char line[64];
	uint64_t i;

	if (mean < 32)
		mean = 32;
	for (i = 0; i < n; i++) {
		size_t size, k;
		void **b;

		seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
		size = 16 + (size_t)(seed % (2 * mean - 31));
		size &= ~(size_t)7;
		b = malloc(size);
		if (!b)
			return 1;
		for (k = 1; k < size / 8; k++)
			b[k] = (void *)(uintptr_t)(k & 0xff);
		if (i % 1000 == 500) {	/* lost: nothing points to it */
			b[0] = NULL;
			continue;
		}
		b[0] = prev;
		prev = b;
	}
	head = prev;
	snprintf(line, sizeof(line), "ready %d\n", (int)getpid());
	if (write(1, line, strlen(line)) < 0)
		return 1;
	while (read(0, line, sizeof(line)) > 0)
		;
	return head ? 0 : 1;
}
