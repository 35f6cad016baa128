/*
 * push.c - heap profiles of every traced process to Pyroscope and Parca,
 * on an interval (fleet.h, docs/FLEET.md).
 *
 * One collecting thread asks each agent for a snapshot (no block list)
 * and renders it as the pprof profile `leakscope report --format pprof`
 * writes (inuse and alloc, space and objects; gzip).  Each server has a
 * bounded queue and a sending thread of its own: a slow or absent server
 * costs its queue (new profiles are dropped while it is full), never
 * the collection, the other server or the traced programs, which only
 * ever serve a snapshot per interval.  An agent that times out is skipped
 * for LS_STUCK_S (fleet.h).  A failed send is retried with
 * exponential backoff (1 s, 2 s, 4 s, 8 s) on a connection failure, a
 * timeout, 408, 429 or a 5xx; other answers are final.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "../common/contract.h"
#include "../lib/client.h"
#include "../lib/metrics.h"
#include "../lib/render.h"
#include "../lib/report.h"
#include "../lib/symbolize.h"
#include "fleet.h"
#include "httpc.h"
#include "internal.h"
#include "agents.h"

#define DEFAULT_INTERVAL_MS 60000
#define DEFAULT_QUEUE 64
#define MAX_ATTEMPTS 5
#define SEND_TIMEOUT_MS 10000
#define CRED_MAX 4096
#define POOL_ROUNDS 16

enum sink_kind { SINK_PYROSCOPE, SINK_PARCA };

struct item {
	char *body;		/* the request body */
	size_t len;
	char target[2304];	/* path and query */
	int attempts;
};

struct sink {
	struct ls_push *push;
	enum sink_kind kind;
	const char *name;	/* "pyroscope", "parca" */
	struct ls_url url;
	pthread_t thread;
	int started;
	struct item *q;		/* ring of cap */
	size_t cap, head, count;
	uint64_t sent, failed, retried, dropped;	/* under push->lock */
};

struct ls_push {
	pthread_mutex_t lock;	/* queues, counters, stop */
	pthread_cond_t cond;	/* new item, or stop */
	int stop;
	uint64_t interval_ms;
	char *service;		/* NULL: each program's name */
	char host[64];
	char *auth;		/* Authorization value or NULL */
	struct sink sinks[2];
	size_t nsinks;
	pthread_t collector;
	int collecting;
	struct ls_sympool *pool;	/* the collector's */
	struct ls_stuck stuck;		/* the collector's */
};

/* ----------------------------------------------------------- credentials */

static const char b64[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* data as base64 into a new string; NULL on ENOMEM. */
static char *base64(const unsigned char *d, size_t n)
{
	char *o = malloc((n + 2) / 3 * 4 + 1), *p = o;
	size_t i;

	if (!o)
		return NULL;
	for (i = 0; i + 2 < n; i += 3) {
		*p++ = b64[d[i] >> 2];
		*p++ = b64[((d[i] & 3) << 4) | (d[i + 1] >> 4)];
		*p++ = b64[((d[i + 1] & 15) << 2) | (d[i + 2] >> 6)];
		*p++ = b64[d[i + 2] & 63];
	}
	if (i < n) {
		*p++ = b64[d[i] >> 2];
		*p++ = b64[((d[i] & 3) << 4) | (i + 1 < n ? d[i + 1] >> 4 : 0)];
		*p++ = i + 1 < n ? b64[(d[i + 1] & 15) << 2] : '=';
		*p++ = '=';
	}
	*p = 0;
	return o;
}

/* "Basic BASE64(user:password)" or "Bearer TOKEN". */
static int make_auth(struct ls_push *p, const char *cred, int basic,
		     char *err, size_t errlen)
{
	char *enc = NULL;

	if (!*cred || strpbrk(cred, "\r\n")) {
		snprintf(err, errlen, "push credentials: empty, or more than "
			 "one line");
		return -EINVAL;
	}
	if (basic && !(enc = base64((const unsigned char *)cred, strlen(cred))))
		return -ENOMEM;
	if (asprintf(&p->auth, "%s %s", basic ? "Basic" : "Bearer",
		     basic ? enc : cred) < 0)
		p->auth = NULL;
	free(enc);
	return p->auth ? 0 : -ENOMEM;
}

/* The file's one line: a regular file only its owner may read. */
static int read_cred_file(const char *path, char *buf, size_t cap,
			  char *err, size_t errlen)
{
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	ssize_t n;

	if (fd < 0) {
		snprintf(err, errlen, "cannot open '%s': %s", path,
			 strerror(errno));
		return -errno;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || (st.st_mode & 077)) {
		close(fd);
		snprintf(err, errlen, "'%s': not a regular file that only its "
			 "owner may read (chmod 600)", path);
		return -EINVAL;
	}
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0 || (size_t)n >= cap - 1) {
		snprintf(err, errlen, "cannot read '%s': %s", path,
			 n < 0 ? strerror(errno) : "longer than 4 KiB");
		return -EINVAL;
	}
	buf[n] = 0;
	while (n && (buf[n - 1] == '\n' || buf[n - 1] == '\r' ||
		     buf[n - 1] == ' '))
		buf[--n] = 0;
	return 0;
}

