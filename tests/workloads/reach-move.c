/*
 * reach-move.c - pointers that move while a concurrent check marks: the
 * classic hazard of concurrent marking, timed by the check itself.
 *
 * The program sets LEAKSCOPE_CHECK_PHASE_FDS (docs/REACHABILITY.md): the
 * agent's concurrent mark writes '1' to a pipe once it has scanned the
 * roots and before it scans any block, '2' once it has scanned every
 * block it reached, and waits for one byte back each time.  At the
 * first check's phase '1' the program (its "phase" thread):
 *
 *   - moves the only pointer to X (site_moved_root) out of block B, which
 *     the mark has reached but not scanned, into root page R, which it
 *     has scanned already;
 *   - moves the only pointer to Z (site_moved_new) out of B into a block
 *     N allocated now (site_new_holder), hung from R: N is allocated
 *     black, and what it holds must still be followed;
 *   - allocates L (site_born_lost) and keeps no pointer to it;
 *   - frees F (site_freed), which a global pointed to.
 *
 * At phase '2' the "mover" thread, which spins in user code all along
 * (so its stack is not scanned before the stop), stores the only pointer
 * to Y (site_moved_late), which it held (masked) in a local, into block
 * A, which the mark has scanned already.
 *
 * Ground truth after the first check's moves (the first check itself,
 * concurrent, must report X, Y, Z, N, L reachable: L was allocated during
 * the mark; any later check reports L definitely lost):
 *
 *   site              bytes  blocks  category
 *   site_box            256     2    reachable (A and B, from root R)
 *   site_moved_root     200     1    reachable
 *   site_moved_late     210     1    reachable
 *   site_moved_new      220     1    reachable
 *   site_new_holder    5000     1    reachable
 *   site_born_lost       48     1    reachable in the first check, then
 *                                    definitely lost
 *   site_freed            -     0    (freed)
 *
 * With argument "flood", phase '1' moves nothing but allocates and frees
 * 1,100,000 blocks (site_flood), more changes than the agent's change
 * log holds: the check must fall back to the fork method, and report the
 * table above as it stood before any move (site_born_lost absent,
 * site_freed reachable, site_moved_late definitely lost: the mover only
 * ever holds it masked).
 *
 * Protocol: "ready <pid>\n" on fd 1, then reads fd 0 until end of file.
 * A check without the phases (--method fork) moves nothing.  No stdio
 * streams.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <signal.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "wl.h"

#define MASK 0x5a5a5a5a5a5a5a5aull

struct box {
	void *x, *z, *y;
	char pad[128 - 24];
};

struct root {
	struct box *a, *b;
	void *x;
	void *n;
};

static struct root *R;		/* an anonymous page of its own */
static void *volatile freed_keep, *volatile arena_keep;
static int to_wl[2], from_wl[2];
static volatile int go_late, late_done;
static volatile uintptr_t late_masked;
static int flood;

WL_SITE static struct box *site_box(void)
{
	struct box *b = calloc(1, sizeof(*b)); /* @site_box */

	WL_BARRIER();
	return b;
}

WL_SITE static void *site_moved_root(void)
{
	void *p = malloc(200); /* @site_moved_root */

	WL_BARRIER();
	return p;
}

WL_SITE static void *site_moved_late(void)
{
	void *p = malloc(210); /* @site_moved_late */

	WL_BARRIER();
	return p;
}

WL_SITE static void *site_moved_new(void)
{
	void *p = malloc(220); /* @site_moved_new */

	WL_BARRIER();
	return p;
}

WL_SITE static void **site_new_holder(void)
{
	/* Of a size no free chunk has: from the top of the heap, never a
	 * chunk the walk of untracked chunks took for a root. */
	void **p = calloc(1, 5000); /* @site_new_holder */

	WL_BARRIER();
	return p;
}

WL_SITE static void site_born_lost(void)
{
	wl_sink = malloc(48); /* @site_born_lost */
	WL_BARRIER();
	wl_sink = NULL;
}

WL_SITE static void *site_freed(void)
{
	void *p = malloc(90); /* @site_freed */

	WL_BARRIER();
	return p;
}

