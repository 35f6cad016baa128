/*
 * reach-stale.c - leaks whose only remaining pointer lies in freed heap
 * memory: each leaked block's address was written into a holder block
 * that was then freed.  An allocator that keeps a freed block's words
 * (jemalloc's slabs and cached extents do; glibc overwrites only a freed
 * chunk's first words) leaves that pointer behind, and a scan that takes
 * the allocator's free memory for a root calls the leak still reachable
 * (tests/integration/t_reach_stale.py).  The verdict is the program's,
 * whatever the allocator: the test builds it against glibc's malloc for
 * valgrind and LeakSanitizer, and against Debian's libjemalloc.so.2 for
 * leakscope.
 *
 * argv[1]:
 *   exit    build the state below, then exit (the check at exit)
 *   wait    (the default) build it, write "ready", wait for the end of
 *           fd 0 (check PID)
 *   attach  commands on fd 0, each answered by one line on fd 1:
 *           p  before the attach: the kept list;
 *           l  after it: the leaks, their holders of HUGE_HOLDER bytes
 *              (more than jemalloc had mapped before: a holder lies in
 *              memory jemalloc mapped after the attach; temporaries
 *              of the leaks' sizes, allocated before them and freed
 *              after, overwrite jemalloc's thread cache's copies of
 *              the leaks' addresses)
 *
 * Ground truth (exit, wait; attach after "p", attach, "l"):
 *
 *   site               bytes                   blocks  category
 *   site_keep_node     48 * KEEP               KEEP    still reachable
 *   site_keep_payload  100 * KEEP              KEEP    still reachable
 *   site_leak          4 * 100 + 4 * 30,000    8       definitely lost,
 *                      (attach: 8 * 100)               holding site_child
 *   site_child         64                      1       indirectly lost
 *
 * The holders (48 and 40,000 bytes; attach: HUGE_HOLDER) are all freed.
 * The leaks are zeroed (calloc), so that what a reused block held before
 * does not point anywhere.  No stdio.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "wl.h"

#define KEEP 50
#define LEAKS 8
#define HUGE_HOLDER (6u << 20)

struct node {
	struct node *next;
	char *payload;
	uint64_t pad[4];
};

static struct node *volatile keep;

WL_SITE static struct node *site_keep_node(void)
{
	struct node *n = calloc(1, sizeof(*n)); /* @site_keep_node */

	WL_BARRIER();
	return n;
}

WL_SITE static char *site_keep_payload(void)
{
	char *p = calloc(1, 100); /* @site_keep_payload */

	WL_BARRIER();
	return p;
}

WL_SITE static void *site_leak(size_t n)
{
	void *p = calloc(1, n); /* @site_leak */

	WL_BARRIER();
	return p;
}

WL_SITE static void *site_child(void)
{
	void *p = calloc(1, 64); /* @site_child */

	WL_BARRIER();
	return p;
}

WL_SITE static void **site_holder(size_t n)
{
	void **h = malloc(n); /* @site_holder */

	WL_BARRIER();
	return h;
}

WL_HELPER static void build_keep(void)
{
	int i;

	for (i = 0; i < wl_n(KEEP); i++) {
		struct node *n = site_keep_node();

		WL_CHECK(n, "calloc of a node failed");
		n->payload = site_keep_payload();
		WL_CHECK(n->payload, "calloc of a payload failed");
		n->next = keep;
		keep = n;
	}
}

/* Leak i: its pointer written into a holder of hsize bytes (word 3,
 * past what any allocator writes into a freed block), the holder freed. */
WL_HELPER static void leak_one(int i, size_t size, size_t hsize)
{
	void **h = site_holder(hsize), **l = site_leak(size);

	WL_CHECK(h && l, "malloc of a holder or a leak failed");
	memset(h, 0, 4 * sizeof(*h));
	h[3] = l;
	if (i == 0)
		l[0] = site_child();
	wl_sink = h;
	free(h);
	wl_sink = NULL;
}

/*
 * After an attach, jemalloc's thread cache (allocated before it, so
 * scanned as a root) keeps each pointer it hands out in its slot until a
 * free pushes over it: as many temporaries of the leaks' sizes are
 * allocated before the leaks and freed after them, over their slots.
 */
WL_HELPER static void build_leaks(int attached)
{
	void *tmp[LEAKS + 1];
	int i;

	for (i = 0; attached && i < wl_n(LEAKS + 1); i++) {
		tmp[i] = malloc(i ? 100 : 64);
		WL_CHECK(tmp[i], "malloc of a temporary failed");
		wl_sink = tmp[i];
	}
	for (i = 0; i < wl_n(LEAKS); i++)
		if (attached)
			leak_one(i, 100, HUGE_HOLDER);
		else
			leak_one(i, i & 1 ? 30000 : 100, i & 2 ? 40000 : 48);
	for (i = 0; attached && i < wl_n(LEAKS + 1); i++)
		free(tmp[i]);
	wl_sink = NULL;
}

/* The dead frames below: no stale copy of a leak's address on the stack. */
WL_HELPER static void scrub(void)
{
	volatile char junk[8192];

	memset((char *)junk, 0, sizeof(junk));
	WL_BARRIER();
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "wait";
	char c;

	if (strcmp(mode, "attach")) {
		build_keep();
		build_leaks(0);
		scrub();
		if (!strcmp(mode, "wait")) {
			wl_say(1, "ready\n");
			while (read(0, &c, 1) == 1)
				;
		}
		return 0;
	}
	while (read(0, &c, 1) == 1) {
		if (c == 'p')
			build_keep();
		else if (c == 'l')
			build_leaks(1);
		else
			continue;
		scrub();
		wl_say(1, "done %c\n", c);
	}
	return 0;
}
