/*
 * flamegraph_int.h - the tree behind struct ls_flame, shared by the
 * builder (flamegraph.c) and the SVG writer (flamegraph_svg.c) only.
 */
#ifndef LEAKSCOPE_FLAMEGRAPH_INT_H
#define LEAKSCOPE_FLAMEGRAPH_INT_H

#include "flamegraph.h"

struct ls_flame_node {
	char *name;
	char *module;		/* NULL: none */
	enum ls_flame_kind kind;
	struct ls_flame_value total;	/* inclusive */
	struct ls_flame_value self;
	struct ls_flame_node **child;	/* sorted by (name, module, kind) */
	size_t nchild, cap;
};

struct ls_flame {
	struct ls_flame_node root;	/* "all" */
};

#endif /* LEAKSCOPE_FLAMEGRAPH_INT_H */
