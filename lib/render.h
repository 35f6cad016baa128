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

/* s with control characters shown as '?': strings come from the traced
 * program and its files, and must not drive the terminal. */
void ls_put_safe(FILE *out, const char *s);
/* "function+0xoff [module]" ("0xaddr [module]" when unknown). */
void ls_put_frame_name(FILE *out, const struct ls_symframe *f);

/* Age of a block at snapshot time, 0 for a clock that went backwards. */
uint64_t ls_block_age_ns(const struct ls_snapshot *snap,
			 const struct ls_block *b);

int ls_render_text(const struct ls_render_ctx *ctx);
int ls_render_json(const struct ls_render_ctx *ctx);
int ls_render_folded(const struct ls_render_ctx *ctx);
/* bcc memleak's shape (render_memleak.c), `leakscope trace`'s default. */
int ls_render_memleak(const struct ls_render_ctx *ctx);

#endif /* LEAKSCOPE_RENDER_H */
