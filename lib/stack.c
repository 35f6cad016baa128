/*
 * stack.c - a site's frames, symbolized and expanded to their inline
 * chains, as every renderer prints them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "stack.h"
#include "util.h"

int ls_symframe_is_agent(const struct ls_symframe *f)
{
	return f->module &&
		!strncmp(ls_sym_basename(f->module), "libleakscope", 12);
}

int ls_stack_build(struct ls_symbolizer *sym, const struct ls_site *site,
		   struct ls_stack *st)
{
	struct ls_symframe fr[LS_SYM_MAX_FRAMES];
	size_t i, j, n;
	int ret;

	st->n = 0;
	for (i = 0; i < site->nframes; i++) {
		ret = ls_symbolize_frame(sym, site->gen, site->frames[i], fr,
					 LS_SYM_MAX_FRAMES, &n);
		if (ret)
			return ret;
		if (LS_GROW(st->f, st->n + n, st->cap))
			return -ENOMEM;
		for (j = 0; j < n; j++)
			if (!ls_symframe_is_agent(&fr[j]))
				st->f[st->n++] = fr[j];
	}
	return 0;
}

void ls_stack_release(struct ls_stack *st)
{
	free(st->f);
	memset(st, 0, sizeof(*st));
}

void ls_put_safe(FILE *out, const char *s)
{
	/* Strings come from the traced program and its files: keep control
	 * characters away from the terminal. */
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out);
}

void ls_frame_print(FILE *out, const char *indent, const struct ls_symframe *f)
{
	fputs(indent, out);
	if (f->function) {
		ls_put_safe(out, f->function);
		if (!f->inlined)
			fprintf(out, "+0x%" PRIx64, f->offset);
	} else {
		fprintf(out, "0x%" PRIx64, f->addr);
	}
	fputs(" [", out);
	ls_put_safe(out, f->module ? ls_sym_basename(f->module) : "unknown");
	fputc(']', out);
	if (f->file) {
		fputc(' ', out);
		ls_put_safe(out, ls_sym_basename(f->file));
		if (f->line)
			fprintf(out, ":%d", f->line);
	}
	fputs(f->inlined ? " (inlined)\n" : "\n", out);
}

void ls_stack_summary(const struct ls_stack *st, size_t n, char *buf,
		      size_t cap)
{
	size_t len = 0, i;

	buf[0] = 0;
	for (i = 0; i < st->n && i < n && len < cap; i++) {
		const struct ls_symframe *f = &st->f[i];

		if (f->function)
			len += (size_t)snprintf(buf + len, cap - len, "%s%s",
						i ? " < " : "", f->function);
		else
			len += (size_t)snprintf(buf + len, cap - len,
						"%s0x%" PRIx64, i ? " < " : "",
						f->addr);
	}
}
