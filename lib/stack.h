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
	char **own;		/* names made by ls_stack_view (shortened) */
	size_t nown, own_cap;
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

/* Nonzero for a frame of the C or C++ runtime or the dynamic loader
 * (libc, libstdc++, libgcc_s, ld.so, libm, libpthread, libdl), or of the
 * start-up code linked into the program (_start). */
int ls_symframe_is_runtime(const struct ls_symframe *f);

/*
 * The stack as the user asked to see it (render.h's ls_render_stack):
 *  - hide_runtime: the runtime's frames (ls_symframe_is_runtime) below
 *    the program's innermost own frame and above its outermost are left
 *    out (malloc's callers inside libstdc++, __libc_start_main, _start);
 *    runtime frames between the program's own stay, and a stack with no
 *    frame of the program's stays whole;
 *  - depth: at most depth frames, innermost first (0: all);
 *  - unless full_names, every template argument list of a function name
 *    is cut to "<…>": "std::_Rb_tree<…>::_M_get_node()" (operator<,
 *    operator<< and the like are kept).
 * Returns 0 or -ENOMEM.  Shortened names belong to st until its next
 * build or release.
 */
int ls_stack_view(struct ls_stack *st, unsigned depth, int full_names,
		  int hide_runtime);

/* name with every template argument list cut to "<…>", malloc()ed; NULL
 * when name has none (or on ENOMEM, errno then set). */
char *ls_short_name(const char *name);

/* Free st's frames and names and zero it; accepts a zeroed stack. */
void ls_stack_release(struct ls_stack *st);

/* "fn (file.c:12) < caller:40 < caller's caller:7": st's first n
 * frames with their lines (the first with its file), so that two sites
 * in one function tell apart; truncated to cap. */
void ls_stack_summary(const struct ls_stack *st, size_t n, char *buf,
		      size_t cap);

#endif
