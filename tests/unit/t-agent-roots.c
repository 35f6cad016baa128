/*
 * t-agent-roots.c - where the scan of a stack mapping begins
 * (ls_scan_root_start, agent/reachroots.c), on a synthetic memory image:
 * a 128 KiB buffer of this process standing for a thread's stack
 * mapping, read in place (the fork image's way), with glibc's thread
 * descriptor written near its top by hand.
 *
 * A stack with a known stack pointer is scanned from that pointer less
 * the 128-byte red zone (the exiting thread's from its live frames,
 * exactly, and the one its signal interrupted from that context's stack
 * pointer, exactly; the lowest, when a region holds several); one
 * without is scanned whole, unless its descriptor says the thread has
 * ended (the kernel cleared the tid): then only the
 * descriptor and above.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "../../agent/reachint.h"
#include "tap.h"

#define STACK (128u << 10)
#define TID_OFF 0x2d0

static struct scan sc;	/* static: 270 KiB */

static uint64_t start_of(const struct region *g,
			 const struct lsnap_check_thread *th, uint32_t n,
			 uint64_t self_sp, uint64_t self_red)
{
	return ls_scan_root_start(&sc, g, th, n, self_sp, self_red);
}

int main(void)
{
	uint8_t *mem = aligned_alloc(4096, STACK);
	struct region g = { 0 };
	struct lsnap_check_thread th[2];
	uint64_t base, pd, tid;

	if (!mem)
		return 2;
	memset(mem, 0, STACK);
	base = (uint64_t)(uintptr_t)mem;
	g.start = base;
	g.end = base + STACK;
	g.readable = g.writable = 1;
	memset(th, 0, sizeof(th));
	ls_scan_prep.tid_off = TID_OFF;

	/* Another mapping's thread, and one of this stack. */
	th[0].sp = base + STACK + 4096;
	th[1].sp = base + 100000;
	is_u64(start_of(&g, th, 2, 0, 0), base + 100000 - 128,
	       "a thread's stack: from its sp less the red zone");
	is_u64(start_of(&g, th, 1, base + 90000, 0), base + 90000,
	       "the exiting thread's: exactly from its live frames");
	is_u64(start_of(&g, th, 1, base + 90000, 128), base + 90000 - 128,
	       "the caller's own stack: its red zone too");
	th[1].sp = base + 100000;
	is_u64(start_of(&g, th, 2, base + 90000, 0), base + 90000,
	       "two stack pointers in one region (stacks merged): the lowest");
	ls_scan_exit.intr_sp = base + 80000;
	is_u64(start_of(&g, th, 2, base + 90000, 0), base + 80000,
	       "the context a signal handler that exits interrupted: exactly "
	       "from its sp, no red zone");
	ls_scan_exit.intr_sp = 0;
	th[1].sp = base + 64;
	is_u64(start_of(&g, th, 2, 0, 0), base,
	       "an sp within the red zone of the mapping's start: whole");

	/* No stack pointer known: the descriptor decides. */
	is_u64(start_of(&g, th, 1, 0, 0), base,
	       "no sp, no descriptor: the mapping whole");
	pd = (g.end - 2048) & ~63ull;
	memcpy(mem + (pd - base), &pd, 8);		/* tcb */
	memcpy(mem + (pd - base) + 16, &pd, 8);	/* self */
	tid = 0;
	memcpy(mem + (pd - base) + TID_OFF, &tid, 8);
	is_u64(start_of(&g, th, 1, 0, 0), pd,
	       "an ended thread's stack: from its descriptor only");
	tid = 4242;
	memcpy(mem + (pd - base) + TID_OFF, &tid, 8);
	is_u64(start_of(&g, th, 1, 0, 0), base,
	       "a live thread's stack without its sp: whole");
	tid = 0;
	memcpy(mem + (pd - base) + TID_OFF, &tid, 8);
	memset(mem + (pd - base) + 16, 0, 8);
	is_u64(start_of(&g, th, 1, 0, 0), base,
	       "a word that only looks like a descriptor (self differs): whole");
	memcpy(mem + (pd - base) + 16, &pd, 8);
	g.file = 1;
	is_u64(start_of(&g, th, 1, 0, 0), base,
	       "a file mapping holds no thread: whole");
	g.file = 0;
	ls_scan_prep.tid_off = 0;
	is_u64(start_of(&g, th, 1, 0, 0), base,
	       "glibc's descriptor layout unknown: whole");
	free(mem);
	return tap_done();
}
