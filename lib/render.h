/*
 * render.h - what report.c shares with the renderers (render_text.c,
 * render_json.c, render_folded.c).  Internal to the command-line tool.
 *
 * A renderer prints one report to ctx->out and returns 0, or a negative
 * errno (-ENOMEM); report.c checks the stream for write errors afterwards.
 */
#ifndef LEAKSCOPE_RENDER_H
#define LEAKSCOPE_RENDER_H

#include <stdio.h>
#include "report.h"
#include "symbolize.h"
#include "flamegraph.h"

struct ls_render_ctx {
	FILE *out;
	const struct ls_report *rep;
	const struct ls_report_opts *opts;
	struct ls_symbolizer *sym;
};

/* A symbolized stack: every raw frame expanded to its inline chain. */
struct ls_stack {
	struct ls_symframe *f;	/* innermost (allocating caller) first */
	size_t n, cap;
};

/*
 * Symbolize site's frames into st (which starts zeroed, and is reused
 * across calls: only the count is reset).  Frames of the agent itself,
 * a module whose name starts with "libleakscope", are left out.  Returns
 * 0 or -ENOMEM.  Strings belong to the symbolizer.
 */
int ls_stack_build(struct ls_symbolizer *sym, const struct ls_site *site,
		   struct ls_stack *st);
void ls_stack_release(struct ls_stack *st);

/* Age of a block at snapshot time, 0 for a clock that went backwards. */
uint64_t ls_block_age_ns(const struct ls_snapshot *snap,
			 const struct ls_block *b);

/* One symbolized frame as the JSON report writes it (docs/JSON-REPORT.md),
 * an element of the current array. */
struct ls_json;
void ls_json_frame(struct ls_json *j, const struct ls_symframe *f);

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

#endif /* LEAKSCOPE_RENDER_H */
