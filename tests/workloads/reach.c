/*
 * reach.c - every reachability category, held in every kind of root.
 *
 * Ground truth once "ready" is written to fd 1 (and still at exit: the
 * worker is never joined, so it is alive, blocked, when the process
 * exits):
 *
 *   site               bytes  blocks  category
 *   site_global         1000     1    reachable: only a global points to it
 *   site_tls            1100     1    reachable: only the worker's __thread
 *                                     variable points to it
 *   site_stack          1200     1    reachable: only a local of the
 *                                     worker, blocked in read(), points to it
 *   site_list_head        64     1    definitely lost, holding 144 bytes
 *                                     indirect (valgrind: "208 (64 direct,
 *                                     144 indirect) bytes in 1 blocks")
 *   site_list_node       144     3    indirectly lost (48 each, a chain
 *                                     hanging from the head)
 *   site_cycle           160     2    a lost two-block cycle: 80 definitely
 *                                     lost holding 80 indirect, 80 indirect
 *   site_interior        300     1    possibly lost: a global points 16
 *                                     bytes into it
 *   site_leak            300     3    definitely lost (100 each)
 *   site_holder           64     1    reachable: a global points to it
 *
 * With argument "busy" a second worker allocates and frees without pause
 * (32 live blocks of 64 bytes at most, site tmp_busy) so a check meets a
 * thread inside malloc.  With "crowd N" as well, N more blocks of 32 bytes
 * (site_crowd, reachable: an array of their addresses in shuffled order
 * hangs from a global, itself a reachable block of 8 * N bytes at
 * site_crowd_index) make a concurrent mark visit a big heap in no useful
 * order while the busy worker floods its change log (throttled to about a
 * million changes a second: the old mark, seconds long, overflowed the
 * log's 2^21 records; a reader kept off the CPU for a second must not).
 * Protocol: writes "ready <pid>\n" to fd 1 once set
 * up, then reads fd 0 until end of file; for each 'n' read, site_after_reset
 * allocates 1300 bytes that only site_holder's block points to, and
 * "done\n" is written (after `leakscope reset`, site_holder's block is
 * no longer tracked, yet it is memory the program uses: a root).  No
 * stdio.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "wl.h"

struct node {
	struct node *next;
	char pad[40];
};

struct holder {
	void *p;
};

static void *volatile global_keep;
static struct holder *volatile holder_keep;
static char *volatile interior_keep;
static __thread void *volatile tls_keep;
static int up_pipe[2], hold_pipe[2];	/* holder -> main, never written */

WL_SITE static void *site_global(void)
{
	void *p = malloc(1000); /* @site_global */

	WL_BARRIER();	/* not a tail call: the site keeps its frame */
	return p;
}

WL_SITE static void *site_tls(void)
{
	void *p = malloc(1100); /* @site_tls */

	WL_BARRIER();	/* not a tail call: the site keeps its frame */
	return p;
}

WL_SITE static void *site_stack(void)
{
	void *p = malloc(1200); /* @site_stack */

	WL_BARRIER();	/* not a tail call: the site keeps its frame */
	return p;
}

WL_SITE static struct node *site_list_node(struct node *next)
{
	struct node *n = malloc(sizeof(*n)); /* @site_list_node */

	n->next = next;
	return n;
}

WL_SITE static struct node *site_list_head(struct node *next)
{
	struct node *n = malloc(64); /* @site_list_head */

	n->next = next;
	return n;
}

WL_SITE static struct node *site_cycle(void)
{
	struct node *n = malloc(80); /* @site_cycle */

	n->next = NULL;
	return n;
}

WL_SITE static struct holder *site_holder(void)
{
	struct holder *h = calloc(1, 64); /* @site_holder */

	WL_BARRIER();
	return h;
}

WL_SITE static void *site_after_reset(void)
{
	void *p = malloc(1300); /* @site_after_reset */

	WL_BARRIER();
	return p;
}

WL_SITE static void *site_interior(void)
{
	void *p = malloc(300); /* @site_interior */

	WL_BARRIER();	/* not a tail call: the site keeps its frame */
	return p;
}

