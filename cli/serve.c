/*
 * serve.c - `leakscope serve`: the live web view and JSON API
 * (web/web.h, docs/WEB-API.md).  Prints the URL to open, then serves
 * until SIGINT or SIGTERM.
 */
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include "cmd.h"
#include "../lib/util.h"
#include "../web/web.h"

enum {
	OPT_LISTEN = 0x100,
	OPT_ALLOW_REMOTE,
	OPT_SNAPSHOT_DIR,
	OPT_HELP,
};

static const char serve_usage[] =
"usage: leakscope serve [--listen ADDR:PORT] [--snapshot-dir DIR]\n"
"\n"
"Serve a live web view of every traced process this user may query (root:\n"
"every user's) and its JSON API (docs/WEB-API.md).  Prints the URL to open,\n"
"with its access token; serves until interrupted.\n"
"\n"
"  --listen ADDR:PORT   where to listen (default 127.0.0.1, a free port);\n"
"                       [::1]:PORT for IPv6\n"
"  --allow-remote       accept a non-loopback ADDR (anyone who can reach it\n"
"                       and has the token sees your processes' memory)\n"
"  --snapshot-dir DIR   where snapshots taken from the page are saved\n"
"                       (default $XDG_STATE_HOME/leakscope/snapshots, else\n"
"                       ~/.local/state/leakscope/snapshots)\n";

int ls_cmd_serve(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "listen", required_argument, NULL, OPT_LISTEN },
		{ "allow-remote", no_argument, NULL, OPT_ALLOW_REMOTE },
		{ "snapshot-dir", required_argument, NULL, OPT_SNAPSHOT_DIR },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct ls_web_opts opts = { 0 };
	struct ls_web *w;
	sigset_t set;
	char err[1024];
	int c, sig;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == OPT_LISTEN)
			opts.listen = optarg;
		else if (c == OPT_ALLOW_REMOTE)
			opts.allow_remote = 1;
		else if (c == OPT_SNAPSHOT_DIR)
			opts.snapshot_dir = optarg;
		else if (c == OPT_HELP || c == 'h')
			return fputs(serve_usage, stdout), 0;
		else {
			ls_error("unknown option '%s' (see 'leakscope serve --help')",
				 argv[optind - 1]);
			return LS_EXIT_FAILURE;
		}
	}
	if (optind != argc) {
		ls_error("unexpected argument '%s' (see 'leakscope serve --help')",
			 argv[optind]);
		return LS_EXIT_FAILURE;
	}
	/* Blocked before the server's threads start, so that they inherit
	 * the mask and only sigwait() below sees these. */
	sigemptyset(&set);
	sigaddset(&set, SIGINT);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGHUP);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (ls_web_start(&opts, &w, err, sizeof(err))) {
		ls_error("%s", err);
		return LS_EXIT_FAILURE;
	}
	printf("leakscope: serving %s\n", ls_web_url(w));
	printf("leakscope: snapshots go to %s\n", ls_web_snapshot_dir(w));
	fflush(stdout);
	sigwait(&set, &sig);
	ls_web_stop(w);
	return 0;
}
