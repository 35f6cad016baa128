/*
 * t-cli-container.c - lib/container.h: a path opened in another root stays
 * in it (absolute symlinks, "..", a symlink as the last component), and a
 * child in a new PID namespace is told apart from us, its pid and its
 * thread ids translated both ways.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../../lib/container.h"
#include "scratch.h"
#include "tap.h"

/* What path reads as in root (dir): its first line, or "" with *err. */
static const char *read_in(int root, const char *path, int flags, int *err)
{
	static char buf[128];
	int fd = ls_container_open(root, path, O_RDONLY | flags);

	buf[0] = 0;
	*err = fd < 0 ? fd : 0;
	if (fd >= 0) {
		ls_container_read(fd, buf, sizeof(buf));
		buf[strcspn(buf, "\n")] = 0;
	}
	return buf;
}

static void test_contained(void)
{
	char path[256];
	int root, err;
	const char *got;

	snprintf(path, sizeof(path), "%s/etc", scratch_dir);
	mkdir(path, 0755);
	scratch_file("etc/hostname", "inside");
	snprintf(path, sizeof(path), "%s/abs", scratch_dir);
	symlink("/etc/hostname", path);
	snprintf(path, sizeof(path), "%s/up", scratch_dir);
	symlink("../../../../../etc/hostname", path);
	root = open(scratch_dir, O_PATH | O_DIRECTORY);
	got = read_in(root, "/etc/hostname", 0, &err);
	if (err == -ENOSYS) {
		ok(1, "# SKIP no openat2 on this kernel (before Linux 5.6)");
		close(root);
		return;
	}
	ok(!strcmp(got, "inside"), "an absolute path names the file in the "
	   "root: '%s'", got);
	got = read_in(root, "/abs", 0, &err);
	ok(!strcmp(got, "inside"), "an absolute symlink resolves in the "
	   "root, not ours: '%s'", got);
	got = read_in(root, "up", 0, &err);
	ok(!strcmp(got, "inside"), "'..' stops at the root: '%s'", got);
	got = read_in(root, "/../../etc/hostname", 0, &err);
	ok(!strcmp(got, "inside"), "a path climbing out stays in: '%s'", got);
	read_in(root, "/abs", O_NOFOLLOW, &err);
	is_u64(-err, ELOOP, "O_NOFOLLOW refuses a symlink as last component");
	read_in(-1, "/nonexistent-leakscope", 0, &err);
	is_u64(-err, ENOENT, "without a root: a plain open");
	close(root);
}

static void test_self(void)
{
	struct ls_container c;

	is_u64(ls_container_of(getpid(), &c), 0, "our own process");
	is_u64(c.nspid, getpid(), "our pid is our own");
	ok(!ls_container_is(&c), "we are not in a container of ours");
	is_u64(ls_container_root(&c), (uint64_t)-1, "our files are ours");
	is_u64(ls_container_inner_uid(getpid(), 4321), 4321,
	       "a uid of our namespace maps to itself");
	is_u64(ls_container_of(0x7ffffff0, &c), (uint64_t)-ESRCH,
	       "no such process");
}

/* A child in a new PID namespace (root only): it is pid 1 there. */
static void test_pid_ns(void)
{
	struct ls_container c;
	int fds[2];
	pid_t child;
	char x;

	if (unshare(CLONE_NEWPID) || pipe(fds)) {
		ok(1, "# SKIP no new PID namespace here: %s", strerror(errno));
		return;
	}
	child = fork();
	if (child == 0) {
		close(fds[1]);
		if (read(fds[0], &x, 1) < 0)
			_exit(1);
		_exit(0);
	}
	close(fds[0]);
	is_u64(ls_container_of(child, &c), 0, "the child is readable");
	is_u64(c.nspid, 1, "it is pid 1 in its own namespace");
	ok(c.other_pid_ns && ls_container_is(&c), "its PID namespace is "
	   "not ours");
	ok(!c.other_root, "its files are ours");
	is_u64(ls_container_tid(child, child, 1), 1, "our tid, its tid");
	is_u64(ls_container_tid(child, 1, 0), child, "its tid, ours");
	is_u64(ls_container_tid(child, 2, 0), 0, "no thread 2 in it");
	if (write(fds[1], "", 1) < 0)
		kill(child, SIGKILL);
	close(fds[1]);
	waitpid(child, NULL, 0);
}

int main(void)
{
	if (scratch_make("container"))
		return 1;
	test_contained();
	test_self();
	scratch_remove();
	/* Last: our next child is the new namespace's pid 1, and once it
	 * ends no other can be forked (scratch_remove above could not). */
	test_pid_ns();
	return tap_done();
}
