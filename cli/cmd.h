/*
 * cmd.h - the subcommands and what they share.
 */
#ifndef LEAKSCOPE_CMD_H
#define LEAKSCOPE_CMD_H

#include <getopt.h>
#include "../lib/report.h"

/* Each returns the process exit status. */
int ls_cmd_run(int argc, char **argv);
int ls_cmd_report(int argc, char **argv);
int ls_cmd_snapshot(int argc, char **argv);
int ls_cmd_reset(int argc, char **argv);
int ls_cmd_stats(int argc, char **argv);
int ls_cmd_olds(int argc, char **argv);
int ls_cmd_watch(int argc, char **argv);
int ls_cmd_top(int argc, char **argv);
int ls_cmd_diff(int argc, char **argv);
int ls_cmd_attach(int argc, char **argv);
int ls_cmd_detach(int argc, char **argv);

/*
 * The agent's path into out: $LEAKSCOPE_AGENT, beside the binary,
 * ../lib/leakscope/, the configured libdir.  0, or -1 after printing why.
 */
int ls_find_agent(char *out, size_t cap);

/* Long options every reporting command takes; values >= 0x100. */
enum {
	LS_OPT_FORMAT = 0x100,
	LS_OPT_OUTPUT,
	LS_OPT_TOP,
	LS_OPT_MIN_AGE,
	LS_OPT_MIN_SIZE,
	LS_OPT_MAX_SIZE,
	LS_OPT_SHOW_ALLOCS,
	LS_OPT_TITLE,
	LS_OPT_COUNT,
	LS_OPT_INVERTED,
	LS_OPT_COLORS,
	LS_OPT_REPORT_END,
};

#define LS_REPORT_LONGOPTS \
	{ "format", required_argument, NULL, LS_OPT_FORMAT }, \
	{ "output", required_argument, NULL, LS_OPT_OUTPUT }, \
	{ "top", required_argument, NULL, LS_OPT_TOP }, \
	{ "min-age", required_argument, NULL, LS_OPT_MIN_AGE }, \
	{ "min-size", required_argument, NULL, LS_OPT_MIN_SIZE }, \
	{ "max-size", required_argument, NULL, LS_OPT_MAX_SIZE }, \
	{ "show-allocs", no_argument, NULL, LS_OPT_SHOW_ALLOCS }, \
	{ "title", required_argument, NULL, LS_OPT_TITLE }, \
	{ "count", required_argument, NULL, LS_OPT_COUNT }, \
	{ "inverted", no_argument, NULL, LS_OPT_INVERTED }, \
	{ "colors", required_argument, NULL, LS_OPT_COLORS }

/*
 * Apply one report option; *output receives --output's argument.
 * Returns 1 if c was a report option, 0 if not, -1 after printing an
 * error for a bad value.
 */
int ls_report_option(int c, const char *arg, struct ls_report_opts *opts,
		     const char **output);

/*
 * A binary --format (pprof) needs somewhere to go: --output FILE, or, when
 * stdout_ok, "--output -" to a stdout that is not a terminal.  Prints a
 * one-line error and returns -1 when output does not qualify, else 0.
 */
int ls_check_binary_output(const struct ls_report_opts *opts,
			   const char *output, int stdout_ok);

/*
 * Call render(out, arg) on stdout (output NULL or "-") or on FILE,
 * written whole or not at all (ls_outfile).  render returns 0 or a
 * negative errno.  Prints a one-line error and returns -1 on failure.
 */
int ls_output_write(const char *output,
		    int (*render)(FILE *out, void *arg), void *arg);

#endif
