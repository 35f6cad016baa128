/*
 * tlsstart.c [LIB] - a block held only in a new thread's TLS is
 * reachable from the thread's first instruction on.  A thread puts a
 * 777-byte block in its static TLS and, with LIB (libvtls.so, dlopen'ed),
 * a 555-byte block in the library's dynamic TLS and blocks; main writes
 * "ready" once it has and returns when stdin closes.  Checked at once:
 * both reachable (valgrind at exit, the thread still blocked, agrees).
 * Nothing else of the program's outstanding.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <unistd.h>
#include "v.h"

__thread void *tls;	/* external: stores to it stay */
static void (*dyn_set)(size_t);
static int ready[2], hold[2];

static void *worker(void *arg)
{
	char c;

	tls = v_alloc(777);
	if (dyn_set)
		dyn_set(555);
	(void)!write(ready[1], "r", 1);
	(void)!read(hold[0], &c, 1);
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t;
	char c;

	if (argc > 1) {
		void *h = dlopen(argv[1], RTLD_NOW);

		if (!h)
			return 2;
		dyn_set = (void (*)(size_t))dlsym(h, "vtls_set");
	}
	if (pipe(ready) || pipe(hold))
		return 2;
	pthread_create(&t, NULL, worker, NULL);
	(void)!read(ready[0], &c, 1);
	(void)!write(1, "ready\n", 6);
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
