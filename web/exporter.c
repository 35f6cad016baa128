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
 * Agents are asked BATCH at a time, each batch at once; none is asked,
 * and none is waited for, after half the scraper's timeout
 * (X-Prometheus-Scrape-Timeout-Seconds) has passed: the other half is
 * for symbolizing (cold, libc's debug information alone takes a few
 * hundred ms) and writing.  One that timed out or was not waited for is
 * skipped for LS_STUCK_S, unless its answer did come after all (an
 * agent slow under load is not stuck).  Those count as unreachable, and
 * the scrape answers in time.
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
#include "agents.h"
#include "server.h"

#define MAX_CONNECTIONS 16
#define CONNECTION_TIMEOUT_S 30
#define CONNECTION_MEMORY (32 * 1024)
#define POOL_SCRAPES 64
#define BATCH 8			/* agents asked at once */
#define DEFAULT_BUDGET_S 10.0	/* without Prometheus's timeout header */

struct ls_exporter {
	struct MHD_Daemon *mhd;
	int listen_fd;
	char url[128];
	size_t max_sites;
	struct ls_push *push;
	struct ls_sympool *pool;	/* only the polling thread uses it */
	unsigned pool_uses;
	struct ls_stuck stuck;		/* the same */
};

/* ------------------------------------------------------------ fetching */

/* One batch of agents asked at once: a slow agent costs the batch its
 * wait, not the sum of every agent's.  A fetch still running at the
 * scrape's deadline is abandoned to its thread, which frees it when the
 * agent answers or times out; state says who owns it. */
enum { FETCH_RUNNING, FETCH_DONE, FETCH_ABANDONED };

struct fetch {
	pid_t pid;
	int r;
	int state;			/* atomic */
	struct ls_snapshot snap;
	pthread_t thread;
};

/*
 * Agents that answered after their scrape had given up on them: the next
 * scrape takes them off the stuck list, so that an agent slow under load
 * leaves a gap of one scrape in its series, not of LS_STUCK_S (which
 * also resolved its alerts).  Written by the abandoned fetches' threads,
 * which may outlive the exporter: file scope, atomic slots, 0 empty; a
 * pid that finds no free slot stays skipped.
 */
#define LATE_SLOTS 64
static pid_t late[LATE_SLOTS];

static void late_put(pid_t pid)
{
	pid_t zero;
	size_t i;

	for (i = 0; i < LATE_SLOTS; i++) {
		zero = 0;
		if (__atomic_compare_exchange_n(&late[i], &zero, pid, 0,
						__ATOMIC_RELEASE,
						__ATOMIC_RELAXED))
			return;
	}
}

static void late_take(struct ls_stuck *stuck)
{
	pid_t pid;
	size_t i;

	for (i = 0; i < LATE_SLOTS; i++)
		if ((pid = __atomic_exchange_n(&late[i], 0, __ATOMIC_ACQUIRE)))
			ls_stuck_clear(stuck, pid);
}

