/*
 * stack.h - a site's frames symbolized for printing: every raw return
 * address expanded to its inline chain, the agent's own frames left out.
 * The one place renderers get their frames from.
 *
 * Not thread-safe (the symbolizer is not).
 */
#ifndef LEAKSCOPE_STACK_H
#define LEAKSCOPE_STACK_H

#include <stddef.h>
#include <stdio.h>
#include "snapshot.h"
#include "symbolize.h"

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
/* Nonzero for a frame of the agent itself (a module whose name starts
 * with "libleakscope"): reports leave them out. */
int ls_symframe_is_agent(const struct ls_symframe *f);

/* Free st's frames and zero it; accepts a zeroed stack. */
void ls_stack_release(struct ls_stack *st);

/*
 * One frame as every text output prints it, after indent:
 * "function+0xOFFSET [module] file:line", an inlined frame without offset
 * and marked " (inlined)", an unknown one "0xADDR [module]"; then a
 * newline.  Control characters are printed as '?'.
 */
void ls_frame_print(FILE *out, const char *indent, const struct ls_symframe *f);

/* s with control characters printed as '?'. */
void ls_put_safe(FILE *out, const char *s);

/* "fn < caller < caller's caller": the names of st's first n frames,
 * truncated to cap. */
void ls_stack_summary(const struct ls_stack *st, size_t n, char *buf,
		      size_t cap);

#endif
