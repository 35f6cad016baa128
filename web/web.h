/*
 * web.h - `leakscope serve`: the live web view and its JSON API
 * (docs/WEB-API.md).
 *
 * An HTTP server (libmicrohttpd, one thread per connection, bounded) that
 * discovers the agents the user may query, answers JSON requests about
 * them from the report library, and serves the page whose assets are built
 * into the binary.  Every API request must carry the access token in a
 * header (docs/WEB-API.md), never in a cookie; the page learns it from
 * the URL's fragment.  The server never prints: the command-line layer prints the URL
 * this module builds.
 */
#ifndef LEAKSCOPE_WEB_H
#define LEAKSCOPE_WEB_H

#include <stddef.h>

struct ls_web_opts {
	const char *listen;	/* "ADDR:PORT", "[V6]:PORT" or NULL:
				   127.0.0.1 on a free port */
	int allow_remote;	/* accept a non-loopback address */
	const char *snapshot_dir;	/* NULL: the default (docs/WEB-API.md) */
	unsigned agent_timeout_ms;	/* per socket call; 0: 3000 */
};

struct ls_web;

/*
 * Bind, start the server's threads and return.  Returns 0 and *out, or a
 * negative errno with a one-line reason in err: -EINVAL a malformed
 * listen address, -EPERM a non-loopback address without allow_remote,
 * the bind error, -ENOMEM.  Call from the main thread with the signals the
 * caller waits for already blocked: the server's threads inherit the
 * mask.  Process-wide effects: the agent socket timeout
 * (ls_client_set_timeout) and DEBUGINFOD_URLS removed from the
 * environment (so that no thread changes it later).
 */
int ls_web_start(const struct ls_web_opts *opts, struct ls_web **out,
		 char *err, size_t errlen);

/* "http://ADDR:PORT/#token=TOKEN", to open in a browser. */
const char *ls_web_url(const struct ls_web *w);

/* Where snapshots taken through the API are saved. */
const char *ls_web_snapshot_dir(const struct ls_web *w);

/* Stop serving, wait for the connections' threads, free; accepts NULL. */
void ls_web_stop(struct ls_web *w);

#endif
