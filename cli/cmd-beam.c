/*
 * cmd-beam.c - `leakscope beam NODE`: the options, the cookie, the exit
 * statuses; the C node itself is erlang/beam.h.
 *
 * The cookie is a password to the node: --cookie's value is copied and
 * overwritten in argv as soon as the options are parsed (ps shows x's
 * from then on), and it is never printed; --cookie-file and
 * $HOME/.erlang.cookie keep it out of the command line altogether and
 * are preferred.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "cmds.h"
#ifdef LS_HAVE_EI
#include "../erlang/beam.h"
#endif

#define COOKIE_MAX 1024

#define A(field) LS_ARG(struct ls_beam_args, field)

static const struct ls_option own[] = {
	{ .kind = LS_OPT_STRING,
	  .long_name = "cookie-file",
	  .offset = A(cookie_file),
	  .argh = "FILE",
	  .help = "the cookie, from FILE (default $HOME/.erlang.cookie)",
	  .want = "a file name" },
	{ .kind = LS_OPT_STRING,
	  .long_name = "cookie",
	  .offset = A(cookie),
	  .argh = "COOKIE",
	  .help = "the cookie itself (visible to ps until read: prefer\n"
		  "--cookie-file)",
	  .want = "a cookie" },
	{ .kind = LS_OPT_SECONDS,
	  .long_name = "interval",
	  .offset = A(interval_ns),
	  .argh = "SECONDS",
	  .help = LS_OPT__INTERVAL_HELP " (default 5, decimals allowed)",
	  .min = 10000000,
	  .want = "seconds, at least 0.01" },
	LS_OPT__COUNT(struct ls_beam_args, count, 0, 100000,
		      " (default 12; trends need 5 or more)"),
	LS_OPT__FORMAT(struct ls_beam_args, format, LS_OPTF_STATS,
		       " (default text)"),
	LS_OPT__OUTPUT(struct ls_beam_args, output, 'o', ""),
	{ .kind = LS_OPT_UINT,
	  .long_name = "port",
	  .offset = A(port),
	  .argh = "PORT",
	  .help = "the node's distribution port: no epmd",
	  .min = 1,
	  .max = 65535,
	  .want = "1 to 65535" },
	{ .kind = LS_OPT_UINT,
	  .long_name = "top",
	  .offset = A(top),
	  .argh = "N",
	  .help = "only the N biggest (in each list; default 10)",
	  .flags = LS_OPTF_NONZERO,
	  .max = 100000,
	  .want = "a positive number" },
	{ .kind = LS_OPT_SECONDS,
	  .long_name = "timeout",
	  .offset = A(timeout_ns),
	  .argh = "SECONDS",
	  .help = LS_OPT__TIMEOUT_HELP " (per connection attempt and per call;\n"
		  "default 10)",
	  .min = 1000000,
	  .max = 3600000000000ull,
	  .want = "seconds, at most 3600" },
	{ .kind = LS_OPT_FLAG,
	  .long_name = "gc-check",
	  .offset = A(gc_check),
	  .help = "at the end, force a garbage collection of every process\n"
		  "and rank the refc binaries each let go (recon's bin_leak):\n"
		  "changes the node, only on request" },
	{ .kind = LS_OPT_END },
};

const struct ls_usage ls_beam_usage = {
	"beam", "NODE [OPTIONS]",
	"sample an Erlang node: which processes, tables, allocators grow",
	"Sample a running Erlang node (name@host, or name on this host) from a\n"
	"hidden C node and say which of its figures grow: processes, mailboxes,\n"
	"binaries, ETS tables, monitors, links, atoms, ports, allocators, and\n"
	"native memory outside them; with the node's own leakscope agent, the\n"
	"native sites that grow.  Only --gc-check changes the node.",
	(const struct ls_option *const[]){ own, NULL },
	"Exit status of beam: 0 report written; 2 the node is unreachable;\n"
	"3 it refused the handshake (wrong cookie, incompatible release, or\n"
	"another leakscope beam connected); 4 timeout, connection lost or a\n"
	"call failed on the node; 5 its OTP release is older than 23; 1 no\n"
	"cookie (file unreadable, or others may read it); 125 bad usage.",
	0,	/* no report options */
};

