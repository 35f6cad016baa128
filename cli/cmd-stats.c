/*
 * cmd-stats.c - `leakscope stats [--format text|json] PID|FILE`: calls,
 * totals and the allocator's own statistics.
 */
#include <string.h>
#include "cmds.h"

#define A(field) LS_ARG(struct ls_report_args, field)

static const struct ls_option own[] = {
	{ .kind = LS_OPT_FORMAT,
	  .flags = LS_OPTF_STATS,
	  .long_name = "format",
	  .offset = A(ropts.format),
	  .argh = "FORMAT",
	  .help = "output format" },
	{ .kind = LS_OPT_STRING,
	  .long_name = "output",
	  .offset = A(output),
	  .argh = "FILE",
	  .help = "write to FILE, whole or not at all ('-': stdout)",
	  .want = "a file name" },
	{ .kind = LS_OPT_END },
};

const struct ls_usage ls_stats_usage = {
	"stats", "[OPTIONS] PID|FILE",
	"calls, totals and allocator statistics",
	"Calls per function, live and total figures, and the allocator's own\n"
	"statistics of a running process, a snapshot or a post-mortem file.",
	(const struct ls_option *const[]){ own, NULL },
	NULL,
};

int ls_cmd_stats(struct ls_invocation *inv)
{
	struct ls_report_args *a = inv->args;
	const struct ls_renderer *r = ls_renderer_of(&a->ropts);
	struct ls_output out;
	int err;

	if (ls_open_output(&out, a->output ? a->output : "-"))
		return LS_EXIT_ERROR;
	err = r->stats(out.fp, &inv->snap);
	if (err) {
		ls_error("cannot write the statistics: %s", strerror(-err));
		ls_output_abort(&out);
		return LS_EXIT_ERROR;
	}
	return ls_commit_output(&out) ? LS_EXIT_ERROR : LS_EXIT_OK;
}
