/*
 * cmd-report.c - `leakscope report [OPTIONS] PID|FILE`: the outstanding
 * memory of a running process, a saved snapshot or a post-mortem file.
 */
#include <errno.h>
#include "cmds.h"

#define A(field) LS_ARG(struct ls_report_args, field)

static const struct ls_option own[] = {
	{ .kind = LS_OPT_FLAG,
	  .long_name = "postmortem",
	  .offset = A(postmortem),
	  .help = "PID names a dead process: read its post-mortem file" },
	{ .kind = LS_OPT_UINT,
	  .long_name = "in",
	  .argh = "PID",
	  .offset = A(beside),
	  .min = 1,
	  .max = 0x7fffffff,
	  .want = "a live pid",
	  .help = "with --postmortem: the dead process ran in the container "
		  "of live PID, as the pid given there" },
	{ .kind = LS_OPT_END },
};

const struct ls_usage ls_report_usage = {
	"report", "[OPTIONS] PID|FILE",
	"report a running process, a snapshot or a post-mortem file",
	"Report the outstanding allocations of a running process (PID, whose\n"
	"agent is asked over its control socket), of a snapshot saved by\n"
	"'leakscope snapshot', or of a post-mortem file.",
	(const struct ls_option *const[]){ ls_report_options,
		ls_ropt_options, own, NULL },
	NULL, LS_RO_REPORT,
};

int ls_cmd_report(struct ls_invocation *inv)
{
	struct ls_report_args *a = inv->args;
	struct ls_output out;
	int r;

	if (ls_open_output(&out, a->output ? a->output : "-"))
		return LS_EXIT_ERROR;
	r = ls_write_report(out.fp, a->output, &inv->snap, &a->ropts, NULL);
	if (r == -ENODATA)
		ls_error("this snapshot has no block list: --min-age, --min-size, "
			 "--max-size and --show-allocs need a live pid or a "
			 "snapshot saved with blocks");
	if (r) {
		ls_output_abort(&out);
		return LS_EXIT_ERROR;
	}
	return ls_commit_output(&out) ? LS_EXIT_ERROR : LS_EXIT_OK;
}
