/*
 * report-args.c - the reporting commands' shared options and the path
 * snapshot -> report -> file.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../common/contract.h"
#include "cli.h"
#include "report-args.h"

#define RA(field) LS_ARG(struct ls_report_args, field)

/* ls_ropt_options' rows (LS_OPT_REPORT, offset 0) set the struct
 * ls_report_opts at the head of every reporting command's arguments. */
_Static_assert(offsetof(struct ls_report_args, ropts) == 0,
	       "ropts first in struct ls_report_args");

const struct ls_option ls_report_options[] = {
	LS_OPT__FORMAT(struct ls_report_args, ropts.format, 0, " (default text)"),
	LS_OPT__OUTPUT(struct ls_report_args, output, 'o', ""),
	{ .kind = LS_OPT_END },
};

/* --suppressions FILE: may be given several times. */
static int add_supp_file(const struct ls_option *o, const char *arg, void *args)
{
	struct ls_report_args *a = args;

	if (!*arg || a->nsupp_files == LS_SUPP_FILES_MAX)
		return -1;
	a->supp_files[a->nsupp_files++] = arg;
	return 0;
}

const struct ls_option ls_reach_options[] = {
	{ .kind = LS_OPT_STRING,
	  .long_name = "only",
	  .offset = RA(only),
	  .argh = "KINDS",
	  .help = "with a reachability check: only definite, indirect, possible,\n"
	  "reachable (comma-separated) or all",
	  .want = "definite, indirect, possible, reachable or all" },
	{ .kind = LS_OPT_CALLBACK,
	  .long_name = "suppressions",
	  .argh = "FILE",
	  .help = "LeakSanitizer suppressions (leak:PATTERN); several allowed",
	  .cb = add_supp_file,
	  .want = "a file name (at most 32 files)" },
	{ .kind = LS_OPT_FLAG,
	  .long_name = "gen-suppressions",
	  .offset = RA(ropts.gen_supp),
	  .help = "print a suppression for every lost record" },
	{ .kind = LS_OPT_FLAG,
	  .long_name = "no-default-suppressions",
	  .offset = RA(no_default_supp),
	  .help = "show the C and C++ runtimes' one-time allocations too" },
	{ .kind = LS_OPT_END },
};

/* A binary format goes to a file, or to a stdout that is no terminal. */
static int check_binary(const struct ls_renderer *r, const char *output,
			int many)
{
	if (!output) {
		ls_error("--format %s is binary: give --output FILE%s", r->name,
			 many ? "" : " (or --output - for stdout)");
		return -1;
	}
	if (!strcmp(output, "-") && isatty(STDOUT_FILENO)) {
		ls_error("refusing to write binary %s data to a terminal (use "
			 "--output FILE or a pipe)", r->name);
		return -1;
	}
	return 0;
}

/* --only and the suppression files; the built-in list when the command
 * asked for it (into supp_all; supp holds the files alone). */
static int reach_finish(struct ls_report_args *a)
{
	char err[4400];
	size_t i;

	if (a->only && ls_reach_parse_kinds(a->only, &a->ropts.only, err,
					    sizeof(err))) {
		ls_error("--only: %s", err);
		return -1;
	}
	for (i = 0; i < a->nsupp_files; i++)
		if (ls_supp_load(&a->supp, a->supp_files[i], err, sizeof(err)) ||
		    ls_supp_load(&a->supp_all, a->supp_files[i], err,
				 sizeof(err))) {
			ls_error("%s", err);
			return -1;
		}
	if (a->default_supp && !a->no_default_supp &&
	    ls_supp_default(&a->supp_all)) {
		ls_error("out of memory");
		return -1;
	}
	a->ropts.supp = a->supp_all.n ? &a->supp_all : NULL;
	return 0;
}

void ls_report_args_release(struct ls_report_args *a)
{
	ls_supp_release(&a->supp);
	ls_supp_release(&a->supp_all);
	a->ropts.supp = NULL;
}

int ls_report_args_finish(struct ls_report_args *a, int many)
{
	const struct ls_renderer *r = ls_renderer_of(&a->ropts);

	char err[256];

	if (reach_finish(a))
		return -1;
	/* run's --depth is what the agent captures: its reports show all. */
	if (many) {
		a->depth = a->ropts.depth;
		a->ropts.depth = 0;
	}
	if (a->beside && !a->postmortem) {
		ls_error("--in names where a dead process ran: it needs "
			 "--postmortem");
		return -1;
	}
	if (ls_ropt_check(&a->ropts, 0, err, sizeof(err))) {
		ls_error("%s", err);
		return -1;
	}
	if (r->needs & LS_NEEDS_NOT_TTY)
		return check_binary(r, a->output, many);
	/* Several processes' documents never share a stream. */
	if ((r->needs & LS_NEEDS_OWN_FILE) && many && !a->output) {
		ls_error("--format %s needs --output FILE", r->name);
		return -1;
	}
	return 0;
}

