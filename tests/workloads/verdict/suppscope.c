/*
 * suppscope.c MODE - what only suppressed blocks hold is suppressed
 * (LeakSanitizer's scope).  site_nodes() allocates a list of 4 nodes of
 * 40 bytes (its stacks do not pass through site_head), site_head() a
 * 64-byte head that takes the list and is dropped; site_other() leaks 24
 * bytes.  With `leak:site_head` suppressed:
 *   0  head and nodes suppressed (224/5); 24/1 definitely lost
 *   1  without site_other's leak: nothing lost, the gate passes
 * Without the suppression: 64/1 definitely and 160/4 indirectly lost
 * (and 24/1 more in mode 0).
 */
#include "v.h"

struct node {
	struct node *next;
	char pad[32];
};

__attribute__((noinline)) static struct node *site_nodes(void)
{
	struct node *l = NULL, *n;
	int i;

	for (i = 0; i < 4; i++) {
		n = v_alloc(sizeof(struct node));
		n->next = l;
		l = n;
	}
	return l;
}

__attribute__((noinline)) static void site_head(struct node *list)
{
	struct node *h = v_alloc(64);

	h->next = list;
	v_use(h);
}

__attribute__((noinline)) static void site_other(void)
{
	v_use(v_alloc(24));
}

/* The dead frames' words out of the way of LeakSanitizer, which scans
 * the exit path's frames. */
__attribute__((noinline)) static void scrub(void)
{
	char buf[4096];

	memset(buf, 0, sizeof(buf));
	v_use(buf);
}

int main(int argc, char **argv)
{
	site_head(site_nodes());
	if (v_mode(argc, argv) == 0)
		site_other();
	scrub();
	return 0;
}
