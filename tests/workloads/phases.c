/*
 * phases.c - a program whose memory changes by known amounts between two
 * moments, for `leakscope diff`.  The test drives it through a pipe, never
 * with sleeps: each byte read on stdin runs the next phase, and when a
 * phase is done the program writes its number and a newline on stdout.
 * EOF on stdin ends it (status 0).
 *
 * Stacks: main -> phases_run -> phase_step -> site_X, the same in both
 * phases.  Live at the end of
 * each phase (no libc site: the program uses no stdio):
 *
 *   site             phase 1          phase 2           change
 *   site_grow_big     65536 in 1      196608 in 3       +131072, +2 blocks
 *   site_grow_lin     10000 in 10      30000 in 30       +20000, +20 blocks
 *   site_new              0           10000 in 4        new: +10000, +4
 *   site_const         2560 in 5        2560 in 5        unchanged
 *   site_gone          9000 in 3           0            gone: -9000, -3
 *   site_shrink       32768 in 8        8192 in 2        -24576, -6 blocks
 *   total            119864 in 27     247360 in 44      +127496, +17
 *
 * site_grow_big allocates 64 KiB blocks; the others are below glibc's
 * mmap threshold.  Temporaries (tmp_*) are freed in each phase.
 * A phase beyond the second does nothing but answer.
 */
#include <stdlib.h>
#include <unistd.h>
#include "wl.h"

#define MAX_BLOCKS 64

static void *shrink_blocks[MAX_BLOCKS];
static void *gone_blocks[MAX_BLOCKS];

WL_SITE static void site_grow_big(int n)
{
	for (int i = 0; i < wl_n(n); i++)
		wl_sink = malloc(65536); /* @site_grow_big */
}

WL_SITE static void site_grow_lin(int n)
{
	for (int i = 0; i < wl_n(n); i++)
		wl_sink = malloc(1000); /* @site_grow_lin */
}

WL_SITE static void site_new(void)
{
	for (int i = 0; i < wl_n(4); i++)
		wl_sink = malloc(2500); /* @site_new */
}

WL_SITE static void site_const(void)
{
	for (int i = 0; i < wl_n(5); i++)
		wl_sink = malloc(512); /* @site_const */
}

WL_SITE static void site_gone(void)
{
	for (int i = 0; i < wl_n(3); i++)
		gone_blocks[i] = malloc(3000); /* @site_gone */
}

WL_SITE static void site_shrink(void)
{
	for (int i = 0; i < wl_n(8); i++)
		shrink_blocks[i] = malloc(4096); /* @site_shrink */
}

WL_HELPER static void tmp_scratch(int salt)
{
	for (int i = 0; i < 100; i++) {
		wl_sink = malloc((size_t)(i * 7 + salt) % 300 + 1);
		free(wl_sink);
	}
}

/* Every site is called from one place whatever the phase, so each keeps
 * one stack from one phase to the next. */
WL_HELPER static void phase_step(int phase)
{
	site_grow_big(phase == 1 ? 1 : 2);
	site_grow_lin(phase == 1 ? 10 : 20);
	if (phase == 2)
		site_new();
	if (phase == 1)
		site_const();
	if (phase == 1)
		site_gone();
	else
		for (int i = 0; i < 3; i++)
			free(gone_blocks[i]);
	if (phase == 1)
		site_shrink();
	else
		for (int i = 2; i < 8; i++)
			free(shrink_blocks[i]);
	tmp_scratch(phase);
	WL_BARRIER();
}

WL_HELPER static void phases_run(void)
{
	char c;
	int phase = 0;

	while (read(0, &c, 1) == 1) {
		phase++;
		if (phase <= 2)
			phase_step(phase);
		wl_say(1, "%d\n", phase);
	}
	WL_BARRIER();
}

int main(void)
{
	phases_run();
	WL_BARRIER();
	return 0;
}
