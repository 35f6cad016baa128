/*
 * pthexit.c MODE - main ends with pthread_exit(); glibc ends the process
 * (exit status 0, atexit handlers run) when its last thread ends.
 *   0  a thread outlives main: it drops 123 bytes, keeps 77 in a global,
 *      then returns (the process's last thread): 123 definitely lost,
 *      77 still reachable
 *   1  main joins its thread first (the thread dropped 123 bytes and
 *      kept 77 in a global), then calls pthread_exit as the last thread
 *   2  as 0, and the thread calls pthread_exit itself
 *   3  no pthread_exit: the thread, on a 64 KiB stack, ends the process
 *      with exit(0) while main waits to join it (the exit path runs on
 *      that small stack; main never says "main out")
 * Each says "main out" and "thread out" on stdout, and an atexit handler
 * says "atexit" (write(2): no stdio buffers).
 */
#include <pthread.h>
#include <unistd.h>
#include "v.h"

static int mode;
void *kept;	/* external: the store stays */

static void say(const char *s)
{
	(void)!write(1, s, strlen(s));
}

static void at_exit(void)
{
	say("atexit\n");
}

static void *worker(void *arg)
{
	if (mode != 1)
		usleep(50000);	/* main has ended */
	v_use(v_alloc(123));
	kept = v_alloc(77);
	say("thread out\n");
	if (mode == 2)
		pthread_exit(arg);
	if (mode == 3)
		exit(0);
	return arg;
}

int main(int argc, char **argv)
{
	pthread_attr_t attr;
	pthread_t t;

	mode = v_mode(argc, argv);
	atexit(at_exit);
	pthread_attr_init(&attr);
	if (mode == 3)
		pthread_attr_setstacksize(&attr, 64 << 10);
	if (pthread_create(&t, &attr, worker, NULL))
		return 2;
	if (mode == 1 || mode == 3)
		pthread_join(t, NULL);
	say("main out\n");
	pthread_exit(NULL);
}
