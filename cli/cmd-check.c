/*
 * cmd-check.c - `leakscope check [OPTIONS] PID`: which live blocks of a
 * running process are still reachable, sorted as valgrind's memcheck
 * sorts them (docs/REACHABILITY.md).
 */
#include <errno.h>
#include "../common/contract.h"
#include "../lib/client.h"
#include "cmds.h"

#define A(field) LS_ARG(struct ls_check_args, field)

static const struct ls_option own[] = {
	LS_OPT__FAIL_ON_LEAK(struct ls_check_args, leak_limit, fail_on_leak,
			     " (definitely or\nindirectly lost, after the filters and "
			     "suppressions; a\none-line reason says why)"),
	{ .kind = LS_OPT_STRING,
	  .long_name = "fail-on",
	  .offset = A(fail_on),
	  .argh = "KINDS",
	  .help = "what --fail-on-leak counts (implies it): definite,\n"
	  "indirect, possible, reachable or all",
	  .want = "definite, indirect, possible, reachable or all" },
	{ .kind = LS_OPT_CHOICE,
	  .long_name = "method",
	  .offset = A(method),
	  .argh = "HOW",
	  .choices = (const char *const[]){ "concurrent", "fork", NULL },
	  .help = "how: mark while the process runs, then stop it only to\n"
	  "rescan what it wrote (the default), or stop it to clone a\n"
	  "copy-on-write image and scan that" },
	{ .kind = LS_OPT_MS,
	  .long_name = "pause-budget",
	  .offset = A(budget_ns),
	  .argh = "MS",
	  .help = "the longest the concurrent method may hold the threads\n"
	  "(default 10): when its last rescan would take longer, the\n"
	  "fork method runs instead and the report says why; 0: no bound",
	  .max = LS_CHECK_BUDGET_MAX_US * 1000,
	  .want = "milliseconds, at most 60000" },
	{ .kind = LS_OPT_END },
};

const struct ls_usage ls_check_usage = {
	"check", "[OPTIONS] PID",
	"tell a running process's leaks from the memory it still uses",
	"Mark every live block PID's memory points to while it runs, then stop\n"
	"its threads for a moment to rescan the pages they wrote meanwhile,\n"
	"their stacks and registers (--method fork: clone a copy-on-write\n"
	"image while they are stopped, and scan that).\n"
	"Blocks are sorted as valgrind sorts them: definitely lost (nothing\n"
	"points to them), indirectly lost (only lost blocks do), possibly lost\n"
	"(only pointers into their inside), still reachable.  PID must run the\n"
	"agent in full tracking mode, and ptrace must be allowed.  The C and\n"
	"C++ runtimes' one-time allocations are suppressed by default.",
	(const struct ls_option *const[]){ ls_report_options,
		ls_ropt_options, ls_reach_options, own, NULL },
	"Exit status: 0; 99 when --fail-on-leak trips; 1 when the check cannot\n"
	"be done (no agent, sampled, stopped, ptrace refused, the process\n"
	"exited); 125 a usage error.",
	LS_RO_CHECK,
};

void ls_check_defaults(void *args)
{
	struct ls_check_args *a = args;

	a->r.default_supp = 1;
	a->budget_ns = LS_CHECK_BUDGET_US * 1000;
}

static int write_check(struct ls_check_args *a, const struct ls_snapshot *snap,
		       unsigned kinds, struct ls_gate *gate)
{
	struct ls_output out;
	int r;

	if (ls_open_output(&out, a->r.output ? a->r.output : "-"))
		return -1;
	r = ls_write_report_gate(out.fp, a->r.output, snap, &a->r.ropts, NULL,
				 kinds, NULL, gate);
	if (r) {
		ls_output_abort(&out);
		return -1;
	}
	return ls_commit_output(&out) ? -1 : 0;
}

int ls_cmd_check(struct ls_invocation *inv)
{
	struct ls_check_args *a = inv->args;
	unsigned kinds = LS_GATE_DEFAULT;
	struct ls_snapshot snap;
	struct ls_gate gate = { 0 };
	char err[1024];
	int r = LS_EXIT_FAILURE;

	if (a->fail_on) {
		if (ls_reach_parse_kinds(a->fail_on, &kinds, err, sizeof(err))) {
			ls_usage_error(&ls_check_usage, "--fail-on: %s", err);
			goto out;
		}
		a->fail_on_leak = 1;
	}
	r = LS_EXIT_ERROR;	/* from here on, as every command (docs/guide/command-line.md) */
	if (ls_client_check(inv->pid, a->r.ropts.need_blocks ||
			    a->r.ropts.only, (enum ls_check_method)a->method,
			    a->budget_ns / 1000, &snap, err, sizeof(err))) {
		ls_error("%s", err);
		goto out;
	}
	if (!write_check(a, &snap, kinds, &gate)) {
		r = LS_EXIT_OK;
		if (a->fail_on_leak && ls_gate_trips(&gate, a->leak_limit)) {
			ls_gate_reason(inv->pid, &gate, kinds);
			r = LS_EXIT_LEAK;
		}
	}
	ls_snapshot_release(&snap);
out:
	ls_report_args_release(&a->r);
	return r;
}
