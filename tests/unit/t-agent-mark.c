/*
 * t-agent-mark.c - the mark and the cliques (agent/reach.c) on a
 * synthetic memory image: seven 64-byte "blocks" carved in a buffer of
 * this process (its only region), read in place (the fork image's way),
 * and one root word.
 *
 *   root -> A -> B ~> C+8 -> G     (~>: an interior pointer)
 *   D <-> E                        (a cycle nothing points to)
 *   F                              (nothing points to it)
 *
 * memcheck's rules: A and B reachable; C possibly lost (only an interior
 * pointer), and G too (only a possibly lost block points to it); of the
 * cycle the first block in address order definitely lost, the other
 * indirectly; F definitely lost.  Then the same image with the root
 * word gone: everything unreached, A leading B's clique.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../../agent/reachint.h"
#include "tap.h"

#define NB 7
enum { A, B, C, D, E, F, G };

static struct scan sc;	/* static: 270 KiB */
static uint64_t heap_mem[4096] __attribute__((aligned(4096)));
static uint64_t root[4];

static uint64_t at(int k)
{
	return (uint64_t)(uintptr_t)&heap_mem[(k + 1) * 32];	/* 256 B apart */
}

static void put(int k, int word, uint64_t v)
{
	memcpy((void *)(uintptr_t)(at(k) + 8 * word), &v, 8);
}

/* The state of block k after the scan (the blocks are sorted by
 * address, and k's addresses ascend with k). */
static int state(int k)
{
	size_t i;

	for (i = 0; i < sc.n; i++)
		if (sc.addr[i] == at(k))
			return sc.st[i];
	return -1;
}

static int scan_image(void)
{
	static struct ls_live_entry blk[NB];
	static const int order[NB] = { F, C, A, G, E, B, D };	/* unsorted */
	struct region heap_region = {
		.start = (uint64_t)(uintptr_t)heap_mem,
		.end = (uint64_t)(uintptr_t)(heap_mem + 4096),
		.readable = 1, .writable = 1,
	};
	int i;

	ls_scan_drop_all(&sc);
	for (i = 0; i < NB; i++) {
		memset(&blk[i], 0, sizeof(blk[i]));
		blk[i].addr = at(order[i]);
		blk[i].size = 64;
	}
	sc.blk = blk;
	sc.n = NB;
	sc.stack.elem = sizeof(uint32_t);
	if (ls_scan_radix_sort(&sc, sc.blk, sc.n) || ls_scan_index_blocks(&sc))
		return -1;
	/* The maps the reader trusts: the buffer, readable. */
	sc.regions.elem = sizeof(struct region);
	if (ls_scan_vec_push(&sc, &sc.regions, &heap_region))
		return -1;
	ls_scan_mark_range(&sc, (uint64_t)(uintptr_t)root,
			   (uint64_t)(uintptr_t)(root + 4), 1);
	ls_scan_mark_all(&sc);
	return ls_scan_cliques(&sc);
}

int main(void)
{
	root[1] = at(A);
	put(A, 0, at(B));
	put(B, 3, at(C) + 8);
	put(C, 2, at(G));
	put(D, 0, at(E));
	put(E, 7, at(D));

	ok(!scan_image(), "the scan ran");
	is_u64(state(A), ST_REACHABLE, "A, held by the root: reachable");
	is_u64(state(B), ST_REACHABLE, "B, held by A: reachable");
	is_u64(state(C), ST_POSSIBLE, "C, only an interior pointer: possibly lost");
	is_u64(state(G), ST_POSSIBLE, "G, held only by a possibly lost block: possibly lost");
	is_u64(state(D), ST_UNREACHED, "D, the cycle's first block: definitely lost");
	is_u64(state(E), ST_INDIRECT, "E, held by D: indirectly lost");
	is_u64(state(F), ST_UNREACHED, "F, held by nothing: definitely lost");

	root[1] = 0;
	ok(!scan_image(), "the scan ran without the root");
	is_u64(state(A), ST_UNREACHED, "no root: A definitely lost");
	is_u64(state(B), ST_INDIRECT, "B, held by A: indirectly lost");
	is_u64(state(C), ST_INDIRECT, "C, inside B's reach: indirectly lost");
	is_u64(state(G), ST_INDIRECT, "G: indirectly lost");
	ls_scan_drop_all(&sc);
	return tap_done();
}
