/*
 * cmd-diff.c - `leakscope diff BASE NEW`: what grew and what shrank
 * between two snapshots (saved files, post-mortem files or running pids),
 * per call stack (lib/diff.h, docs/DIFF.md).
 */
#include <errno.h>
#include <string.h>
#include "../lib/diff.h"
#include "cmds.h"

#define A(field) LS_ARG(struct ls_report_args, field)

static const struct ls_option own[] = {
	LS_OPT__FORMAT(struct ls_report_args, ropts.format, LS_OPTF_DIFF,
		       " (default text; svg: a differential flame graph)"),
	LS_OPT__OUTPUT(struct ls_report_args, output, 'o', ""),
	{ .kind = LS_OPT_END },
};

const struct ls_usage ls_diff_usage = {
	"diff", "[OPTIONS] BASE NEW",
	"what grew and shrank between two snapshots",
	"Compare two snapshots of a program: BASE and NEW are each a running\n"
	"PID, a snapshot saved by 'leakscope snapshot', or a post-mortem file.\n"
	"Stacks are matched by module, function, file and line (not by\n"
	"address), so the two may come from different runs.  Lists, per stack,\n"
	"the change in live bytes and blocks: the stacks that grew (largest\n"
	"growth first), shrank, appeared and disappeared.  The filters compare\n"
	"only the blocks that pass (both sides need block lists).",
	(const struct ls_option *const[]){ own, ls_ropt_options, NULL },
	"Exit status: 0, also when the two are different programs (a warning\n"
	"says so).",
	LS_RO_DIFF,
};

static void warn_programs(const struct ls_diff *d, char **names)
{
	const struct ls_snapshot *b = d->base, *n = d->newer;

	ls_error("warning: '%s' and '%s' are different programs (%s, %s): "
		 "stacks are matched by function, file and line", names[0],
		 names[1], b->nmodules ? b->modules[0].path : "?",
		 n->nmodules ? n->modules[0].path : "?");
}

static int write_diff(const struct ls_diff *d, const struct ls_report_args *a)
{
	struct ls_output out;
	int r;

	if (ls_open_output(&out, a->output ? a->output : "-"))
		return -1;
	r = ls_diff_render(out.fp, d, &a->ropts);
	if (r) {
		ls_error("cannot write '%s': %s", a->output ? a->output : "-",
			 strerror(-r));
		ls_output_abort(&out);
		return -1;
	}
	return ls_commit_output(&out) ? -1 : 0;
}

static int diff(const struct ls_snapshot *base, const struct ls_snapshot *newer,
		const struct ls_report_args *a, char **names)
{
	struct ls_diff d;
	int r = ls_diff_build(base, newer, &a->ropts, &d);

	if (r == -ENODATA) {
		ls_error("--min-age, --min-size and --max-size need block lists: "
			 "a running pid or a snapshot saved by 'leakscope "
			 "snapshot', not a post-mortem file");
		return LS_EXIT_ERROR;
	}
	if (r) {
		ls_error("cannot compare '%s' and '%s': %s", names[0], names[1],
			 strerror(-r));
		return LS_EXIT_ERROR;
	}
	if (d.different_programs)
		warn_programs(&d, names);
	r = write_diff(&d, a);
	ls_diff_release(&d);
	return r ? LS_EXIT_ERROR : LS_EXIT_OK;
}

int ls_cmd_diff(struct ls_invocation *inv)
{
	struct ls_report_args *a = inv->args;
	struct ls_source_opts so = ls_report_args_source(a, 0);
	struct ls_snapshot base, newer;
	int r = LS_EXIT_ERROR;

	if (inv->argc != 2) {
		ls_usage_error(&ls_diff_usage, "expected BASE and NEW");
		return LS_EXIT_USAGE;
	}
	if (ls_load_target(inv->argv[0], &so, &base))
		return LS_EXIT_ERROR;
	if (!ls_load_target(inv->argv[1], &so, &newer)) {
		r = diff(&base, &newer, a, inv->argv);
		ls_snapshot_release(&newer);
	}
	ls_snapshot_release(&base);
	return r;
}
