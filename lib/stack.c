/*
 * stack.c - a site's frames, symbolized and expanded to their inline
 * chains, as every renderer prints them.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "stack.h"

static int agent_frame(const struct ls_symframe *f)
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
		if (st->n + n > st->cap) {
			size_t ncap = st->cap ? 2 * st->cap : 64;
			struct ls_symframe *p;

			while (ncap < st->n + n)
				ncap *= 2;
			p = realloc(st->f, ncap * sizeof(*p));
			if (!p)
				return -ENOMEM;
			st->f = p;
			st->cap = ncap;
		}
		for (j = 0; j < n; j++)
			if (!agent_frame(&fr[j]))
				st->f[st->n++] = fr[j];
	}
	return 0;
}

void ls_stack_release(struct ls_stack *st)
{
	free(st->f);
	memset(st, 0, sizeof(*st));
}
