/*
 * report-args.h - the options every reporting command shares (format,
 * output, filters, stack display), declared once as option tables, and
 * the one path from a snapshot to a written report.
 */
#ifndef LEAKSCOPE_REPORT_ARGS_H
#define LEAKSCOPE_REPORT_ARGS_H

#include "../lib/output.h"
#include "../lib/render.h"
#include "../lib/source.h"
#include "parse-options.h"

/* The head of a reporting command's argument struct. */
struct ls_report_args {
	struct ls_report_opts ropts;
	const char *output;	/* --output FILE, "-" stdout; NULL default */
	uint64_t top, depth;	/* copied into ropts by ls_report_args_finish */
	int postmortem;		/* `report --postmortem`: source option */
};

/* --format, --output */
extern const struct ls_option ls_report_options[];
/* --top, --min-age, --min-size, --max-size */
extern const struct ls_option ls_filter_options[];
/* --show-allocs */
extern const struct ls_option ls_blocks_option[];
/* --depth (and, for the stack's display, what follows it) */
extern const struct ls_option ls_stack_options[];
/* --title, --inverted, --colors: the flame graph's (--format svg) */
extern const struct ls_option ls_flame_options[];
/* --count bytes|blocks: what the graph's widths measure (run has its own
 * --count, which also takes the number of periodic reports) */
extern const struct ls_option ls_flame_count_option[];

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

/* Open path through the output writer (lib/output.h), with
 * ls_output_cleanup_on_signals(); prints the error.  0 or a negative
 * errno. */
int ls_open_output(struct ls_output *o, const char *path);
/* Commit; prints the error.  0 or a negative errno. */
int ls_commit_output(struct ls_output *o);

/* Load target through lib/source.h; prints the error.  0 or -errno. */
int ls_load_target(const char *target, const struct ls_source_opts *so,
		   struct ls_snapshot *snap);

/* Remove the output writer's temporary files on SIGINT, SIGTERM, SIGHUP
 * and die of the signal. */
void ls_output_cleanup_on_signals(void);

#endif
