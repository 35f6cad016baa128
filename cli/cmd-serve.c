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
#include "../web/web.h"
#include "cmds.h"

#define A(field) LS_ARG(struct ls_serve_args, field)

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
	{ .kind = LS_OPT_END },
};

const struct ls_usage ls_serve_usage = {
	"serve", "[--listen ADDR:PORT] [--snapshot-dir DIR] [--agent-timeout S]",
	"a live web view and JSON API of the traced processes",
	"Serve a web page showing every traced process this user may query\n"
	"(root: every user's): live memory, sites with their growth, charts,\n"
	"flame graphs, the oldest blocks, reset, snapshots and diffs; and the\n"
	"JSON API under it (docs/WEB-API.md).  Prints the URL to open, with its\n"
	"access token in the fragment; every API request needs the token in\n"
	"an Authorization: Bearer header.  Serves until interrupted.",
	(const struct ls_option *const[]){ own, NULL },
	NULL,
};

int ls_cmd_serve(struct ls_invocation *inv)
{
	struct ls_serve_args *a = inv->args;
	struct ls_web_opts opts = { .listen = a->listen,
				    .allow_remote = a->allow_remote,
				    .snapshot_dir = a->snapshot_dir,
				    .agent_timeout_ms = (unsigned)
					((a->agent_timeout_ns + 999999) / 1000000) };
	struct ls_web *w;
	sigset_t set;
	char err[1024];
	int sig, r;

	if (inv->argc) {
		ls_usage_error(&ls_serve_usage, "unexpected argument '%s'",
			       inv->argv[0]);
		return LS_EXIT_USAGE;
	}
	/* Blocked before the server's threads start, so that they inherit
	 * the mask and only sigwait() below takes these. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	r = ls_web_start(&opts, &w, err, sizeof(err));
	if (r) {
		/* a malformed or non-loopback --listen is a usage error; a
		 * port in use or an unwritable snapshot dir a failure */
		ls_error("%s", err);
		return r == -EINVAL || r == -EPERM ? LS_EXIT_USAGE : LS_EXIT_ERROR;
	}
	printf("leakscope: serving %s\n", ls_web_url(w));
	printf("leakscope: snapshots go to %s\n", ls_web_snapshot_dir(w));
	fflush(stdout);
	sigwait(&set, &sig);
	ls_web_stop(w);
	return LS_EXIT_OK;
}
