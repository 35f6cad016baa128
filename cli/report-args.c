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
	{ .kind = LS_OPT_FLAG,
	  .long_name = "show-allocs",
	  .offset = RA(ropts.show_allocs),
	  .help = "list every outstanding block: address, size, age, thread" },
	{ .kind = LS_OPT_END },
};

const struct ls_option ls_reach_options[] = {
	{ .kind = LS_OPT_STRING,
	  .long_name = "only",
	  .offset = RA(only),
	  .argh = "KINDS",
	  .help = "with a reachability check: only definite, indirect, possible,\n"
	  "reachable (comma-separated) or all",
	  .want = "definite, indirect, possible, reachable or all" },
	{ .kind = LS_OPT_LIST,
	  .long_name = "suppressions",
	  .offset = RA(supp_files),
	  .argh = "FILE",
	  .help = "LeakSanitizer suppressions (leak:PATTERN); several allowed",
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
	  " (run: captured, default " STR(LS_DEPTH_DEFAULT) ")",
	  .min = LS_DEPTH_MIN,
	  .max = LS_DEPTH_MAX,
	  .want = STR(LS_DEPTH_MIN) " to " STR(LS_DEPTH_MAX) },
	{ .kind = LS_OPT_END },
};

const struct ls_option ls_flame_options[] = {
	{ .kind = LS_OPT_STRING,
	  .long_name = "title",
	  .offset = RA(ropts.svg.title),
	  .argh = "TEXT",
	  .help = "the flame graph's title (svg)",
	  .want = "a title" },
	{ .kind = LS_OPT_FLAG,
	  .long_name = "inverted",
	  .offset = RA(ropts.svg.inverted),
	  .help = "an icicle graph: the root at the top (svg)" },
	{ .kind = LS_OPT_STRING,
	  .long_name = "colors",
	  .offset = RA(colors),
	  .argh = "mem|kind",
	  .help = "greens varied by function, or a hue per kind of frame (svg)",
	  .want = "mem or kind" },
	{ .kind = LS_OPT_END },
};

const struct ls_option ls_flame_count_option[] = {
	{ .kind = LS_OPT_STRING,
	  .long_name = "count",
	  .offset = RA(count),
	  .argh = "bytes|blocks",
	  .help = "what the flame graph's widths measure (svg)",
	  .want = "bytes or blocks" },
	{ .kind = LS_OPT_END },
};

/* The value of a word option among words[] (NULL-terminated): its index,
 * or -1 after a usage error. */
static int word(const struct ls_usage *u, const char *opt, const char *v,
		const char *const *words, const char *want)
{
	int i;

	for (i = 0; words[i]; i++)
		if (!strcmp(v, words[i]))
			return i;
	ls_usage_error(u, "invalid value '%s' for --%s: expected %s", v, opt,
		       want);
	return -1;
}

static int flame_finish(struct ls_report_args *a, const struct ls_usage *u)
{
	static const char *const counts[] = { "bytes", "blocks", NULL };
	static const char *const colors[] = { "mem", "kind", NULL };
	int k;

	if (a->count) {
		if ((k = word(u, "count", a->count, counts, "bytes or blocks")) < 0)
			return -1;
		a->ropts.svg.count = k ? LS_FLAME_COUNT_BLOCKS :
					 LS_FLAME_COUNT_BYTES;
	}
	if (a->colors) {
		if ((k = word(u, "colors", a->colors, colors, "mem or kind")) < 0)
			return -1;
		a->ropts.svg.colors = k ? LS_FLAME_COLORS_KIND :
					  LS_FLAME_COLORS_MEM;
	}
	return 0;
}

/* A binary format goes to a file, or to a stdout the user named that is
 * not a terminal. */
static int binary_finish(const struct ls_report_args *a)
{
	const struct ls_renderer *r = ls_renderer_of(&a->ropts);

	if (!(r->needs & LS_NEEDS_NOT_TTY))
		return 0;
	if (!a->output) {
		ls_error("--format %s is binary: give --output FILE (or --output "
			 "- for a stdout that is not a terminal)", r->name);
		return -1;
	}
	if (!strcmp(a->output, "-") && isatty(STDOUT_FILENO)) {
		ls_error("refusing to write binary %s data to a terminal: give "
			 "--output FILE", r->name);
		return -1;
	}
	return 0;
}

/* --only and the suppression files; the built-in list when the command
 * asked for it. */
static int reach_finish(struct ls_report_args *a, const struct ls_usage *u)
{
	char err[4400];
	size_t i;

	if (a->only && ls_reach_parse_kinds(a->only, &a->ropts.only, err,
					    sizeof(err))) {
		ls_usage_error(u, "--only: %s", err);
		return -1;
	}
	for (i = 0; i < a->supp_files.n; i++)
		if (ls_supp_load(&a->supp, a->supp_files.v[i], err,
				 sizeof(err)) ||
		    ls_supp_load(&a->supp_all, a->supp_files.v[i], err,
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

int ls_report_args_finish(struct ls_report_args *a, const struct ls_usage *u)
{
	if (flame_finish(a, u) || binary_finish(a) || reach_finish(a, u))
		return -1;
	a->ropts.top = (size_t)a->top;
	a->ropts.depth = (unsigned)a->depth;
	ls_report_opts_finish(&a->ropts);
	return 0;
}

struct ls_source_opts ls_report_args_source(const struct ls_report_args *a,
					    int blocks)
{
	struct ls_source_opts so = {
		.blocks = blocks || a->ropts.need_blocks,
		.postmortem = a->postmortem,
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

int ls_open_output(struct ls_output *o, const char *path)
{
	int err = ls_output_open(o, path);

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

void ls_output_cleanup_on_signals(void)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGPIPE };
	size_t i;

	for (i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		signal(sigs[i], on_fatal_signal);
}
