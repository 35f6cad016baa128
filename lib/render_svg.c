/*
 * render_svg.c - the report as an interactive memory flame graph
 * (lib/flamegraph.h, docs/FLAMEGRAPH.md): one tower per stack, the
 * allocating frame on top, inlined functions as frames of their own, the
 * width the live bytes (or blocks) after the filters.  With --top N the
 * sites left out are one "[N other stacks]" frame, so the root is always
 * the report's total.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "flamegraph.h"
#include "render.h"

/*
 * One frame: the function, else "[module]", else the address; a name
 * that is not the symbolizer's is malloc()ed into *own.  -ENOMEM.
 */
static int symframe_to_flame(const struct ls_symframe *s, struct ls_flame_frame *f,
			     char **own)
{
	const char *base = s->module ? ls_sym_basename(s->module) : NULL;
	int len;

	f->module = NULL;
	if (s->function) {
		f->name = s->function;
		f->module = base;
		f->kind = s->inlined ? LS_FLAME_KIND_INLINE :
			  ls_symframe_is_runtime(s) ? LS_FLAME_KIND_RUNTIME :
			  LS_FLAME_KIND_CODE;
		return 0;
	}
	f->kind = LS_FLAME_KIND_UNKNOWN;
	if (base)
		len = asprintf(own, "[%s]", base);
	else
		len = asprintf(own, "0x%" PRIx64, s->addr);
	if (len < 0) {
		*own = NULL;
		return -ENOMEM;
	}
	f->name = *own;
	return 0;
}

int ls_flame_add_symstack(struct ls_flame *fg, const struct ls_stack *st,
			  const struct ls_flame_value *v)
{
	struct ls_flame_frame *f = calloc(st->n ? st->n : 1, sizeof(*f));
	char **own = calloc(st->n ? st->n : 1, sizeof(*own));
	size_t i;
	int ret = -ENOMEM;

	if (!f || !own)
		goto out;
	for (i = 0, ret = 0; i < st->n && !ret; i++)
		ret = symframe_to_flame(&st->f[i], &f[i], &own[i]);
	if (!ret)
		ret = ls_flame_add(fg, f, st->n, LS_FLAME_LEAF_FIRST, v);
out:
	for (i = 0; own && i < st->n; i++)
		free(own[i]);
	free(own);
	free(f);
	return ret;
}

static int add_sites(const struct ls_render_ctx *c, struct ls_flame *fg)
{
	struct ls_stack st = { 0 };
	struct ls_flame_value v = { 0 };
	size_t i;
	int ret = 0;

	for (i = 0; i < c->rep->nsites && !ret; i++) {
		const struct ls_report_site *r = &c->rep->sites[i];

		if (r->live_bytes <= 0 && r->live_blocks <= 0)
			continue;
		v.bytes = r->live_bytes > 0 ? r->live_bytes : 0;
		v.blocks = r->live_blocks > 0 ? r->live_blocks : 0;
		ret = ls_render_stack(c, r->site, &st);
		if (!ret)
			ret = ls_flame_add_symstack(fg, &st, &v);
	}
	ls_stack_release(&st);
	return ret;
}

/* What --top left out, as one frame on the root. */
static int add_others(const struct ls_render_ctx *c, struct ls_flame *fg)
{
	struct ls_flame_value all = ls_flame_total(fg), v = { 0 };
	struct ls_flame_frame f = { .kind = LS_FLAME_KIND_UNKNOWN };
	size_t left = c->rep->nsites_total - c->rep->nsites;
	char name[64];

	if (c->rep->nsites_total <= c->rep->nsites)
		return 0;
	v.bytes = c->rep->live_bytes - all.bytes;
	v.blocks = c->rep->live_blocks - all.blocks;
	if (v.bytes < 0 || v.blocks < 0)
		return 0;
	snprintf(name, sizeof(name), "[%zu other stack%s]", left, left == 1 ? "" : "s");
	f.name = name;
	return ls_flame_add(fg, &f, 1, LS_FLAME_ROOT_FIRST, &v);
}

/* "pid 4242 (./server --port 80), live bytes by stack", malloc()ed. */
static char *subtitle(const struct ls_render_ctx *c)
{
	const struct ls_snapshot *s = c->rep->snap;
	char *buf = NULL;
	size_t len = 0, i;
	FILE *mem = open_memstream(&buf, &len);

	if (!mem)
		return NULL;
	fprintf(mem, "pid %u", s->hdr.pid);
	for (i = 0; i < s->argc && i < 8; i++)
		fprintf(mem, "%s%s", i ? " " : " (", s->argv[i]);
	fprintf(mem, "%s%s, live %s by allocation stack%s", s->argc > 8 ? " ..." : "",
		s->argc ? ")" : "",
		c->opts->svg.count == LS_FLAME_COUNT_BLOCKS ? "blocks" : "bytes",
		s->hdr.mode == LSNAP_MODE_SAMPLED ? " (sampled: estimates)" : "");
	if (fclose(mem)) {
		free(buf);
		return NULL;
	}
	return buf;
}

int ls_render_svg(const struct ls_render_ctx *c)
{
	struct ls_flame *fg = ls_flame_new();
	struct ls_flame_opts o = c->opts->svg;
	char *sub = NULL;
	int ret = -ENOMEM;

	if (!fg)
		goto out;
	ret = add_sites(c, fg);
	if (!ret)
		ret = add_others(c, fg);
	if (ret)
		goto out;
	if (!o.subtitle) {
		sub = subtitle(c);
		if (!sub) {
			ret = -ENOMEM;
			goto out;
		}
		o.subtitle = sub;
	}
	ret = ls_flame_write_svg(c->out, fg, &o);
out:
	free(sub);
	ls_flame_free(fg);
	return ret;
}
