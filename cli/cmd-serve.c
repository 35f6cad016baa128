/*
 * cmd-serve.c - `leakscope serve`: the live web view and JSON API of the
 * traced processes (web/web.h, docs/WEB-API.md).  Prints the URL to
 * open, with its access token, then serves until SIGINT, SIGTERM or
 * SIGHUP.
 */
#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include "../lib/client.h"
#include "../web/fleet.h"
#include "../web/web.h"
#include "cmds.h"

#define A(field) LS_ARG(struct ls_serve_args, field)
#define SERVE_MEMORY_BUDGET_MIB 1024ull	/* --memory-budget's default */

static const struct ls_option own[] = {
	{ .kind = LS_OPT_STRING,
	  .long_name = "listen",
	  .offset = A(listen),
	  .argh = "ADDR:PORT",
	  .help = "where to listen (default 127.0.0.1, a free\n"
		  "port); [::1]:PORT for IPv6; numeric only",
	  .want = "ADDR:PORT" },
	{ .kind = LS_OPT_FLAG,
	  .long_name = "allow-remote",
	  .offset = A(allow_remote),
	  .help = "accept an address that is not loopback\n"
		  "(whoever reaches it with the token sees\n"
		  "your processes' memory)" },
	{ .kind = LS_OPT_STRING,
	  .long_name = "snapshot-dir",
	  .offset = A(snapshot_dir),
	  .argh = "DIR",
	  .help = "where snapshots taken from the page go\n"
		  "(default $XDG_STATE_HOME/leakscope/snapshots,\n"
		  "else ~/.local/state/leakscope/snapshots)",
	  .want = "a directory" },
	{ .kind = LS_OPT_SECONDS,
	  .long_name = "agent-timeout",
	  .offset = A(agent_timeout_ns),
	  .argh = "SECONDS",
	  .help = "wait at most this long for an agent's answer\n"
		  "before 504 (default 3)",
	  .flags = LS_OPTF_NONZERO,
	  .max = 600000000000ull,
	  .want = "seconds, at most 600" },
	{ .kind = LS_OPT_UINT,
	  .long_name = "memory-budget",
	  .offset = A(memory_budget),
	  .argh = "MIB",
	  .help = "memory the replies in progress hold together\n"
		  "at most; a request past it gets 503\n"
		  "(default 1024)",
	  .min = 64,
	  .max = 1048576,
	  .want = "64 to 1048576 (MiB)" },
	{ .kind = LS_OPT_END },
};

/* The fleet's ways out (web/fleet.h, docs/FLEET.md). */
static const struct ls_option fleet[] = {
	{ .kind = LS_OPT_STRING,
	  .long_name = "metrics",
	  .offset = A(metrics),
	  .argh = "ADDR:PORT",
	  .help = "serve Prometheus metrics at /metrics there\n"
		  "(no token; loopback unless --allow-remote)",
	  .want = "ADDR:PORT" },
	{ .kind = LS_OPT_UINT,
	  .long_name = "metrics-sites",
	  .offset = A(metrics_sites),
	  .argh = "N",
	  .help = "sites exported per process, growing ones\n"
		  "first (default 20)",
	  .min = 1,
	  .max = 1000,
	  .want = "1 to 1000" },
	{ .kind = LS_OPT_FLAG,
	  .long_name = "no-web",
	  .offset = A(no_web),
	  .help = "no web view: only the metrics and pushes" },
	{ .kind = LS_OPT_STRING,
	  .long_name = "push-pyroscope",
	  .offset = A(push_pyroscope),
	  .argh = "URL",
	  .help = "push heap profiles to this Pyroscope\n"
		  "(http://HOST[:PORT][/PATH])",
	  .want = "a URL" },
	{ .kind = LS_OPT_STRING,
	  .long_name = "push-parca",
	  .offset = A(push_parca),
	  .argh = "URL",
	  .help = "push heap profiles to this Parca",
	  .want = "a URL" },
	{ .kind = LS_OPT_SECONDS,
	  .long_name = "push-interval",
	  .offset = A(push_interval_ns),
	  .argh = "SECONDS",
	  .help = "between two pushes of every process\n"
		  "(default 60)",
	  .flags = LS_OPTF_NONZERO,
	  .max = 86400000000000ull,
	  .want = "seconds, at most 86400" },
	{ .kind = LS_OPT_STRING,
	  .long_name = "push-service",
	  .offset = A(push_service),
	  .argh = "NAME",
	  .help = "service name of the pushed profiles\n"
		  "(default: each program's name)",
	  .want = "a name" },
	{ .kind = LS_OPT_UINT,
	  .long_name = "push-queue",
	  .offset = A(push_queue),
	  .argh = "N",
	  .help = "profiles waiting per server at most; new\n"
		  "ones are dropped beyond (default 64)",
	  .min = 1,
	  .max = 10000,
	  .want = "1 to 10000" },
	{ .kind = LS_OPT_STRING,
	  .long_name = "push-credentials",
	  .offset = A(push_credentials),
	  .argh = "FILE",
	  .help = "user:password (Basic) or a token (Bearer),\n"
		  "in a file only its owner reads; else\n"
		  "$LEAKSCOPE_PUSH_BASIC_AUTH, $LEAKSCOPE_PUSH_TOKEN",
	  .want = "a file" },
	{ .kind = LS_OPT_END },
};

