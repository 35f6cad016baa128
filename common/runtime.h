/*
 * runtime.h - where a user's agents keep their sockets and post-mortem
 * files, computed the same way by the agent and the command-line tool.
 *
 *   $LEAKSCOPE_RUNTIME_DIR, else $XDG_RUNTIME_DIR/leakscope, else
 *   /dev/shm/leakscope-<uid> (memory: survives the process, not a reboot),
 *   else /tmp/leakscope-<uid>.
 *
 * A runtime dir is used only when it is safe for its user (the rules of
 * ls_runtime_dir_safe() below): a real directory, not a symlink, owned by
 * the user, writable by nobody else.  Anyone can create
 * /dev/shm/leakscope-<uid> before that user does.  An agent that finds
 * its dir squatted that way uses a private fallback instead: "<dir>.XXXXXX"
 * beside it, made by mkdtemp() (mode 0700, a name nobody can take first),
 * or an existing one of its own, and says so once on stderr.  The client
 * looks in the dir, then in the "<dir>.??????" siblings that pass the
 * same checks, for "<pid>.sock" or "<pid>.pm"; before sending anything it
 * also checks the socket (lstat: a socket of the target's user) and the
 * peer (SO_PEERCRED: the target's pid).
 */
#ifndef LEAKSCOPE_RUNTIME_H
#define LEAKSCOPE_RUNTIME_H

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "contract.h"

/* The rules above for a file system that has /dev/shm or not (a
 * container's, seen from outside it). */
static inline int ls_runtime_dir_pick(const char *rt, const char *xdg,
				      unsigned uid, int has_shm, char *buf,
				      size_t cap)
{
	int n;

	if (rt && *rt)
		n = snprintf(buf, cap, "%s", rt);
	else if (xdg && *xdg)
		n = snprintf(buf, cap, "%s/leakscope", xdg);
	else if (has_shm)
		n = snprintf(buf, cap, "/dev/shm/leakscope-%u", uid);
	else
		n = snprintf(buf, cap, "/tmp/leakscope-%u", uid);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

static inline int ls_runtime_dir_from(const char *rt, const char *xdg,
				      unsigned uid, char *buf, size_t cap)
{
	struct stat st;

	return ls_runtime_dir_pick(rt, xdg, uid, !stat("/dev/shm", &st) &&
				   S_ISDIR(st.st_mode), buf, cap);
}

/*
 * A dir chosen for a process that has since become another user (a
 * pre-fork worker that setuid()s) exists but is owned by someone else:
 * that user can create nothing there, so the user's default dir (the
 * rules above without the environment) is used instead.  Returns 1 when
 * buf was replaced, 0 when it stands, -ENAMETOOLONG.
 */
static inline int ls_runtime_dir_owned(unsigned uid, char *buf, size_t cap)
{
	struct stat st;

	if (stat(buf, &st) || st.st_uid == uid)
		return 0;
	return ls_runtime_dir_from(NULL, NULL, uid, buf, cap) ?: 1;
}

/* The suffix mkdtemp() turns into a squatted dir's private fallback. */
#define LS_RUNTIME_FALLBACK_SUFFIX ".XXXXXX"

/*
 * Whether st (an fstat() of a dir opened with O_NOFOLLOW) is a safe
 * runtime dir for uid: a directory owned by uid that neither its group
 * nor others can write.  0, or -EPERM.
 */
static inline int ls_runtime_dir_safe(const struct stat *st, unsigned uid)
{
	return S_ISDIR(st->st_mode) && st->st_uid == uid &&
	       !(st->st_mode & 022) ? 0 : -EPERM;
}

/* The same of an open dir fd. */
static inline int ls_runtime_dir_fd_safe(int fd, unsigned uid)
{
	struct stat st;

	return fstat(fd, &st) ? -errno : ls_runtime_dir_safe(&st, uid);
}

/*
 * Open dir for uid when it is safe (above): a directory fd (O_CLOEXEC),
 * -ENOENT, or -EPERM when it is a symlink, not a dir, another user's or
 * writable by others (squatted).  Path operations go through the fd.
 */
static inline int ls_runtime_dir_open(const char *dir, unsigned uid)
{
	int fd = open(dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	int r;

	if (fd < 0)
		return errno == ELOOP || errno == ENOTDIR ? -EPERM : -errno;
	r = ls_runtime_dir_fd_safe(fd, uid);
	if (r) {
		close(fd);
		return r;
	}
	return fd;
}

/* Whether name is a fallback of dir's: "<base of dir>.XXXXXX". */
static inline int ls_runtime_is_fallback(const char *dirbase, const char *name)
{
	size_t n = strlen(dirbase), k = strlen(LS_RUNTIME_FALLBACK_SUFFIX);

	return !strncmp(name, dirbase, n) && name[n] == '.' &&
	       strlen(name + n) == k && !strchr(name + n + 1, '/');
}

/* This process's runtime dir. */
static inline int ls_runtime_dir(char *buf, size_t cap)
{
	return ls_runtime_dir_from(getenv(LS_ENV_RUNTIME_DIR),
				   getenv("XDG_RUNTIME_DIR"),
				   (unsigned)getuid(), buf, cap);
}

#endif
