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

/* The dir the last ls_rundir_prepare() made (it was not there), or "":
 * the only one ls_rundir_remove_made() may remove. */
static char made[4096];

/* An existing fallback of uid's in parent (an open dir) named like
 * base.XXXXXX: its name into out, 0; or -ENOENT. */
static int find_fallback(int parent, const char *base, unsigned uid,
			 char *out, size_t cap)
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
			if (!ls_runtime_dir_fd_safe(fd, uid)) {
				close(fd);
				strcpy(out, e->d_name);
				return 0;
			}
			close(fd);
		}
	return -ENOENT;
}

/*
 * dir's fallback for uid: the name of an existing one into dir and 0, 1
 * when there is none (dir unchanged), or -errno.  The parent dir's fd
 * into *parent (to be closed) on 0 and 1.
 */
static int existing_fallback(char *dir, size_t cap, unsigned uid,
			     int *parent)
{
	char path[4096], *slash = strrchr(dir, '/');
	size_t plen, len = strlen(dir);

	if (!slash || len + sizeof(LS_RUNTIME_FALLBACK_SUFFIX) > sizeof(path) ||
	    len + sizeof(LS_RUNTIME_FALLBACK_SUFFIX) > cap)
		return -ENAMETOOLONG;
	plen = (size_t)(slash - dir);
	memcpy(path, dir, plen ? plen : 1);
	path[plen ? plen : 1] = 0;
	*parent = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (*parent < 0)
		return -errno;
	if (find_fallback(*parent, slash + 1, uid, path, sizeof(path)))
		return 1;
	snprintf(dir + plen + 1, cap - plen - 1, "%s", path);
	return 0;
}

/* dir's fallback into dir: an existing one, else a new one. */
static int use_fallback(char *dir, size_t cap)
{
	char path[4096];
	int parent, r = existing_fallback(dir, cap, (unsigned)geteuid(),
					  &parent);

	if (r < 0)
		return r;
	close(parent);
	if (!r)
		return ls_control_prepare_dir(dir, NULL);
	snprintf(path, sizeof(path), "%s" LS_RUNTIME_FALLBACK_SUFFIX, dir);
	if (!mkdtemp(path))
		return -errno;
	strcpy(dir, path);
	snprintf(made, sizeof(made), "%s", path);
	return ls_control_prepare_dir(dir, NULL);
}

int ls_rundir_fallback_for(char *dir, size_t cap, uid_t uid, gid_t gid)
{
	char path[4096];
	const char *name;
	struct stat st;
	int parent, fd, r = existing_fallback(dir, cap, (unsigned)uid, &parent);

	if (r < 0)
		return r;
	if (!r) {
		/* uid's own: whatever is there now, opened without following
		 * a link, must still pass the checks */
		fd = openat(parent, strrchr(dir, '/') + 1, O_RDONLY |
			    O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		close(parent);
		if (fd < 0)
			return -errno;
		if ((r = ls_runtime_dir_fd_safe(fd, (unsigned)uid))) {
			close(fd);
			return r;
		}
		return fd;
	}
	/* A new one, made here under a name nobody could take first; in
	 * the sticky parent (/dev/shm, /tmp) nobody else can move it. */
	snprintf(path, sizeof(path), "%s" LS_RUNTIME_FALLBACK_SUFFIX, dir);
	if (!mkdtemp(path)) {
		close(parent);
		return -errno;
	}
	name = strrchr(path, '/') + 1;
	fd = openat(parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		    O_CLOEXEC);
	close(parent);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) || !S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    fchown(fd, uid, gid) || fchmod(fd, 0700)) {
		r = errno ? -errno : -EPERM;
		close(fd);
		return r;
	}
	snprintf(dir, cap, "%s", path);
	return fd;
}

int ls_rundir_prepare(char *dir, size_t cap)
{
	static int said;
	char was[4096];
	int fresh = 0, r = ls_control_prepare_dir(dir, &fresh);

	made[0] = 0;
	if (!r && fresh)
		snprintf(made, sizeof(made), "%s", dir);
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

void ls_rundir_remove_made(void)
{
	char parent[sizeof(made)], *slash;
	int fd;

	snprintf(parent, sizeof(parent), "%s", made);
	made[0] = 0;
	slash = strrchr(parent, '/');
	if (!slash || !slash[1] || slash == parent)
		return;
	*slash = 0;
	fd = open(parent, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return;
	/* ENOTEMPTY: another process's socket or post-mortem file is in
	 * it, and it stays; ENOTDIR: it is no longer the dir we made. */
	unlinkat(fd, slash + 1, AT_REMOVEDIR);
	close(fd);
}
