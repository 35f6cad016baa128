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
/* Free st's frames and zero it; accepts a zeroed stack. */
void ls_stack_release(struct ls_stack *st);

#endif
