/*
 * cnode.c - the hidden node: connect, rpc with deadlines, ticks.
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <sys/socket.h>
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

static int epmd_port(void)
{
	const char *p = getenv("ERL_EPMD_PORT");
	int n = p ? atoi(p) : 0;

	return n > 0 && n < 65536 ? n : 4369;
}

/* A TCP connection to host:port within tmo_ms, or -1. */
static int tcp_connect(const char *host, int port, unsigned tmo_ms)
{
	struct addrinfo hints = { .ai_family = AF_INET,
				  .ai_socktype = SOCK_STREAM }, *ai = NULL;
	struct timeval tv = { .tv_sec = tmo_ms / 1000,
			      .tv_usec = (tmo_ms % 1000) * 1000 };
	char service[16];
	int fd = -1;

	snprintf(service, sizeof(service), "%d", port);
	if (getaddrinfo(host, service, &hints, &ai) || !ai)
		goto out;
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		goto out;
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	if (connect(fd, ai->ai_addr, ai->ai_addrlen)) {
		close(fd);
		fd = -1;
	}
out:
	if (ai)
		freeaddrinfo(ai);
	return fd;
}

/*
 * Does epmd on host know alive?  1 yes, 0 no, -1 no epmd there.  One
 * PORT_PLEASE2 request, as ei itself sends, with the same deadline: ei's
 * own failure does not say which of "no such node" and "the node refused
 * us" happened.
 */
static int epmd_knows(const char *host, const char *alive, unsigned tmo_ms)
{
	unsigned char req[260], rep[2];
	size_t n = strlen(alive);
	int fd, r = -1;

	if (n > 255)
		return 0;
	fd = tcp_connect(host, epmd_port(), tmo_ms);
	if (fd < 0)
		return -1;
	req[0] = (unsigned char)((n + 1) >> 8);
	req[1] = (unsigned char)(n + 1);
	req[2] = 122;		/* PORT_PLEASE2_REQ */
	memcpy(req + 3, alive, n);
	if (send(fd, req, n + 3, MSG_NOSIGNAL) == (ssize_t)(n + 3) &&
	    recv(fd, rep, 2, MSG_WAITALL) == 2 && rep[0] == 119)
		r = rep[1] == 0;
	close(fd);
	return r;
}

/* Why a connection failed, from ei's erl_errno and epmd. */
static int connect_error(const struct ls_cnode *c, int port, char *err,
			 size_t errlen)
{
	char alive[256], host[256];
	const char *at = strchr(c->node, '@');
	int e = erl_errno, known = 1;

	if (e == ETIMEDOUT) {
		snprintf(err, errlen, "node '%s' did not answer within %u ms",
			 c->node, c->tmo_ms);
		return -ETIMEDOUT;
	}
	snprintf(host, sizeof(host), "%s", at ? at + 1 : "localhost");
	if (port <= 0 && at) {
		snprintf(alive, sizeof(alive), "%.*s", (int)(at - c->node),
			 c->node);
		known = epmd_knows(host, alive, c->tmo_ms);
	} else if (port > 0) {
		int fd = tcp_connect(host, port, c->tmo_ms);

		if (fd < 0)
			e = ECONNREFUSED;
		else
			close(fd);
	}
	if (known < 0) {
		snprintf(err, errlen, "node '%s': no epmd at %s port %d (is "
			 "the node running? ERL_EPMD_PORT selects the port)",
			 c->node, host, epmd_port());
		return -EHOSTUNREACH;
	}
	if (!known) {
		snprintf(err, errlen, "node '%s' is not running (epmd at %s "
			 "port %d does not know it)", c->node, host,
			 epmd_port());
		return -EHOSTUNREACH;
	}
	if (e == EIO || e == EACCES) {
		snprintf(err, errlen, "node '%s' refused the handshake: wrong "
			 "cookie, or a node of an OTP release this leakscope "
			 "cannot talk to", c->node);
		return -EACCES;
	}
	if (e == ECONNREFUSED) {
		snprintf(err, errlen, "node '%s': nothing listens at its "
			 "distribution port%s", c->node,
			 port > 0 ? " (--port)" : "");
		return -ECONNREFUSED;
	}
	snprintf(err, errlen, "cannot connect to node '%s': %s", c->node,
		 strerror(e ? e : EIO));
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
	if (fd < 0) {
		int r = connect_error(c, port, err, errlen);

		explicit_bzero(&c->ec, sizeof(c->ec));
		return r;
	}
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
	int index = 0, version;
	char *copy;

	/* The tree gets its own copy: raw sub-terms (ls_term_raw) must
	 * outlive the next call, which reuses c->reply. */
	copy = malloc(c->reply.index ? (size_t)c->reply.index : 1);
	if (!copy) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	memcpy(copy, c->reply.buff, (size_t)c->reply.index);
	if (ei_decode_version(copy, &index, &version) ||
	    ls_term_decode(copy, c->reply.index, &index, &t)) {
		free(copy);
		snprintf(err, errlen, "node '%s': malformed answer to %s",
			 c->node, what);
		return -EPROTO;
	}
	reply = ls_term_at(t.root, 1);
	if (t.root->type != LS_TERM_TUPLE || t.root->n != 2 ||
	    !ls_term_is_atom(ls_term_at(t.root, 0), "rex")) {
		ls_term_free(&t);
		free(copy);
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
		free(copy);
		return -EPROTO;
	}
	/* Re-root on Reply: the arena and the copy stay with the tree. */
	t.root = (struct ls_term *)reply;
	t.owned = copy;
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
		if (r == ERL_TIMEOUT || erl_errno == ETIMEDOUT)
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
	/* ei keeps a copy of the cookie in the cnode */
	explicit_bzero(&c->ec, sizeof(c->ec));
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