static int load_credentials(struct ls_push *p, const char *file, char *err,
			    size_t errlen)
{
	char buf[CRED_MAX];
	const char *basic = getenv(LS_ENV_PUSH_BASIC_AUTH);
	const char *token = getenv(LS_ENV_PUSH_TOKEN);
	int r;

	if (file) {
		if ((r = read_cred_file(file, buf, sizeof(buf), err, errlen)))
			return r;
		r = make_auth(p, buf, strchr(buf, ':') != NULL, err, errlen);
		memset(buf, 0, sizeof(buf));
		return r;
	}
	if (basic && *basic)
		return make_auth(p, basic, 1, err, errlen);
	if (token && *token)
		return make_auth(p, token, 0, err, errlen);
	return 0;
}

/* ---------------------------------------------------------------- queues */

/* Add it to s's queue; takes it->body.  A full queue drops the new
 * profile (the head may be in flight, and the next round brings a
 * fresher one anyway). */
static void enqueue(struct sink *s, struct item *it)
{
	pthread_mutex_lock(&s->push->lock);
	if (s->count == s->cap) {
		free(it->body);
		s->dropped++;
	} else {
		s->q[(s->head + s->count) % s->cap] = *it;
		s->count++;
		pthread_cond_broadcast(&s->push->cond);
	}
	pthread_mutex_unlock(&s->push->lock);
}

/* Sleep ms unless stopped; returns stop.  Caller holds the lock. */
static int wait_locked(struct ls_push *p, uint64_t ms)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	ts.tv_sec += (time_t)(ms / 1000);
	ts.tv_nsec += (long)(ms % 1000) * 1000000;
	if (ts.tv_nsec >= 1000000000) {
		ts.tv_sec++;
		ts.tv_nsec -= 1000000000;
	}
	while (!p->stop && pthread_cond_timedwait(&p->cond, &p->lock, &ts) == 0)
		;
	return p->stop;
}

static int retryable(int status)
{
	return status < 0 || status == 408 || status == 429 || status >= 500;
}

/* Parca's JSON wraps the profile; Pyroscope's body is the profile, of
 * the pprof renderer's media type. */
static const char *type_of(const struct sink *s)
{
	return s->kind == SINK_PARCA ? "application/json" :
	       ls_renderer_find("pprof")->mime;
}

/* Send the queue's head (the lock is dropped meanwhile; only this thread
 * removes from the head, so it stays put); its fate under the lock. */
static void send_head(struct sink *s)
{
	struct ls_push *p = s->push;
	struct item *it = &s->q[s->head];
	struct ls_http_req req = { .target = it->target, .type = type_of(s),
				   .auth = p->auth, .body = it->body,
				   .len = it->len, .timeout_ms = SEND_TIMEOUT_MS };
	char err[512];
	int status;

	pthread_mutex_unlock(&p->lock);
	status = ls_http_post(&s->url, &req, err, sizeof(err));
	pthread_mutex_lock(&p->lock);
	if (status >= 200 && status < 300) {
		s->sent++;
	} else if (retryable(status) && ++it->attempts < MAX_ATTEMPTS) {
		s->retried++;
		wait_locked(p, 1000ull << (it->attempts - 1));
		return;		/* the same head again, unless stopped */
	} else {
		s->failed++;
	}
	free(it->body);
	s->head = (s->head + 1) % s->cap;
	s->count--;
}

