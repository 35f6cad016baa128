/*
 * threadend.c MODE - threads that have ended hold nothing.
 *   0  a thread allocates 4 x 512 bytes and drops them, joined:
 *      2048/4 definitely lost
 *   1  the same in a detached thread, ended before main returns:
 *      2048/4 definitely lost
 *   2  two threads one after the other (the second reuses the first's
 *      cached stack): the first drops 4 x 512 (lost), the second keeps a
 *      300-byte block in a global (reachable)
 *   3  a thread keeps a 96-byte block in its static TLS and ends: its
 *      TLS stays mapped (glibc's stack cache) but is gone for the
 *      program: 96/1 definitely lost, as memcheck and LeakSanitizer say
 *   4  mode 0, then "ready" on stdout, and main returns when stdin
 *      closes (for `leakscope check` meanwhile): 2048/4 definitely lost
 */
#include <pthread.h>
#include <unistd.h>
#include "v.h"

void *global;	/* external: stores to it stay */
__thread void *tls;	/* external: stores to it stay */
static int done[2];

static void *dropper(void *arg)
{
	void *p[4];
	int i;

	for (i = 0; i < 4; i++)
		p[i] = v_alloc(512);
	v_use(p);
	if (arg)
		(void)!write(done[1], "x", 1);
	return NULL;
}

static void *keeper(void *arg)
{
	global = v_alloc(300);
	return arg;
}

static void *tls_keeper(void *arg)
{
	tls = v_alloc(96);
	v_use(&tls);
	return arg;
}

int main(int argc, char **argv)
{
	int mode = v_mode(argc, argv);
	pthread_attr_t attr;
	pthread_t t;
	char c;

	if (mode == 1) {
		if (pipe(done))
			return 2;
		pthread_attr_init(&attr);
		pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
		pthread_create(&t, &attr, dropper, &attr);
		(void)!read(done[0], &c, 1);
		usleep(50000);	/* its last instructions, its exit */
		return 0;
	}
	pthread_create(&t, NULL, mode == 3 ? tls_keeper : dropper, NULL);
	pthread_join(t, NULL);
	if (mode == 2) {
		pthread_create(&t, NULL, keeper, NULL);
		pthread_join(t, NULL);
	}
	if (mode == 4) {
		(void)!write(1, "ready\n", 6);
		while (read(0, &c, 1) > 0)
			;
	}
	return 0;
}
