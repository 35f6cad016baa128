/*
 * gate.c MODE - sizes at the edges.
 *   0  malloc(0) never freed: 0 bytes in 1 block definitely lost
 *   1  malloc(0) kept in a global: 0 bytes in 1 block still reachable
 *   2  a 1 MiB block (its own mapping) lost, another kept
 *   3  realloc: a block grown three times then dropped (lost, its last
 *      size), calloc'd 10 x 30 kept
 */
#include "v.h"

void *keep;	/* external: stores to it stay */

__attribute__((noinline)) static void drop(void *p)
{
	v_use(p);
}

int main(int argc, char **argv)
{
	void *p;

	switch (v_mode(argc, argv)) {
	case 0:
		drop(malloc(0));
		break;
	case 1:
		keep = malloc(0);
		break;
	case 2:
		drop(v_alloc(1 << 20));
		keep = v_alloc(1 << 20);
		break;
	case 3:
		p = v_alloc(16);
		p = realloc(p, 1000);
		p = realloc(p, 5000);
		p = realloc(p, 300);
		drop(p);
		keep = calloc(10, 30);
		break;
	}
	return 0;
}
