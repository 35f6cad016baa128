/*
 * hold.c - a program that keeps many small blocks alive: the live
 * table's memory per block (bench/live-memory).
 *
 *   hold [--wait] N [SITES]
 *
 * Allocates N blocks of 24 to 40 bytes (sizes cycle 24, 25, ... 40), from
 * SITES distinct call stacks (default 64: a recursion of depth 1 to
 * SITES), keeps them all, then prints
 *
 *   hold live_blocks=N
 *
 * and, with --wait, waits for a line or end of file on standard input
 * (while bench/live-memory reads its memory), then frees them and exits
 * 0.  Exit 2 on bad arguments, 1 when memory runs out.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void **blocks;

static __attribute__((noinline)) void *alloc_at(unsigned depth, size_t size)
{
	void *p;

	if (depth)
		p = alloc_at(depth - 1, size);
	else
		p = malloc(size);
	__asm__ volatile("" : : "r"(p) : "memory");	/* no tail call */
	return p;
}

int main(int argc, char **argv)
{
	unsigned long n, i, sites = 64;
	char *end, line[16];
	int wait = argc > 1 && !strcmp(argv[1], "--wait");

	argv += wait;
	argc -= wait;
	if (argc < 2 || argc > 3) {
		fprintf(stderr, "usage: hold [--wait] N [SITES]\n");
		return 2;
	}
	n = strtoul(argv[1], &end, 10);
	if (*end || !n || (argc == 3 && (!(sites = strtoul(argv[2], &end, 10)) ||
					 *end || sites > 4096))) {
		fprintf(stderr, "hold: N and SITES (1 to 4096) are positive numbers\n");
		return 2;
	}
	blocks = malloc(n * sizeof(*blocks));
	if (!blocks) {
		fprintf(stderr, "hold: out of memory\n");
		return 1;
	}
	for (i = 0; i < n; i++)
		if (!(blocks[i] = alloc_at((unsigned)(i % sites), 24 + i % 17))) {
			fprintf(stderr, "hold: out of memory after %lu blocks\n", i);
			return 1;
		}
	printf("hold live_blocks=%lu\n", n);
	fflush(stdout);
	if (wait && !fgets(line, sizeof(line), stdin))
		line[0] = 0;
	for (i = 0; i < n; i++)
		free(blocks[i]);
	free(blocks);
	return 0;
}
