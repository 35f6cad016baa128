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

const struct ls_option ls_report_options[] = {
	{ .kind = LS_OPT_FORMAT,
	  .long_name = "format",
	  .offset = RA(ropts.format),
	  .argh = "FORMAT",
	  .help = "report format" },
	{ .kind = LS_OPT_STRING,
	  .long_name = "output",
	  .offset = RA(output),
	  .argh = "FILE",
	  .help = "write the report to FILE, whole or not at all ('-': stdout)",
	  .want = "a file name" },
	{ .kind = LS_OPT_END },
};

const struct ls_option ls_filter_options[] = {
	{ .kind = LS_OPT_UINT,
	  .long_name = "top",
	  .offset = RA(top),
	  .argh = "N",
	  .help = "only the N stacks holding the most bytes",
	  .flags = LS_OPTF_NONZERO,
	  .want = "a positive number of stacks" },
	{ .kind = LS_OPT_MS,
	  .long_name = "min-age",
	  .offset = RA(ropts.min_age_ns),
	  .argh = "MS",
	  .help = "only blocks at least MS milliseconds old",
	  .want = "milliseconds" },
	{ .kind = LS_OPT_SIZE,
	  .long_name = "min-size",
	  .offset = RA(ropts.min_size),
	  .argh = "BYTES",
	  .help = "only blocks of at least BYTES (K, M, G suffixes)",
	  .want = "a size such as 4096 or 64KiB" },
	{ .kind = LS_OPT_SIZE,
	  .long_name = "max-size",
	  .offset = RA(ropts.max_size),
	  .argh = "BYTES",
	  .help = "only blocks of at most BYTES",
	  .flags = LS_OPTF_NONZERO,
	  .want = "a positive size such as 4096 or 64KiB" },
	{ .kind = LS_OPT_END },
};

const struct ls_option ls_view_options[] = {
	{ .kind = LS_OPT_CHOICE,
	  .long_name = "by",
	  .offset = RA(ropts.by),
	  .argh = "ORDER",
	  .help = "rank stacks by: live (bytes live now, default), peak (live "
	  "when the process peaked), allocated, temporary",
	  .choices = ls_report_by_names,
	  .want = "live, peak, allocated or temporary" },
	{ .kind = LS_OPT_FLAG,
	  .long_name = "histogram",
	  .offset = RA(ropts.histogram),
	  .help = "allocation sizes and lifetimes at free (log2 buckets), "
	  "per stack and for the whole process" },
	{ .kind = LS_OPT_END },
};

const struct ls_option ls_blocks_option[] = {
	{ .kind = LS_OPT_FLAG,
	  .long_name = "show-allocs",
	  .offset = RA(ropts.show_allocs),
	  .help = "list every outstanding block: address, size, age, thread" },
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

#define STR_(x) #x
#define STR(x) STR_(x)

const struct ls_option ls_stack_options[] = {
	{ .kind = LS_OPT_UINT,
	  .long_name = "depth",
	  .offset = RA(depth),
	  .argh = "N",
	  .help = "frames per stack, " STR(LS_DEPTH_MIN) "-" STR(LS_DEPTH_MAX)
		  " (run: captured, default " STR(LS_DEPTH_DEFAULT) ";\n"
		  "other commands: shown, default all)",
	  .min = LS_DEPTH_MIN,
	  .max = LS_DEPTH_MAX,
	  .want = STR(LS_DEPTH_MIN) " to " STR(LS_DEPTH_MAX) },
	{ .kind = LS_OPT_FLAG,
	  .long_name = "full-names",
	  .offset = RA(ropts.full_names),
	  .help = "C++ names with their template arguments (by default cut to\n"
		  "<…>: std::_Rb_tree<…>::_M_get_node())" },
	{ .kind = LS_OPT_FLAG,
	  .long_name = "hide-runtime",
	  .offset = RA(ropts.hide_runtime),
	  .help = "leave out the frames of libc, libstdc++ and ld.so below and\n"
		  "above the program's own" },
	{ .kind = LS_OPT_END },
};

#define FA(field) RA(ropts.svg.field)

const struct ls_option ls_flame_options[] = {
	{ .kind = LS_OPT_STRING,
	  .long_name = "title",
	  .offset = FA(title),
	  .argh = "TEXT",
	  .help = "the flame graph's title (svg)",
	  .want = "a title" },
	{ .kind = LS_OPT_FLAG,
	  .long_name = "inverted",
	  .offset = FA(inverted),
	  .help = "icicle graph: the root at the top (svg)" },
	{ .kind = LS_OPT_CHOICE,
	  .long_name = "colors",
	  .offset = FA(colors),
	  .argh = "PALETTE",
	  .help = "greens by function, or hues by frame kind (svg)",
	  .choices = (const char *const[]){ "mem", "kind", NULL } },
	{ .kind = LS_OPT_END },
};

const struct ls_option ls_flame_count_option[] = {
	{ .kind = LS_OPT_CHOICE,
	  .long_name = "count",
	  .offset = FA(count),
	  .argh = "WHAT",
	  .help = "what the flame graph's widths measure (svg)",
	  .choices = (const char *const[]){ "bytes", "blocks", NULL } },
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

	if (reach_finish(a))
		return -1;
	a->ropts.top = (size_t)a->top;
	/* run's --depth is what the agent captures: its reports show all. */
	a->ropts.depth = many ? 0 : (unsigned)a->depth;
	ls_report_opts_finish(&a->ropts);
	if (a->beside && !a->postmortem) {
		ls_error("--in names where a dead process ran: it needs "
			 "--postmortem");
		return -1;
	}
	if (a->ropts.by != LS_BY_LIVE && a->ropts.need_blocks) {
		ls_error("--by %s cannot be combined with --min-age, --min-size, "
			 "--max-size or --show-allocs (they select live blocks)",
			 ls_report_by_names[a->ropts.by]);
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
