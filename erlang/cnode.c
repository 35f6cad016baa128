/*
 * cnode.c - the hidden node: connect, rpc with deadlines, ticks.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "cnode.h"

static int ei_ready;

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

/*
 * Our own name, in the target's style: a node with long names (a dot in
 * its host part) refuses short-named peers and the other way round.
 */
static int our_names(const char *host, char *thishost, size_t hcap,
		     char *thisnode, size_t ncap)
{
	char local[256] = "localhost";

	if (strchr(host, '.')) {
		snprintf(thishost, hcap, "%s", host);
	} else {
		if (gethostname(local, sizeof(local) - 1))
			snprintf(local, sizeof(local), "localhost");
		local[strcspn(local, ".")] = 0;
		snprintf(thishost, hcap, "%s", local);
	}
	if ((size_t)snprintf(thisnode, ncap, "%s@%s", LS_CNODE_ALIVE,
			     thishost) >= ncap)
		return -EINVAL;
	return 0;
}

/* Why a connection failed, from ei's erl_errno. */
static int connect_error(const struct ls_cnode *c, int port, char *err,
			 size_t errlen)
{
	int e = erl_errno;

	if (e == ETIMEDOUT) {
		snprintf(err, errlen, "node '%s' did not answer within %u ms",
			 c->node, c->tmo_ms);
		return -ETIMEDOUT;
	}
	if (e == EIO || e == EACCES) {
		snprintf(err, errlen, "node '%s' refused the handshake: wrong "
			 "cookie, or a node of an OTP release this leakscope "
			 "cannot talk to", c->node);
		return -EACCES;
	}
	if (port > 0 || e == ECONNREFUSED) {
		snprintf(err, errlen, "node '%s': nothing listens at its "
			 "distribution port%s", c->node,
			 port > 0 ? " (--port)" : "");
		return -ECONNREFUSED;
	}
	snprintf(err, errlen, "node '%s' is not running (epmd at port %s "
		 "does not know it, or no epmd)", c->node,
		 getenv("ERL_EPMD_PORT") ? getenv("ERL_EPMD_PORT") : "4369");
	return -EHOSTUNREACH;
}

