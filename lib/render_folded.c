/*
 * render_folded.c - folded stacks for flame graphs:
 *
 *   main;parse_config;xstrdup 4096
 *
 * one line per distinct stack, outermost frame first, with the live bytes
 * after the filters; for flamegraph.pl --colors=mem --countname=bytes.
 * Frames are named by function only (no offset, no line) so that stacks
 * through the same functions merge; an unknown frame is "[module]" or
 * "0xADDR" when no module holds it.  Lines are sorted, so the output is
 * deterministic.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "render.h"
#include "util.h"

struct folded {
	char *stack;
	int64_t bytes;
};

struct folded_set {
	struct folded *v;
	size_t n, cap;
};

/* ';' separates frames and a newline ends the record: neither may
 * appear inside a name. */
static void put_name(FILE *out, const char *s)
{
	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;

		fputc(ch == ';' ? ':' : ch < 0x20 || ch == 0x7f ? '?' : ch, out);
	}
}

static void put_folded_frame(FILE *out, const struct ls_symframe *f)
{
	if (f->function) {
		put_name(out, f->function);
	} else if (f->module) {
		fputc('[', out);
		put_name(out, ls_sym_basename(f->module));
		fputc(']', out);
	} else {
		fprintf(out, "0x%" PRIx64, f->addr);
	}
}

/* The folded form of a stack, malloc()ed, or NULL on ENOMEM. */
static char *fold(const struct ls_stack *st)
{
	char *buf = NULL;
	size_t len = 0, i;
	FILE *mem = open_memstream(&buf, &len);

	if (!mem)
		return NULL;
	for (i = st->n; i-- > 0;) {
		put_folded_frame(mem, &st->f[i]);
		if (i)
			fputc(';', mem);
	}
	if (!st->n)
		fputs("[no stack]", mem);
	if (fclose(mem)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int add(struct folded_set *set, char *stack, int64_t bytes)
{
	if (LS_GROW(set->v, set->n + 1, set->cap))
		return -ENOMEM;
	set->v[set->n].stack = stack;
	set->v[set->n].bytes = bytes;
	set->n++;
	return 0;
}

static int cmp_folded(const void *a, const void *b)
{
	return strcmp(((const struct folded *)a)->stack,
		      ((const struct folded *)b)->stack);
}

static int collect(const struct ls_render_ctx *c, struct folded_set *set)
{
	struct ls_stack st = { 0 };
	size_t i;
	int ret = 0;

	for (i = 0; i < c->rep->nsites && !ret; i++) {
		const struct ls_report_site *r = &c->rep->sites[i];
		char *s;

		if (r->key_bytes <= 0)
			continue;
		ret = ls_render_stack(c, r->site, &st);
		if (ret)
			break;
		s = fold(&st);
		ret = s ? add(set, s, r->key_bytes) : -ENOMEM;
		if (ret)
			free(s);
	}
	ls_stack_release(&st);
	return ret;
}

int ls_render_folded(const struct ls_render_ctx *c)
{
	struct folded_set set = { 0 };
	size_t i, j;
	int ret = collect(c, &set);

	if (!ret && set.n)	/* set.v is NULL when empty */
		qsort(set.v, set.n, sizeof(*set.v), cmp_folded);
	for (i = 0; !ret && i < set.n; i = j) {
		int64_t sum = 0;

		for (j = i; j < set.n && !strcmp(set.v[j].stack, set.v[i].stack); j++)
			sum = ls_add_sat(sum, set.v[j].bytes);
		fprintf(c->out, "%s %" PRId64 "\n", set.v[i].stack, sum);
	}
	for (i = 0; i < set.n; i++)
		free(set.v[i].stack);
	free(set.v);
	return ret;
}
