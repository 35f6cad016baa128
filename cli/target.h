/*
 * target.h - what a live command works on: a running pid (asked over its
 * control socket), a saved snapshot file, or a post-mortem file.
 */
#ifndef LEAKSCOPE_TARGET_H
#define LEAKSCOPE_TARGET_H

#include <sys/types.h>
#include "../lib/snapshot.h"

/* A decimal pid > 0?  Sets *pid. */
int ls_target_is_pid(const char *s, pid_t *pid);

/*
 * Load target into *snap: a pid (with the block list when blocks), a
 * snapshot file, or a post-mortem file (by its magic); with postmortem, a
 * pid means that pid's post-mortem file.  Returns 0, or prints
 * "leakscope: ..." and returns a negative errno.
 */
int ls_target_load(const char *target, int postmortem, int blocks,
		   struct ls_snapshot *snap);

/* Send a one-line request to pid's agent and read a one-line reply into
 * buf; 0 or a negative errno (printed). */
int ls_target_request(pid_t pid, const char *req, char *buf, size_t cap);

#endif
