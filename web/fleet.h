/*
 * fleet.h - `leakscope serve`'s ways out of the machine (docs/FLEET.md):
 * a Prometheus exporter on a listener of its own (exporter.c) and a
 * pusher of heap profiles to Pyroscope and Parca (push.c, over the small
 * HTTP client of httpc.c).
 *
 * Both run in threads of their own and ask every agent this user may
 * query (root: every agent on the machine) for a snapshot without the
 * block list, the cheapest an agent serves; neither prints.
 */
#ifndef LEAKSCOPE_WEB_FLEET_H
#define LEAKSCOPE_WEB_FLEET_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include <sys/types.h>

/* --- stuck.c: agents that did not answer --------------------------------- */

/*
 * Agents that timed out, skipped until a time (CLOCK_MONOTONIC seconds):
 * a stuck agent costs its timeout once, not at every scrape or push
 * round.  Bounded: a new entry replaces the one that ends first.  Not
 * thread-safe: one table per thread that asks.
 */
#define LS_STUCK_SLOTS 64
#define LS_STUCK_S 30.0
struct ls_stuck {
	struct {
		pid_t pid;
		double until;
	} s[LS_STUCK_SLOTS];
};
/* Is pid skipped at now? */
int ls_stuck_is(const struct ls_stuck *t, pid_t pid, double now);
/* Skip pid until now + LS_STUCK_S. */
void ls_stuck_mark(struct ls_stuck *t, pid_t pid, double now);
/* Skip pid no longer (it answered after all). */
void ls_stuck_clear(struct ls_stuck *t, pid_t pid);
/* CLOCK_MONOTONIC in seconds. */
double ls_mono_s(void);

/* --- push.c -------------------------------------------------------------- */

struct ls_push_opts {
	const char *pyroscope;	/* "http://HOST[:PORT][/PREFIX]" or NULL */
	const char *parca;	/* the same, or NULL */
	uint64_t interval_ms;	/* between two rounds; 0: 60 s */
	const char *service;	/* service name; NULL: each program's name */
	/* A file holding "user:password" (HTTP Basic) or a token (Bearer);
	 * NULL: $LEAKSCOPE_PUSH_BASIC_AUTH, else $LEAKSCOPE_PUSH_TOKEN,
	 * else none.  Never a command-line value. */
	const char *credentials;
	unsigned queue;		/* profiles waiting per server; 0: 64 */
};

struct ls_push;

/*
 * Check the URLs and the credentials, start the collecting thread and
 * one sending thread per server.  Returns 0 and *out, or a negative errno
 * with a one-line reason in err: -EINVAL a malformed or non-http URL, a
 * credentials file others may read or an empty one, the open error, or
 * -ENOMEM.  Call with the signals the caller waits for blocked.
 */
int ls_push_start(const struct ls_push_opts *o, struct ls_push **out,
		  char *err, size_t errlen);
/* Stop: the threads finish their current request (bounded by its
 * timeout) and exit; what is queued is dropped.  Accepts NULL. */
void ls_push_stop(struct ls_push *p);
/* The pusher's own counters as metric families (sent, failed, retried,
 * dropped, queued, by server).  Thread-safe; accepts NULL (nothing). */
void ls_push_write_metrics(struct ls_push *p, FILE *out, int openmetrics);

/* --- exporter.c ---------------------------------------------------------- */

struct ls_exporter_opts {
	const char *listen;	/* "ADDR:PORT"; NULL: 127.0.0.1:9464 */
	int allow_remote;	/* accept a non-loopback address */
	size_t max_sites;	/* sites per process; 0: 20 */
};

#define LS_EXPORTER_DEFAULT_LISTEN "127.0.0.1:9464"
#define LS_EXPORTER_DEFAULT_SITES 20

struct ls_exporter;

/*
 * Bind and serve GET /metrics (no token: it is read-only and names no
 * memory contents).  push, when not NULL, adds the pusher's counters to
 * every scrape and must outlive the exporter.  Returns 0 and *out, or a
 * negative errno with a one-line reason in err (as ls_web_start:
 * -EINVAL, -EPERM, the bind error, -ENOMEM).
 */
int ls_exporter_start(const struct ls_exporter_opts *o, struct ls_push *push,
		      struct ls_exporter **out, char *err, size_t errlen);
/* "http://ADDR:PORT/metrics". */
const char *ls_exporter_url(const struct ls_exporter *e);
/* Stop serving and free; accepts NULL. */
void ls_exporter_stop(struct ls_exporter *e);

#endif
