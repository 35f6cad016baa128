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
};

/* ls_option.flags */
#define LS_OPTF_OPTIONAL 0x1	/* value only as --opt=VALUE; the field
				   named by set_offset is set to 1 */
#define LS_OPTF_NONZERO 0x2	/* 0 is refused */
#define LS_OPTF_STATS 0x4	/* LS_OPT_FORMAT: renderers of stats */
#define LS_OPTF_DIFF 0x8	/* LS_OPT_FORMAT: renderers of diffs */

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

/* Visit every option of u, for the man page. */
#define ls_usage_for_each(u, t, o) \
	for ((t) = (u)->tables; *(t); (t)++) \
		for ((o) = *(t); (o)->kind != LS_OPT_END; (o)++)

/* "--format FORMAT", "-o, --output FILE", "--fail-on-leak[=BYTES]" into
 * buf. */
void ls_option_label(const struct ls_option *o, char *buf, size_t cap);

/* The help of o, with the formats listed for a format option, into buf. */
void ls_option_help(const struct ls_option *o, char *buf, size_t cap);

#endif
