/*
 * t-agent-stackcut.c - a stack the program allocated, at exit
 * (ls_scan_mark_roots, agent/reachroots.c, and the block scan of
 * agent/reach.c), on a synthetic memory image: 1 KiB "blocks" S and T
 * standing for a coroutine's stack and a signal handler's alternate
 * stack, 64-byte blocks below them, carved in a buffer of this process
 * and read in place (the fork image's way).
 *
 * The exiting thread's stack pointer in S: S is live from it up (no red
 * zone), a root, and its words below are dead, whether or not S is
 * reached from elsewhere.  The context a signal interrupted (its stack
 * pointer in T): live from exactly that pointer; the kernel's copy of
 * the vector registers at T's top is not scanned.  The thread's own
 * stack, a mapping (O, a writable region of this image) that it left by
 * swapcontext: live from the switch's stack pointer, no red zone, when
 * the exit path found one (ls_scan_exit.intr_sp, agent/reachfork.c),
 * else scanned whole; the hooks' record of the switch (ls_scan_exit's
 * co_*) cut against the scan's own regions (ls_scan_switched_sp).
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../agent/reachint.h"
#include "tap.h"

enum { S, T, LIVE, DEAD, INTR_LIVE, INTR_DEAD, VEC, OWN_LIVE, OWN_DEAD, NB };

static struct scan sc;	/* static: 270 KiB */
static uint64_t heap_mem[8192] __attribute__((aligned(4096)));
static uint64_t root[2];

static const uint64_t size_of[NB] = { 1024, 1024, 64, 64, 64, 64, 64, 64, 64 };
static uint64_t own_mem[512] __attribute__((aligned(4096)));

static uint64_t at(int k)
{
	return (uint64_t)(uintptr_t)&heap_mem[(k + 1) * 256];	/* 2 KiB apart */
}

static void put(uint64_t a, uint64_t v)
{
	memcpy((void *)(uintptr_t)a, &v, 8);
}

/* The state of block k after the scan. */
static int state(int k)
{
	int start;
	int64_t i = ls_scan_lookup(&sc, at(k), &start);

	return i < 0 ? -1 : sc.st[i];
}

/* The exiting thread's stack pointer self_sp; roots: the root words
 * only (no maps). */
static int scan_image(uint64_t self_sp)
{
	static struct ls_live_entry blk[NB];
	/* The maps the reader trusts: the buffer, readable; not writable,
	 * so that it is no root region (only the root words are). */
	struct region heap_region = {
		.start = (uint64_t)(uintptr_t)heap_mem,
		.end = (uint64_t)(uintptr_t)(heap_mem + 8192),
		.readable = 1,
	};
	/* The own stack O: writable, a root region. */
	struct region own_region = {
		.start = (uint64_t)(uintptr_t)own_mem,
		.end = (uint64_t)(uintptr_t)(own_mem + 512),
		.readable = 1, .writable = 1,
	};
	struct region *first = &heap_region, *second = &own_region;
	int i;

	if (own_region.start < heap_region.start) {
		first = &own_region;
		second = &heap_region;
	}

	ls_scan_drop_all(&sc);
	memset(&sc, 0, sizeof(sc));
	for (i = 0; i < NB; i++) {
		memset(&blk[i], 0, sizeof(blk[i]));
		blk[i].addr = at(i);
		blk[i].size = size_of[i];
	}
	sc.blk = blk;
	sc.n = NB;
	sc.stack.elem = sizeof(uint32_t);
	sc.regions.elem = sizeof(struct region);
	if (ls_scan_radix_sort(&sc, sc.blk, sc.n) || ls_scan_index_blocks(&sc) ||
	    ls_scan_vec_push(&sc, &sc.regions, first) ||
	    ls_scan_vec_push(&sc, &sc.regions, second))
		return -1;
	ls_scan_mark_range(&sc, (uint64_t)(uintptr_t)root,
			   (uint64_t)(uintptr_t)(root + 2), 1);
	ls_scan_mark_roots(&sc, NULL, 0, self_sp, 0);
	ls_scan_mark_all(&sc);
	return ls_scan_cliques(&sc);
}

/* After a scan that cut O at the switch (own_mem[256]), how: the cut
 * given to the scan, or found from the hooks' record. */
static void cut_at_switch(const char *how)
{
	char what[128];

	snprintf(what, sizeof(what), "%s: the word at the switch's stack "
		 "pointer, live", how);
	is_u64(state(OWN_LIVE), ST_REACHABLE, what);
	snprintf(what, sizeof(what), "%s: the word right below it (no red "
		 "zone), dead", how);
	is_u64(state(OWN_DEAD), ST_UNREACHED, what);
}

