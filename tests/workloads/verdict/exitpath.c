/*
 * exitpath.c MODE - how the program leaves decides which frames are live.
 * main holds a 200-byte block in a local; work() drops a 100-byte block
 * whose address stays in its dead frame.
 *   0  return from main: main's frame is dead, both blocks lost (300/2)
 *   1  exit() from main: main's frame is live, 200 reachable, 100 lost
 *   2  return from main, then exit() from an atexit handler: both lost
 *   3  _exit() from main: 200 reachable, 100 lost
 *   4  _Exit() from main: 200 reachable, 100 lost
 */
#include <unistd.h>
#include "v.h"

static int mode;

__attribute__((noinline)) static void work(void)
{
	char *p = v_alloc(100);

	v_use(p);
}

static void handler(void)
{
	if (mode == 2)
		exit(0);
}

int main(int argc, char **argv)
{
	char *q;

	mode = v_mode(argc, argv);
	q = v_alloc(200);
	work();
	atexit(handler);
	v_use(q);
	if (mode == 1)
		exit(0);
	if (mode == 3)
		_exit(0);
	if (mode == 4)
		_Exit(0);
	return 0;
}
