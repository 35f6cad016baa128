/*
 * thrdesc.c MODE - what ended threads' descriptors still hold.  Six
 * threads run at once and are joined; glibc keeps some of their stacks,
 * descriptor included, in its stack cache, and a descriptor keeps the
 * argument its thread was started with and the result it returned.
 * Neither is a root once the thread has ended (valgrind and
 * LeakSanitizer call what only they hold lost).
 *   0  each thread is given a 130-byte block and does not free it:
 *      780/6 definitely lost
 *   1  each thread returns a 140-byte block, which the join drops:
 *      840/6 definitely lost
 *   2  each thread returns malloc(150) straight (a tail call: no frame
 *      of the program on the allocation's stack), dropped by the join:
 *      900/6 definitely lost
 *   3  each thread returns a 160-byte block, which main keeps in a
 *      global array: 960/6 still reachable, nothing lost
 */
#include <pthread.h>
#include "v.h"

#define N 6

void *kept[N];	/* external: stores to it stay */

static void *ignore_arg(void *arg)
{
	v_use(arg);
	return NULL;
}

static void *give(void *arg)
{
	return v_alloc((size_t)arg);
}

static void *give_straight(void *arg)
{
	v_use(arg);
	return malloc(150);
}

/* The threads' handles and the join's results live in this frame, dead
 * once it returns. */
__attribute__((noinline)) static void run(int mode)
{
	pthread_t t[N];
	void *r;
	int i;

	for (i = 0; i < N; i++) {
		void *(*fn)(void *) = mode == 0 ? ignore_arg :
				      mode == 2 ? give_straight : give;
		void *arg = mode == 0 ? v_alloc(130) :
			    (void *)(size_t)(mode == 1 ? 140 : 160);

		if (pthread_create(&t[i], NULL, fn, arg))
			abort();
	}
	for (i = 0; i < N; i++) {
		if (pthread_join(t[i], &r))
			abort();
		if (mode == 3)
			kept[i] = r;
	}
	r = NULL;
	v_use(&r);
}

int main(int argc, char **argv)
{
	run(v_mode(argc, argv));
	return 0;
}
