/*
 * rundir.h - the agent's runtime dir, made safe before the control
 * socket and the post-mortem file go in it (common/runtime.h).
 */
#ifndef LEAKSCOPE_AGENT_RUNDIR_H
#define LEAKSCOPE_AGENT_RUNDIR_H

#include <stddef.h>
#include <sys/types.h>

/*
 * Make dir (cap bytes, NUL-terminated) a usable runtime dir of this
 * effective user: created 0700 when missing; when it is squatted (a
 * symlink, another user's, writable by others) dir is replaced by its
 * private fallback "<dir>.XXXXXX" (an existing safe one, else a new one
 * from mkdtemp()) and a note says so, once per process.  Returns 0, or a
 * negative errno (dir unchanged).  Calls no allocator: it may run on the
 * control thread.  Not thread-safe.
 */
int ls_rundir_prepare(char *dir, size_t cap);

/*
 * At detach, once the socket and the post-mortem file are gone: the dir
 * the last ls_rundir_prepare() made (not one it found), removed when it
 * is empty, by its name in its parent opened without following a link.
 * Anything else is left as it is.  Not thread-safe.
 */
void ls_rundir_remove_made(void);

/*
 * For a process about to switch to uid (agent/switch.c), while still
 * root: dir, uid's default runtime dir, is squatted; replace it with
 * uid's private fallback "<dir>.XXXXXX" by the same rule (an existing one
 * of uid's that passes the checks, else a new one from mkdtemp(), given
 * to uid:gid through its fd).  Returns the fallback's fd, or a negative
 * errno (dir unchanged).  No path under a dir another user controls is
 * followed.
 */
int ls_rundir_fallback_for(char *dir, size_t cap, uid_t uid, gid_t gid);

#endif
