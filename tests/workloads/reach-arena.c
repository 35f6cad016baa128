/*
 * reach-arena.c - roots in glibc's thread arenas, and leaks whose only
 * pointer sits in a chunk glibc has cached after free (a tcache, a
 * fastbin), for `leakscope check` after `leakscope attach` and for
 * `run --leak-check` (tests/integration/t_reach_arena.py).
 *
 * Two worker threads (each with its own glibc arena) and the main thread
 * (the main arena) obey one-letter commands read from fd 0, each
 * answered by one line on fd 1, so a test can attach between them:
 *
 *   p  before attach: each of the three allocates a holder
 *      (site_pre_holder, 64 bytes, calloc) that a global points to
 *   a  after attach: each worker allocates site_arena_kept (700 bytes)
 *      and the main thread site_main_kept (800 bytes), whose only
 *      pointer goes into its own holder
 *   c  each of the three leaks site_tcache_leak (500 bytes), whose only
 *      pointer is left in a 200-byte chunk freed into its tcache, and
 *      site_fast_leak (300 bytes), whose only pointer is left in a
 *      40-byte chunk freed into a fastbin (its tcache bin filled first
 *      by seven frees of the same size)
 *
 * Ground truth after "p", "a", "c" (also at exit, on end of input):
 *
 *   site               bytes  blocks  category
 *   site_pre_holder      192     3    still reachable (globals); not
 *                                     tracked when attached after "p"
 *   site_arena_kept     1400     2    still reachable: only a holder in
 *                                     a thread arena points to it
 *   site_main_kept       800     1    still reachable: only the main
 *                                     thread's holder points to it
 *   site_tcache_leak    1500     3    definitely lost (valgrind: freed
 *                                     memory is no root)
 *   site_fast_leak       900     3    definitely lost
 *
 * No stdio; the workers block in read() between commands.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include "wl.h"

#define WORKERS 2

struct holder {
	void *p[8];
};

static struct holder *volatile pre_holder[WORKERS + 1];
static int cmd_pipe[WORKERS][2], ack_pipe[2];

WL_SITE static struct holder *site_pre_holder(void)
{
	struct holder *h = calloc(1, sizeof(*h)); /* @site_pre_holder */

	WL_BARRIER();
	return h;
}

WL_SITE static void *site_arena_kept(void)
{
	void *p = malloc(700); /* @site_arena_kept */

	WL_BARRIER();
	return p;
}

WL_SITE static void *site_main_kept(void)
{
	void *p = malloc(800); /* @site_main_kept */

	WL_BARRIER();
	return p;
}

WL_SITE static void *site_tcache_leak(void)
{
	void *p = malloc(500); /* @site_tcache_leak */

	WL_BARRIER();
	return p;
}

WL_SITE static void *site_fast_leak(void)
{
	void *p = malloc(300); /* @site_fast_leak */

	WL_BARRIER();
	return p;
}

/* Leave the only pointer to a new block in a chunk freed into the
 * tcache: 200 bytes, a size nothing else here frees, so its bin has
 * room.  Volatile stores: a store before free() is otherwise dead. */
WL_HELPER static void hide_in_tcache(void)
{
	void *volatile *h = malloc(200);

	h[0] = h[1] = NULL;
	h[2] = site_tcache_leak();
	free((void *)h);
}

/* The same in a fastbin: seven frees of 40-byte requests fill their
 * tcache bin (it holds 7), the eighth goes to the fastbin. */
WL_HELPER static void hide_in_fastbin(void)
{
	void *volatile *t[8];
	int i;

	for (i = 0; i < 8; i++) {
		t[i] = malloc(40);
		t[i][0] = t[i][1] = t[i][2] = NULL;
	}
	t[7][2] = site_fast_leak();
	for (i = 0; i < 8; i++)
		free((void *)t[i]);
}

/* Overwrite the dead stack below us, so no stale copy of a lost
 * pointer is left where a scan could see it. */
WL_HELPER static void scrub(void)
{
	volatile char pad[8192];

	memset((char *)pad, 0, sizeof(pad));
	WL_BARRIER();
}

/* Command c for slot i (a worker's index, or WORKERS for main). */
WL_HELPER static void obey(char c, int i)
{
	if (c == 'p')
		pre_holder[i] = site_pre_holder();
	else if (c == 'a')
		pre_holder[i]->p[1] = i < WORKERS ? site_arena_kept() :
					 site_main_kept();
	else if (c == 'c') {
		hide_in_tcache();
		hide_in_fastbin();
	}
	scrub();
}

static void *worker(void *arg)
{
	int i = (int)(long)arg;
	char c;

	while (read(cmd_pipe[i][0], &c, 1) == 1) {
		obey(c, i);
		WL_CHECK(write(ack_pipe[1], &c, 1) == 1, "ack");
	}
	return NULL;
}

int main(void)
{
	pthread_t th[WORKERS];
	char c, line[64];
	int i;
	ssize_t n, k;

	WL_CHECK(pipe(ack_pipe) == 0, "pipe");
	for (i = 0; i < WORKERS; i++) {
		WL_CHECK(pipe(cmd_pipe[i]) == 0, "pipe");
		WL_CHECK(pthread_create(&th[i], NULL, worker, (void *)(long)i) == 0,
			 "thread");
	}
	while ((n = read(0, line, sizeof(line))) > 0)
		for (k = 0; k < n; k++) {
			c = line[k];
			if (c != 'p' && c != 'a' && c != 'c')
				continue;
			/* One after the other, each in its own arena. */
			for (i = 0; i < WORKERS; i++) {
				WL_CHECK(write(cmd_pipe[i][1], &c, 1) == 1,
					 "command");
				WL_CHECK(read(ack_pipe[0], &c, 1) == 1, "ack");
			}
			obey(c, WORKERS);
			wl_say(1, "done %c\n", c);
		}
	return 0;
}
