/*
 * cmd-stats.c - `leakscope stats [--format text|json] PID|FILE`: calls,
 * totals and the allocator's own statistics.
 */
#include <string.h>
#include "cmds.h"

static const struct ls_option own[] = {
	LS_OPT__FORMAT(struct ls_report_args, ropts.format, LS_OPTF_STATS,
		       " (default text)"),
	LS_OPT__OUTPUT(struct ls_report_args, output, 'o', ""),
	{ .kind = LS_OPT_END },
};

const struct ls_usage ls_stats_usage = {
	"stats", "[OPTIONS] PID|FILE",
	"calls, totals and allocator statistics",
	"Calls per function, live and total figures, and the allocator's own\n"
	"statistics of a running process, a snapshot or a post-mortem file.",
	(const struct ls_option *const[]){ own, NULL },
	NULL,
	0,	/* no report options */
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
