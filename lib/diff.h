/*
 * diff.h - what changed between two snapshots: per call stack, the change
 * in live bytes and blocks (`leakscope diff BASE NEW`, docs/DIFF.md).
 *
 * The two snapshots usually come from different processes (yesterday's
 * run and today's) or from one process at two moments, so raw addresses
 * and site ids mean nothing across them: ASLR moves every module, and
 * site ids are handed out in allocation order.  A stack is matched by
 * what it is instead, frame by frame, innermost first, inline frames
 * included and the agent's own left out:
 *
 *   module (file name) + function + source file + line     when known,
 *   module + function + offset in it                        without a line,
 *   module build id (or name) + offset from the load bias   without a name,
 *
 * plus the site's kind (heap or mmap).  Sites of one snapshot with the
 * same key (two calls on one line, a library loaded twice) are added up.
 *
 * Both snapshots go through the same filters (ls_report_build), so
 * --min-size and friends compare like with like; --top applies to the
 * result.  Never prints.  Not thread-safe (symbolizers are not).
 */
#ifndef LEAKSCOPE_DIFF_H
#define LEAKSCOPE_DIFF_H

#include <stddef.h>
#include <stdint.h>
#include "report.h"
#include "symbolize.h"

enum ls_diff_change {
	LS_DIFF_GREW = 0,	/* in both, more live bytes (or blocks) */
	LS_DIFF_SHRANK,		/* in both, fewer */
	LS_DIFF_NEW,		/* held memory only in NEW */
	LS_DIFF_GONE,		/* held memory only in BASE */
	LS_DIFF_SAME,		/* in both, unchanged */
};

/* One side's figures for a stack, after the filters; all 0 when absent. */
struct ls_diff_side {
	int present;		/* the stack held memory on this side */
	uint32_t nsites;	/* snapshot sites added up into it */
	int64_t live_bytes, live_blocks;
	uint64_t allocated_bytes, allocated_blocks;
	int64_t by_bytes, by_blocks;	/* the figure --by names (the live
					   ones by default) */
};

struct ls_diff_entry {
	struct ls_symframe *frames;	/* owned array, innermost first;
					   its strings belong to the diff's
					   symbolizers.  NEW's frames when
					   NEW has the stack, else BASE's */
	size_t nframes;
	uint32_t kind;		/* enum lsnap_site_kind */
	struct ls_diff_side base, newer;
	int64_t live_bytes_delta;	/* newer - base */
	int64_t live_blocks_delta;
	int64_t by_bytes_delta;		/* of by_bytes: what the entries are
					   ranked and classified by */
	int64_t by_blocks_delta;
	enum ls_diff_change change;
	char *key;		/* owned: the matching key */
};

struct ls_diff_totals {
	int64_t base_bytes, base_blocks;	/* of the stacks compared */
	int64_t new_bytes, new_blocks;
	int64_t delta_bytes, delta_blocks;
	size_t count[LS_DIFF_SAME + 1];		/* stacks per change */
};

struct ls_diff {
	const struct ls_snapshot *base, *newer;	/* not owned */
	struct ls_symbolizer *sym_base, *sym_new;	/* owned */
	/*
	 * Sorted by live_bytes_delta, largest growth first (then blocks,
	 * then key); after --top, which keeps the N stacks whose live bytes
	 * changed the most either way.
	 */
	struct ls_diff_entry *entries;
	size_t n;
	size_t n_total;		/* before --top */
	struct ls_diff_totals totals;	/* of all n_total stacks */
	/* The main programs differ (path or build id of the first module):
	 * the diff is still made, by names; the caller may warn. */
	int different_programs;
	int by;			/* enum ls_report_by: the figure compared
				   (opts->by); a stack is present on a side
				   when it has that figure */
};

/*
 * Compare base and newer (which must outlive d) under opts's filters and
 * by opts->by's figure (live by default; allocated, peak, temporary:
 * by_bytes and by_blocks are that figure, changes and order follow it)
 * (opts->format, show_allocs and growing are ignored; top applies to
 * the result).  Returns 0, -ENOMEM, or -ENODATA when a filter needs
 * block lists and a snapshot has none (a post-mortem file); on error d
 * is left empty.  Release with ls_diff_release().
 */
int ls_diff_build(const struct ls_snapshot *base,
		  const struct ls_snapshot *newer,
		  const struct ls_report_opts *opts, struct ls_diff *d);
/* Free everything d owns and zero it; accepts a zeroed diff. */
void ls_diff_release(struct ls_diff *d);

/* "grew", "shrank", "new", "gone", "same". */
const char *ls_diff_change_name(enum ls_diff_change c);

/*
 * Print d to out in opts->format (render.h: a renderer row with a diff
 * function: text, json (docs/DIFF.md) or svg, a differential flame graph
 * with the flame graph options of opts; widths: NEW's live bytes,
 * colours: the change).  Returns 0, -EINVAL for a format a diff cannot
 * take, -ENOMEM, or a negative errno when writing failed.
 */
int ls_diff_render(FILE *out, const struct ls_diff *d,
		   const struct ls_report_opts *opts);

/* Nonzero when a diff can be rendered by r (NULL: the default, text). */
struct ls_renderer;
int ls_diff_format_ok(const struct ls_renderer *r);

#endif /* LEAKSCOPE_DIFF_H */
