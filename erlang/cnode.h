/*
 * cnode.h - a hidden Erlang node (erl_interface `ei`) that asks another
 * node questions with rpc, with a timeout on everything.
 *
 * ei's own ei_rpc() waits forever; every call here is ei_rpc_to() plus
 * ei_rpc_from() with a deadline, answering the peer's ticks meanwhile.
 * A timeout leaves a reply in flight that would be taken for the next
 * one's, so after any failure the connection is unusable: the caller
 * closes it.  Our node's name is fixed (`leakscope_beam`): each node name
 * becomes an atom on the target, and atoms are never collected.  SIGPIPE
 * must be ignored by the caller (a closed connection is an error return).
 *
 * Not thread-safe: one connection per thread.  Allocates with malloc.
 */
#ifndef LEAKSCOPE_ERLANG_CNODE_H
#define LEAKSCOPE_ERLANG_CNODE_H

#include <stddef.h>
#include <ei.h>
#include "term.h"

#define LS_CNODE_ALIVE "leakscope_beam"

struct ls_cnode {
	ei_cnode ec;
	int fd;			/* -1 when not connected */
	unsigned tmo_ms;	/* per connect and per rpc */
	char node[512];		/* the target, name@host */
	ei_x_buff reply;
};

/*
 * Connect to node ("name@host", or "name" for this host) with cookie; at
 * port when port > 0 (no epmd), else through the epmd that ERL_EPMD_PORT
 * names (default 4369).  Returns 0, or a negative errno with a one-line
 * reason in err:
 *   -EHOSTUNREACH  no such node (epmd does not know it, or no epmd)
 *   -ECONNREFUSED  nothing listens at the node's port
 *   -EACCES        the node refused the handshake: wrong cookie, or a
 *                  node of an OTP release this ei cannot talk to
 *   -ETIMEDOUT     no answer within tmo_ms
 *   -EINVAL        a malformed node name
 * The cookie is never copied into err.
 */
int ls_cnode_connect(struct ls_cnode *c, const char *node, const char *cookie,
		     int port, unsigned tmo_ms, char *err, size_t errlen);

/*
 * rpc:call(Node, mod, fun, Args) where args is the encoded argument list
 * (no version byte).  On success decodes the reply into *out (release with
 * ls_term_free()) and returns 0.  Errors: -ETIMEDOUT, -EPIPE (connection
 * lost), -EPROTO (the call raised on the target: {badrpc, _}, or a reply
 * that is not {rex, _}), -ENOMEM; reason in err.
 */
int ls_cnode_rpc(struct ls_cnode *c, const char *mod, const char *fun,
		 const ei_x_buff *args, struct ls_term_tree *out, char *err,
		 size_t errlen);

/* Wait ms milliseconds, answering ticks.  0, or -EPIPE when the
 * connection went away. */
int ls_cnode_idle(struct ls_cnode *c, unsigned ms);

void ls_cnode_close(struct ls_cnode *c);

/* Args helpers: an empty argument list, [Atom]. */
int ls_cnode_args_none(ei_x_buff *x);
/* Encode the export fun M:F/A into x (for lists:map/zipwith). */
int ls_cnode_encode_fun(ei_x_buff *x, const char *mod, const char *fun,
			int arity);

#endif