/* Registers that may still hold a moved pointer get other values. */
WL_HELPER static uint64_t scrub_regs(uint64_t v)
{
	volatile uint64_t a = v, b = v * 3, c = v * 5, d = v * 7;

	return a + b + c + d;
}

WL_SITE static void site_flood(void)
{
	for (int i = 0; i < 1100000; i++) {
		wl_sink = malloc(24); /* @site_flood */
		free(wl_sink);
	}
	wl_sink = NULL;
}

/* Phase '1': every move happens between the roots and the blocks. */
WL_HELPER static void moves_early(void)
{
	void **n = site_new_holder();

	R->x = R->b->x;		/* into scanned memory ... */
	R->b->x = NULL;		/* ... out of unscanned memory */
	n[0] = R->b->z;
	R->b->z = NULL;
	R->n = n;
	site_born_lost();
	free(freed_keep);
	freed_keep = NULL;
	wl_sink = (void *)scrub_regs(2);
	wl_sink = NULL;
}

static void *phase_thread(void *arg)
{
	int early_done = 0;
	char c;

	/* This thread's malloc arena exists before any check, with a
	 * block in it that says it is an arena: a mapping made during the
	 * mark, or one holding no block, is scanned whole as a root. */
	arena_keep = malloc(32);

	while (read(to_wl[0], &c, 1) == 1) {
		if (c == '1' && !early_done && flood) {
			site_flood();
			early_done = 1;
		} else if (c == '1' && !early_done) {
			moves_early();
			early_done = 1;
		} else if (c == '2' && !go_late && !flood) {
			go_late = 1;
			while (!late_done)
				__asm__ __volatile__("pause");
		}
		WL_CHECK(write(from_wl[1], &c, 1) == 1, "ack");
	}
	return NULL;
}

/* Spins in user code: a running thread's stack waits for the stop. */
WL_HELPER static void mover_spin(void)
{
	uintptr_t y = late_masked;

	late_masked = 0;
	while (!go_late)
		__asm__ __volatile__("pause");
	R->a->y = (void *)(y ^ MASK);
	y = 0;
	WL_BARRIER();
	wl_sink = (void *)scrub_regs(1);
	wl_sink = NULL;
	late_done = 1;
	for (;;)	/* the move is done: wait, blocked, for ever */
		pause();
}

static void *mover_thread(void *arg)
{
	mover_spin();
	return NULL;
}

/* Out of main, so that main's registers hold none of them. */
WL_HELPER static void set_up(void)
{
	R = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
		 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	WL_CHECK(R != MAP_FAILED, "mmap");
	/* Flags of its own: the kernel does not merge it with a thread's
	 * stack (which a concurrent mark leaves for the stop).  Not
	 * MADV_DONTFORK: the fork method's image would not hold it. */
	WL_CHECK(madvise(R, 4096, MADV_NOHUGEPAGE) == 0, "madvise");
	R->a = site_box();
	R->b = site_box();
	R->b->x = site_moved_root();
	R->b->z = site_moved_new();
	late_masked = (uintptr_t)site_moved_late() ^ MASK;
	freed_keep = site_freed();
	wl_sink = (void *)scrub_regs(3);
	wl_sink = NULL;
}

int main(int argc, char **argv)
{
	pthread_t th;
	char env[64], c;

	flood = argc > 1 && !strcmp(argv[1], "flood");
	WL_CHECK(pipe(to_wl) == 0 && pipe(from_wl) == 0, "pipe");
	set_up();
	snprintf(env, sizeof(env), "%d,%d", to_wl[1], from_wl[0]);
	WL_CHECK(setenv("LEAKSCOPE_CHECK_PHASE_FDS", env, 1) == 0, "setenv");
	WL_CHECK(pthread_create(&th, NULL, phase_thread, NULL) == 0, "thread");
	WL_CHECK(pthread_create(&th, NULL, mover_thread, NULL) == 0, "thread");
	while (late_masked)
		;
	wl_say(1, "ready %d\n", (int)getpid());
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
