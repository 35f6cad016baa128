/*
 * beam.c - `leakscope beam NODE`: the options, the cookie, the exit
 * statuses; the C node itself is erlang/beam.h.
 *
 * The cookie is a password to the node: --cookie's argument is copied and
 * overwritten in argv at once (so ps shows x's from then on), and it is
 * never printed; --cookie-file and $HOME/.erlang.cookie keep it out of
 * the command line altogether and are preferred.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cmd.h"
#include "../lib/util.h"
#ifdef LS_HAVE_EI
#include "../erlang/beam.h"
#endif

/* Exit statuses of `leakscope beam` (docs/ERLANG.md). */
#define BEAM_EXIT_UNREACHABLE 2	/* no such node, nothing listens */
#define BEAM_EXIT_REFUSED 3	/* handshake refused: cookie, release */
#define BEAM_EXIT_LOST 4	/* timeout, connection lost, rpc failed */
#define BEAM_EXIT_RELEASE 5	/* the node's OTP release is too old */

#define COOKIE_MAX 1024

enum {
	OPT_COOKIE = 0x200,
	OPT_COOKIE_FILE,
	OPT_INTERVAL,
	OPT_COUNT,
	OPT_FORMAT,
	OPT_PORT,
	OPT_GC_CHECK,
	OPT_TOP,
	OPT_TIMEOUT,
	OPT_HELP,
};

static const char beam_usage[] =
"usage: leakscope beam NODE [--cookie-file F | --cookie C] [--interval S]\n"
"                      [--count N] [--format text|json] [--port P]\n"
"                      [--top N] [--timeout S] [--gc-check]\n"
"\n"
"Sample a running Erlang node from a hidden C node and say which of its\n"
"figures grow: processes, mailboxes, binaries, ETS tables, monitors,\n"
"links, atoms, ports, allocators, and native memory outside them (with\n"
"the node's own leakscope agent, the native sites that grow).\n"
"\n"
"  NODE             name@host, or name for this host\n"
"  --cookie-file F  the cookie, from F (default $HOME/.erlang.cookie)\n"
"  --cookie C       the cookie itself (visible to ps until read: prefer\n"
"                   --cookie-file)\n"
"  --interval S     seconds between samples (default 5, decimals allowed)\n"
"  --count N        samples (default 12; trends need 5 or more)\n"
"  --format F       text (default) or json\n"
"  --port P         the node's distribution port: no epmd\n"
"  --top N          entries per top list (default 10)\n"
"  --timeout S      per connection attempt and per call (default 10)\n"
"  --gc-check       at the end, force a garbage collection of every\n"
"                   process and rank the refc binaries each let go\n"
"                   (recon's bin_leak): changes the node, only on request\n"
"\n"
"Exit status: 0 report written; 2 node unreachable; 3 handshake refused\n"
"(wrong cookie, incompatible release); 4 timeout or connection lost;\n"
"5 OTP release too old; 125 bad usage or leakscope's own failure.\n";

/* Prints; returns -1 for parse(). */
static int usage_error(const char *what)
{
	ls_error("%s (see 'leakscope beam --help')", what);
	return -1;
}

/*
 * The cookie from a file, as erl reads it: the first line, trailing
 * blanks dropped; refused when others may read the file (erl refuses it
 * too).  Returns 0 or prints the reason.
 */
static int read_cookie(const char *path, char *buf, size_t cap)
{
	struct stat st;
	FILE *fp;
	size_t n;
	int ok;

	fp = fopen(path, "re");
	if (!fp) {
		ls_error("cannot read the cookie file '%s': %s", path,
			 strerror(errno));
		return -1;
	}
	if (fstat(fileno(fp), &st) || (st.st_mode & 077)) {
		fclose(fp);
		ls_error("cookie file '%s' must be readable by its owner only "
			 "(chmod 400)", path);
		return -1;
	}
	ok = fgets(buf, (int)cap, fp) != NULL;
	fclose(fp);
	n = ok ? strcspn(buf, "\r\n") : 0;
	while (n && (buf[n - 1] == ' ' || buf[n - 1] == '\t'))
		n--;
	if (ok)
		buf[n] = 0;
	if (!n) {
		ls_error("cookie file '%s' is empty", path);
		return -1;
	}
	return 0;
}

static int take_cookie(const char *arg, char *buf, size_t cap)
{
	size_t n = strlen(arg);

	if (!n || n >= cap) {
		ls_error("invalid value for --cookie: expected 1 to %zu "
			 "characters", cap - 1);
		return -1;
	}
	memcpy(buf, arg, n + 1);
	/* What ps shows from now on. */
	memset((char *)arg, 'x', n);
	return 0;
}

#ifdef LS_HAVE_EI
static int status_of(int r)
{
	switch (r) {
	case -EHOSTUNREACH:
	case -ECONNREFUSED:
		return BEAM_EXIT_UNREACHABLE;
	case -EACCES:
		return BEAM_EXIT_REFUSED;
	case -ETIMEDOUT:
	case -EPIPE:
	case -EPROTO:
		return BEAM_EXIT_LOST;
	case -EPROTONOSUPPORT:
		return BEAM_EXIT_RELEASE;
	}
	return LS_EXIT_FAILURE;
}
#endif

