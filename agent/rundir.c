/*
 * rundir.c - choosing a runtime dir nobody else controls.
 *
 * The default dir's name is public (/dev/shm/leakscope-<uid>): any user
 * can create it first, as a directory of theirs or a symlink.  Using it
 * then would hand the attacker the control socket; refusing it would
 * leave the program without one.  The fallback sits beside it under a
 * name mkdtemp() makes, which nobody can create first, and is reused by
 * the user's next processes: the client finds it by the pattern.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../common/runtime.h"
#include "control.h"
#include "rundir.h"
#include "state.h"

/* An existing fallback of ours in parent (an open dir) named like
 * base.XXXXXX: its name into out, 0; or -ENOENT. */
static int find_fallback(int parent, const char *base, char *out, size_t cap)
{
	char buf[4096] __attribute__((aligned(8)));
	ssize_t n, off;

	while ((n = getdents64(parent, buf, sizeof(buf))) > 0)
		for (off = 0; off < n;) {
			struct dirent64 *e = (struct dirent64 *)(buf + off);
			int fd;

			off += e->d_reclen;
			if (!ls_runtime_is_fallback(base, e->d_name) ||
			    strlen(e->d_name) >= cap)
				continue;
			fd = openat(parent, e->d_name, O_RDONLY | O_DIRECTORY |
				    O_NOFOLLOW | O_CLOEXEC);
			if (fd < 0)
				continue;
			if (!ls_runtime_dir_fd_safe(fd, (unsigned)geteuid())) {
				close(fd);
				strcpy(out, e->d_name);
				return 0;
			}
			close(fd);
		}
	return -ENOENT;
}

/* dir's fallback into dir: an existing one, else a new one. */
static int use_fallback(char *dir, size_t cap)
{
	char path[4096], *slash = strrchr(dir, '/');
	size_t plen, len = strlen(dir);
	int parent, r;

	if (!slash || len + sizeof(LS_RUNTIME_FALLBACK_SUFFIX) > sizeof(path) ||
	    len + sizeof(LS_RUNTIME_FALLBACK_SUFFIX) > cap)
		return -ENAMETOOLONG;
	plen = (size_t)(slash - dir);
	memcpy(path, dir, plen ? plen : 1);
	path[plen ? plen : 1] = 0;
	parent = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (parent < 0)
		return -errno;
	r = find_fallback(parent, slash + 1, path, sizeof(path));
	close(parent);
	if (!r) {
		snprintf(dir + plen + 1, cap - plen - 1, "%s", path);
		return ls_control_prepare_dir(dir);
	}
	snprintf(path, sizeof(path), "%s" LS_RUNTIME_FALLBACK_SUFFIX, dir);
	if (!mkdtemp(path))
		return -errno;
	strcpy(dir, path);
	return ls_control_prepare_dir(dir);
}

int ls_rundir_prepare(char *dir, size_t cap)
{
	static int said;
	char was[4096];
	int r = ls_control_prepare_dir(dir);

	if (r != -EPERM && r != -ENOTDIR && r != -ELOOP)
		return r;
	snprintf(was, sizeof(was), "%s", dir);
	r = use_fallback(dir, cap);
	if (r) {
		snprintf(dir, cap, "%s", was);
		return r;
	}
	if (!said++)
		ls_state_note("runtime dir '%s' is not a directory of this "
			      "user's that only it can write (squatted?): "
			      "using '%s'", was, dir);
	return 0;
}