static void *sender(void *arg)
{
	struct sink *s = arg;
	struct ls_push *p = s->push;

	pthread_mutex_lock(&p->lock);
	while (!p->stop) {
		if (!s->count) {
			pthread_cond_wait(&p->cond, &p->lock);
			continue;
		}
		send_head(s);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

/* -------------------------------------------------------------- requests */

/* A label value both servers take: [A-Za-z0-9_.-], others as '_'. */
static void clean(char *out, size_t cap, const char *s)
{
	size_t n = 0;

	for (; *s && n + 1 < cap; s++)
		out[n++] = strchr("_.-", *s) || (*s >= 'a' && *s <= 'z') ||
			   (*s >= 'A' && *s <= 'Z') || (*s >= '0' && *s <= '9') ?
			   *s : '_';
	out[n] = 0;
}

struct labels {
	char service[64], host[64], pid[16], container[80];
	uint64_t from_s, until_s;
};

/* POST /ingest?name=SERVICE{host=..,pid=..,container=..}&from&until
 * &format=pprof, the body the gzipped profile itself. */
static int pyroscope_item(struct sink *s, const struct labels *l,
			  const char *prof, size_t len, struct item *it)
{
	char name[512], enc[1536];

	snprintf(name, sizeof(name), "%s{host=%s,pid=%s%s%s}", l->service,
		 l->host, l->pid, *l->container ? ",container=" : "",
		 l->container);
	if (ls_url_encode(name, enc, sizeof(enc)))
		return -ENOSPC;
	snprintf(it->target, sizeof(it->target), "%s/ingest?name=%s&from=%llu"
		 "&until=%llu&format=pprof&spyName=leakscope", s->url.prefix,
		 enc, (unsigned long long)l->from_s,
		 (unsigned long long)l->until_s);
	if (!(it->body = malloc(len ? len : 1)))
		return -ENOMEM;
	memcpy(it->body, prof, len);
	it->len = len;
	return 0;
}

/* POST /api/profiles/writeraw: WriteRawRequest as grpc-gateway's JSON,
 * the profile in base64, labels sorted by name with __name__ first. */
static int parca_item(struct sink *s, const struct labels *l,
		      const char *prof, size_t len, struct item *it)
{
	char *raw = base64((const unsigned char *)prof, len), cont[128] = "";
	int n;

	if (!raw)
		return -ENOMEM;
	if (*l->container)
		snprintf(cont, sizeof(cont), "{\"name\":\"container\","
			 "\"value\":\"%s\"},", l->container);
	n = asprintf(&it->body, "{\"series\":[{\"labels\":{\"labels\":["
		     "{\"name\":\"__name__\",\"value\":\"memory\"},%s"
		     "{\"name\":\"host\",\"value\":\"%s\"},"
		     "{\"name\":\"pid\",\"value\":\"%s\"},"
		     "{\"name\":\"service\",\"value\":\"%s\"}]},"
		     "\"samples\":[{\"rawProfile\":\"%s\"}]}],"
		     "\"normalized\":false}", cont, l->host, l->pid,
		     l->service, raw);
	free(raw);
	if (n < 0) {
		it->body = NULL;
		return -ENOMEM;
	}
	it->len = (size_t)n;
	snprintf(it->target, sizeof(it->target), "%s/api/profiles/writeraw",
		 s->url.prefix);
	return 0;
}

/* ----------------------------------------------------------- collecting */

/* The profile of snap, as `report --format pprof` renders it. */
static int render(struct ls_push *p, const struct ls_snapshot *snap,
		  char **out, size_t *len)
{
	struct ls_report_opts opts = { .format = ls_renderer_find("pprof"),
				       .by = LS_BY_LIVE };
	struct ls_symbolizer *sym;
	struct ls_report rep;
	FILE *f;
	int r;

	ls_report_opts_finish(&opts);
	if ((r = ls_report_build(snap, &opts, &rep)))
		return r;
	sym = ls_symbolizer_new_shared(snap, p->pool);
	f = open_memstream(out, len);
	if (!sym || !f)
		r = -ENOMEM;
	else
		r = ls_report_render(f, &rep, &opts, sym);
	if (f && fclose(f) && !r)
		r = -EIO;
	ls_symbolizer_free(sym);
	ls_report_release(&rep);
	return r;
}

static void snap_labels(struct ls_push *p, const struct ls_snapshot *s,
			struct labels *l)
{
	const struct lsnap_header *h = &s->hdr;
	uint64_t until = h->wall_ns / 1000000000u;
	uint64_t tracked = h->mono_ns > h->start_mono_ns ?
			   (h->mono_ns - h->start_mono_ns) / 1000000000u : 0;
	uint64_t span = p->interval_ms / 1000 ? p->interval_ms / 1000 : 1;
	char cont[80];

	clean(l->service, sizeof(l->service), p->service ? p->service :
	      s->argc && s->argv[0] ? ls_sym_basename(s->argv[0]) : "unknown");
	snprintf(l->host, sizeof(l->host), "%s", p->host);
	snprintf(l->pid, sizeof(l->pid), "%u", h->pid);
	ls_metrics_container((pid_t)h->pid, cont, sizeof(cont));
	clean(l->container, sizeof(l->container), cont);
	l->until_s = until;
	l->from_s = until - (tracked < span ? tracked : span);
}

/* The profile of pid's snapshot, to every server's queue. */
static void enqueue_all(struct ls_push *p, const struct labels *l,
			const char *prof, size_t len)
{
	size_t i;

	for (i = 0; i < p->nsinks; i++) {
		struct sink *s = &p->sinks[i];
		struct item it = { 0 };
		int r = s->kind == SINK_PARCA ? parca_item(s, l, prof, len, &it) :
			pyroscope_item(s, l, prof, len, &it);

		if (!r)
			enqueue(s, &it);
	}
}

static void push_one(struct ls_push *p, pid_t pid)
{
	struct ls_snapshot snap;
	struct labels l;
	char err[1024], *prof = NULL;
	size_t len = 0;
	int r;

	if (ls_stuck_is(&p->stuck, pid, ls_mono_s()))
		return;
	r = ls_client_snapshot(pid, 0, &snap, err, sizeof(err));
	if (r == -ETIMEDOUT || r == -EAGAIN)
		ls_stuck_mark(&p->stuck, pid, ls_mono_s());
	if (r)
		return;		/* gone, stuck or refused: next round */
	snap_labels(p, &snap, &l);
	if (!render(p, &snap, &prof, &len))
		enqueue_all(p, &l, prof, len);
	free(prof);
	ls_snapshot_release(&snap);
}

static void round_all(struct ls_push *p, unsigned round)
{
	pid_t *pids = NULL;
	ssize_t n, i;

	if (round % POOL_ROUNDS == 0) {
		ls_sympool_free(p->pool);
		p->pool = ls_sympool_new();
	}
	if (!p->pool || (n = ls_web_agents_list(&pids)) < 0)
		return;
	/* stop is written under the lock; a stale read costs one process */
	for (i = 0; i < n && !__atomic_load_n(&p->stop, __ATOMIC_RELAXED); i++)
		push_one(p, pids[i]);
	free(pids);
}

static void *collector(void *arg)
{
	struct ls_push *p = arg;
	unsigned round = 0;
	int stop = 0;

	while (!stop) {
		round_all(p, round++);
		pthread_mutex_lock(&p->lock);
		stop = wait_locked(p, p->interval_ms);
		pthread_mutex_unlock(&p->lock);
	}
	return NULL;
}

/* ------------------------------------------------------------- start/stop */

static int add_sink(struct ls_push *p, enum sink_kind kind, const char *url,
		    unsigned cap, char *err, size_t errlen)
{
	struct sink *s = &p->sinks[p->nsinks];
	int r = ls_url_parse(url, &s->url, err, errlen);

	if (r)
		return r;
	s->push = p;
	s->kind = kind;
	s->name = kind == SINK_PARCA ? "parca" : "pyroscope";
	s->cap = cap;
	if (!(s->q = calloc(cap, sizeof(*s->q))))
		return -ENOMEM;
	p->nsinks++;
	return 0;
}

static int start_threads(struct ls_push *p, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < p->nsinks; i++) {
		if (pthread_create(&p->sinks[i].thread, NULL, sender,
				   &p->sinks[i]))
			goto fail;
		p->sinks[i].started = 1;
	}
	if (pthread_create(&p->collector, NULL, collector, p))
		goto fail;
	p->collecting = 1;
	return 0;
fail:
	snprintf(err, errlen, "cannot start the push threads");
	return -EAGAIN;
}

int ls_push_start(const struct ls_push_opts *o, struct ls_push **out,
		  char *err, size_t errlen)
{
	struct ls_push *p = calloc(1, sizeof(*p));
	unsigned cap = o->queue ? o->queue : DEFAULT_QUEUE;
	int r = 0;

	*out = NULL;
	if (!p)
		return -ENOMEM;
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->cond, NULL);
	p->interval_ms = o->interval_ms ? o->interval_ms : DEFAULT_INTERVAL_MS;
	if (gethostname(p->host, sizeof(p->host)))
		strcpy(p->host, "unknown");
	clean(p->host, sizeof(p->host), p->host);
	if (o->service && !(p->service = strdup(o->service)))
		r = -ENOMEM;
	if (!r && o->pyroscope)
		r = add_sink(p, SINK_PYROSCOPE, o->pyroscope, cap, err, errlen);
	if (!r && o->parca)
		r = add_sink(p, SINK_PARCA, o->parca, cap, err, errlen);
	if (!r)
		r = load_credentials(p, o->credentials, err, errlen);
	unsetenv("DEBUGINFOD_URLS");	/* before the threads read it */
	if (!r)
		r = start_threads(p, err, errlen);
	if (r) {
		if (r == -ENOMEM)
			snprintf(err, errlen, "out of memory");
		ls_push_stop(p);
		return r;
	}
	*out = p;
	return 0;
}

