/*
 * parse-options.h - the one declarative option parser of the commands.
 *
 * A command declares its options as a table of struct ls_option, each
 * naming a field of the command's argument struct by offset (so that the
 * tables are static data: --help and the man page are printed from them
 * without running anything).  The parser then gives, for free:
 *
 *  - options in any position, before or after the arguments
 *    (`leakscope stats PID --format json`), unless the command stops at
 *    its first argument (`run`: what follows is the command to run);
 *  - `--opt VALUE`, `--opt=VALUE`, `-o VALUE`, `-oVALUE`; `--` ends the
 *    options; a value may start with '-' (`--top -3` is a bad value, not
 *    an unknown option);
 *  - values checked by kind (count, size, seconds, milliseconds, format)
 *    and range, with one error message style:
 *      leakscope: invalid value 'abc' for --top: expected a positive number
 *      leakscope: unknown option '--frob' (see 'leakscope report --help')
 *      leakscope: option '--format' needs a value
 *  - `-h` / `--help`, printed from the table.
 *
 * Only the command-line layer uses this; it prints errors itself.
 */
#ifndef LEAKSCOPE_PARSE_OPTIONS_H
#define LEAKSCOPE_PARSE_OPTIONS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include "../common/contract.h"
#include "../lib/ropt.h"

enum ls_opt_kind {
	LS_OPT_END = 0,		/* ends a table */
	LS_OPT_FLAG,		/* int, set to 1 */
	LS_OPT_STRING,		/* const char *, non-empty */
	LS_OPT_UINT,		/* uint64_t, decimal */
	LS_OPT_SIZE,		/* uint64_t bytes, K/M/G suffixes */
	LS_OPT_SECONDS,		/* uint64_t ns, from seconds ("0.5") */
	LS_OPT_MS,		/* uint64_t ns, from milliseconds */
	LS_OPT_FORMAT,		/* const struct ls_renderer *, a row of
				   lib/render.h's table (LS_OPTF_STATS,
				   LS_OPTF_DIFF: rows that render those) */
	LS_OPT_CHOICE,		/* int (an enum): the index of the value in
				   choices */
	LS_OPT_CALLBACK,	/* cb(o, value, args) stores it */
	LS_OPT_REPORT,		/* a report option, lib/ropt-table.h's row
				   ropt, into the struct ls_report_opts at
				   offset; listed for commands whose
				   ls_usage.ropts it takes */
};

/* ls_option.flags */
#define LS_OPTF_OPTIONAL 0x1	/* value only as --opt=VALUE; the field
				   named by set_offset is set to 1 */
#define LS_OPTF_NONZERO 0x2	/* 0 is refused */
#define LS_OPTF_STATS 0x4	/* LS_OPT_FORMAT: renderers of stats */
#define LS_OPTF_DIFF 0x8	/* LS_OPT_FORMAT: renderers of diffs */
#define LS_OPTF_HIDDEN 0x10	/* an older spelling: accepted, not listed
				   (the option it spells says so) */

struct ls_option {
	enum ls_opt_kind kind;
	int short_name;		/* 'o', or 0 */
	const char *long_name;	/* "output" */
	size_t offset;		/* of the value in the argument struct */
	const char *argh;	/* the value's name in help: "FILE" */
	const char *help;	/* one line (may be continued with '\n') */
	unsigned flags;
	uint64_t max;		/* largest value accepted; 0 = no limit */
	uint64_t min;		/* smallest value accepted */
	size_t set_offset;	/* LS_OPTF_OPTIONAL: int set when given */
	const char *want;	/* "a positive number of stacks" */
	const char *const *choices;	/* LS_OPT_CHOICE, NULL-terminated */
	/* LS_OPT_CALLBACK: store arg into args; 0, or -1 for a bad value */
	int (*cb)(const struct ls_option *o, const char *arg, void *args);
	enum ls_ropt_id ropt;	/* LS_OPT_REPORT */
};

#define LS_ARG(type, field) offsetof(type, field)

/* How a command takes its arguments. */
#define LS_PARSE_STOP_AT_ARG 0x1	/* options end at the first argument */

/* A command's help text, printed by --help and in the man page. */
struct ls_usage {
	const char *name;		/* "report" */
	const char *synopsis;		/* "[OPTIONS] PID|FILE" */
	const char *summary;		/* one line, for `leakscope --help` */
	const char *description;	/* paragraphs, '\n' separated */
	const struct ls_option *const *tables;	/* NULL-terminated */
	const char *notes;		/* after the options, or NULL */
	unsigned ropts;			/* LS_RO_*: the report options
					   (ls_ropt_options) it takes as
					   that command; with LS_RO_MEMLEAK
					   their memleak short names */
};

#define LS_PARSE_HELP (-2)

/*
 * Parse argv[1..argc) into args.  Arguments (non-options) are moved to
 * argv[0..n), n returned.  Returns -1 after printing a usage error,
 * LS_PARSE_HELP after printing the help to stdout.
 */
