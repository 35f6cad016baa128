/*
 * render.h - printing a report (report.h) in one of the formats: text,
 * JSON (docs/JSON-REPORT.md), folded stacks, SVG flame graph
 * (docs/FLAMEGRAPH.md), pprof (docs/PPROF.md).
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
#include "flamegraph.h"

struct ls_render_ctx {
	FILE *out;
	const struct ls_report *rep;
	const struct ls_report_opts *opts;
	struct ls_symbolizer *sym;
};

int ls_render_text(const struct ls_render_ctx *ctx);
int ls_render_json(const struct ls_render_ctx *ctx);
int ls_render_folded(const struct ls_render_ctx *ctx);
int ls_render_svg(const struct ls_render_ctx *ctx);

/*
 * Add a symbolized stack (innermost first, as ls_stack_build() gives it)
 * to a flame graph with the figures v: each frame named "function
 * [module]", "[module]" when the function is unknown, "0xADDR" when no
 * module holds it; inlined frames of kind LS_FLAME_KIND_INLINE, libc,
 * libstdc++ and the loader LS_FLAME_KIND_RUNTIME.  For every producer of
 * flame graphs from symbolized stacks (the report, diff).  Returns 0,
 * -ENOMEM or what ls_flame_add() returns.
 */
int ls_flame_add_symstack(struct ls_flame *fg, const struct ls_stack *st,
			  const struct ls_flame_value *v);

/* Binary: a gzip-compressed pprof Profile (docs/PPROF.md). */
int ls_render_pprof(const struct ls_render_ctx *ctx);

/*
 * Pieces the renderers of reports and of diffs (render_diff.c) share.
 * ls_text_frame: one indented stack line, "function+0x1e [module]
 * file.c:12" ("(inlined)" after inlined frames); ls_text_safe: s with
 * control characters replaced; ls_json_frame: a frame object;
 * ls_json_process: the process members (pid ... threads) of
 * docs/JSON-REPORT.md; ls_json_filters: its "filters" object.
 */
struct ls_json;
void ls_text_frame(FILE *out, const struct ls_symframe *f);
void ls_text_safe(FILE *out, const char *s);
void ls_json_frame(struct ls_json *j, const struct ls_symframe *f);
void ls_json_process(struct ls_json *j, const struct ls_snapshot *s);
void ls_json_filters(struct ls_json *j, const struct ls_report_opts *o);

/* Flush out after a renderer returned ret: ret, or the write error. */
int ls_render_finish(FILE *out, int ret);

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
