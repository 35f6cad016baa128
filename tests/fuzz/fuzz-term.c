/*
 * fuzz-term.c - the Erlang C node's term decoder (erlang/term.c): what
 * `leakscope beam` makes of a node's answer, decoded as the C node does
 * it (version byte, then the term).
 *
 * ei (libei.a) is not built with the sanitizers, so an out-of-bounds read
 * inside it would go unseen: the input is placed at the very end of a
 * page followed by an inaccessible one, and a read of one byte past the
 * answer faults.  Checks what the C node relies on: 0, -EINVAL or
 * -ENOMEM; on success the term ends within the input where ei's own
 * ei_skip_term says it ends, every node's
 * encoding lies within its parent's, and each element of the root, sent
 * back verbatim (ls_term_raw), decodes alone to exactly its bytes.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include <ei.h>
#include "../../erlang/term.h"
#include "fuzz.h"

/* The input copied to end just before an inaccessible page. */
struct guarded {
	char *map, *data;
	size_t maplen;
};

static void guard(struct guarded *g, const void *data, size_t size)
{
	size_t page = (size_t)sysconf(_SC_PAGESIZE);
	size_t span = (size + page - 1) / page * page + page;

	g->maplen = span + page;
	g->map = mmap(NULL, g->maplen, PROT_READ | PROT_WRITE,
		      MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (g->map == MAP_FAILED)
		fuzz_fail("mmap: %s", strerror(errno));
	if (mprotect(g->map + span, page, PROT_NONE))
		fuzz_fail("mprotect: %s", strerror(errno));
	g->data = g->map + span - size;
	memcpy(g->data, data, size);
}

static void unguard(struct guarded *g)
{
	munmap(g->map, g->maplen);
}

/* Every node within [lo, hi), a known type, its elements within it. */
static void walk(const struct ls_term *t, int lo, int hi, int depth)
{
	char shown[64];
	size_t i;

	if (t->off < lo || t->len <= 0 || t->off + t->len > hi)
		fuzz_fail("a node at %d+%d outside [%d, %d)", t->off, t->len,
			  lo, hi);
	if (depth > 40)
		fuzz_fail("a node at depth %d", depth);
	switch (t->type) {
	case LS_TERM_ATOM:
	case LS_TERM_STRING:
		if (!t->s)
			fuzz_fail("a text node without its text");
		break;
	case LS_TERM_TUPLE:
	case LS_TERM_LIST:
		if (t->n > (size_t)t->len)
			fuzz_fail("%zu elements in %d bytes", t->n, t->len);
		for (i = 0; i < t->n; i++)
			walk(ls_term_at(t, i), t->off, t->off + t->len,
			     depth + 1);
		if (ls_term_at(t, t->n))
			fuzz_fail("an element past the last");
		break;
	case LS_TERM_INT:
	case LS_TERM_FLOAT:
	case LS_TERM_PID:
	case LS_TERM_OTHER:
		break;
	default:
		fuzz_fail("a node of type %d", (int)t->type);
	}
	ls_term_show(t, shown, sizeof(shown));
	if (strlen(shown) >= sizeof(shown))
		fuzz_fail("ls_term_show past its buffer");
}

/* An element sent back verbatim decodes alone to exactly its bytes. */
static void redecode(const struct ls_term_tree *tr, const struct ls_term *t)
{
	struct ls_term_tree sub;
	struct guarded g;
	const char *raw;
	int len, index = 0, r;

	raw = ls_term_raw(tr, t, &len);
	guard(&g, raw, (size_t)len);
	r = ls_term_decode(g.data, len, &index, &sub);
	if (r == -ENOMEM) {
		unguard(&g);
		return;
	}
	if (r || index != len || sub.root->type != t->type ||
	    sub.root->n != t->n)
		fuzz_fail("an element of %d bytes decodes alone to %d, %d "
			  "bytes, type %d (was %d)", len, r, index,
			  r ? -1 : (int)sub.root->type, (int)t->type);
	ls_term_free(&sub);
	unguard(&g);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ls_term_tree tr;
	struct guarded g;
	int index = 0, version, start, skip, r;
	size_t i;

	if (size > 1 << 20)
		return 0;
	guard(&g, data, size);
	if (!size || ei_decode_version(g.data, &index, &version)) {
		unguard(&g);
		return 0;
	}
	start = index;
	r = ls_term_decode(g.data, (int)size, &index, &tr);
	if (r && r != -EINVAL && r != -ENOMEM)
		fuzz_fail("ls_term_decode returned %d", r);
	if (!r) {
		if (index <= start || (size_t)index > size)
			fuzz_fail("a term of %d bytes from %d in %zu", index,
				  start, size);
		if (tr.root->off != start || tr.root->len != index - start)
			fuzz_fail("the root at %d+%d, decoded %d..%d",
				  tr.root->off, tr.root->len, start, index);
		skip = start;
		if (ei_skip_term(g.data, &skip) || skip != index)
			fuzz_fail("a term of %d bytes where ei skips %d",
				  index - start, skip - start);
		walk(tr.root, start, index, 0);
		for (i = 0; i < tr.root->n && i < 64; i++)
			redecode(&tr, ls_term_at(tr.root, i));
		ls_term_val(tr.root, "memory");
		ls_term_int(ls_term_val(tr.root, "total"), -1);
		ls_term_free(&tr);
	}
	unguard(&g);
	return 0;
}
