/*
 * deadframe.c MODE - pointers left in frames that have returned.
 *   0  a deep recursion leaves one 64-byte block per level (8 levels) in
 *      its dead frames, then main returns: 512/8 definitely lost
 *   1  the same, and main calls exit(): still lost (the frames died
 *      before exit was called)
 *   2  an array of 16 pointers in a dead frame, each to a 32-byte block;
 *      main keeps one in a global: 480/15 lost, 32/1 reachable
 */
#include "v.h"

void *global;	/* external: stores to it stay */

__attribute__((noinline)) static void deep(int n)
{
	void *p = v_alloc(64);

	if (n > 1)
		deep(n - 1);
	v_use(p);
}

__attribute__((noinline)) static void array(void)
{
	void *a[16];
	int i;

	for (i = 0; i < 16; i++)
		a[i] = v_alloc(32);
	global = a[7];
	v_use(a);
}

int main(int argc, char **argv)
{
	int mode = v_mode(argc, argv);

	if (mode == 2)
		array();
	else
		deep(8);
	if (mode == 1)
		exit(0);
	return 0;
}
