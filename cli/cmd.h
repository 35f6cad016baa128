/*
 * cmd.h - the subcommands and what they share.
 */
#ifndef LEAKSCOPE_CMD_H
#define LEAKSCOPE_CMD_H

#include <getopt.h>
#include <sys/types.h>
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
int ls_cmd_check(int argc, char **argv);

/* Long options every reporting command takes; values >= 0x100. */
enum {
	LS_OPT_FORMAT = 0x100,
	LS_OPT_OUTPUT,
	LS_OPT_TOP,
	LS_OPT_MIN_AGE,
	LS_OPT_MIN_SIZE,
	LS_OPT_MAX_SIZE,
	LS_OPT_SHOW_ALLOCS,
	LS_OPT_ONLY,
	LS_OPT_SUPPRESSIONS,
	LS_OPT_GEN_SUPPRESSIONS,
	LS_OPT_NO_DEFAULT_SUPP,
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
	{ "only", required_argument, NULL, LS_OPT_ONLY }, \
	{ "suppressions", required_argument, NULL, LS_OPT_SUPPRESSIONS }, \
	{ "gen-suppressions", no_argument, NULL, LS_OPT_GEN_SUPPRESSIONS }, \
	{ "no-default-suppressions", no_argument, NULL, LS_OPT_NO_DEFAULT_SUPP }

/*
 * Apply one report option; *output receives --output's argument.
 * Returns 1 if c was a report option, 0 if not, -1 after printing an
 * error for a bad value.
 */
int ls_report_option(int c, const char *arg, struct ls_report_opts *opts,
		     const char **output);

/*
 * The suppressions the report options gathered (--suppressions FILE,
 * several allowed), plus the built-in list unless
 * --no-default-suppressions or want_default is 0: sets opts->supp.
 * Returns 0, or -1 after printing an error.  ls_report_options_release()
 * frees them.
 */
/*
 * Build the report of snap, render it to output (whole or not at all) or
 * stdout; with gate, fill it for gate_kinds from the same report.
 * Returns 0, or 1 after printing an error.
 */
int ls_cli_render(const struct ls_snapshot *snap,
		  const struct ls_report_opts *opts, const char *output,
		  unsigned gate_kinds, struct ls_gate *gate);

/* The one "leakscope: ..." line saying why --fail-on-leak tripped. */
void ls_cli_gate_reason(pid_t pid, const struct ls_gate *g, unsigned kinds);

int ls_report_supp_finish(struct ls_report_opts *opts, int want_default);
void ls_report_options_release(struct ls_report_opts *opts);

#endif
