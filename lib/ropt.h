/*
 * ropt.h - the report options (ropt-table.h's rows) and the one way a
 * value becomes part of struct ls_report_opts: the commands, the web API
 * and the NIF all read their report options through ls_ropt_set() and
 * finish them with ls_ropt_check(), so a rule lives in one place.
 */
#ifndef LEAKSCOPE_ROPT_H
#define LEAKSCOPE_ROPT_H

#include <stddef.h>
#include <stdint.h>
#include "report.h"

/* How a value is read (struct ls_ropt.type). */
enum ls_ropt_type {
	LS_RT_COUNT,	/* a decimal number in min..max */
	LS_RT_SIZE,	/* bytes, K/M/G suffixes, >= min */
	LS_RT_MS,	/* milliseconds, stored as ns */
	LS_RT_BOOL,	/* a flag: 1, 0, true, false */
	LS_RT_CHOICE,	/* the index of the value in choices */
	LS_RT_TEXT,	/* a non-empty string */
	LS_RT_FORMAT,	/* a renderer's name (render.h) */
};

/* Who takes an option (struct ls_ropt.takes). */
#define LS_RO_REPORT	0x0001u
#define LS_RO_CHECK	0x0002u
#define LS_RO_DIFF	0x0004u
#define LS_RO_RUN	0x0008u
#define LS_RO_TRACE	0x0010u
#define LS_RO_WATCH	0x0020u
#define LS_RO_TOP	0x0040u
#define LS_RO_OLDS	0x0080u
#define LS_RO_COMMANDS	0x00ffu	/* the commands above */
#define LS_RO_WEB	0x0100u	/* the API's report view */
#define LS_RO_SVG	0x0200u	/* the API's flame graphs and diffs */
#define LS_RO_NIF	0x0400u	/* leakscope:report/1 */
#define LS_RO_MEMLEAK	0x0800u	/* the short option is memleak's (trace) */
#define LS_RO_WEB_DIFF	0x1000u	/* the API's diffs */

#define LS_RO_STR_(x) #x
#define LS_RO_STR(x) LS_RO_STR_(x)

enum ls_ropt_id {
#define LS_ROPT(id, ...) LS_ROPT_##id,
#include "ropt-table.h"
#undef LS_ROPT
	LS_ROPT_N
};

struct ls_ropt {
	const char *name;	/* "min-size" */
	int short_name;		/* memleak's, under trace only; or 0 */
	enum ls_ropt_type type;
	size_t offset, size;	/* of the field in struct ls_report_opts */
	uint64_t min, max;	/* max 0: none */
	const char *const *choices;
	const char *argh;	/* NULL: a flag */
	unsigned takes;		/* LS_RO_* */
	const char *alias;	/* an older spelling, or NULL */
	unsigned alias_takes;	/* where it is accepted */
	const char *help;
};

/* The rows, indexed by enum ls_ropt_id. */
extern const struct ls_ropt ls_ropts[LS_ROPT_N];

/* The names of the LS_RO_* users, for the option reference: the
 * user's bit, then its name; ending with {0, NULL}. */
struct ls_ropt_user {
	unsigned bit;
	const char *name;
};
extern const struct ls_ropt_user ls_ropt_users[];

/* The row for name ('-' or '_' alike) taken by user (one LS_RO_*), or
 * its alias there; NULL if none. */
const struct ls_ropt *ls_ropt_find(const char *name, unsigned user);

/* Read text into o's field of opts; NULL text sets a flag.  0, or -1
 * when text is no valid value (ls_ropt_want says what is). */
int ls_ropt_set(const struct ls_ropt *o, struct ls_report_opts *opts,
		const char *text);

/* What o accepts, for "invalid value 'X' for NAME: expected WANT". */
const char *ls_ropt_want(const struct ls_ropt *o, char *buf, size_t cap);

/* The spelling of o in the web API and the NIF ("min_size") into buf. */
const char *ls_ropt_key(const struct ls_ropt *o, char *buf, size_t cap);

/* Finish opts after the options were set (ls_report_opts_finish) and
 * check the rules between options; key: the spelling of option names
 * in the message, 0 the command line's ("--min-size"), 1 the API's
 * ("min_size").  0, or -1 with the reason in err. */
int ls_ropt_check(struct ls_report_opts *opts, int key, char *err, size_t cap);

#endif
