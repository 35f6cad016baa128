/*
 * check.c - `leakscope check PID`: which live blocks of a running process
 * are still reachable, as valgrind's memcheck sorts them
 * (docs/REACHABILITY.md).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "../lib/client.h"
#include "../lib/util.h"
#include "cmd.h"
#include "target.h"

enum {
	OPT_FAIL_ON_LEAK = LS_OPT_REPORT_END,
	OPT_FAIL_ON,
	OPT_HELP,
};

#define FAIL 1

/* What --fail-on-leak gates on unless --fail-on says otherwise. */
#define GATE_DEFAULT (1u << LSNAP_REACH_DEFINITE | 1u << LSNAP_REACH_INDIRECT)

static const char check_usage[] =
"usage: leakscope check [OPTIONS] PID\n"
"\n"
"Tell PID's leaks from the memory it still uses: stop its threads for a\n"
"moment, scan a copy-on-write image of it for pointers to every live\n"
"block, and sort the blocks as valgrind does: definitely lost, indirectly\n"
"lost, possibly lost (only pointers into their inside), still reachable.\n"
"PID must run the agent (leakscope run, LD_PRELOAD, or attached), in full\n"
"tracking mode.\n"
"\n"
"  --only KINDS           only these kinds (definite,indirect,possible,\n"
"                         reachable, or all)\n"
"  --suppressions FILE    LeakSanitizer suppressions (leak:PATTERN); may be\n"
"                         given several times\n"
"  --no-default-suppressions  do not hide the C and C++ runtimes' own\n"
"                         one-time allocations\n"
"  --gen-suppressions     print a suppression for every leak record\n"
"  --fail-on-leak         exit 99 when definitely or indirectly lost bytes\n"
"                         remain after filters and suppressions\n"
"  --fail-on KINDS        the kinds --fail-on-leak counts\n"
"  --format, --output, --top, --min-age, --min-size, --max-size,\n"
"  --show-allocs          as for 'leakscope report'\n";

/* The one line that says why the gate tripped. */
void ls_cli_gate_reason(pid_t pid, const struct ls_gate *g, unsigned kinds)
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

int ls_cmd_check(int argc, char **argv)
{
	static const struct option longopts[] = {
		LS_REPORT_LONGOPTS,
		{ "fail-on-leak", no_argument, NULL, OPT_FAIL_ON_LEAK },
		{ "fail-on", required_argument, NULL, OPT_FAIL_ON },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct ls_report_opts opts = { 0 };
	struct ls_snapshot snap;
	struct ls_gate gate;
	const char *output = NULL;
	unsigned fail_kinds = GATE_DEFAULT;
	char err[1024];
	int c, k, fail = 0, r = FAIL;
	pid_t pid;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		k = ls_report_option(c, optarg, &opts, &output);
		if (k < 0)
			goto out;
		if (k)
			continue;
		if (c == OPT_FAIL_ON_LEAK) {
			fail = 1;
		} else if (c == OPT_FAIL_ON) {
			if (ls_reach_parse_kinds(optarg, &fail_kinds, err,
						 sizeof(err))) {
				ls_error("--fail-on: %s", err);
				goto out;
			}
			fail = 1;
		} else if (c == OPT_HELP || c == 'h') {
			fputs(check_usage, stdout);
			r = 0;
			goto out;
		} else {
			ls_error("unknown option '%s' (see 'leakscope check "
				 "--help')", argv[optind - 1]);
			goto out;
		}
	}
	if (optind != argc - 1 || !ls_target_is_pid(argv[optind], &pid)) {
		ls_error("expected one PID (see 'leakscope check --help')");
		goto out;
	}
	ls_report_opts_finish(&opts);
	if (ls_report_supp_finish(&opts, 1))
		goto out;
	if (ls_client_check(pid, opts.need_blocks || opts.only, &snap, err,
			    sizeof(err))) {
		ls_error("%s", err);
		goto out;
	}
	r = ls_cli_render(&snap, &opts, output, fail_kinds, &gate);
	if (!r && fail && gate.bytes) {
		ls_cli_gate_reason(pid, &gate, fail_kinds);
		r = LS_EXIT_LEAK;
	}
	ls_snapshot_release(&snap);
out:
	ls_report_options_release(&opts);
	return r;
}
