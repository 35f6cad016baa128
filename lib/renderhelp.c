/*
 * renderhelp.c - what every renderer calls: a site's stack as the user
 * asked for it, and the write check after a renderer returned (render.h).
 */
#include <errno.h>
#include <stdio.h>
#include "render.h"
#include "stack.h"

int ls_render_stack(const struct ls_render_ctx *ctx,
		    const struct ls_site *site, struct ls_stack *st)
{
	const struct ls_report_opts *o = ctx->opts;
	int ret = ls_stack_build(ctx->sym, site, st);

	if (!ret && o)
		ret = ls_stack_view(st, o->depth, o->full_names,
				    o->hide_runtime);
	return ret;
}

int ls_render_finish(FILE *out, int ret)
{
	errno = 0;
	if (fflush(out) == EOF || ferror(out))
		return ret ? ret : (errno ? -errno : -EIO);
	return ret;
}
