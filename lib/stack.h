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
	struct ls_frame_memo *memo;	/* stack.c: each distinct function's
					   short name and frame's text, made
					   once per symbolizer */
	const struct ls_symbolizer *memo_sym;
	struct ls_frame_src **src;	/* with memo_sym: each frame's entry
					   in the memo */
	size_t src_cap;
	int full_names;		/* as ls_stack_view() was asked */
	char *text;		/* ls_stack_lines() */
	size_t text_cap;
};

/*
 * Symbolize site's frames into st (which starts zeroed, and is reused
 * across calls: only the count is reset).  Frames of the agent itself,
 * a module whose name starts with "libleakscope", are left out.  Returns
 * 0 or -ENOMEM.  Strings belong to the symbolizer.
 */
int ls_stack_build(struct ls_symbolizer *sym, const struct ls_site *site,
		   struct ls_stack *st);
/*
 * Fill st (reused as with ls_stack_build) with a copy of the n frames f,
 * frames kept from an earlier build (a diff's stacks), so that
 * ls_stack_view() can be applied to them.  Returns 0 or -ENOMEM.
 */
int ls_stack_set(struct ls_stack *st, const struct ls_symframe *f, size_t n);

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
 * Returns 0 or -ENOMEM.  Shortened names belong to st until its release,
 * its next ls_stack_set() or a build with another symbolizer.
 */
int ls_stack_view(struct ls_stack *st, unsigned depth, int full_names,
		  int hide_runtime);

/* name with every template argument list cut to "<…>", malloc()ed; NULL
 * when name has none (or on ENOMEM, errno then set). */
char *ls_short_name(const char *name);

/*
 * st->f[i]'s line in a text report: two tabs, its
 * ls_frame_format(LS_FRAME_ALL) text and a newline, its length in *len
 * (NUL-terminated after): formatted once per distinct frame for as long
 * as st builds with one symbolizer (a report's thousands of stacks share
 * their frames).  The line belongs to st until its release, its next
 * ls_stack_set() or a build with another symbolizer.  NULL on ENOMEM.
 */
const char *ls_stack_frame_line(struct ls_stack *st, size_t i, size_t *len);

/* Every line of st, as ls_stack_frame_line() makes them, in one string
 * of *len bytes (not NUL-terminated; "" for no frame): a report writes a
 * stack at once.  Belongs to st until its next call or release.  NULL
 * on ENOMEM. */
const char *ls_stack_lines(struct ls_stack *st, size_t *len);

/* Free st's frames and names and zero it; accepts a zeroed stack. */
void ls_stack_release(struct ls_stack *st);

/*
 * The one spelling of a frame, for every output that prints frames as
 * text (reports, olds, check, diffs, memleak's format, watch and top, the
 * JSON "text" field the web view shows):
 *
 *   LS_FRAME_NAME  "function+0x1e [module]": no offset for an inlined
 *                  frame; an unnamed one is its address "0x7f..c3 [module]",
 *                  "[unknown]" when no module holds it;
 *   LS_FRAME_LINE  " file.c:12" (base name), or " file.c" without a line,
 *                  nothing without a file; " (inlined)" for an inlined
 *                  frame.
 *
 * Control characters (the names come from the traced program's files)
 * become '?'.  Writes at most cap bytes, NUL included (cap > 0), and
 * returns the length the whole text needs, as snprintf does.
 */
#define LS_FRAME_NAME 1u
#define LS_FRAME_LINE 2u
#define LS_FRAME_ALL (LS_FRAME_NAME | LS_FRAME_LINE)
size_t ls_frame_format(char *buf, size_t cap, const struct ls_symframe *f,
		       unsigned parts);
/* ls_frame_format()'s whole text: in buf when it fits in cap, else in a
 * malloc()ed string left in *own for the caller to free (*own NULL
 * otherwise; the text is cut to buf when that allocation fails). */
const char *ls_frame_text(const struct ls_symframe *f, unsigned parts,
			  char *buf, size_t cap, char **own);

/* "fn (file.c:12) < caller:40 < caller's caller:7": st's first n
 * frames with their lines (the first with its file), so that two sites
 * in one function tell apart; a frame without a function is named as
 * ls_frame_format() names it ("0x7f..c3 [libjemalloc.so.2]"); truncated
 * to cap. */
void ls_stack_summary(const struct ls_stack *st, size_t n, char *buf,
		      size_t cap);

#endif
