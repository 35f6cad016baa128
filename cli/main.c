/*
 * main.c - leakscope: find memory leaks and growth in running programs.
 *
 * The command table, in git's style: each row names its function, its
 * help and argument struct (cli/cmd-*.c), and flags the dispatcher
 * applies before the command runs: options parsed from the row's tables
 * (in any position), the argument count checked, a pid checked, the
 * target loaded through the library's table of sources.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli.h"
#include "cmds.h"

#define ARGS(type) sizeof(struct type)

static const struct ls_command ls_commands[] = {
	{ "run", ls_cmd_run, LS_CMD_REPORT | LS_CMD_STOP_AT_ARG | LS_CMD_MANY,
	  &ls_run_usage, ARGS(ls_run_args), ls_run_defaults, 0 },
	{ "report", ls_cmd_report, LS_CMD_TARGET | LS_CMD_LOAD,
	  &ls_report_usage, ARGS(ls_report_args), NULL, 1 },
	{ "olds", ls_cmd_olds, LS_CMD_TARGET | LS_CMD_LOAD | LS_CMD_BLOCKS,
	  &ls_olds_usage, ARGS(ls_olds_args), NULL, 2 },
	{ "stats", ls_cmd_stats, LS_CMD_TARGET | LS_CMD_LOAD,
	  &ls_stats_usage, ARGS(ls_report_args), NULL, 1 },
	{ "reset", ls_cmd_reset, LS_CMD_TARGET | LS_CMD_PID,
	  &ls_reset_usage, 0, NULL, 1 },
	{ "snapshot", ls_cmd_snapshot, 0,
	  &ls_snapshot_usage, ARGS(ls_snapshot_args), NULL, 0 },
	{ "watch", ls_cmd_watch, LS_CMD_TARGET | LS_CMD_REPORT,
	  &ls_watch_usage, ARGS(ls_watch_args), ls_watch_defaults, 1 },
	{ "top", ls_cmd_top, LS_CMD_TARGET | LS_CMD_REPORT,
	  &ls_top_usage, ARGS(ls_watch_args), ls_top_defaults, 1 },
	{ "check", ls_cmd_check, LS_CMD_TARGET | LS_CMD_PID | LS_CMD_REPORT,
	  &ls_check_usage, ARGS(ls_check_args), ls_check_defaults, 1 },
	{ "diff", ls_cmd_diff, LS_CMD_REPORT, &ls_diff_usage,
	  ARGS(ls_report_args), NULL, 0 },
	{ "trace", ls_cmd_trace, LS_CMD_REPORT | LS_CMD_STOP_AT_ARG,
	  &ls_trace_usage, ARGS(ls_trace_args), ls_trace_defaults, 0 },
	{ "serve", ls_cmd_serve, 0,
	  &ls_serve_usage, ARGS(ls_serve_args), NULL, 0 },
	{ "beam", ls_cmd_beam, 0,
	  &ls_beam_usage, ARGS(ls_beam_args), ls_beam_defaults, 0 },
	{ "attach", ls_cmd_attach, LS_CMD_TARGET | LS_CMD_PID,
	  &ls_attach_usage, ARGS(ls_attach_args), ls_attach_defaults, 1 },
	{ "detach", ls_cmd_detach, LS_CMD_TARGET | LS_CMD_PID,
	  &ls_detach_usage, 0, NULL, 1 },
	{ "help", ls_cmd_help, 0, &ls_help_usage, ARGS(ls_help_args), NULL, 0 },
	{ NULL, NULL, 0, NULL, 0, NULL, 0 },
};

static const struct ls_command *find(const char *name)
{
	const struct ls_command *c;

	for (c = ls_commands; c->name; c++)
		if (!strcmp(c->name, name))
			return c;
	return NULL;
}

/* The target argument (and at most max_args in all), a pid when the
 * flags say so; loaded when asked.  Returns 0 or the exit status. */
