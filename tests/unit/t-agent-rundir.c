/*
 * t-agent-rundir.c - the runtime dir the agent made is removed at detach
 * (agent/rundir.h, ls_rundir_remove_made): only when it made it, only
 * when it is empty, never through a symlink put in place of its parent,
 * and once.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../../agent/rundir.h"
#include "scratch.h"
#include "tap.h"

static char dir[256];

static int is_dir(const char *path)
{
	struct stat st;

	return !lstat(path, &st) && S_ISDIR(st.st_mode);
}

/* dir = scratch/SUB/leakscope-0, SUB made here, dir not. */
static void fresh(const char *sub)
{
	char parent[200];

	snprintf(parent, sizeof(parent), "%s/%s", scratch_dir, sub);
	mkdir(parent, 0700);
	snprintf(dir, sizeof(dir), "%s/leakscope-0", parent);
}

static void test_made(void)
{
	fresh("made");
	ok(ls_rundir_prepare(dir, sizeof(dir)) == 0 && is_dir(dir),
	   "a missing dir is made");
	ls_rundir_remove_made();
	ok(!is_dir(dir) && errno == ENOENT, "made and empty: removed");
	ok(mkdir(dir, 0700) == 0, "made again, by someone else");
	ls_rundir_remove_made();
	ok(is_dir(dir), "a second removal does nothing");
}

static void test_found(void)
{
	fresh("found");
	mkdir(dir, 0700);
	ok(ls_rundir_prepare(dir, sizeof(dir)) == 0, "an existing dir is used");
	ls_rundir_remove_made();
	ok(is_dir(dir), "found, not made: it stays");
}

static void test_not_empty(void)
{
	char file[300];
	int fd;

	fresh("full");
	ok(ls_rundir_prepare(dir, sizeof(dir)) == 0, "made");
	snprintf(file, sizeof(file), "%s/7.pm", dir);
	fd = open(file, O_CREAT | O_EXCL | O_WRONLY, 0600);
	close(fd);
	ls_rundir_remove_made();
	ok(fd >= 0 && is_dir(dir) && !access(file, F_OK),
	   "another process's file in it: it stays, with the file");
}

static void test_link(void)
{
	char parent[200], moved[200], there[300];

	fresh("link");
	ok(ls_rundir_prepare(dir, sizeof(dir)) == 0, "made");
	snprintf(parent, sizeof(parent), "%s/link", scratch_dir);
	snprintf(moved, sizeof(moved), "%s/moved", scratch_dir);
	ok(!rename(parent, moved) && !symlink("moved", parent),
	   "its parent moved, a symlink to it in its place");
	ls_rundir_remove_made();
	snprintf(there, sizeof(there), "%s/leakscope-0", moved);
	ok(is_dir(there), "not removed through the symlink");
}

int main(void)
{
	if (scratch_make("rundir"))
		return 1;
	test_made();
	test_found();
	test_not_empty();
	test_link();
	scratch_remove();
	return tap_done();
}
