/*
 * exporter.c - `leakscope serve --metrics`: GET /metrics in the Prometheus
 * text format or OpenMetrics (lib/metrics.h, docs/FLEET.md).
 *
 * A listener of its own, apart from the web view's: no token (a scraper
 * cannot hold one that changes at every start, and the answer is figures
 * and function names, never memory contents or actions), one request at
 * a time (libmicrohttpd's single polling thread): a scrape walks every
 * agent, and two at once would only ask each agent twice.
 *
 * The symbolizers of one scrape share a pool of opened modules (the
 * costly part: libc's debug information), kept across scrapes and
 * renewed every POOL_SCRAPES so that modules of programs that ended do
 * not stay open for ever.
 */
#include <errno.h>
#include <microhttpd.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include "../lib/client.h"
#include "../lib/metrics.h"
#include "../lib/symbolize.h"
#include "fleet.h"
#include "internal.h"

#define MAX_CONNECTIONS 16
#define CONNECTION_TIMEOUT_S 30
#define CONNECTION_MEMORY (32 * 1024)
#define POOL_SCRAPES 64

struct ls_exporter {
	struct MHD_Daemon *mhd;
	int listen_fd;
	char url[128];
	size_t max_sites;
	struct ls_push *push;
	struct ls_sympool *pool;	/* only the polling thread uses it */
	unsigned pool_uses;
};

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Ask pid's agent and reduce its snapshot into p; 0 or a negative errno. */
static int collect_one(struct ls_exporter *e, pid_t pid,
		       struct ls_metrics_proc *p)
{
	struct ls_snapshot snap;
	struct ls_symbolizer *sym;
	char err[1024], container[80];
	int r = ls_client_snapshot(pid, 0, &snap, err, sizeof(err));

	if (r)
		return r;
	ls_metrics_container(pid, container, sizeof(container));
	sym = ls_symbolizer_new_shared(&snap, e->pool);
	r = sym ? ls_metrics_proc_build(p, &snap, sym, e->max_sites, container)
		: -ENOMEM;
	ls_symbolizer_free(sym);
	ls_snapshot_release(&snap);
	return r;
}

static int renew_pool(struct ls_exporter *e)
{
	if (e->pool && ++e->pool_uses < POOL_SCRAPES)
		return 0;
	ls_sympool_free(e->pool);
	e->pool_uses = 0;
	e->pool = ls_sympool_new();
	return e->pool ? 0 : -ENOMEM;
}

/* Every process's metrics, then the pusher's, into body. */
static int scrape(struct ls_exporter *e, int om, char **body, size_t *len)
{
	struct ls_metrics_scrape sc = { 0 };
	struct ls_metrics_proc *procs = NULL;
	double t0 = mono_s();
	pid_t *pids = NULL;
	ssize_t n = ls_web_agents_list(&pids), i;
	size_t got = 0;
	FILE *out;
	int r = n < 0 ? (int)n : renew_pool(e);

	if (!r && n > 0 && !(procs = calloc((size_t)n, sizeof(*procs))))
		r = -ENOMEM;
	for (i = 0; !r && i < n; i++) {
		int one = collect_one(e, pids[i], &procs[got]);

		if (one == -ENOMEM)
			r = one;
		else if (one)	/* gone since listed, stuck, refused */
			sc.unreachable++;
		else
			got++;
	}
	sc.collect_s = mono_s() - t0;
	if (!r && !(out = open_memstream(body, len)))
		r = -ENOMEM;
	if (!r) {
		r = ls_metrics_write(out, procs, got, &sc, om);
		ls_push_write_metrics(e->push, out, om);
		if (ls_metrics_end(out, om) && !r)
			r = -EIO;
		if (fclose(out) && !r)
			r = -EIO;
	}
	for (i = 0; i < (ssize_t)got; i++)
		ls_metrics_proc_release(&procs[i]);
	free(procs);
	free(pids);
	return r;
}

