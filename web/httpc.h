/*
 * httpc.h - the smallest HTTP/1.1 client the pusher needs: one POST per
 * connection, plain http only, every step bounded in time and size.
 *
 * Why our own and not libcurl: the pusher sends one request shape to
 * servers the operator names, and a few hundred lines over sockets keep
 * the build's dependencies as they are.  TLS is out of scope: a fleet
 * that pushes over the network puts a local TLS-terminating proxy (or an
 * agent such as Grafana Alloy) on the loopback side (docs/FLEET.md).
 *
 * Thread-safe: no shared state.
 */
#ifndef LEAKSCOPE_WEB_HTTPC_H
#define LEAKSCOPE_WEB_HTTPC_H

#include <stddef.h>

struct ls_url {
	char host[256];		/* name or numeric address, no brackets */
	char port[8];		/* "80" by default */
	char prefix[512];	/* path before the endpoint, no trailing '/' */
};

/* Parse "http://HOST[:PORT][/PREFIX]" ("[V6]" hosts too).  0, or -EINVAL
 * with a one-line reason (https, user info, a query, too long). */
int ls_url_parse(const char *s, struct ls_url *u, char *err, size_t errlen);

struct ls_http_req {
	const char *target;	/* path and query, already encoded */
	const char *type;	/* Content-Type */
	const char *encoding;	/* Content-Encoding or NULL */
	const char *auth;	/* Authorization value or NULL */
	const void *body;
	size_t len;
	unsigned timeout_ms;	/* the whole exchange */
};

/*
 * POST req to u and read the status line (the rest of the answer is
 * read up to 64 KiB and dropped).  Returns the HTTP status (100-599), or
 * a negative errno with a one-line reason in err: the resolver's or
 * connect's failure, -ETIMEDOUT, -EPROTO a malformed answer.
 */
int ls_http_post(const struct ls_url *u, const struct ls_http_req *req,
		 char *err, size_t errlen);

/* s with every byte outside [A-Za-z0-9-._~] as %XX, into out[cap];
 * 0 or -ENOSPC. */
int ls_url_encode(const char *s, char *out, size_t cap);

#endif
