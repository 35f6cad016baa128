/*
 * render.h - printing a report (report.h) in one of the formats: text,
 * JSON (docs/JSON-REPORT.md), folded stacks.
 *
 * A renderer prints one report to ctx->out and returns 0, or a negative
 * errno (-ENOMEM); ls_report_render() checks the stream for write errors
 * afterwards.  Renderers get their frames from stack.h.
 */
#ifndef LEAKSCOPE_RENDER_H
#define LEAKSCOPE_RENDER_H

#include <stdio.h>
#include "report.h"
#include "stack.h"
#include "symbolize.h"

struct ls_render_ctx {
	FILE *out;
	const struct ls_report *rep;
	const struct ls_report_opts *opts;
	struct ls_symbolizer *sym;
};

int ls_render_text(const struct ls_render_ctx *ctx);
int ls_render_json(const struct ls_render_ctx *ctx);
int ls_render_folded(const struct ls_render_ctx *ctx);

/*
 * Print the report to out in opts->format.  Symbolizes through a
 * symbolizer built for rep->snap.  Returns 0, or a negative errno when
 * writing failed.
 */
int ls_report_render(FILE *out, const struct ls_report *rep,
		     const struct ls_report_opts *opts);

/*
 * Same, through a symbolizer the caller owns (built for rep->snap), so
 * that several reports of one process share its caches.
 */
int ls_report_render_with(FILE *out, const struct ls_report *rep,
			  const struct ls_report_opts *opts,
			  struct ls_symbolizer *sym);

/* The stats object (docs/JSON-REPORT.md) of a snapshot, one line. */
int ls_render_stats_json(FILE *out, const struct ls_snapshot *snap);

#endif /* LEAKSCOPE_RENDER_H */
