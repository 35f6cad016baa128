/*
 * flamegraph.h - a flame graph builder and its interactive SVG writer.
 *
 * Independent of the report model: whoever has stacks with values (a
 * report, a diff of two snapshots, an eBPF trace, the web view, an Erlang
 * node) adds them here and gets a standalone SVG (inline CSS and script,
 * nothing downloaded) with hover details, click to zoom, search and URL
 * state; docs/FLAMEGRAPH.md describes what the user sees.
 *
 * Stacks are merged into a tree by identical prefixes, from the root
 * (outermost frame) to the leaf.  Two frames are the same node when their
 * name, module and kind are equal.  Children are ordered by name (then
 * module, then kind), as flamegraph.pl does, not by value: a tower keeps
 * its place from one graph to the next, so two graphs (yesterday's and
 * today's, or the two sides of a diff) can be compared by eye, and the
 * output depends only on the set of stacks, not on the order they were
 * added in.
 *
 * Every node carries bytes and blocks (inclusive: its own plus its
 * children's) and, for differential graphs, the change of both against a
 * baseline.  The width drawn is proportional to the bytes or the blocks
 * (opts.count).
 *
 * Ownership: ls_flame_add() copies every string; the caller's frames may
 * go away as soon as it returns.  Errors: int functions return 0 or a
 * negative errno, constructors NULL with errno set.  Not thread-safe: one
 * builder per thread.  Never used inside an allocation hook.
 */
#ifndef LEAKSCOPE_FLAMEGRAPH_H
#define LEAKSCOPE_FLAMEGRAPH_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

/*
 * What a frame is, for colouring by kind (LS_FLAME_COLORS_KIND) and for
 * the legend; with the default "mem" palette only LS_FLAME_KIND_INLINE
 * changes the look (a lighter shade, as the text report marks inlined
 * frames).
 */
enum ls_flame_kind {
	LS_FLAME_KIND_CODE = 0,	/* the program's or a library's own code */
	LS_FLAME_KIND_INLINE,	/* a function inlined into its caller */
	LS_FLAME_KIND_RUNTIME,	/* libc, libstdc++, the dynamic loader */
	LS_FLAME_KIND_KERNEL,	/* kernel stacks (eBPF sources) */
	LS_FLAME_KIND_VM,	/* an interpreted or VM frame (Erlang, Python) */
	LS_FLAME_KIND_UNKNOWN,	/* no symbol: "[module]" or an address */
	LS_FLAME_KIND_COUNT
};

struct ls_flame_frame {
	const char *name;	/* function; never NULL ("[libfoo.so]" or
				   "0x7f12..." when unknown) */
	const char *module;	/* shown after the name as " [libfoo.so]";
				   NULL or "" for none */
	enum ls_flame_kind kind;
};

/*
 * The figures of one stack.  In a differential graph bytes and blocks are
 * the newer profile's (they give the widths) and the deltas are newer
 * minus baseline (they give the colours): a stack that grew from 4096 to
 * 12288 bytes is { .bytes = 12288, .delta_bytes = 8192 }; one that only
 * the baseline had is { .bytes = 0, .delta_bytes = -4096 }: it has no
 * width, but its shrinkage still counts in its ancestors' deltas and in
 * the totals.  Outside differential graphs the deltas are ignored.
 */
struct ls_flame_value {
	int64_t bytes, blocks;
	int64_t delta_bytes, delta_blocks;
};

/* ls_flame_add() flags: the order of the frames array. */
#define LS_FLAME_ROOT_FIRST 0	/* frames[0] is the outermost (main) */
#define LS_FLAME_LEAF_FIRST 1	/* frames[0] is the allocating frame, as
				   struct ls_stack and unwinders give them */

enum ls_flame_count {
	LS_FLAME_COUNT_BYTES = 0,
	LS_FLAME_COUNT_BLOCKS,
};

enum ls_flame_colors {
	LS_FLAME_COLORS_MEM = 0,	/* greens, hue varied by function name
					   (flamegraph.pl's --colors=mem) */
	LS_FLAME_COLORS_KIND,		/* one hue per ls_flame_kind, with a
					   legend */
};

struct ls_flame_opts {
	const char *title;	/* NULL: "Memory Flame Graph", or
				   "Differential Memory Flame Graph" */
	const char *subtitle;	/* NULL: none */
	enum ls_flame_count count;	/* what the widths measure */
	enum ls_flame_colors colors;
	int inverted;		/* icicle: the root at the top */
	int differential;	/* red grew, blue shrank (by the deltas) */
	unsigned width;		/* of the image in pixels; 0: 1200 */
	double min_width;	/* frames narrower than this many pixels are
				   not drawn (their figures still count in
				   their parents); 0: 0.1, < 0: draw all */
};

struct ls_flame;

/* An empty builder, or NULL with errno = ENOMEM. */
struct ls_flame *ls_flame_new(void);

/* Free the builder and every string it copied; accepts NULL. */
void ls_flame_free(struct ls_flame *fg);

/* Frames per stack at most (the tree is walked recursively). */
#define LS_FLAME_MAX_DEPTH 8192

/*
 * Add one stack of n frames (n may be 0: the value goes to the root
 * alone) in the order flags says.  Adding a stack that is already there
 * adds the values.  Returns 0, -EINVAL (a NULL name, a negative bytes or
 * blocks, an unknown kind or flag), -E2BIG (n > LS_FLAME_MAX_DEPTH) or
 * -ENOMEM; on error the builder is unchanged.
 */
int ls_flame_add(struct ls_flame *fg, const struct ls_flame_frame *frames,
		 size_t n, unsigned flags, const struct ls_flame_value *v);

/* The root's figures: the sum of everything added. */
struct ls_flame_value ls_flame_total(const struct ls_flame *fg);

/*
 * Walk the tree depth first, parents before children, children in the
 * drawing order (name, module, kind).  The root ("all", depth 0) is
 * visited first.  fn's non-zero return stops the walk and is returned.
 */
struct ls_flame_node_info {
	const char *name;
	const char *module;	/* NULL for none */
	enum ls_flame_kind kind;
	unsigned depth;		/* 0: the root */
	struct ls_flame_value total;	/* inclusive */
	struct ls_flame_value self;	/* stacks ending here */
};
int ls_flame_walk(const struct ls_flame *fg,
		  int (*fn)(const struct ls_flame_node_info *node, void *arg),
		  void *arg);

/*
 * Write the graph as one standalone SVG document to out.  Returns 0,
 * -EINVAL for bad options (width under 100 or over 100000, unknown count
 * or colors), -ENOMEM, or -EIO when out is in error afterwards (the
 * caller still decides what becomes of a half-written file: the report
 * writer writes whole files or nothing).  Every string (names,
 * modules, title, subtitle) is escaped for XML and never reaches the
 * script as code; bytes that are not valid UTF-8 and control characters
 * are replaced, so the document is always well-formed.
 */
int ls_flame_write_svg(FILE *out, const struct ls_flame *fg,
		       const struct ls_flame_opts *opts);

#endif /* LEAKSCOPE_FLAMEGRAPH_H */
