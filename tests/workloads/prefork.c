/*
 * prefork.c - a pre-fork server in miniature: the parent forks a worker
 * (no exec) and waits for it; the worker leaks 4096 bytes every 50 ms in
 * site_worker_leak for SECONDS (argument, default 3) and exits 0.  The
 * worker's pid is written to stdout, one line, as soon as it exists.
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <time.h>
#include "wl.h"

WL_SITE static void site_worker_leak(void)
{
	wl_sink = malloc(4096); /* @site_worker_leak */
	WL_BARRIER();
}

WL_HELPER static void worker(long ms)
{
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	long t;

	for (t = 0; t < ms; t += 50) {
		site_worker_leak();
		nanosleep(&ts, NULL);
	}
}

int main(int argc, char **argv)
{
	long seconds = argc > 1 ? atol(argv[1]) : 3;
	int status = 0;
	pid_t pid = fork();

	if (pid == 0) {
		worker(seconds * 1000);
		exit(0);
	}
	WL_CHECK(pid > 0, "fork failed");
	wl_say(1, "%d\n", (int)pid);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
