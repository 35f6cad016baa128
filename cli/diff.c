/*
 * diff.c - `leakscope diff BASE NEW`: what grew and what shrank between
 * two snapshots (saved files, post-mortem files or running pids), per
 * call stack (lib/diff.h, docs/DIFF.md).
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "cmd.h"
#include "target.h"
#include "../lib/diff.h"
#include "../lib/util.h"

enum { OPT_HELP = LS_OPT_REPORT_END };

/* Status of diff's own failures, as the other commands on snapshots. */
#define FAIL 1

static const char diff_usage[] =
"usage: leakscope diff [OPTIONS] BASE NEW\n"
"\n"
"Compare two snapshots of a program: BASE and NEW are each a running PID,\n"
"a snapshot saved by 'leakscope snapshot', or a post-mortem file.  Stacks\n"
"are matched by module, function, file and line (not by address), so the\n"
"two may come from different runs.  Lists, per stack, the change in live\n"
"bytes and blocks: the stacks that grew (largest growth first), shrank,\n"
"appeared and disappeared.\n"
"\n"
"  --format text|json|svg  text (default), JSON (docs/DIFF.md) or a\n"
"                          differential flame graph\n"
"  --output FILE           write to FILE (whole or not at all); '-' stdout\n"
"  --top N                 only the N stacks that changed the most\n"
"  --min-age MS, --min-size BYTES, --max-size BYTES\n"
"                          compare only the blocks that pass (both sides\n"
"                          need block lists: pids or saved snapshots)\n"
"  --title, --count bytes|blocks, --inverted\n"
"                          the flame graph's, as for 'leakscope report'\n"
"\n"
"Exit status: 0, also when the two are different programs (a warning\n"
"says so); 1 when a snapshot cannot be read or the output written.\n";

static int usage_error(const char *what)
{
	ls_error("%s (see 'leakscope diff --help')", what);
	return FAIL;
}

/* Options; returns the index of BASE, or -1 after an error, 0 for --help. */
static int parse(int argc, char **argv, struct ls_report_opts *opts,
		 const char **output)
{
	static const struct option longopts[] = {
		LS_REPORT_LONGOPTS,
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	char msg[256];
	int c, k;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		if (c == LS_OPT_SHOW_ALLOCS)
			return usage_error("--show-allocs is not available for "
					   "diff"), -1;
		k = ls_report_option(c, optarg, opts, output);
		if (k < 0)
			return -1;
		if (k)
			continue;
		if (c == OPT_HELP || c == 'h')
			return fputs(diff_usage, stdout), 0;
		snprintf(msg, sizeof(msg), "unknown option '%s'", argv[optind - 1]);
		return usage_error(msg), -1;
	}
	if (!ls_diff_format_ok(opts->format))
		return usage_error("--format for diff is text, json or svg"), -1;
	if (optind != argc - 2)
		return usage_error("expected BASE and NEW"), -1;
	ls_report_opts_finish(opts);
	return optind;
}

struct diff_job {
	const struct ls_diff *d;
	const struct ls_report_opts *opts;
};

static int render_diff(FILE *out, void *arg)
{
	const struct diff_job *job = arg;

	return ls_diff_render(out, job->d, job->opts);
}

static void warn_programs(const struct ls_diff *d, const char *base,
			  const char *newer)
{
	const struct ls_snapshot *b = d->base, *n = d->newer;

	ls_error("warning: '%s' and '%s' are different programs (%s, %s): "
		 "stacks are matched by function, file and line", base, newer,
		 b->nmodules ? b->modules[0].path : "?",
		 n->nmodules ? n->modules[0].path : "?");
}

static int diff(const struct ls_snapshot *base, const struct ls_snapshot *newer,
		const struct ls_report_opts *opts, const char *output,
		char **names)
{
	struct ls_diff d;
	struct diff_job job = { &d, opts };
	int r = ls_diff_build(base, newer, opts, &d);

	if (r == -ENODATA) {
		ls_error("--min-age, --min-size and --max-size need block lists: "
			 "a running pid or a snapshot saved by 'leakscope "
			 "snapshot', not a post-mortem file");
		return FAIL;
	}
	if (r) {
		ls_error("cannot compare '%s' and '%s': %s", names[0], names[1],
			 strerror(-r));
		return FAIL;
	}
	if (d.different_programs)
		warn_programs(&d, names[0], names[1]);
	r = ls_output_write(output, render_diff, &job);
	ls_diff_release(&d);
	return r ? FAIL : 0;
}

int ls_cmd_diff(int argc, char **argv)
{
	struct ls_report_opts opts = { 0 };
	struct ls_snapshot base, newer;
	const char *output = NULL;
	int first = parse(argc, argv, &opts, &output), r;

	if (first <= 0)
		return first < 0 ? FAIL : 0;
	if (ls_check_binary_output(&opts, output, 1))
		return FAIL;
	if (ls_target_load(argv[first], 0, opts.need_blocks, &base))
		return FAIL;
	if (ls_target_load(argv[first + 1], 0, opts.need_blocks, &newer)) {
		ls_snapshot_release(&base);
		return FAIL;
	}
	r = diff(&base, &newer, &opts, output, argv + first);
	ls_snapshot_release(&base);
	ls_snapshot_release(&newer);
	return r;
}
