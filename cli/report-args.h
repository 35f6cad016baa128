/*
 * report-args.h - the options every reporting command shares (format,
 * output, filters, stack display), declared once as option tables, and
 * the one path from a snapshot to a written report.
 */
#ifndef LEAKSCOPE_REPORT_ARGS_H
#define LEAKSCOPE_REPORT_ARGS_H

#include <sys/types.h>
#include "../lib/output.h"
#include "../lib/render.h"
#include "../lib/source.h"
#include "parse-options.h"

#define LS_SUPP_FILES_MAX 32

/* The head of a reporting command's argument struct. */
struct ls_report_args {
	struct ls_report_opts ropts;
	const char *output;	/* --output FILE, "-" stdout; NULL default */
	unsigned depth;		/* run: --depth, the frames the agent
				   captures (ls_report_args_finish) */
	int postmortem;		/* `report --postmortem`: source option */
	uint64_t beside;	/* `report --postmortem N --in PID` */
	/* Reachability (ls_reach_options): */
	const char *only;	/* --only KINDS, into ropts.only */
	const char *supp_files[LS_SUPP_FILES_MAX];	/* --suppressions */
	size_t nsupp_files;
	int no_default_supp;	/* --no-default-suppressions */
	int default_supp;	/* set by the command: the built-in list
				   applies (run, check) */
	struct ls_supp supp;	/* --suppressions files, owned */
	struct ls_supp supp_all;	/* the same and the built-in list */
};

/* --format, --output (-o) */
extern const struct ls_option ls_report_options[];
/* The report options (--top, --min-age, --by, --depth, ...) are
 * ls_ropt_options (parse-options.h), from lib/ropt-table.h. */

/* --only, --suppressions FILE (several), --gen-suppressions,
 * --no-default-suppressions (docs/REACHABILITY.md) */
extern const struct ls_option ls_reach_options[];

/* Copy the parsed values into a->ropts, derive need_blocks, and check
 * that the format's output can go where it is asked (render.h's needs;
 * many: reports of several processes, as run writes).  0, or -1 after a
 * usage error. */
int ls_report_args_finish(struct ls_report_args *a, int many);

/* The source options a reporting command's arguments imply. */
struct ls_source_opts ls_report_args_source(const struct ls_report_args *a,
					    int blocks);

/*
 * Build, render and write one report of snap to fp, named path in
 * messages (NULL: a standard stream); errors printed.  sym as
 * ls_report_render().  Returns 0, -ENODATA (the filters need a block
 * list the snapshot lacks: nothing printed, the caller words it), or
 * another negative errno.
 */
int ls_write_report(FILE *fp, const char *path, const struct ls_snapshot *snap,
		    const struct ls_report_opts *opts,
		    struct ls_symbolizer *sym);

/*
 * The same, and with gate, apply the leak gate (lib/report.h
 * ls_report_gate: filters and suppressions included) to the report
 * built with gate_opts (NULL: the report printed): *gate is filled for
 * kinds.
 */
int ls_write_report_gate(FILE *fp, const char *path,
			 const struct ls_snapshot *snap,
			 const struct ls_report_opts *opts,
			 struct ls_symbolizer *sym, unsigned kinds,
			 const struct ls_report_opts *gate_opts,
			 struct ls_gate *gate);

/* The one "leakscope: ..." line saying why --fail-on-leak tripped. */
void ls_gate_reason(pid_t pid, const struct ls_gate *g, unsigned kinds);

/* The kinds --fail-on-leak counts by default with a check. */
#define LS_GATE_DEFAULT (1u << LSNAP_REACH_DEFINITE | \
			 1u << LSNAP_REACH_INDIRECT)

/* Free the suppressions ls_report_args_finish() loaded. */
void ls_report_args_release(struct ls_report_args *a);

/* Open path through the output writer (lib/output.h), with
 * ls_output_cleanup_on_signals(); prints the error.  0 or a negative
 * errno. */
int ls_open_output(struct ls_output *o, const char *path);
/* Commit; prints the error.  0 or a negative errno. */
int ls_commit_output(struct ls_output *o);

/* Load target through lib/source.h; prints the error.  0 or -errno. */
int ls_load_target(const char *target, const struct ls_source_opts *so,
		   struct ls_snapshot *snap);


#endif
