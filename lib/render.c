/*
 * render.c - the dispatch from a report to its renderer.
 */
#include <errno.h>
#include <stdio.h>
#include "render.h"
#include "symbolize.h"

int ls_report_render_with(FILE *out, const struct ls_report *rep,
			  const struct ls_report_opts *opts,
			  struct ls_symbolizer *sym)
{
	struct ls_render_ctx ctx = { .out = out, .rep = rep, .opts = opts,
				     .sym = sym };
	int ret;

	switch (opts->format) {
	case LS_FORMAT_JSON:
		ret = ls_render_json(&ctx);
		break;
	case LS_FORMAT_FOLDED:
		ret = ls_render_folded(&ctx);
		break;
	default:
		ret = ls_render_text(&ctx);
		break;
	}
	errno = 0;
	if (fflush(out) == EOF || ferror(out))
		return ret ? ret : (errno ? -errno : -EIO);
	return ret;
}

int ls_report_render(FILE *out, const struct ls_report *rep,
		     const struct ls_report_opts *opts)
{
	struct ls_symbolizer *sym = ls_symbolizer_new(rep->snap);
	int ret;

	if (!sym)
		return -ENOMEM;
	ret = ls_report_render_with(out, rep, opts, sym);
	ls_symbolizer_free(sym);
	return ret;
}
