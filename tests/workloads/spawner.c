/*
 * spawner.c - fork + exec of another program: usage spawner PROGRAM [ARGS].
 *
 * Writes "child PID\n" on stdout, waits, and exits with the child's exit
 * status.  Expected outstanding in the spawner's own report:
 *
 *   site_spawner   700 bytes, 1 block (main -> spawner_run -> site)
 *
 * The exec'd program is not traced by default; with --follow-exec it gets
 * its own report (its own ground truth, none of the spawner's sites: exec
 * replaces the image).
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "wl.h"

WL_SITE static void site_spawner(void)
{
	wl_sink = malloc(700); /* @site_spawner */
}

WL_HELPER static int spawner_run(char **argv)
{
	site_spawner();
	pid_t pid = fork();
	WL_CHECK(pid >= 0, "fork failed");
	if (pid == 0) {
		execv(argv[0], argv);
		wl_say(2, "spawner: cannot exec %s\n", argv[0]);
		_exit(127);
	}
	wl_say(1, "child %d\n", (int)pid);
	int status;
	WL_CHECK(waitpid(pid, &status, 0) == pid, "waitpid failed");
	WL_CHECK(WIFEXITED(status), "child status 0x%x", status);
	WL_BARRIER();
	return WEXITSTATUS(status);
}

int main(int argc, char **argv)
{
	WL_CHECK(argc > 1, "usage: spawner PROGRAM [ARGS]");
	int rc = spawner_run(argv + 1);
	WL_BARRIER();
	return rc;
}
