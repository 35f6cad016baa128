/*
 * prefork-idle.c - a pre-fork worker that the agent can only reach
 * without a hook.  The parent forks one worker (no exec), writes its pid
 * to stdout, one line, and waits for it; the worker waits for stdin to
 * close and exits 0.
 *
 *   prefork-idle idle     the worker never allocates after fork: no leak.
 *   prefork-idle nobody   (as root) the worker setuid()s to 65534, leaks
 *                         3 blocks of 1000 bytes in site_nobody_leak,
 *                         then writes "leaked" to stdout.
 */
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "wl.h"

WL_SITE static void site_nobody_leak(void)
{
	wl_sink = malloc(1000); /* @site_nobody_leak */
	WL_BARRIER();
}

WL_HELPER static void worker(int nobody)
{
	char c;
	int i;

	if (nobody) {
		WL_CHECK(!setgid(65534) && !setuid(65534), "setuid(65534)");
		for (i = 0; i < 3; i++)
			site_nobody_leak();
		WL_CHECK(write(1, "leaked\n", 7) == 7, "write");
	}
	while (read(0, &c, 1) > 0)	/* until the test closes stdin */
		;
	_exit(0);
}

int main(int argc, char **argv)
{
	int nobody = argc > 1 && !strcmp(argv[1], "nobody"), status = 0;
	pid_t pid = fork();

	if (pid == 0)
		worker(nobody);
	WL_CHECK(pid > 0, "fork failed");
	wl_say(1, "%d\n", (int)pid);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
