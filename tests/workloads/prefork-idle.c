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
 *   prefork-idle late     (as root) the worker reads one line: at "s" it
 *                         setuid()s to 65534 (seconds after fork, when
 *                         its control socket exists), leaks as above and
 *                         writes "leaked"; when stdin closes it exits
 *                         with exit(0), so it writes an exit report.
 *   prefork-idle unshare  the worker calls unshare(CLONE_NEWUSER) at
 *                         once (a second thread makes it fail with
 *                         EINVAL) and writes "unshare N" (N: 0 or the
 *                         errno), in any order with the pid line.
 *   prefork-idle unshare-late  the same when a line "u" comes (seconds
 *                         after fork: the control thread runs by then).
 */
#include <errno.h>
#include <sched.h>
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

WL_HELPER static void become_nobody(void)
{
	int i;

	WL_CHECK(!setgid(65534) && !setuid(65534), "setuid(65534)");
	for (i = 0; i < 3; i++)
		site_nobody_leak();
	WL_CHECK(write(1, "leaked\n", 7) == 7, "write");
}

static void try_unshare(void)
{
	int r = unshare(CLONE_NEWUSER);

	wl_say(1, "unshare %d\n", r ? errno : 0);
}

/* The first byte of the next line from stdin; 0 at its end. */
static char command(void)
{
	char c, first = 0;

	while (read(0, &c, 1) > 0) {
		if (c == '\n')
			return first ? first : '\n';
		if (!first)
			first = c;
	}
	return first;
}

WL_HELPER static void worker(const char *mode)
{
	char c;

	if (!strcmp(mode, "nobody"))
		become_nobody();
	if (!strcmp(mode, "late") && command() == 's')
		become_nobody();
	if (!strcmp(mode, "unshare"))
		try_unshare();
	if (!strcmp(mode, "unshare-late") && command() == 'u')
		try_unshare();
	while (read(0, &c, 1) > 0)	/* until the test closes stdin */
		;
	if (!strcmp(mode, "late"))
		exit(0);
	_exit(0);
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "idle";
	int status = 0;
	pid_t pid = fork();

	if (pid == 0)
		worker(mode);
	WL_CHECK(pid > 0, "fork failed");
	wl_say(1, "%d\n", (int)pid);
	waitpid(pid, &status, 0);
	return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}
