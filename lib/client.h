/*
 * client.h - talking to a running agent over its control socket
 * (agent/control.h, docs/CONTROL-PROTOCOL.md).
 */
#ifndef LEAKSCOPE_CLIENT_H
#define LEAKSCOPE_CLIENT_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "snapshot.h"

/*
 * Bound every connect, send and receive on an agent's socket to ms
 * milliseconds (0: the default, 30 s), so that a stuck agent cannot hold
 * its caller longer.  Process-wide; safe to call from any thread, meant to
 * be called once at start.  A whole reply must also come within four
 * times that: an agent that trickles its bytes is cut off with
 * -ETIMEDOUT.
 *
 * The other functions are thread-safe: they share no state.
 */
void ls_client_set_timeout(unsigned ms);

/*
 * Cap every reply read from an agent (a snapshot parsed or copied) to
 * bytes (0: the default, LS_CLIENT_REPLY_MAX): a bigger one fails with
 * -EFBIG, so what a peer streams costs at most about that much memory
 * or disk.  Process-wide, like the timeout.
 */
#define LS_CLIENT_REPLY_MAX (4ull << 30)
void ls_client_set_reply_max(uint64_t bytes);

/* The socket path of pid's agent, computed as the agent does. */
int ls_client_socket_path(pid_t pid, char *buf, size_t cap);

/*
 * Ask pid's agent for a snapshot (with the block list when blocks is set)
 * and read it into *snap.  Returns 0, or a negative errno with a one-line
 * reason in err: -ESRCH no such process, -EAGAIN it is stopped (SIGSTOP:
 * its agent cannot answer), -ENOENT no agent in it,
 * -ECONNREFUSED stale socket, -EACCES not allowed, -EPERM the runtime
 * dir, the socket or the peer is not the target's (docs/SECURITY.md),
 * -EFBIG a reply over the cap, -EPROTO the agent
 * answered with an error, -EINVAL corrupt reply.
 */
int ls_client_snapshot(pid_t pid, int blocks, struct ls_snapshot *snap,
		       char *err, size_t errlen);

/*
 * Send a one-line request and read the agent's one-line reply (without
 * its newline) into reply.  Errors as ls_client_snapshot(); an "ERR ..."
 * reply gives -EPROTO.
 */
int ls_client_request(pid_t pid, const char *req, char *reply, size_t cap,
		      char *err, size_t errlen);

/*
 * Ask for a snapshot and copy the raw bytes to out_fd, unparsed.  Errors
 * as ls_client_snapshot(); the caller validates what it saved.
 */
int ls_client_fetch(pid_t pid, int blocks, int out_fd, char *err,
		    size_t errlen);

/*
 * A reachability check (docs/REACHABILITY.md): ask pid's agent to get
 * ready (by method LS_CHECK_CONCURRENT it first marks while the program
 * runs), stop every thread but its control thread (lib/ptrace.h), send
 * their registers, let them go as soon as the agent has finished the
 * mark or cloned the image (LS_CHECK_FORK, and the agent's fallback), and
 * read the snapshot with categories.  Sets snap->reach_pause_ns.  Errors
 * as ls_client_snapshot(), plus ptrace's (-EPERM, -EBUSY, -ETIMEDOUT) and
 * -ESRCH when the process exits midway.  Not thread-safe (ptrace ties the
 * stop to the calling thread).
 */
enum ls_check_method { LS_CHECK_CONCURRENT = 0, LS_CHECK_FORK = 1 };
/* budget_us: the concurrent method's pause budget (docs/REACHABILITY.md,
 * "A bounded pause"), LS_CHECK_BUDGET_US by default, 0 for none. */
int ls_client_check(pid_t pid, int blocks, enum ls_check_method method,
		    uint64_t budget_us, struct ls_snapshot *snap, char *err,
		    size_t errlen);

#endif