int main(void)
{
	uint64_t sp = at(S) + 512, isp = at(T) + 256;

	put(sp + 64, at(LIVE));		/* a live frame's word */
	put(sp - 8, at(DEAD));		/* right below: a returned frame's */
	put(isp, at(INTR_LIVE));
	put(isp - 8, at(INTR_DEAD));
	put(at(T) + 1024 - 64, at(VEC));

	ok(!scan_image(sp), "the scan ran (S reached from nothing)");
	is_u64(state(LIVE), ST_REACHABLE,
	       "a word above the exit point of a stack in a block: a root");
	is_u64(state(DEAD), ST_UNREACHED,
	       "a word below it: dead, its block definitely lost (not in "
	       "S's clique)");
	is_u64(state(S), ST_UNREACHED, "S itself: held by nothing");

	root[0] = at(S);
	ok(!scan_image(sp), "the scan ran (S held by a root)");
	is_u64(state(S), ST_REACHABLE, "S, held by the root: reachable");
	is_u64(state(DEAD), ST_UNREACHED,
	       "S's scan as a block skips its dead part: still definitely lost");
	root[0] = 0;
	ok(!scan_image(0), "the scan ran without the cut");
	is_u64(state(DEAD), ST_INDIRECT,
	       "no cut: the dead word puts its block in S's clique");
	is_u64(state(LIVE), ST_INDIRECT, "and the live word's block too");
	root[0] = at(S);
	ok(!scan_image(0), "the scan ran with S held, no cut");
	is_u64(state(DEAD), ST_REACHABLE,
	       "without a cut S is scanned whole: the dead word holds");

	root[0] = at(T);
	ls_scan_exit.intr_sp = isp;
	ls_scan_exit.fp_lo = at(T) + 1024 - 128;
	ls_scan_exit.fp_hi = at(T) + 1024;
	ok(!scan_image(sp), "the scan ran with an interrupted context in T");
	is_u64(state(INTR_LIVE), ST_REACHABLE,
	       "the word at the interrupted stack pointer: live");
	is_u64(state(INTR_DEAD), ST_UNREACHED,
	       "the word below it (no red zone): dead");
	is_u64(state(VEC), ST_UNREACHED,
	       "the signal frame's vector registers: not scanned");
	ls_scan_exit.fp_lo = ls_scan_exit.fp_hi = 0;
	ok(!scan_image(sp), "the scan ran without the frame's registers known");
	is_u64(state(VEC), ST_REACHABLE, "then T's top is scanned");
	ls_scan_exit.intr_sp = 0;

	/* O, the own stack the thread left by swapcontext at osp. */
	root[0] = 0;
	own_mem[256] = at(OWN_LIVE);
	own_mem[255] = at(OWN_DEAD);
	ok(!scan_image(sp), "the scan ran, the own stack's switch unknown");
	is_u64(state(OWN_DEAD), ST_REACHABLE,
	       "no switch known: O scanned whole, its dead word holds");
	ls_scan_exit.intr_sp = (uint64_t)(uintptr_t)&own_mem[256];
	ok(!scan_image(sp), "the scan ran, the own stack left at the switch");
	cut_at_switch("given");
	ls_scan_exit.intr_sp = 0;

	/* The same from the hooks' record, O being the region around the
	 * recorded top, the exit point (sp) in S. */
	ls_scan_exit.co_sp = (uint64_t)(uintptr_t)&own_mem[256];
	ls_scan_exit.co_top = (uint64_t)(uintptr_t)&own_mem[511];
	ls_scan_exit.co_rsp = 0;
	ls_scan_exit.co_live = sp;
	ok(!scan_image(sp), "the scan ran, the switch recorded");
	is_u64(ls_scan_exit.intr_sp, (uint64_t)(uintptr_t)&own_mem[256],
	       "the recorded switch, on the region around the top: the cut");
	cut_at_switch("recorded");
	ls_scan_exit.intr_sp = 0;
	ls_scan_exit.co_rsp = (uint64_t)(uintptr_t)&own_mem[250];
	ok(!scan_image(sp), "the scan ran, swapcontext's saved rsp lower");
	is_u64(state(OWN_DEAD), ST_REACHABLE,
	       "the saved stack pointer below the switch's: the cut is there");
	ls_scan_exit.intr_sp = 0;
	ls_scan_exit.co_rsp = at(S);
	ok(!scan_image(sp), "the scan ran, the saved rsp off the own stack");
	is_u64(ls_scan_exit.intr_sp, 0, "a saved rsp elsewhere: no cut");
	is_u64(state(OWN_DEAD), ST_REACHABLE, "and O is scanned whole");
	ls_scan_exit.co_rsp = 0;
	ls_scan_exit.co_live = (uint64_t)(uintptr_t)&own_mem[300];
	ok(!scan_image(sp), "the scan ran, the exit point on the own stack");
	is_u64(ls_scan_exit.intr_sp, 0, "exit() on the own stack: no cut");
	ls_scan_exit.co_live = sp;
	ls_scan_exit.co_top = at(S);
	ok(!scan_image(sp), "the scan ran, the top off the switch's region");
	is_u64(ls_scan_exit.intr_sp, 0,
	       "a switch off the region around the top: no cut");
	is_u64(state(OWN_DEAD), ST_REACHABLE, "O scanned whole");
	ls_scan_exit.co_sp = 0;
	ls_scan_exit.intr_sp = 0;
	ls_scan_drop_all(&sc);
	return tap_done();
}