WL_SITE static void *site_leak(void)
{
	void *p = malloc(100); /* @site_leak */

	WL_BARRIER();	/* not a tail call: the site keeps its frame */
	return p;
}

/* Build the lost structures; no pointer to them survives the return
 * (the volatile stores keep the compiler from dropping the calls). */
WL_HELPER static void make_lost(void)
{
	struct node *l = NULL, *c[2];

	for (int i = 0; i < wl_n(3); i++)
		l = site_list_node(l);
	wl_sink = site_list_head(l);
	for (int i = 0; i < wl_n(2); i++)	/* one call: one site */
		c[i] = site_cycle();
	c[0]->next = c[1];
	c[1]->next = c[0];
	wl_sink = c[0];
	c[0] = c[1] = NULL;
	for (int i = 0; i < wl_n(3); i++)
		wl_sink = site_leak();
	wl_sink = NULL;
}

/* Overwrite the dead stack below us and the scratch registers, so no
 * stale copy of a lost pointer is left where a scan could see it. */
WL_HELPER static void scrub(void)
{
	volatile char pad[8192];

	memset((char *)pad, 0, sizeof(pad));
	WL_BARRIER();
}

static void *holder(void *arg)
{
	void *volatile mine = site_stack();
	char c;

	tls_keep = site_tls();
	scrub();
	wl_say(up_pipe[1], "x");
	/* Blocks until the process exits: mine and tls_keep stay live. */
	while (read(hold_pipe[0], &c, 1) != 0)
		;
	wl_sink = mine;
	return NULL;
}

static void **volatile crowd_keep;

WL_SITE static void *site_crowd(void)
{
	void *p = malloc(32); /* @site_crowd */

	WL_BARRIER();
	return p;
}

WL_SITE static void **site_crowd_index(size_t n)
{
	void **p = malloc(n * sizeof(*p)); /* @site_crowd_index */

	WL_BARRIER();
	return p;
}

/* n blocks, their addresses shuffled (xorshift, fixed seed). */
static void make_crowd(size_t n)
{
	void **a = site_crowd_index(n);
	uint64_t x = 88172645463325252ull;
	size_t i, j;

	WL_CHECK(a != NULL, "crowd index");
	for (i = 0; i < n; i++)
		a[i] = site_crowd();
	for (i = n - 1; i > 0; i--) {
		void *t;

		x ^= x << 13, x ^= x >> 7, x ^= x << 17;
		j = (size_t)(x % (i + 1));
		t = a[i], a[i] = a[j], a[j] = t;
	}
	crowd_keep = a;
}

static int busy_throttle;	/* crowd: ~1M changes a second, not flat out */

WL_HELPER static void tmp_busy(void)
{
	struct timespec ts = { 0, 100000 };
	void *slot[32] = { 0 };

	for (unsigned i = 0;; i++) {
		free(slot[i % 32]);
		slot[i % 32] = malloc(64);
		if (busy_throttle && i % 64 == 63)
			nanosleep(&ts, NULL);
	}
}

static void *busy(void *arg)
{
	tmp_busy();
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t th;
	char c;

	WL_CHECK(pipe(hold_pipe) == 0 && pipe(up_pipe) == 0, "pipe");
	global_keep = site_global();
	holder_keep = site_holder();
	interior_keep = (char *)site_interior() + 16;
	make_lost();
	WL_CHECK(pthread_create(&th, NULL, holder, NULL) == 0, "thread");
	WL_CHECK(read(up_pipe[0], &c, 1) == 1, "holder");
	if (argc > 2 && !strcmp(argv[1], "crowd")) {
		make_crowd(strtoul(argv[2], NULL, 10));
		busy_throttle = 1;
	}
	if (argc > 1 && (!strcmp(argv[1], "busy") || !strcmp(argv[1], "crowd")))
		WL_CHECK(pthread_create(&th, NULL, busy, NULL) == 0, "busy");
	scrub();
	wl_say(1, "ready %d\n", (int)getpid());
	while (read(0, &c, 1) > 0)
		if (c == 'n') {
			holder_keep->p = site_after_reset();
			wl_say(1, "done\n");
		}
	return 0;
}