static void *fetch_one(void *arg)
{
	struct fetch *f = arg;
	char err[1024];
	int expect = FETCH_RUNNING;

	f->r = ls_client_snapshot(f->pid, 0, &f->snap, err, sizeof(err));
	if (!__atomic_compare_exchange_n(&f->state, &expect, FETCH_DONE, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		if (!f->r)
			late_put(f->pid);
		ls_snapshot_release(&f->snap);	/* abandoned: ours to free */
		free(f);
	}
	return NULL;
}

/* Wait for f's thread until deadline (CLOCK_MONOTONIC seconds); 0, or
 * -ETIMEDOUT when f was abandoned to it. */
static int join_until(struct fetch *f, double deadline)
{
	double left = deadline - ls_mono_s();
	struct timespec ts;
	int expect = FETCH_RUNNING;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (left > 0) {
		ts.tv_sec += (time_t)left;
		ts.tv_nsec += (long)((left - (double)(time_t)left) * 1e9);
		if (ts.tv_nsec >= 1000000000) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000;
		}
	}
	if (pthread_timedjoin_np(f->thread, NULL, &ts) != ETIMEDOUT)
		return 0;
	if (!__atomic_compare_exchange_n(&f->state, &expect, FETCH_ABANDONED, 0,
					 __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
		pthread_join(f->thread, NULL);	/* it finished meanwhile */
		return 0;
	}
	pthread_detach(f->thread);
	return -ETIMEDOUT;
}

/* Fetch b[0..n); an abandoned one becomes NULL. */
static void fetch_batch(struct fetch **b, size_t n, double deadline)
{
	int started[BATCH];
	size_t i;

	for (i = 0; i < n; i++)
		started[i] = !pthread_create(&b[i]->thread, NULL, fetch_one, b[i]);
	for (i = 0; i < n; i++) {
		if (!started[i])
			fetch_one(b[i]);
		else if (join_until(b[i], deadline))
			b[i] = NULL;
	}
}

/* Reduce a fetched snapshot into p; 0 or a negative errno. */
static int reduce(struct ls_exporter *e, struct fetch *f,
		  struct ls_metrics_proc *p)
{
	struct ls_symbolizer *sym;
	char container[80];
	int r;

	ls_metrics_container(f->pid, container, sizeof(container));
	sym = ls_symbolizer_new_shared(&f->snap, e->pool);
	r = sym ? ls_metrics_proc_build(p, &f->snap, sym, e->max_sites,
					container) : -ENOMEM;
	ls_symbolizer_free(sym);
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

/* Reduce the batch's answers into procs; mark who did not answer. */
static int reduce_batch(struct ls_exporter *e, struct fetch **b, size_t m,
			struct ls_metrics_proc *procs, size_t *got,
			struct ls_metrics_scrape *sc, pid_t *pids)
{
	size_t k;
	int r = 0;

	for (k = 0; k < m; k++) {
		if (!b[k] || b[k]->r == -ETIMEDOUT || b[k]->r == -EAGAIN)
			ls_stuck_mark(&e->stuck, pids[k], ls_mono_s());
		if (!b[k] || b[k]->r)	/* gone since listed, stuck, refused */
			sc->unreachable++;
		else if (!r && !(r = reduce(e, b[k], &procs[*got])))
			(*got)++;
		if (b[k]) {
			ls_snapshot_release(&b[k]->snap);
			free(b[k]);
		}
	}
	return r;
}

/* Ask pids[0..n) in batches until the deadline; the answers into procs
 * (*got of them), the others counted in sc. */
static int collect(struct ls_exporter *e, const pid_t *pids, size_t n,
		   double deadline, struct ls_metrics_proc *procs, size_t *got,
		   struct ls_metrics_scrape *sc)
{
	struct fetch *b[BATCH];
	pid_t asked[BATCH];
	size_t i = 0, m;
	int r = 0, oom = 0;

	late_take(&e->stuck);
	while (i < n && !r) {
		double now = ls_mono_s();

		for (m = 0; i < n && m < BATCH && !oom; i++) {
			if (now > deadline || ls_stuck_is(&e->stuck, pids[i], now)) {
				sc->unreachable++;
				continue;
			}
			if (!(b[m] = calloc(1, sizeof(*b[m])))) {
				oom = 1;
				break;
			}
			b[m]->pid = asked[m] = pids[i];
			m++;
		}
		fetch_batch(b, m, deadline);
		r = reduce_batch(e, b, m, procs, got, sc, asked);
		if (oom)
			r = -ENOMEM;
	}
	return r;
}

/* Every process's metrics, then the pusher's, into body; budget_s is
 * how long the scraper waits. */
static int scrape(struct ls_exporter *e, int om, double budget_s,
		  char **body, size_t *len)
{
	struct ls_metrics_scrape sc = { 0 };
	struct ls_metrics_proc *procs = NULL;
	double t0 = ls_mono_s();
	pid_t *pids = NULL;
	ssize_t n = ls_web_agents_list(&pids), i;
	size_t got = 0;
	FILE *out;
	int r = n < 0 ? (int)n : renew_pool(e);

	if (!r && n > 0 && !(procs = calloc((size_t)n, sizeof(*procs))))
		r = -ENOMEM;
	if (!r && n > 0)
		r = collect(e, pids, (size_t)n, t0 + budget_s * 0.5, procs, &got,
			    &sc);
	sc.collect_s = ls_mono_s() - t0;
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

/* How long the scraper waits: Prometheus says so in a header. */
static double budget_of(struct MHD_Connection *c)
{
	const char *v = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					"X-Prometheus-Scrape-Timeout-Seconds");
	double s = v ? strtod(v, NULL) : 0;

	return s > 0 && s < 3600 ? s : DEFAULT_BUDGET_S;
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
	r = scrape(e, om, budget_of(c), &body, &len);
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
	struct sockaddr_storage bound;
	unsigned port;
	int loopback;
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
				 &e->listen_fd, &port, &loopback, &bound,
				 host, sizeof(host), err, errlen);
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