struct beam_args {
	const char *cookie_file;
	int have_cookie;
	uint64_t interval_ns, count, top, timeout_ns, port;
	int json, gc_check;
};

static int parse(int argc, char **argv, struct beam_args *a, char *cookie)
{
	static const struct option longopts[] = {
		{ "cookie", required_argument, NULL, OPT_COOKIE },
		{ "cookie-file", required_argument, NULL, OPT_COOKIE_FILE },
		{ "interval", required_argument, NULL, OPT_INTERVAL },
		{ "count", required_argument, NULL, OPT_COUNT },
		{ "format", required_argument, NULL, OPT_FORMAT },
		{ "port", required_argument, NULL, OPT_PORT },
		{ "top", required_argument, NULL, OPT_TOP },
		{ "timeout", required_argument, NULL, OPT_TIMEOUT },
		{ "gc-check", no_argument, NULL, OPT_GC_CHECK },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	char msg[300];
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		switch (c) {
		case OPT_COOKIE:
			if (take_cookie(optarg, cookie, COOKIE_MAX))
				return -1;
			a->have_cookie = 1;
			break;
		case OPT_COOKIE_FILE:
			a->cookie_file = optarg;
			break;
		case OPT_INTERVAL:
			if (ls_parse_seconds(optarg, &a->interval_ns) ||
			    a->interval_ns < 10000000)
				return usage_error("--interval: expected seconds, "
						   "at least 0.01");
			break;
		case OPT_COUNT:
			if (ls_parse_count(optarg, &a->count) || !a->count ||
			    a->count > 100000)
				return usage_error("--count: expected 1 to 100000");
			break;
		case OPT_TOP:
			if (ls_parse_count(optarg, &a->top) || !a->top ||
			    a->top > 100000)
				return usage_error("--top: expected a positive number");
			break;
		case OPT_TIMEOUT:
			if (ls_parse_seconds(optarg, &a->timeout_ns) ||
			    a->timeout_ns < 1000000 ||
			    a->timeout_ns > 3600000000000ull)
				return usage_error("--timeout: expected seconds, "
						   "at most 3600");
			break;
		case OPT_PORT:
			if (ls_parse_count(optarg, &a->port) || !a->port ||
			    a->port > 65535)
				return usage_error("--port: expected 1 to 65535");
			break;
		case OPT_FORMAT:
			if (strcmp(optarg, "text") && strcmp(optarg, "json"))
				return usage_error("--format: expected text or json");
			a->json = !strcmp(optarg, "json");
			break;
		case OPT_GC_CHECK:
			a->gc_check = 1;
			break;
		case OPT_HELP:
		case 'h':
			fputs(beam_usage, stdout);
			return 1;
		default:
			snprintf(msg, sizeof(msg), "unknown option '%s'",
				 argv[optind - 1]);
			return usage_error(msg);
		}
	}
	if (optind != argc - 1)
		return usage_error("expected one NODE");
	if (a->have_cookie && a->cookie_file)
		return usage_error("--cookie and --cookie-file exclude each other");
	return 0;
}

static int find_cookie(struct beam_args *a, char *cookie)
{
	char path[4096];
	const char *home;

	if (a->have_cookie)
		return 0;
	if (a->cookie_file)
		return read_cookie(a->cookie_file, cookie, COOKIE_MAX);
	home = getenv("HOME");
	if (!home || !*home) {
		ls_error("no cookie: give --cookie-file, or set HOME to find "
			 ".erlang.cookie");
		return -1;
	}
	snprintf(path, sizeof(path), "%s/.erlang.cookie", home);
	return read_cookie(path, cookie, COOKIE_MAX);
}

int ls_cmd_beam(int argc, char **argv)
{
	struct beam_args a = { .interval_ns = 5000000000ull, .count = 12,
			       .top = 10, .timeout_ns = 10000000000ull };
	char cookie[COOKIE_MAX] = "";
	int r, status = LS_EXIT_FAILURE;

	r = parse(argc, argv, &a, cookie);
	if (r)
		goto out_parse;
	if (find_cookie(&a, cookie))
		goto out;
#ifdef LS_HAVE_EI
	{
		struct ls_beam_opts o = {
			.node = argv[argc - 1], .cookie = cookie,
			.port = (int)a.port,
			.interval_s = (double)a.interval_ns / 1e9,
			.count = (unsigned)a.count, .top = (unsigned)a.top,
			.json = a.json, .gc_check = a.gc_check,
			.timeout_ms = (unsigned)(a.timeout_ns / 1000000),
		};
		char err[1024];

		/* A closed connection is an error return, not a signal. */
		signal(SIGPIPE, SIG_IGN);
		r = ls_beam_run(&o, stdout, err, sizeof(err));
		if (r) {
			ls_error("%s", err);
			status = status_of(r);
		} else {
			status = 0;
		}
	}
#else
	ls_error("this leakscope was built without erl_interface (install "
		 "erlang-dev and rebuild)");
#endif
	goto out;
out_parse:
	status = r > 0 ? 0 : LS_EXIT_FAILURE;
out:
	explicit_bzero(cookie, sizeof(cookie));
	return status;
}
