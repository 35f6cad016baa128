/*
 * runtime.h - where a user's agents keep their sockets and post-mortem
 * files, computed the same way by the agent and the command-line tool.
 *
 *   $LEAKSCOPE_RUNTIME_DIR, else $XDG_RUNTIME_DIR/leakscope, else
 *   /dev/shm/leakscope-<uid> (memory: survives the process, not a reboot),
 *   else /tmp/leakscope-<uid>.
 */
#ifndef LEAKSCOPE_RUNTIME_H
#define LEAKSCOPE_RUNTIME_H

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
#include "contract.h"

static inline int ls_runtime_dir_from(const char *rt, const char *xdg,
				      unsigned uid, char *buf, size_t cap)
{
	struct stat st;
	int n;

	if (rt && *rt)
		n = snprintf(buf, cap, "%s", rt);
	else if (xdg && *xdg)
		n = snprintf(buf, cap, "%s/leakscope", xdg);
	else if (!stat("/dev/shm", &st) && S_ISDIR(st.st_mode))
		n = snprintf(buf, cap, "/dev/shm/leakscope-%u", uid);
	else
		n = snprintf(buf, cap, "/tmp/leakscope-%u", uid);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
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

/* This process's runtime dir. */
static inline int ls_runtime_dir(char *buf, size_t cap)
{
	return ls_runtime_dir_from(getenv(LS_ENV_RUNTIME_DIR),
				   getenv("XDG_RUNTIME_DIR"),
				   (unsigned)getuid(), buf, cap);
}

#endif