static int apply_target(struct ls_invocation *inv)
{
	const struct ls_command *c = inv->cmd;
	const struct ls_report_args *ra = inv->args;
	struct ls_source_opts so;

	if (inv->argc < 1 || inv->argc > c->max_args) {
		ls_usage_error(c->usage, "expected %s%s", c->flags & LS_CMD_PID ?
			       "one PID" : "one PID or FILE",
			       c->max_args > 1 ? " and at most one count" : "");
		return LS_EXIT_USAGE;
	}
	if ((c->flags & LS_CMD_PID) && !ls_source_is_pid(inv->argv[0], &inv->pid)) {
		ls_usage_error(c->usage, "'%s' is not a pid", inv->argv[0]);
		return LS_EXIT_USAGE;
	}
	if (!(c->flags & LS_CMD_LOAD))
		return 0;
	so = ls_report_args_source(ra, !!(c->flags & LS_CMD_BLOCKS));
	return ls_load_target(inv->argv[0], &so, &inv->snap) ? LS_EXIT_ERROR : 0;
}

/* Parse and apply the row's flags.  Returns 0 to run the command, else
 * the exit status (LS_PARSE_HELP: help printed, success). */
static int prepare(struct ls_invocation *inv, int argc, char **argv)
{
	const struct ls_command *c = inv->cmd;
	int n;

	n = ls_parse_options(argc, argv, c->usage,
			     c->flags & LS_CMD_STOP_AT_ARG ?
			     LS_PARSE_STOP_AT_ARG : 0, inv->args);
	if (n < 0)
		return n == LS_PARSE_HELP ? LS_PARSE_HELP : LS_EXIT_USAGE;
	inv->argc = n;
	inv->argv = argv;
	if ((c->flags & (LS_CMD_REPORT | LS_CMD_LOAD)) &&
	    ls_report_args_finish(inv->args, !!(c->flags & LS_CMD_MANY)))
		return LS_EXIT_USAGE;
	if (c->flags & LS_CMD_TARGET)
		return apply_target(inv);
	return 0;
}

/* Run argv[0] (a command name) with its arguments: parse, apply the
 * flags, call.  Returns the exit status. */
static int ls_dispatch(int argc, char **argv)
{
	struct ls_invocation inv = { .cmd = find(argv[0]) };
	int ret;

	if (!inv.cmd) {
		ls_error("unknown command '%s' (see 'leakscope --help')", argv[0]);
		return LS_EXIT_USAGE;
	}
	inv.args = calloc(1, inv.cmd->args_size ? inv.cmd->args_size : 1);
	if (!inv.args) {
		ls_error("out of memory");
		return LS_EXIT_FAILURE;
	}
	if (inv.cmd->defaults)
		inv.cmd->defaults(inv.args);
	ret = prepare(&inv, argc, argv);
	if (!ret)
		ret = inv.cmd->fn(&inv);
	else if (ret == LS_PARSE_HELP)
		ret = LS_EXIT_OK;
	ls_snapshot_release(&inv.snap);
	free(inv.args);
	return ret;
}

static void usage(FILE *out)
{
	const struct ls_command *c;

	fputs("usage: leakscope <command> [options] [args]\n\ncommands:\n", out);
	for (c = ls_commands; c->name; c++)
		fprintf(out, "  %-10s %s\n", c->name, c->usage->summary);
	fputs("\n'leakscope <command> --help' describes a command; options may "
	      "come before or\nafter the arguments.  "
	      "'leakscope help --man' prints the manual page.\n\n", out);
	fputs(ls_exit_status_text, out);
}

int main(int argc, char **argv)
{
	ls_help_commands = ls_commands;
	if (argc < 2) {
		ls_error("no command given (see 'leakscope --help')");
		return LS_EXIT_USAGE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    (!strcmp(argv[1], "help") && argc == 2)) {
		usage(stdout);
		return LS_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("leakscope %s\n", LS_VERSION);
		return LS_EXIT_OK;
	}
	return ls_dispatch(argc - 1, argv + 1);
}
