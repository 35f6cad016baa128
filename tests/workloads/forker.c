/*
 * forker.c - a child that leaks something of its own and exits normally.
 *
 * Writes "child PID\n" on stdout.  Expected outstanding at exit:
 *
 *   parent (the root):   site_parent_before  900 bytes, 3 blocks
 *                        site_parent_after   123 bytes, 1 block
 *   child (own report):  site_parent_before  900 bytes, 3 blocks (inherited
 *                                            across fork)
 *                        site_child          940 bytes, 2 blocks
 *
 * The child never has site_parent_after, the parent never has site_child.
 * Stacks: main -> forker_run -> site_X (the child: main -> forker_run ->
 * child_main -> site_child).  The child exits with exit(0); the parent
 * checks that and exits 0.
 */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>
#include "wl.h"

WL_SITE static void site_parent_before(void)
{
	for (int i = 0; i < wl_n(3); i++)
		wl_sink = malloc(300); /* @site_parent_before */
}

WL_SITE static void site_parent_after(void)
{
	wl_sink = malloc(123); /* @site_parent_after */
}

WL_SITE static void site_child(void)
{
	for (int i = 0; i < wl_n(2); i++)
		wl_sink = malloc(470); /* @site_child */
}

WL_HELPER static void child_main(void)
{
	site_child();
	for (int i = 0; i < 100; i++) {
		wl_sink = malloc((size_t)i + 1);
		free(wl_sink);
	}
	exit(0);
}

WL_HELPER static void forker_run(void)
{
	site_parent_before();
	pid_t pid = fork();
	WL_CHECK(pid >= 0, "fork failed");
	if (pid == 0)
		child_main();
	site_parent_after();
	wl_say(1, "child %d\n", (int)pid);
	int status;
	WL_CHECK(waitpid(pid, &status, 0) == pid, "waitpid failed");
	WL_CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		 "child status 0x%x", status);
	WL_BARRIER();
}

int main(void)
{
	forker_run();
	WL_BARRIER();
	return 0;
}