void ls_beam_defaults(void *args)
{
	struct ls_beam_args *a = args;

	a->interval_ns = 5000000000ull;
	a->count = 12;
	a->top = 10;
	a->timeout_ns = 10000000000ull;
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

/* --cookie's value copied, then overwritten where ps reads it. */
static int take_cookie(const char *arg, char *buf, size_t cap)
{
	size_t n = strlen(arg);

	if (n >= cap) {
		memset((char *)arg, 'x', n);
		ls_usage_error(&ls_beam_usage, "invalid value for --cookie: "
			       "expected at most %zu characters", cap - 1);
		return -1;
	}
	memcpy(buf, arg, n + 1);
	memset((char *)arg, 'x', n);
	return 0;
}

/* The cookie from --cookie-file, or $HOME/.erlang.cookie. */
static int read_default_cookie(const struct ls_beam_args *a, char *cookie)
{
	char path[4096];
	const char *home;

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

#ifdef LS_HAVE_EI
static int status_of(int r)
{
	switch (r) {
	case -EHOSTUNREACH:
	case -ECONNREFUSED:
		return LS_EXIT_BEAM_UNREACHABLE;
	case -EACCES:
		return LS_EXIT_BEAM_REFUSED;
	case -ETIMEDOUT:
	case -EPIPE:
	case -EPROTO:
		return LS_EXIT_BEAM_LOST;
	case -EPROTONOSUPPORT:
		return LS_EXIT_BEAM_RELEASE;
	}
	return LS_EXIT_ERROR;
}

static int run_beam(const struct ls_beam_args *a, const char *node,
		    const char *cookie)
{
	struct ls_beam_opts o = {
		.node = node, .cookie = cookie, .port = (int)a->port,
		.interval_s = (double)a->interval_ns / 1e9,
		.count = (unsigned)a->count, .top = (unsigned)a->top,
		.json = a->format == ls_renderer_find("json"),
		.gc_check = a->gc_check,
		.timeout_ms = (unsigned)(a->timeout_ns / 1000000),
	};
	struct ls_output out;
	char err[1024];
	int r;

	if (ls_open_output(&out, a->output ? a->output : "-"))
		return LS_EXIT_ERROR;
	/* A closed connection is an error return, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	r = ls_beam_run(&o, out.fp, err, sizeof(err));
	if (!r)
		return ls_commit_output(&out) ? LS_EXIT_ERROR : LS_EXIT_OK;
	ls_output_abort(&out);
	ls_error("%s", err);
	return status_of(r);
}
#else
static int run_beam(const struct ls_beam_args *a, const char *node,
		    const char *cookie)
{
	ls_error("this leakscope was built without erl_interface (install "
		 "erlang-dev and rebuild)");
	return LS_EXIT_ERROR;
}
#endif

int ls_cmd_beam(struct ls_invocation *inv)
{
	struct ls_beam_args *a = inv->args;
	char cookie[COOKIE_MAX] = "";
	int status = LS_EXIT_USAGE;

	/* First of all, whatever else is wrong: the value leaves argv. */
	if (a->cookie && take_cookie(a->cookie, cookie, COOKIE_MAX))
		goto out;
	if (a->cookie && a->cookie_file) {
		ls_usage_error(&ls_beam_usage, "--cookie and --cookie-file "
			       "exclude each other");
		goto out;
	}
	if (inv->argc != 1) {
		ls_usage_error(&ls_beam_usage, "expected one NODE");
		goto out;
	}
	if (!a->cookie && read_default_cookie(a, cookie)) {
		status = LS_EXIT_ERROR;
		goto out;
	}
	status = run_beam(a, inv->argv[0], cookie);
out:
	explicit_bzero(cookie, sizeof(cookie));
	return status;
}