int ls_parse_options(int argc, char **argv, const struct ls_usage *u,
		     unsigned flags, void *args);

/* The help of u, as --help prints it. */
void ls_usage_print(FILE *out, const struct ls_usage *u);

/* A usage error: "leakscope: WHAT (see 'leakscope CMD --help')". */
void ls_usage_error(const struct ls_usage *u, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Does u take o?  (A report option only where its row says so.) */
int ls_option_taken(const struct ls_usage *u, const struct ls_option *o);

/* Visit every option of u, for --help and the man page. */
#define ls_usage_for_each(u, t, o) \
	for ((t) = (u)->tables; *(t); (t)++) \
		for ((o) = *(t); (o)->kind != LS_OPT_END; (o)++) \
			if (!ls_option_taken(u, o)) {} else

/* "--format FORMAT", "-o, --output FILE", "--fail-on-leak[=BYTES]" into
 * buf. */
void ls_option_label(const struct ls_usage *u, const struct ls_option *o,
		     char *buf, size_t cap);

/* The help of o in u, with the formats listed for a format option and
 * the older spelling a report option still accepts, into buf. */
void ls_option_help(const struct ls_usage *u, const struct ls_option *o,
		    char *buf, size_t cap);

/* Every report option of lib/ropt-table.h, in its order (index: enum
 * ls_ropt_id), for the tables of the commands that report. */
extern const struct ls_option ls_ropt_options[];

/*
 * The options many commands share, one meaning and one help each
 * (git's OPT__*): TYPE is the command's argument struct, FIELD the
 * value's, SH a short name or 0, NOTE a parenthesized remark for this
 * command ("(default 2)") or "".
 */
#define LS_OPT__OUTPUT(type, field, sh, note) \
	{ .kind = LS_OPT_STRING, .short_name = sh, .long_name = "output", \
	  .offset = LS_ARG(type, field), .argh = "FILE", \
	  .help = "write to FILE, whole or not at all ('-': stdout)" note, \
	  .want = "a file name" }
#define LS_OPT__FORMAT(type, field, fl, note) \
	{ .kind = LS_OPT_FORMAT, .long_name = "format", \
	  .offset = LS_ARG(type, field), .argh = "FORMAT", \
	  .help = "output format" note, .flags = fl }
#define LS_OPT__INTERVAL_HELP "time between samples"
#define LS_OPT__COUNT_HELP "number of samples"
#define LS_OPT__INTERVAL(type, field, sh, note) \
	{ .kind = LS_OPT_SECONDS, .short_name = sh, .long_name = "interval", \
	  .offset = LS_ARG(type, field), .argh = "SECONDS", \
	  .help = LS_OPT__INTERVAL_HELP note, .want = "seconds" }
#define LS_OPT__COUNT(type, field, sh, mx, note) \
	{ .kind = LS_OPT_UINT, .short_name = sh, .long_name = "count", \
	  .offset = LS_ARG(type, field), .argh = "N", \
	  .help = LS_OPT__COUNT_HELP note, .flags = LS_OPTF_NONZERO, \
	  .max = mx, .want = "a positive number" }
#define LS_OPT__SAMPLE_RATE(type, field, sh, note) \
	{ .kind = LS_OPT_SIZE, .short_name = sh, .long_name = "sample-rate", \
	  .offset = LS_ARG(type, field), .argh = "BYTES", \
	  .help = "record a Poisson sample of the allocations, one per BYTES on\n" \
		  "average (e.g. 512KiB): nearly free; figures become estimates" \
		  note, \
	  .flags = LS_OPTF_NONZERO, .want = "a positive size such as 512KiB" }
#define LS_OPT__FAIL_ON_LEAK(type, field, set, note) \
	{ .kind = LS_OPT_SIZE, .long_name = "fail-on-leak", \
	  .offset = LS_ARG(type, field), .argh = "BYTES", \
	  .help = "exit 99 when more than BYTES leaked, or without BYTES any\n" \
		  "leaked block, even of 0 bytes" note, \
	  .flags = LS_OPTF_OPTIONAL, .set_offset = LS_ARG(type, set), \
	  .want = "bytes" }
#define LS_OPT__TIMEOUT_HELP "the longest wait"
#define LS_OPT__DEPTH(type, field, note) \
	{ .kind = LS_OPT_UINT, .long_name = "depth", \
	  .offset = LS_ARG(type, field), .argh = "N", \
	  .help = "frames per stack, " LS_RO_STR(LS_DEPTH_MIN) "-" \
		  LS_RO_STR(LS_DEPTH_MAX) note, \
	  .min = LS_DEPTH_MIN, .max = LS_DEPTH_MAX, \
	  .want = LS_RO_STR(LS_DEPTH_MIN) " to " LS_RO_STR(LS_DEPTH_MAX) }

#endif
