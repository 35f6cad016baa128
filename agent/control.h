/*
 * control.h - the agent's control socket.
 *
 * A Unix stream socket per process, <runtime dir>/<pid>.sock, mode 0600,
 * served by one agent thread (never by an allocation hook), which also
 * takes the growth samples (pmfile.h).  The runtime dir (common/runtime.h)
 * is created 0700 and refused unless it is a real directory owned by the
 * user.  Only the same user or root may talk to it
 * (SO_PEERCRED).  The protocol is in docs/CONTROL-PROTOCOL.md.
 */
#ifndef LEAKSCOPE_AGENT_CONTROL_H
#define LEAKSCOPE_AGENT_CONTROL_H

#include <stddef.h>
#include <sys/types.h>
#include "../common/contract.h"	/* verbs, LS_CONTROL_MAX_REQUEST */

/* Start the control thread; 0 or a negative errno.  Outside hooks.
 * reset serves the "reset" verb (it forgets every live block). */
int ls_control_start(void (*reset)(void));
/*
 * The control thread's kernel tid, waiting up to a second for a thread
 * just started to report it; 0 when none runs.  `leakscope attach` leaves
 * it running while it stops the program's threads.
 */
pid_t ls_control_tid_wait(void);
/*
 * In an attached process: serve the detach verb with detach (0, or a
 * negative errno and a reason in why); after answering OK the control
 * thread closes its socket and ends.  Without it, detach is refused.
 */
void ls_control_on_detach(int (*detach)(char *why, size_t len));
/* Remove this process's socket (at exit). */
void ls_control_stop(void);
/* In a fork child: the control thread did not survive; drop its state
 * without touching the parent's socket. */
void ls_control_forget_child(void);

/*
 * Around a call that needs a single-threaded process (unshare of a user
 * namespace, setns): end the control thread, keeping its socket (returns
 * 1; 0 when none ran), then start a new one on the same socket.
 * Connections made meanwhile wait in the socket's backlog.
 */
int ls_control_pause(void);
void ls_control_resume(void);
/*
 * Move the socket into dir, whose fd is dfd (a directory of uid's,
 * checked by the caller), for a process about to become uid:gid, still
 * privileged: a new socket bound there by this thread as uid:gid takes
 * the listening descriptor's number, the old one goes.  0 or a negative
 * errno (the old socket stays).
 */
int ls_control_move(int dfd, const char *dir, uid_t uid, gid_t gid);

/* The control thread's id once it runs in this process, else 0. */
pid_t ls_control_tid(void);

/* Create the runtime dir (common/runtime.h) if needed and check that it
 * is ours and private; 0 or -errno.  *made (when not NULL): whether this
 * call created it. */
int ls_control_prepare_dir(const char *dir, int *made);

#endif
