/*
 * render.h - printing a report (report.h): the table of renderers (text,
 * JSON docs/JSON-REPORT.md, folded, SVG flame graph docs/FLAMEGRAPH.md,
 * pprof docs/PPROF.md).
 *
 * A renderer is a row {name, render, stats, diff, needs, noun, mime}: render prints
 * one report to ctx->out and returns 0 or a negative errno (-ENOMEM);
 * write errors on the stream are checked by ls_report_render()
 * afterwards.  stats, when not NULL, prints a snapshot's figures without
 * sites (`leakscope stats`); diff, when not NULL, a comparison of two
 * snapshots (`leakscope diff`, diff.h).  needs says what the renderer needs (LS_NEEDS_*);
 * the command-line layer applies it.  Renderers take their frames from
 * ls_render_stack(), which applies the user's stack options (depth,
 * names, runtime frames), and format single frames with stack.h.
 *
 * Adding a format = one row in ls_renderers[] (render.c), its function
 * declared below, and its file lib/render_NAME.c.  Nothing else: the
 * option parser, --help, the man page and every reporting command take
 * their formats from the table.
 */
#ifndef LEAKSCOPE_RENDER_H
#define LEAKSCOPE_RENDER_H

#include <stdio.h>
#include "flamegraph.h"
#include "report.h"
#include "stack.h"
#include "symbolize.h"

struct ls_diff;
struct ls_json;

struct ls_render_ctx {
	FILE *out;
	const struct ls_report *rep;
	const struct ls_report_opts *opts;
	struct ls_symbolizer *sym;	/* for rep->snap */
};

/* What a renderer needs (struct ls_renderer.needs). */
#define LS_NEEDS_SYMBOLS 0x1	/* a symbolizer in ctx->sym */
#define LS_NEEDS_OWN_FILE 0x2	/* a whole document: one report per file,
				   never several on one stream */
#define LS_NEEDS_NOT_TTY 0x4	/* binary: never to a terminal */

struct ls_renderer {
	const char *name;	/* --format NAME */
	const char *help;	/* one line, for --help and the man page */
	int (*render)(const struct ls_render_ctx *ctx);
	int (*stats)(FILE *out, const struct ls_snapshot *snap);
	int (*diff)(FILE *out, const struct ls_diff *d,
		    const struct ls_report_opts *opts);
	unsigned needs;
	const char *noun;	/* what one output is: "report", "graph" */
	const char *mime;	/* its media type (the web API's replies) */
};

/* The rows, ending with a row whose name is NULL; the first is the
 * default (text). */
extern const struct ls_renderer ls_renderers[];

/* The row called name, or NULL. */
const struct ls_renderer *ls_renderer_find(const char *name);
/* opts->format, or the default when it is NULL. */
const struct ls_renderer *ls_renderer_of(const struct ls_report_opts *opts);

/* The renderers (one file each, render_NAME.c; diffs in render_diff.c). */
int ls_render_text(const struct ls_render_ctx *ctx);
int ls_render_json(const struct ls_render_ctx *ctx);
int ls_render_folded(const struct ls_render_ctx *ctx);
int ls_render_svg(const struct ls_render_ctx *ctx);
/* Binary: a gzip-compressed pprof Profile (docs/PPROF.md). */
int ls_render_pprof(const struct ls_render_ctx *ctx);
/* bcc memleak's shape (render_memleak.c), `leakscope trace`'s default. */
int ls_render_memleak(const struct ls_render_ctx *ctx);
int ls_render_stats_text(FILE *out, const struct ls_snapshot *snap);
int ls_render_stats_json(FILE *out, const struct ls_snapshot *snap);
int ls_render_diff_text(FILE *out, const struct ls_diff *d,
			const struct ls_report_opts *opts);
int ls_render_diff_json(FILE *out, const struct ls_diff *d,
			const struct ls_report_opts *opts);
int ls_render_diff_svg(FILE *out, const struct ls_diff *d,
		       const struct ls_report_opts *opts);

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

/*
 * Pieces the renderers of reports and of diffs (render_diff.c) share.
 * ls_text_frame: one indented stack line, ls_frame_format()'s
 * "function+0x1e [module] file.c:12" (" (inlined)" after inlined frames,
 * which have no offset), the one way every text output prints a frame
 * (reports, olds, check, diffs);
 * ls_text_safe: s with control characters replaced; ls_json_frame: a
 * frame object, its "text" the same line as ls_text_frame's; ls_json_process: the process members (pid ... threads)
 * of docs/JSON-REPORT.md; ls_json_filters: its "filters" object.
 */
void ls_text_frame(FILE *out, const struct ls_symframe *f);
/* indent, then ls_frame_format()'s LS_FRAME_NAME, "function+0x1e
 * [module]" ("0xADDR [module]" when unnamed, no offset for an inlined
 * frame): the head of every text frame line. */
void ls_text_frame_name(FILE *out, const char *indent,
			const struct ls_symframe *f);
void ls_text_safe(FILE *out, const char *s);
void ls_json_frame(struct ls_json *j, const struct ls_symframe *f);
void ls_json_process(struct ls_json *j, const struct ls_snapshot *s);
void ls_json_filters(struct ls_json *j, const struct ls_report_opts *o);

/* Flush out after a renderer returned ret: ret, or the write error. */
int ls_render_finish(FILE *out, int ret);

/*
 * Site's stack as the user asked for it (opts: depth, names, runtime
 * frames), into st (reused across calls, as ls_stack_build).  0 or
 * -ENOMEM.
 */
int ls_render_stack(const struct ls_render_ctx *ctx,
		    const struct ls_site *site, struct ls_stack *st);

/*
 * Print the report to out in its format (opts->format).  Symbolizes
 * through sym when not NULL (a symbolizer the caller keeps, so that
 * several reports share its caches), else through one made for the
 * purpose.  Returns 0, or a negative errno when writing failed.
 */
int ls_report_render(FILE *out, const struct ls_report *rep,
		     const struct ls_report_opts *opts,
		     struct ls_symbolizer *sym);

/*
 * `leakscope olds`: the n oldest blocks of snap (which needs its block
 * list; its blocks are sorted oldest first in place) with their stacks,
 * as text.  0, -ENODATA without a block list, -ENOMEM.
 */
int ls_render_olds(FILE *out, struct ls_snapshot *snap,
		   const struct ls_report_opts *opts, struct ls_symbolizer *sym,
		   size_t n);

/*
 * The same as JSON members of the object open in j (docs/WEB-API.md's
 * olds): "blocks_total" and "blocks", the n oldest with their stacks;
 * snap is left as it is.  0 or -ENOMEM.
 */
int ls_json_olds(struct ls_json *j, const struct ls_snapshot *snap,
		 const struct ls_report_opts *opts, struct ls_symbolizer *sym,
		 size_t n);

/*
 * The first three frames of site's stack, "fn < caller < caller's
 * caller", into buf (`watch`, `top`); without sym, an empty string.
 * 0 or -ENOMEM.
 */
int ls_render_site_summary(struct ls_symbolizer *sym,
			   const struct ls_report_opts *opts,
			   const struct ls_site *site, char *buf, size_t cap);

#endif /* LEAKSCOPE_RENDER_H */
