/*
 * shapes.c MODE - lost and kept structures (memcheck's categories).
 *   0  a lost list: head 48 bytes definitely lost, 5 nodes of 48
 *      indirectly lost; a kept list of 3 x 48 from a global
 *   1  a lost binary tree of 15 nodes of 40 bytes (1 definite, 14
 *      indirect); a kept tree of 7 from a global
 *   2  a lost 3-cycle of 56-byte blocks (1 definite, 2 indirect), a lost
 *      doubly linked pair, a kept 2-cycle
 *   3  interior pointers: a global into the middle of a 400-byte block
 *      (possibly lost), and what that block points to (possibly lost)
 *   4  many: 200 leaked 24-byte blocks, 100 kept in a global array
 */
#include "v.h"

struct node {
	struct node *next, *prev, *left, *right;
	char pad[8];
};

void *keep, *keep2;	/* external: stores to them stay */

static struct node *node(size_t n)
{
	struct node *x = v_alloc(n);

	memset(x, 0, n);
	return x;
}

__attribute__((noinline)) static struct node *list(int n)
{
	struct node *h = NULL, *x;

	while (n-- > 0) {
		x = node(48);
		x->next = h;
		h = x;
	}
	return h;
}

__attribute__((noinline)) static struct node *tree(int depth)
{
	struct node *x;

	if (!depth)
		return NULL;
	x = node(40);
	x->left = tree(depth - 1);
	x->right = tree(depth - 1);
	return x;
}

__attribute__((noinline)) static void cycles(void)
{
	struct node *a = node(56), *b = node(56), *c = node(56);

	a->next = b;
	b->next = c;
	c->next = a;
	a = node(48);
	b = node(48);
	a->next = b;
	b->prev = a;
	a = node(64);
	b = node(64);
	a->next = b;
	b->next = a;
	keep = a;
}

__attribute__((noinline)) static void interior(void)
{
	char *big = v_alloc(400);
	void *tail = v_alloc(80);

	memcpy(big, &tail, sizeof(tail));
	keep = big + 100;
}

__attribute__((noinline)) static void many(void)
{
	void **arr = v_alloc(100 * sizeof(void *));
	int i;

	for (i = 0; i < 200; i++)
		v_use(v_alloc(24));
	for (i = 0; i < 100; i++)
		arr[i] = v_alloc(24);
	keep = arr;
}

int main(int argc, char **argv)
{
	switch (v_mode(argc, argv)) {
	case 0:
		v_use(list(6));
		keep = list(3);
		break;
	case 1:
		v_use(tree(4));
		keep = tree(3);
		break;
	case 2:
		cycles();
		break;
	case 3:
		interior();
		break;
	case 4:
		many();
		break;
	}
	keep2 = NULL;
	return 0;
}
