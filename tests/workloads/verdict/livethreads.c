/*
 * livethreads.c MODE [ready] - threads still alive when main returns.
 *   0  a thread blocked in read() holds a 700-byte block in a local and
 *      another 90-byte block in its TLS: both reachable
 *   1  a thread allocating and freeing 2 MiB blocks in a loop while main
 *      returns: nothing lost (what it holds it holds in its registers or
 *      live frames), a 500-byte block main dropped is lost
 * With a second argument main writes "ready" once the thread runs (and
 * main dropped its block) and returns when its standard input closes.
 */
#include <pthread.h>
#include <unistd.h>
#include "v.h"

static int ready[2], hold[2];
__thread void *tls;	/* external: stores to it stay */
static void *volatile slot;

static void *blocked(void *arg)
{
	char *p = v_alloc(700);
	char c;

	tls = v_alloc(90);
	(void)!write(ready[1], "r", 1);
	(void)!read(hold[0], &c, 1);
	v_use(p);
	return arg;
}

static void *churn(void *arg)
{
	(void)!write(ready[1], "r", 1);
	for (;;) {
		void *p = v_alloc(2 << 20);

		p = realloc(p, (2 << 20) + 4096);
		slot = p;
		slot = NULL;
		free(p);
	}
	return arg;
}

int main(int argc, char **argv)
{
	int mode = v_mode(argc, argv);
	pthread_t t;
	char c;

	if (pipe(ready) || pipe(hold))
		return 2;
	pthread_create(&t, NULL, mode ? churn : blocked, NULL);
	(void)!read(ready[0], &c, 1);
	if (mode) {
		v_use(v_alloc(500));
		usleep(20000);
	}
	v_ready(argc);
	return 0;
}
