/*
 * dl-held.c - a thread holds the loader's lock while main leaks and
 * exits: its dl_iterate_phdr callback never returns (argv[1] "stay") or
 * allocates and frees in a loop (argv[1] "churn"; LLVM's
 * libdl_deadlock test does that), or it is inside dlopen of a library
 * whose constructor never returns (argv[1] "dlopen=PATH", PATH
 * libctorwait.so).  Natively the process exits at once.
 *
 * It writes "holder TID" (the thread's id) first.  argv[2]: "exit" (the
 * default) leak, then exit(0); "wait" leak, write "ready", wait for the
 * end of fd 0 (check PID), then exit(0).
 *
 * Ground truth:
 *
 *   site           bytes  blocks  category
 *   site_dl_leak   4000   1       definitely lost
 *
 * "churn" also holds at most one block of 64 bytes (site_churn) in the
 * callback's stack or registers: live, never lost.
 */
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <sys/syscall.h>
#include "wl.h"

static int churn;
static const char *lib;
static volatile int inside;
static volatile pid_t holder_tid;

WL_SITE static void *site_churn(void)
{
	return malloc(64);
}

static int held(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)info;
	(void)size;
	(void)arg;
	__atomic_store_n(&inside, 1, __ATOMIC_RELEASE);
	for (;;) {
		if (churn) {
			void *p = site_churn();

			WL_BARRIER();
			free(p);
		} else {
			pause();
		}
	}
	return 0;
}

/* Is libctorwait.so in the list of loaded objects (its dlopen under
 * way: it is added before its constructor runs)? */
static int loaded(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	return info->dlpi_name && strstr(info->dlpi_name, "libctorwait");
}

static void *holder(void *arg)
{
	(void)arg;
	holder_tid = (pid_t)syscall(SYS_gettid);
	if (lib)
		dlopen(lib, RTLD_NOW);
	else
		dl_iterate_phdr(held, NULL);
	return NULL;
}

WL_SITE static void site_dl_leak(void)
{
	wl_sink = malloc(4000);
	WL_BARRIER();
	wl_sink = NULL;
}

int main(int argc, char **argv)
{
	pthread_t t;
	char c;

	churn = argc > 1 && !strcmp(argv[1], "churn");
	if (argc > 1 && !strncmp(argv[1], "dlopen=", 7))
		lib = argv[1] + 7;
	WL_CHECK(pthread_create(&t, NULL, holder, NULL) == 0, "pthread_create");
	while (lib ? !dl_iterate_phdr(loaded, NULL) :
	       !__atomic_load_n(&inside, __ATOMIC_ACQUIRE))
		usleep(1000);
	wl_say(1, "holder %d\n", (int)holder_tid);
	site_dl_leak();
	if (argc > 2 && !strcmp(argv[2], "wait")) {
		wl_say(1, "ready\n");
		while (read(0, &c, 1) > 0)
			;
	}
	exit(0);
}
