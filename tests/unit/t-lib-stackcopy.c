/*
 * t-lib-stackcopy.c - lib/stackcopy.c unwinds a copy of a stack with CFI
 * read from the files, as the eBPF tracer's records need: this test's own
 * stack, copied at a known point of a frameless call chain (-O2 omits
 * frame pointers), must give back exactly the return addresses the chain
 * recorded, and a copy cut short must give a prefix of them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "tap.h"
#include "../../lib/stackcopy.h"

#define COPY 8192

static uint8_t copy[COPY];
static size_t copied;
static struct ls_stackregs regs;
static uint64_t ra[3];		/* each level's return address */

/* The top of this thread's stack, from /proc/self/maps. */
static uint64_t stack_top(uint64_t sp)
{
	unsigned long long lo, hi;
	char line[512];
	FILE *f = fopen("/proc/self/maps", "r");
	uint64_t top = 0;

	while (f && fgets(line, sizeof(line), f))
		if (sscanf(line, "%llx-%llx", &lo, &hi) == 2 && sp >= lo &&
		    sp < hi)
			top = hi;
	if (f)
		fclose(f);
	return top;
}

/* Take the caller's registers and copy its stack, as trace.bpf.c does at
 * a uretprobe: pc a return address, sp just above it. */
__attribute__((noinline)) static void capture(void)
{
	uint64_t *fp = __builtin_frame_address(0), top;

	regs.pc = fp[1];
	regs.sp = (uint64_t)(uintptr_t)(fp + 2);
	regs.bp = fp[0];
	regs.exact = 0;
	top = stack_top(regs.sp);
	copied = top - regs.sp < COPY ? top - regs.sp : COPY;
	memcpy(copy, (void *)(uintptr_t)regs.sp, copied);
}

__attribute__((noinline, noipa)) static void level3(void)
{
	ra[2] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	capture();
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline, noipa)) static void level2(void)
{
	ra[1] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	level3();
	__asm__ __volatile__("" ::: "memory");
}

__attribute__((noinline, noipa)) static void level1(void)
{
	ra[0] = (uint64_t)(uintptr_t)__builtin_return_address(0);
	level2();
	__asm__ __volatile__("" ::: "memory");
}

int main(void)
{
	struct ls_stackcopy *sc = NULL;
	uint64_t pcs[64];
	char err[256] = "";
	int n, k, r;

	level1();
	r = ls_stackcopy_new(getpid(), &sc, err, sizeof(err));
	ok(r == 0, "a walker for this process %s", err);
	if (!sc)
		return tap_done();
	n = ls_stackcopy_unwind(sc, &regs, copy, copied, pcs, 64);
	ok(n >= 5, "whole stack: %d frames (capture's caller to main and on)", n);
	is_u64(pcs[0], regs.pc, "frame 0: the return address into level3");
	is_u64(pcs[1], ra[2], "frame 1: level3's return address into level2");
	is_u64(pcs[2], ra[1], "frame 2: level2's return address into level1");
	is_u64(pcs[3], ra[0], "frame 3: level1's return address into main");
	/* A copy that ends inside level2's frame: the walk stops there. */
	k = ls_stackcopy_unwind(sc, &regs, copy, 24, pcs, 64);
	ok(k >= 1 && k < 4, "a 24-byte copy gives a prefix (%d frames)", k);
	is_u64(ls_stackcopy_unwind(sc, &regs, copy, copied, pcs, 2), 2,
	       "max frames respected");
	ls_stackcopy_free(sc);
	r = ls_stackcopy_new(999999999, &sc, err, sizeof(err));
	ok(r == -ESRCH && strstr(err, "no such process"),
	   "a dead pid: -ESRCH, '%s'", err);
	return tap_done();
}
