/*
 * runthread.c MODE - a thread still running when main returns, spinning
 * in sched_yield() right after it allocated its first block and printed
 * the block's address with snprintf() (the shape of LLVM's
 * use_stacks_threaded test).  No word of the program's live frames or
 * registers holds the block then; the thread's stack is scanned from
 * its stack pointer less the 128-byte red zone, where the allocator's
 * dead frames lay (the agent's hooks clear what theirs left there).
 *   0  malloc, 1337 bytes: definitely lost
 *   1  aligned_alloc (64-byte aligned), 1344 bytes: definitely lost
 *   2  the control: the thread's first block (1350 bytes) in a local of
 *      the frame that spins: still reachable
 */
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include "v.h"

static volatile int started;

static void *body(void *arg)
{
	char buf[32];

	if (arg)
		snprintf(buf, sizeof buf, "%p", aligned_alloc(64, 1344));
	else
		snprintf(buf, sizeof buf, "%p", malloc(1337));
	v_use(buf);
	started = 1;
	for (;;)
		sched_yield();
	return arg;
}

static void *holder(void *arg)
{
	void *volatile held = malloc(1350);

	started = 1;
	for (;;) {
		v_use(held);
		sched_yield();
	}
	return arg;
}

int main(int argc, char **argv)
{
	int mode = v_mode(argc, argv);
	pthread_t t;

	if (pthread_create(&t, NULL, mode == 2 ? holder : body,
			   mode == 1 ? &t : NULL))
		return 2;
	while (!started)
		sched_yield();
	return 0;
}