struct ls_source_opts ls_report_args_source(const struct ls_report_args *a,
					    int blocks)
{
	struct ls_source_opts so = {
		.blocks = blocks || a->ropts.need_blocks,
		.postmortem = a->postmortem,
		.beside = (pid_t)a->beside,
	};

	return so;
}

int ls_write_report(FILE *fp, const char *path, const struct ls_snapshot *snap,
		    const struct ls_report_opts *opts,
		    struct ls_symbolizer *sym)
{
	return ls_write_report_gate(fp, path, snap, opts, sym, 0, NULL, NULL);
}

void ls_gate_reason(pid_t pid, const struct ls_gate *g, unsigned kinds)
{
	char what[128] = "";
	unsigned k;

	if (!g->reach) {
		ls_error("pid %d: %" PRIu64 " bytes in %" PRIu64 " blocks "
			 "outstanding at exit from %zu stacks (--fail-on-leak)",
			 (int)pid, g->bytes, g->blocks, g->sites);
		return;
	}
	for (k = 0; k < LSNAP_REACH_KINDS; k++)
		if (kinds & 1u << k)
			snprintf(what + strlen(what), sizeof(what) - strlen(what),
				 "%s%s", *what ? " or " : "", ls_reach_kind_name(k));
	ls_error("pid %d: %" PRIu64 " bytes in %" PRIu64 " blocks %s from %zu "
		 "stacks (--fail-on-leak)", (int)pid, g->bytes, g->blocks, what,
		 g->sites);
}

int ls_write_report_gate(FILE *fp, const char *path,
			 const struct ls_snapshot *snap,
			 const struct ls_report_opts *opts,
			 struct ls_symbolizer *sym, unsigned kinds,
			 const struct ls_report_opts *gate_opts,
			 struct ls_gate *gate)
{
	struct ls_report rep, grep_;
	int err = ls_report_build(snap, opts, &rep);

	if (err == -ENODATA)
		return err;
	if (err) {
		ls_error("cannot build the report of pid %u: %s", snap->hdr.pid,
			 strerror(-err));
		return err;
	}
	err = ls_report_render(fp, &rep, opts, sym);
	if (gate && (!gate_opts || gate_opts == opts)) {
		ls_report_gate(&rep, kinds, gate);
	} else if (gate && !err) {
		err = ls_report_build(snap, gate_opts, &grep_);
		if (!err) {
			ls_report_gate(&grep_, kinds, gate);
			ls_report_release(&grep_);
		}
	}
	ls_report_release(&rep);
	if (err && path)
		ls_error("cannot write '%s': %s", path, strerror(-err));
	else if (err)
		ls_error("cannot write the report: %s", strerror(-err));
	return err;
}

static void on_fatal_signal(int sig);

/* Remove the output writer's temporary files on SIGINT, SIGTERM, SIGHUP,
 * SIGPIPE and die of the signal; a signal the command handles itself
 * (its handler installed before) keeps that handler. */
static void ls_output_cleanup_on_signals(void);

int ls_open_output(struct ls_output *o, const char *path)
{
	int err;

	/* Where the file system has no unnamed files, the writer's
	 * PATH.tmp.PID must go with us if a signal ends us.  (run installs
	 * its own forwarding afterwards: it ends only with its command.) */
	ls_output_cleanup_on_signals();
	err = ls_output_open(o, path);

	if (err)
		ls_error("cannot write '%s': %s", path, strerror(-err));
	return err;
}

int ls_commit_output(struct ls_output *o)
{
	char *path = o->path ? strdup(o->path) : NULL;
	int err = ls_output_commit(o);

	if (err)
		ls_error("cannot write '%s': %s", path ? path : "output",
			 strerror(-err));
	free(path);
	return err;
}

int ls_load_target(const char *target, const struct ls_source_opts *so,
		   struct ls_snapshot *snap)
{
	char err[5000];
	int r = ls_source_load(target, so, snap, err, sizeof(err));

	if (r)
		ls_error("%s", err);
	return r;
}

static void on_fatal_signal(int sig)
{
	ls_output_remove_temps();
	signal(sig, SIG_DFL);
	raise(sig);
}

/* Only where the signal would end us anyway: a command that handles it
 * (trace's Ctrl+C writes the final report) keeps its handler. */
static void ls_output_cleanup_on_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
	struct sigaction old;
	size_t i;

	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		if (!sigaction(sigs[i], NULL, &old) && old.sa_handler == SIG_DFL)
			signal(sigs[i], on_fatal_signal);
}
