/*
 * regs.c MODE - the caller of exit() holds its pointers in registers
 * (at -O2) or in its frame (at -O0): live either way.
 *   0  main keeps 3 blocks (128, 256, 512) in locals across calls and
 *      calls exit(): all reachable
 *   1  the same through _exit(), at -O0 (in main's frame): all
 *      reachable.  At -O2 they are in registers only, which _exit()
 *      saves nowhere: memcheck, which scans no register of a process
 *      that has ended, calls some lost, depending on its own register
 *      use; leakscope calls all three lost (not compared)
 *   2  an atexit handler frees one of two global blocks, leaks a 72-byte
 *      block it allocates; main returns: 72 lost, the other global kept
 */
#include <unistd.h>
#include "v.h"

void *g1, *g2;	/* external: stores to them stay */

static void handler(void)
{
	free(g1);
	v_use(v_alloc(72));
}

__attribute__((noinline)) static void churn(void)
{
	int i;

	for (i = 0; i < 8; i++)
		free(v_alloc(128));
}

int main(int argc, char **argv)
{
	int mode = v_mode(argc, argv);
	void *a, *b, *c;

	if (mode == 2) {
		g1 = v_alloc(10);
		g2 = v_alloc(20);
		atexit(handler);
		return 0;
	}
	a = v_alloc(128);
	b = v_alloc(256);
	c = v_alloc(512);
	churn();
	__asm__ volatile("" : : "r"(a), "r"(b), "r"(c));
	if (mode == 1)
		_exit(0);
	exit(0);
}