int ls_cnode_connect(struct ls_cnode *c, const char *node, const char *cookie,
		     int port, unsigned tmo_ms, char *err, size_t errlen)
{
	char host[256], thishost[256], thisnode[512];
	struct in_addr addr = { .s_addr = htonl(INADDR_LOOPBACK) };
	const char *at;
	int fd;

	memset(c, 0, sizeof(*c));
	c->fd = -1;
	c->tmo_ms = tmo_ms;
	if (!*node || strchr(node, ' ') || strlen(node) >= sizeof(c->node) - 256) {
		snprintf(err, errlen, "invalid node name '%s'", node);
		return -EINVAL;
	}
	at = strchr(node, '@');
	if (at) {
		snprintf(host, sizeof(host), "%s", at + 1);
		snprintf(c->node, sizeof(c->node), "%s", node);
	} else {
		our_names("", host, sizeof(host), thisnode, sizeof(thisnode));
		snprintf(c->node, sizeof(c->node), "%s@%s", node, host);
	}
	if (at == node || !*host || strchr(host, '@')) {
		snprintf(err, errlen, "invalid node name '%s'", node);
		return -EINVAL;
	}
	if (!ei_ready) {
		ei_init();
		ei_ready = 1;
	}
	if (our_names(host, thishost, sizeof(thishost), thisnode,
		      sizeof(thisnode)) ||
	    ei_connect_xinit(&c->ec, thishost, LS_CNODE_ALIVE, thisnode, &addr,
			     cookie, (unsigned)(time(NULL) & 0x7fffffff) | 1) < 0) {
		snprintf(err, errlen, "cannot set up a C node for '%s'",
			 c->node);
		return -EINVAL;
	}
	if (port > 0)
		fd = ei_connect_host_port_tmo(&c->ec, host, port, tmo_ms);
	else
		fd = ei_connect_tmo(&c->ec, c->node, tmo_ms);
	if (fd < 0)
		return connect_error(c, port, err, errlen);
	c->fd = fd;
	if (ei_x_new(&c->reply)) {
		ls_cnode_close(c);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	return 0;
}

/* The reply {rex, Reply} -> Reply decoded; {badrpc, _} is an error. */
static int take_reply(struct ls_cnode *c, const char *what,
		      struct ls_term_tree *out, char *err, size_t errlen)
{
	const struct ls_term *reply;
	struct ls_term_tree t;
	int index = 0, version, r;

	if (ei_decode_version(c->reply.buff, &index, &version) ||
	    (r = ls_term_decode(c->reply.buff, &index, &t))) {
		snprintf(err, errlen, "node '%s': malformed answer to %s",
			 c->node, what);
		return -EPROTO;
	}
	reply = ls_term_at(t.root, 1);
	if (t.root->type != LS_TERM_TUPLE || t.root->n != 2 ||
	    !ls_term_is_atom(ls_term_at(t.root, 0), "rex")) {
		ls_term_free(&t);
		snprintf(err, errlen, "node '%s': unexpected answer to %s",
			 c->node, what);
		return -EPROTO;
	}
	if (reply->type == LS_TERM_TUPLE && reply->n == 2 &&
	    ls_term_is_atom(&reply->kids[0], "badrpc")) {
		char why[128];

		snprintf(err, errlen, "node '%s': %s failed on the node (%s)",
			 c->node, what, ls_term_show(&reply->kids[1], why,
						     sizeof(why)));
		ls_term_free(&t);
		return -EPROTO;
	}
	/* Re-root on Reply: the arena stays with the tree. */
	t.root = (struct ls_term *)reply;
	*out = t;
	return 0;
}

int ls_cnode_rpc(struct ls_cnode *c, const char *mod, const char *fun,
		 const ei_x_buff *args, struct ls_term_tree *out, char *err,
		 size_t errlen)
{
	uint64_t deadline = now_ms() + c->tmo_ms;
	char what[256];
	erlang_msg msg;
	int r;

	snprintf(what, sizeof(what), "%s:%s", mod, fun);
	if (c->fd < 0) {
		snprintf(err, errlen, "node '%s': not connected", c->node);
		return -EPIPE;
	}
	if (ei_rpc_to(&c->ec, c->fd, (char *)mod, (char *)fun, args->buff,
		      args->index) < 0) {
		snprintf(err, errlen, "node '%s': connection lost", c->node);
		return -EPIPE;
	}
	for (;;) {
		uint64_t now = now_ms();

		if (now >= deadline)
			goto timeout;
		c->reply.index = 0;
		r = ei_rpc_from(&c->ec, c->fd, (int)(deadline - now), &msg,
				&c->reply);
		if (r == ERL_TICK)
			continue;
		if (r == ERL_MSG)
			break;
		if (erl_errno == ETIMEDOUT)
			goto timeout;
		snprintf(err, errlen, "node '%s': connection lost during %s",
			 c->node, what);
		return -EPIPE;
	}
	return take_reply(c, what, out, err, errlen);
timeout:
	snprintf(err, errlen, "node '%s': no answer to %s within %u ms",
		 c->node, what, c->tmo_ms);
	return -ETIMEDOUT;
}

int ls_cnode_idle(struct ls_cnode *c, unsigned ms)
{
	uint64_t deadline = now_ms() + ms;
	erlang_msg msg;
	ei_x_buff x;
	int r = 0;

	if (ei_x_new(&x))
		return -ENOMEM;
	for (;;) {
		uint64_t now = now_ms();

		if (now >= deadline)
			break;
		x.index = 0;
		r = ei_xreceive_msg_tmo(c->fd, &msg, &x,
					(unsigned)(deadline - now));
		if (r == ERL_ERROR && erl_errno != ETIMEDOUT) {
			r = -EPIPE;
			break;
		}
		/* A tick is answered by ei; a stray message is dropped. */
		r = 0;
	}
	ei_x_free(&x);
	return r;
}

void ls_cnode_close(struct ls_cnode *c)
{
	if (c->fd >= 0)
		ei_close_connection(c->fd);
	c->fd = -1;
	if (c->reply.buff)
		ei_x_free(&c->reply);
}

int ls_cnode_args_none(ei_x_buff *x)
{
	return ei_x_new(x) || ei_x_encode_empty_list(x) ? -ENOMEM : 0;
}

int ls_cnode_encode_fun(ei_x_buff *x, const char *mod, const char *fun,
			int arity)
{
	erlang_fun f;

	memset(&f, 0, sizeof(f));
	f.arity = arity;
	f.type = EI_FUN_EXPORT;
	snprintf(f.module, sizeof(f.module), "%s", mod);
	f.u.exprt.func = (char *)fun;
	f.u.exprt.func_allocated = 0;
	return ei_x_encode_fun(x, &f) ? -ENOMEM : 0;
}