void ls_push_stop(struct ls_push *p)
{
	size_t i, k;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	p->stop = 1;
	pthread_cond_broadcast(&p->cond);
	pthread_mutex_unlock(&p->lock);
	if (p->collecting)
		pthread_join(p->collector, NULL);
	for (i = 0; i < p->nsinks; i++) {
		struct sink *s = &p->sinks[i];

		if (s->started)
			pthread_join(s->thread, NULL);
		for (k = 0; k < s->count; k++)
			free(s->q[(s->head + k) % s->cap].body);
		free(s->q);
	}
	ls_sympool_free(p->pool);
	if (p->auth)
		memset(p->auth, 0, strlen(p->auth));
	free(p->auth);
	free(p->service);
	pthread_cond_destroy(&p->cond);
	pthread_mutex_destroy(&p->lock);
	free(p);
}

/* ---------------------------------------------------------------- metrics */

void ls_push_write_metrics(struct ls_push *p, FILE *out, int om)
{
	static const char *const fam[][3] = {
		{ "leakscope_push_sent_profiles", "counter",
		  "Profiles the server accepted (2xx)." },
		{ "leakscope_push_failed_profiles", "counter",
		  "Profiles given up on: refused, or still failing after every retry." },
		{ "leakscope_push_retries", "counter",
		  "Sends retried after a connection failure, a timeout, 408, 429 or 5xx." },
		{ "leakscope_push_dropped_profiles", "counter",
		  "Profiles dropped unsent because the queue was full." },
		{ "leakscope_push_queued_profiles", "gauge",
		  "Profiles waiting to be sent." },
	};
	const char *l[3] = { "server", NULL, NULL };
	size_t f, i;

	if (!p)
		return;
	pthread_mutex_lock(&p->lock);
	for (f = 0; f < sizeof(fam) / sizeof(*fam); f++) {
		ls_metrics_family(out, fam[f][0], fam[f][1], fam[f][2], om);
		for (i = 0; i < p->nsinks; i++) {
			const struct sink *s = &p->sinks[i];
			uint64_t v = f == 0 ? s->sent : f == 1 ? s->failed :
				     f == 2 ? s->retried : f == 3 ? s->dropped :
				     s->count;

			l[1] = s->name;
			ls_metrics_value(out, fam[f][0], f < 4, l, (double)v);
		}
	}
	pthread_mutex_unlock(&p->lock);
}
