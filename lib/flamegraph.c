/*
 * flamegraph.c - the flame graph tree: stacks merged by identical
 * prefixes, children kept sorted by (name, module, kind) so that lookups
 * are binary searches and the walk is already in drawing order.  The SVG
 * writer is flamegraph_svg.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "flamegraph_int.h"
#include "util.h"

static void value_add(struct ls_flame_value *to, const struct ls_flame_value *v)
{
	to->bytes = ls_add_sat(to->bytes, v->bytes);
	to->blocks = ls_add_sat(to->blocks, v->blocks);
	to->delta_bytes = ls_add_sat(to->delta_bytes, v->delta_bytes);
	to->delta_blocks = ls_add_sat(to->delta_blocks, v->delta_blocks);
}

static void node_free(struct ls_flame_node *n)
{
	size_t i;

	if (!n)
		return;
	for (i = 0; i < n->nchild; i++)
		node_free(n->child[i]);
	free(n->child);
	free(n->name);
	free(n->module);
	free(n);
}

struct ls_flame *ls_flame_new(void)
{
	struct ls_flame *fg = calloc(1, sizeof(*fg));

	if (!fg)
		return NULL;
	fg->root.name = strdup("all");
	if (!fg->root.name) {
		free(fg);
		errno = ENOMEM;
		return NULL;
	}
	return fg;
}

void ls_flame_free(struct ls_flame *fg)
{
	size_t i;

	if (!fg)
		return;
	for (i = 0; i < fg->root.nchild; i++)
		node_free(fg->root.child[i]);
	free(fg->root.child);
	free(fg->root.name);
	free(fg);
}

static const char *module_of(const struct ls_flame_frame *f)
{
	return f->module && *f->module ? f->module : NULL;
}

/* Order of siblings: name, then module (none first), then kind. */
static int frame_cmp(const struct ls_flame_frame *f, const struct ls_flame_node *n)
{
	const char *m = module_of(f);
	int c = strcmp(f->name, n->name);

	if (c)
		return c;
	if (!m != !n->module)
		return m ? 1 : -1;
	if (m && (c = strcmp(m, n->module)))
		return c;
	return (int)f->kind - (int)n->kind;
}

/*
 * Binary search of parent's children for f: returns the child, or NULL
 * with *pos set to where it belongs.
 */
static struct ls_flame_node *child_find(const struct ls_flame_node *parent,
					const struct ls_flame_frame *f,
					size_t *pos)
{
	size_t lo = 0, hi = parent->nchild;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		int c = frame_cmp(f, parent->child[mid]);

		if (!c)
			return parent->child[mid];
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	*pos = lo;
	return NULL;
}

static int child_reserve(struct ls_flame_node *parent)
{
	return LS_GROW(parent->child, parent->nchild + 1, parent->cap) ?
	       -ENOMEM : 0;
}

static struct ls_flame_node *node_new(const struct ls_flame_frame *f)
{
	struct ls_flame_node *n = calloc(1, sizeof(*n));
	const char *m = module_of(f);

	if (!n)
		return NULL;
	n->kind = f->kind;
	n->name = strdup(f->name);
	n->module = m ? strdup(m) : NULL;
	if (!n->name || (m && !n->module)) {
		node_free(n);
		return NULL;
	}
	return n;
}

/* Frame i of a stack, counted from the root whatever the array's order. */
static const struct ls_flame_frame *frame_at(const struct ls_flame_frame *frames,
					     size_t n, unsigned flags, size_t i)
{
	return &frames[flags & LS_FLAME_LEAF_FIRST ? n - 1 - i : i];
}

/*
 * A chain of new nodes for frames[i..n) (counted from the root), each the only child of the previous one.  NULL on ENOMEM.
 */
static struct ls_flame_node *chain_new(const struct ls_flame_frame *frames,
				       size_t n, unsigned flags, size_t i)
{
	struct ls_flame_node *head = NULL, *tail = NULL;

	for (; i < n; i++) {
		struct ls_flame_node *node = node_new(frame_at(frames, n, flags, i));

		if (!node || (tail && child_reserve(tail))) {
			node_free(node);
			node_free(head);
			return NULL;
		}
		if (tail)
			tail->child[tail->nchild++] = node;
		else
			head = node;
		tail = node;
	}
	return head;
}

static int args_check(const struct ls_flame_frame *frames, size_t n,
		      unsigned flags, const struct ls_flame_value *v)
{
	size_t i;

	if (flags & ~(unsigned)LS_FLAME_LEAF_FIRST || !v || v->bytes < 0 ||
	    v->blocks < 0 || (n && !frames))
		return -EINVAL;
	if (n > LS_FLAME_MAX_DEPTH)
		return -E2BIG;
	for (i = 0; i < n; i++)
		if (!frames[i].name || (unsigned)frames[i].kind >= LS_FLAME_KIND_COUNT)
			return -EINVAL;
	return 0;
}

int ls_flame_add(struct ls_flame *fg, const struct ls_flame_frame *frames,
		 size_t n, unsigned flags, const struct ls_flame_value *v)
{
	struct ls_flame_node *node = &fg->root, *next, *chain = NULL;
	size_t i, pos = 0;
	int ret = args_check(frames, n, flags, v);

	if (ret)
		return ret;
	/* The existing prefix first, then every allocation, and only then
	 * any change: a failure leaves the tree as it was. */
	for (i = 0; i < n; i++) {
		next = child_find(node, frame_at(frames, n, flags, i), &pos);
		if (!next)
			break;
		node = next;
	}
	if (i < n) {
		chain = chain_new(frames, n, flags, i);
		if (!chain || child_reserve(node)) {
			node_free(chain);
			return -ENOMEM;
		}
		memmove(&node->child[pos + 1], &node->child[pos],
			(node->nchild - pos) * sizeof(*node->child));
		node->child[pos] = chain;
		node->nchild++;
	}
	for (node = &fg->root, i = 0;; i++) {
		value_add(&node->total, v);
		if (i == n)
			break;
		node = child_find(node, frame_at(frames, n, flags, i), &pos);
	}
	value_add(&node->self, v);
	return 0;
}

struct ls_flame_value ls_flame_total(const struct ls_flame *fg)
{
	return fg->root.total;
}

static int walk(const struct ls_flame_node *n, unsigned depth,
		int (*fn)(const struct ls_flame_node_info *, void *), void *arg)
{
	struct ls_flame_node_info info = {
		.name = n->name, .module = n->module, .kind = n->kind,
		.depth = depth, .total = n->total, .self = n->self,
	};
	size_t i;
	int ret = fn(&info, arg);

	for (i = 0; !ret && i < n->nchild; i++)
		ret = walk(n->child[i], depth + 1, fn, arg);
	return ret;
}

int ls_flame_walk(const struct ls_flame *fg,
		  int (*fn)(const struct ls_flame_node_info *node, void *arg),
		  void *arg)
{
	return walk(&fg->root, 0, fn, arg);
}