static enum MHD_Result reply(struct MHD_Connection *c, unsigned status,
			     const char *type, char *body, size_t len)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(len, body, MHD_RESPMEM_MUST_FREE);
	if (!resp) {
		free(body);
		return MHD_NO;
	}
	MHD_add_response_header(resp, "Content-Type", type);
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	if (status == MHD_HTTP_METHOD_NOT_ALLOWED)
		MHD_add_response_header(resp, "Allow", "GET, HEAD");
	ret = MHD_queue_response(c, status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result text_reply(struct MHD_Connection *c, unsigned status,
				  const char *msg)
{
	char *body = strdup(msg);

	return reply(c, status, "text/plain; charset=utf-8", body,
		     body ? strlen(body) : 0);
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct ls_exporter *e = cls;
	char *body = NULL;
	size_t len = 0;
	int om, r;

	if (!*con_cls) {	/* headers only so far */
		*con_cls = e;
		return MHD_YES;
	}
	if (*upload_size)	/* no request here has a body */
		return MHD_NO;
	if (strcmp(method, "GET") && strcmp(method, "HEAD"))
		return text_reply(c, MHD_HTTP_METHOD_NOT_ALLOWED,
				  "only GET and HEAD\n");
	if (strcmp(url, "/metrics"))
		return text_reply(c, MHD_HTTP_NOT_FOUND,
				  "not found: the metrics are at /metrics\n");
	om = ls_metrics_wants_openmetrics(MHD_lookup_connection_value(c,
					  MHD_HEADER_KIND, "Accept"));
	r = scrape(e, om, &body, &len);
	if (r) {
		free(body);
		return text_reply(c, MHD_HTTP_INTERNAL_SERVER_ERROR,
				  r == -ENOMEM ? "out of memory\n" :
				  "cannot list the traced processes\n");
	}
	return reply(c, MHD_HTTP_OK, ls_metrics_content_type(om), body, len);
}

int ls_exporter_start(const struct ls_exporter_opts *o, struct ls_push *push,
		      struct ls_exporter **out, char *err, size_t errlen)
{
	struct ls_exporter *e = calloc(1, sizeof(*e));
	char host[64] = "";
	unsigned port;
	int r;

	*out = NULL;
	if (!e) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	e->listen_fd = -1;
	e->push = push;
	e->max_sites = o->max_sites ? o->max_sites : LS_EXPORTER_DEFAULT_SITES;
	r = ls_web_open_listener(o->listen ? o->listen :
				 LS_EXPORTER_DEFAULT_LISTEN, o->allow_remote,
				 &e->listen_fd, &port, host, sizeof(host), err,
				 errlen);
	if (r)
		goto fail;
	snprintf(e->url, sizeof(e->url), strchr(host, ':') ?
		 "http://[%s]:%u/metrics" : "http://%s:%u/metrics", host, port);
	unsetenv("DEBUGINFOD_URLS");	/* before any thread reads it */
	e->mhd = MHD_start_daemon(MHD_USE_INTERNAL_POLLING_THREAD |
				  (strchr(host, ':') ? MHD_USE_IPv6 : 0), 0,
				  NULL, NULL, on_request, e,
				  MHD_OPTION_LISTEN_SOCKET, e->listen_fd,
				  MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS,
				  MHD_OPTION_CONNECTION_TIMEOUT,
				  (unsigned)CONNECTION_TIMEOUT_S,
				  MHD_OPTION_CONNECTION_MEMORY_LIMIT,
				  (size_t)CONNECTION_MEMORY, MHD_OPTION_END);
	if (!e->mhd) {
		snprintf(err, errlen, "cannot start the metrics server");
		r = -EIO;
		goto fail;
	}
	e->listen_fd = -1;	/* libmicrohttpd closes it */
	*out = e;
	return 0;
fail:
	ls_exporter_stop(e);
	return r;
}

const char *ls_exporter_url(const struct ls_exporter *e)
{
	return e->url;
}

void ls_exporter_stop(struct ls_exporter *e)
{
	if (!e)
		return;
	if (e->mhd)
		MHD_stop_daemon(e->mhd);
	if (e->listen_fd >= 0)
		close(e->listen_fd);
	ls_sympool_free(e->pool);
	free(e);
}
