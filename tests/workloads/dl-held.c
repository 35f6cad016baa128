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
 * end of fd 0 (check PID), then exit(0); "release" the same, and with
 * "stay" or "dlopen=PATH" a byte 'r' on fd 0 lets the thread go (the
 * callback returns; the constructor returns and dlopen finishes): once it
 * has left the loader, "released" is written.
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
static int release_fd = -1;	/* "release": the holder waits on it */

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
	if (release_fd >= 0) {
		char c;

		WL_CHECK(read(release_fd, &c, 1) == 1, "read");
		return 1;	/* no more objects: leave the loader */
	}
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
	/* Out of the loader ("release"). */
	__atomic_store_n(&holder_tid, -holder_tid, __ATOMIC_RELEASE);
	return NULL;
}

WL_SITE static void site_dl_leak(void)
{
	wl_sink = malloc(4000);
	WL_BARRIER();
	wl_sink = NULL;
}

/* Wait for the end of fd 0; with release_fd, let the holder go at 'r'. */
static void wait_input(int rel)
{
	char c;

	while (read(0, &c, 1) > 0) {
		if (c != 'r' || rel < 0)
			continue;
		WL_CHECK(write(rel, &c, 1) == 1, "write");
		rel = -1;
		while (__atomic_load_n(&holder_tid, __ATOMIC_ACQUIRE) > 0)
			usleep(1000);
		wl_say(1, "released\n");
	}
}

int main(int argc, char **argv)
{
	int releasable = argc > 2 && !strcmp(argv[2], "release");
	int rel[2] = { -1, -1 };
	pthread_t t;
	char fd[16];

	churn = argc > 1 && !strcmp(argv[1], "churn");
	if (argc > 1 && !strncmp(argv[1], "dlopen=", 7))
		lib = argv[1] + 7;
	if (releasable) {
		WL_CHECK(pipe(rel) == 0, "pipe");
		release_fd = rel[0];
		snprintf(fd, sizeof(fd), "%d", rel[0]);
		WL_CHECK(setenv("CTORWAIT_FD", fd, 1) == 0, "setenv");
	}
	WL_CHECK(pthread_create(&t, NULL, holder, NULL) == 0, "pthread_create");
	while (lib ? !dl_iterate_phdr(loaded, NULL) :
	       !__atomic_load_n(&inside, __ATOMIC_ACQUIRE))
		usleep(1000);
	wl_say(1, "holder %d\n", (int)holder_tid);
	site_dl_leak();
	if (argc > 2 && (!strcmp(argv[2], "wait") || releasable)) {
		wl_say(1, "ready\n");
		wait_input(releasable ? rel[1] : -1);
	}
	exit(0);
}
