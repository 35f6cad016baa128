/*
 * render.c - the dispatch from a report to its renderer.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "render.h"
#include "symbolize.h"

/* Every format, its name and its renderer: a new renderer is one row. */
static const struct renderer {
	const char *name;
	enum ls_format format;
	int (*render)(const struct ls_render_ctx *ctx);
	int binary;		/* not for a terminal */
} renderers[] = {
	{ "text", LS_FORMAT_TEXT, ls_render_text, 0 },
	{ "json", LS_FORMAT_JSON, ls_render_json, 0 },
	{ "folded", LS_FORMAT_FOLDED, ls_render_folded, 0 },
	{ "svg", LS_FORMAT_SVG, ls_render_svg, 0 },
	{ "pprof", LS_FORMAT_PPROF, ls_render_pprof, 1 },
};

#define NRENDERERS (sizeof(renderers) / sizeof(renderers[0]))

static const struct renderer *renderer_of(enum ls_format f)
{
	size_t i;

	for (i = 0; i < NRENDERERS; i++)
		if (renderers[i].format == f)
			return &renderers[i];
	return &renderers[0];
}

const char *ls_format_name(size_t i)
{
	return i < NRENDERERS ? renderers[i].name : NULL;
}

int ls_format_from_name(const char *name, enum ls_format *out)
{
	size_t i;

	for (i = 0; i < NRENDERERS; i++)
		if (!strcmp(name, renderers[i].name)) {
			*out = renderers[i].format;
			return 0;
		}
	return -EINVAL;
}

int ls_report_render_with(FILE *out, const struct ls_report *rep,
			  const struct ls_report_opts *opts,
			  struct ls_symbolizer *sym)
{
	struct ls_render_ctx ctx = { .out = out, .rep = rep, .opts = opts,
				     .sym = sym };

	return ls_render_finish(out, renderer_of(opts->format)->render(&ctx));
}

int ls_render_finish(FILE *out, int ret)
{
	errno = 0;
	if (fflush(out) == EOF || ferror(out))
		return ret ? ret : (errno ? -errno : -EIO);
	return ret;
}

int ls_format_is_binary(enum ls_format f)
{
	return renderer_of(f)->binary;
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
