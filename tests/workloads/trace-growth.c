/*
 * trace-growth.c - ground truth for `leakscope trace --event brk|mmap|
 * page-fault|kernel` (tests/integration/t_trace.py): one function per
 * kind of growth, run once after the tracer is attached.
 *
 *   trace-growth MODE   say "ready", wait for a byte on stdin, grow, say
 *                       "done", hold everything until stdin closes
 *
 * MODE and what it leaves, per function:
 *   brk     grow_brk: sbrk(64 pages) twice: 524288 bytes in 2 brk calls
 *   mmap    grow_mmap: 5 anonymous mappings of 3 pages: 61440 bytes in 5
 *           mappings; tmp_mmap maps and unmaps: nothing
 *   fault   fault_pages: writes to 40 pages of a mapping made (with
 *           MADV_NOHUGEPAGE, so one fault per 4 KiB page) before "ready":
 *           40 page faults, 163840 bytes
 *   kernel  hold_pipes: 8 pipes and 4 eventfds kept open: kernel
 *           allocations under alloc_pipe_info and do_eventfd
 * No malloc after "ready": the heap does not move behind the test's back.
 */
#include <sys/eventfd.h>
#include <sys/mman.h>
#include "wl.h"

#define PAGE 4096

WL_SITE static void grow_brk(void)
{
	for (int i = 0; i < wl_n(2); i++) {
		WL_CHECK(sbrk(64 * PAGE) != (void *)-1, "sbrk");
		WL_BARRIER();
	}
}

WL_SITE static void grow_mmap(void)
{
	for (int i = 0; i < wl_n(5); i++) {
		wl_sink = mmap(NULL, 3 * PAGE, PROT_READ | PROT_WRITE,
			       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		WL_CHECK(wl_sink != MAP_FAILED, "mmap");
		WL_BARRIER();
	}
}

WL_HELPER static void tmp_mmap(void)
{
	void *p = mmap(NULL, 8 * PAGE, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	WL_CHECK(p != MAP_FAILED, "mmap");
	WL_CHECK(munmap(p, 8 * PAGE) == 0, "munmap");
	WL_BARRIER();
}

static char *region;

WL_SITE static void fault_pages(void)
{
	for (int i = 0; i < wl_n(40); i++) {
		region[(size_t)i * PAGE] = 1;
		WL_BARRIER();
	}
}

WL_SITE static void hold_pipes(void)
{
	for (int i = 0; i < wl_n(8); i++) {
		int p[2];

		WL_CHECK(pipe(p) == 0, "pipe");
		WL_BARRIER();
	}
}

WL_SITE static void hold_eventfds(void)
{
	for (int i = 0; i < wl_n(4); i++) {
		WL_CHECK(eventfd(0, 0) >= 0, "eventfd");
		WL_BARRIER();
	}
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "brk";
	char c;

	region = mmap(NULL, 64 * PAGE, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	WL_CHECK(region != MAP_FAILED, "mmap");
	WL_CHECK(madvise(region, 64 * PAGE, MADV_NOHUGEPAGE) == 0, "madvise");
	wl_say(1, "ready\n");
	if (read(0, &c, 1) != 1)
		return 1;
	if (!strcmp(mode, "brk"))
		grow_brk();
	else if (!strcmp(mode, "mmap")) {
		grow_mmap();
		tmp_mmap();
	} else if (!strcmp(mode, "fault"))
		fault_pages();
	else if (!strcmp(mode, "kernel")) {
		hold_pipes();
		hold_eventfds();
	}
	wl_say(1, "done\n");
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
