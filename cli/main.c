/*
 * main.c - leakscope: find memory leaks and growth in running programs.
 *
 * Dispatches to the subcommands; each lives in its own file.
 */
#include <stdio.h>
#include <string.h>
#include "cmd.h"
#include "../lib/util.h"

#define LS_VERSION "0.1.0"

struct command {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct command commands[] = {
	{ "run", ls_cmd_run, "run a command under the agent and report its leaks" },
	{ "report", ls_cmd_report, "report a running process, a snapshot or a post-mortem file" },
	{ "olds", ls_cmd_olds, "the oldest live blocks of a running process" },
	{ "stats", ls_cmd_stats, "calls, totals and allocator statistics" },
	{ "reset", ls_cmd_reset, "forget the blocks a running process allocated so far" },
	{ "snapshot", ls_cmd_snapshot, "save a running process's state to a file" },
	{ "watch", ls_cmd_watch, "slices of a running process's growth, then each site's trend" },
	{ "check", ls_cmd_check, "tell a running process's leaks from memory it still uses" },
	{ "top", ls_cmd_top, "a live view of the fastest growing sites" },
};

static void usage(FILE *out)
{
	size_t i;

	fputs("usage: leakscope <command> [options] [args]\n\ncommands:\n", out);
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(out, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fputs("\n'leakscope <command> --help' describes a command.\n", out);
}

int main(int argc, char **argv)
{
	size_t i;

	if (argc < 2) {
		ls_error("no command given (see 'leakscope --help')");
		return LS_EXIT_FAILURE;
	}
	if (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h") ||
	    !strcmp(argv[1], "help")) {
		usage(stdout);
		return 0;
	}
	if (!strcmp(argv[1], "--version") || !strcmp(argv[1], "version")) {
		printf("leakscope %s\n", LS_VERSION);
		return 0;
	}
	for (i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		if (!strcmp(argv[1], commands[i].name))
			return commands[i].fn(argc - 1, argv + 1);
	ls_error("unknown command '%s' (see 'leakscope --help')", argv[1]);
	return LS_EXIT_FAILURE;
}