const struct ls_usage ls_serve_usage = {
	"serve", "[--listen ADDR:PORT] [--metrics ADDR:PORT] [--push-pyroscope URL] [--push-parca URL] [OPTIONS]",
	"a live web view and JSON API of the traced processes",
	"Serve a web page showing every traced process this user may query\n"
	"(root: every user's): live memory, sites with their growth, charts,\n"
	"flame graphs, the oldest blocks, reset, snapshots and diffs; and the\n"
	"JSON API under it (docs/WEB-API.md).  Prints the URL to open, with its\n"
	"access token in the fragment; every API request needs the token in\n"
	"an Authorization: Bearer header.  With --metrics, also Prometheus\n"
	"metrics of every traced process; with --push-*, their heap profiles\n"
	"to Pyroscope or Parca (docs/FLEET.md).  Serves until interrupted.",
	(const struct ls_option *const[]){ own, fleet, NULL },
	NULL,
	0,	/* no report options */
};

/* An error of a start function: usage for a bad address or URL, else
 * a failure. */
static int start_failed(int r, const char *err)
{
	ls_error("%s", err);
	return r == -EINVAL || r == -EPERM ? LS_EXIT_USAGE : LS_EXIT_ERROR;
}

static int start_fleet(const struct ls_serve_args *a, struct ls_push **push,
		       struct ls_exporter **exp)
{
	struct ls_push_opts po = { .pyroscope = a->push_pyroscope,
				   .parca = a->push_parca,
				   .interval_ms = a->push_interval_ns / 1000000,
				   .service = a->push_service,
				   .credentials = a->push_credentials,
				   .queue = (unsigned)a->push_queue };
	struct ls_exporter_opts eo = { .listen = a->metrics,
				       .allow_remote = a->allow_remote,
				       .max_sites = (size_t)a->metrics_sites };
	char err[1024];
	int r;

	if ((a->push_pyroscope || a->push_parca) &&
	    (r = ls_push_start(&po, push, err, sizeof(err))))
		return start_failed(r, err);
	if (a->metrics && (r = ls_exporter_start(&eo, *push, exp, err,
						 sizeof(err))))
		return start_failed(r, err);
	if (*exp)
		printf("leakscope: metrics at %s\n", ls_exporter_url(*exp));
	if (*push)
		printf("leakscope: pushing heap profiles every %.0f s\n",
		       a->push_interval_ns ? (double)a->push_interval_ns / 1e9 : 60.0);
	return LS_EXIT_OK;
}

static int check_args(struct ls_invocation *inv)
{
	const struct ls_serve_args *a = inv->args;
	const char *fleet_only = a->metrics_sites && !a->metrics ?
		"--metrics-sites" : (a->push_interval_ns || a->push_service ||
		a->push_credentials || a->push_queue) && !a->push_pyroscope &&
		!a->push_parca ?
		"--push-interval, --push-service, --push-queue and "
		"--push-credentials" : NULL;

	if (inv->argc) {
		ls_usage_error(&ls_serve_usage, "unexpected argument '%s'",
			       inv->argv[0]);
		return LS_EXIT_USAGE;
	}
	if (fleet_only) {
		ls_usage_error(&ls_serve_usage, "%s need%s %s", fleet_only,
			       a->metrics_sites && !a->metrics ? "s" : "",
			       a->metrics_sites && !a->metrics ? "--metrics" :
			       "--push-pyroscope or --push-parca");
		return LS_EXIT_USAGE;
	}
	if (a->no_web && !a->metrics && !a->push_pyroscope && !a->push_parca) {
		ls_usage_error(&ls_serve_usage, "--no-web leaves nothing to "
			       "serve: add --metrics or --push-*");
		return LS_EXIT_USAGE;
	}
	return LS_EXIT_OK;
}

int ls_cmd_serve(struct ls_invocation *inv)
{
	struct ls_serve_args *a = inv->args;
	unsigned timeout_ms = (unsigned)((a->agent_timeout_ns + 999999) / 1000000);
	struct ls_web_opts opts = { .listen = a->listen,
				    .allow_remote = a->allow_remote,
				    .snapshot_dir = a->snapshot_dir,
				    .agent_timeout_ms = timeout_ms };
	struct ls_web *w = NULL;
	struct ls_push *push = NULL;
	struct ls_exporter *exp = NULL;
	sigset_t set;
	char err[1024];
	int sig, r;

	if ((r = check_args(inv)))
		return r;
	/* Blocked before the server's threads start, so that they inherit
	 * the mask and only sigwait() below takes these. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	ls_client_set_timeout(timeout_ms ? timeout_ms : 3000);
	ls_snapshot_set_budget((a->memory_budget ? a->memory_budget :
				SERVE_MEMORY_BUDGET_MIB) << 20);
	if (!a->no_web && (r = ls_web_start(&opts, &w, err, sizeof(err)))) {
		/* a malformed or non-loopback --listen is a usage error; a
		 * port in use or an unwritable snapshot dir a failure */
		r = start_failed(r, err);
		goto out;
	}
	if (w) {
		printf("leakscope: serving %s\n", ls_web_url(w));
		printf("leakscope: snapshots go to %s\n", ls_web_snapshot_dir(w));
	}
	if ((r = start_fleet(a, &push, &exp)))
		goto out;
	fflush(stdout);
	sigwait(&set, &sig);
out:
	ls_exporter_stop(exp);
	ls_push_stop(push);
	ls_web_stop(w);
	return r;
}
