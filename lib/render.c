/*
 * render.c - the table of renderers and the dispatch to them.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include "diff.h"
#include "render.h"
#include "symbolize.h"

const struct ls_renderer ls_renderers[] = {
	{ "text", "for people: sites with their stacks, then the totals",
	  ls_render_text, ls_render_stats_text, ls_render_diff_text,
	  LS_NEEDS_SYMBOLS, "report", "text/plain; charset=utf-8" },
	{ "json", "one JSON object per report (docs/JSON-REPORT.md)",
	  ls_render_json, ls_render_stats_json, ls_render_diff_json,
	  LS_NEEDS_SYMBOLS, "report", "application/json" },
	{ "folded", "folded stacks for flamegraph.pl --colors=mem",
	  ls_render_folded, NULL, NULL, LS_NEEDS_SYMBOLS, "report", "text/plain; charset=utf-8" },
	{ "svg", "an interactive memory flame graph (docs/FLAMEGRAPH.md)",
	  ls_render_svg, NULL, ls_render_diff_svg,
	  LS_NEEDS_SYMBOLS | LS_NEEDS_OWN_FILE, "graph", "image/svg+xml" },
	{ "pprof", "a gzip-compressed pprof heap profile (docs/PPROF.md)",
	  ls_render_pprof, NULL, NULL,
	  LS_NEEDS_SYMBOLS | LS_NEEDS_OWN_FILE | LS_NEEDS_NOT_TTY, "profile",
	  "application/octet-stream" },
	{ "memleak", "bcc memleak's shape (the default of `leakscope trace`)",
	  ls_render_memleak, NULL, NULL, LS_NEEDS_SYMBOLS, "report", "text/plain; charset=utf-8" },
	{ NULL, NULL, NULL, NULL, NULL, 0, NULL, NULL },
};

const struct ls_renderer *ls_renderer_find(const char *name)
{
	const struct ls_renderer *r;

	for (r = ls_renderers; r->name; r++)
		if (!strcmp(r->name, name))
			return r;
	return NULL;
}

const struct ls_renderer *ls_renderer_of(const struct ls_report_opts *opts)
{
	return opts->format ? opts->format : &ls_renderers[0];
}

int ls_report_render(FILE *out, const struct ls_report *rep,
		     const struct ls_report_opts *opts,
		     struct ls_symbolizer *sym)
{
	const struct ls_renderer *r = ls_renderer_of(opts);
	struct ls_render_ctx ctx = { .out = out, .rep = rep, .opts = opts,
				     .sym = sym };
	struct ls_symbolizer *own = NULL;
	int ret;

	if (!sym && (r->needs & LS_NEEDS_SYMBOLS)) {
		own = ctx.sym = ls_symbolizer_new(rep->snap);
		if (!own)
			return -ENOMEM;
	}
	ret = ls_render_finish(out, r->render(&ctx));
	ls_symbolizer_free(own);
	return ret;
}

/* --- dispatch ------------------------------------------------------------- */

int ls_diff_format_ok(const struct ls_renderer *r)
{
	return r->diff != NULL;
}

int ls_diff_render(FILE *out, const struct ls_diff *d,
		   const struct ls_report_opts *opts)
{
	const struct ls_renderer *r = ls_renderer_of(opts);

	if (!r->diff)
		return -EINVAL;
	return ls_render_finish(out, r->diff(out, d, opts));
}
