/*
 * term.c - external-format terms into a walkable tree (term.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ei.h>
#include "term.h"

/* Deeper nesting than any answer the C node asks for: refused. */
#define MAX_DEPTH 32
#define CHUNK (64 * 1024)

struct chunk {
	struct chunk *next;
	size_t used, cap;
	char mem[];
};

static void *arena_alloc(struct ls_term_tree *t, size_t n)
{
	struct chunk *c = t->arena;

	n = (n + 15) & ~(size_t)15;
	if (!c || c->cap - c->used < n) {
		size_t cap = n > CHUNK ? n : CHUNK;

		c = malloc(sizeof(*c) + cap);
		if (!c)
			return NULL;
		c->next = t->arena;
		c->used = 0;
		c->cap = cap;
		t->arena = c;
	}
	c->used += n;
	return memset(c->mem + c->used - n, 0, n);
}

/* Decoding context: the buffer ends at `end`; ei itself has no bound. */
struct dec {
	struct ls_term_tree *tr;
	const char *buf;
	int end;
};

static int decode(struct dec *dc, int *index, struct ls_term *t, int depth);

static uint32_t be(const unsigned char *p, int n)
{
	uint32_t v = 0;

	while (n--)
		v = v << 8 | *p++;
	return v;
}

static int is_atom_tag(int tag)
{
	return tag == ERL_ATOM_EXT || tag == ERL_SMALL_ATOM_EXT ||
	       tag == ERL_ATOM_UTF8_EXT || tag == ERL_SMALL_ATOM_UTF8_EXT;
}

/*
 * The end of the term at buf[i], read within buf[0..end) and nothing
 * past it, or -1 when the term is malformed, too deep, of a kind the C
 * node never receives, or would end past `end`.  ei reads each term
 * without a bound (the sub-terms of pids, references, ports and funs
 * included), so the whole answer passes here before ei sees any of it.
 */
static long span(const unsigned char *buf, long i, long end, int depth)
{
	long n, k, at;
	int tag;

#define NEED(b) do { if ((b) < 0 || (b) > end - i) return -1; } while (0)
	NEED(1);
	if (depth > MAX_DEPTH)
		return -1;
	tag = buf[i++];
	switch (tag) {
	case ERL_SMALL_INTEGER_EXT:
		NEED(1);
		return i + 1;
	case ERL_INTEGER_EXT:
		NEED(4);
		return i + 4;
	case ERL_FLOAT_EXT:
		/* text ei reads with sscanf: it must end in the 31 bytes */
		NEED(31);
		return memchr(buf + i, 0, 31) ? i + 31 : -1;
	case NEW_FLOAT_EXT:
		NEED(8);
		return i + 8;
	case ERL_NIL_EXT:
		return i;
	case ERL_SMALL_ATOM_EXT:
	case ERL_SMALL_ATOM_UTF8_EXT:
		NEED(1);
		n = buf[i++];
		NEED(n);
		return i + n;
	case ERL_ATOM_EXT:
	case ERL_ATOM_UTF8_EXT:
	case ERL_STRING_EXT:
		NEED(2);
		n = be(buf + i, 2);
		i += 2;
		NEED(n);
		return i + n;
	case ERL_BINARY_EXT:
	case ERL_BIT_BINARY_EXT:
		NEED(4);
		n = be(buf + i, 4) + (tag == ERL_BIT_BINARY_EXT);
		i += 4;
		NEED(n);
		return i + n;
	case ERL_SMALL_BIG_EXT:
	case ERL_LARGE_BIG_EXT:
		k = tag == ERL_SMALL_BIG_EXT ? 1 : 4;
		NEED(k);
		n = be(buf + i, (int)k) + 1;	/* the sign byte */
		i += k;
		NEED(n);
		return i + n;
	case ERL_SMALL_TUPLE_EXT:
	case ERL_LARGE_TUPLE_EXT:
	case ERL_LIST_EXT:
	case ERL_MAP_EXT:
		k = tag == ERL_SMALL_TUPLE_EXT ? 1 : 4;
		NEED(k);
		n = be(buf + i, (int)k);
		i += k;
		if (tag == ERL_MAP_EXT)
			n *= 2;
		else if (tag == ERL_LIST_EXT)
			n++;		/* the tail */
		/* Each element takes a byte at least. */
		NEED(n);
		for (; n > 0; n--)
			if ((i = span(buf, i, end, depth + 1)) < 0)
				return -1;
		return i;
	case ERL_PID_EXT:
	case ERL_NEW_PID_EXT:
	case ERL_PORT_EXT:
	case ERL_NEW_PORT_EXT:
	case ERL_V4_PORT_EXT:
	case ERL_REFERENCE_EXT:
		/* the node's atom, then fixed fields */
		if (i >= end || !is_atom_tag(buf[i]) ||
		    (i = span(buf, i, end, depth + 1)) < 0)
			return -1;
		n = tag == ERL_PID_EXT ? 9 : tag == ERL_NEW_PID_EXT ? 12 :
			tag == ERL_PORT_EXT ? 5 : tag == ERL_NEW_PORT_EXT ? 8 :
			tag == ERL_V4_PORT_EXT ? 12 : 5;
		NEED(n);
		return i + n;
	case ERL_NEW_REFERENCE_EXT:
	case ERL_NEWER_REFERENCE_EXT:
		NEED(2);
		k = be(buf + i, 2);
		i += 2;
		if (i >= end || !is_atom_tag(buf[i]) ||
		    (i = span(buf, i, end, depth + 1)) < 0)
			return -1;
		n = (tag == ERL_NEW_REFERENCE_EXT ? 1 : 4) + 4 * k;
		NEED(n);
		return i + n;
	case ERL_EXPORT_EXT:
		/* module, function, arity */
		for (k = 0; k < 3; k++)
			if ((i = span(buf, i, end, depth + 1)) < 0)
				return -1;
		return i;
	case ERL_NEW_FUN_EXT:
		/* Size (counting itself), Arity, Uniq, Index, NumFree, then
		 * Module, OldIndex, OldUniq, Pid and NumFree free variables:
		 * all of them exactly Size bytes. */
		at = i;
		NEED(29);
		n = be(buf + i, 4);
		k = be(buf + i + 25, 4) + 4;
		i += 29;
		for (; k > 0; k--)
			if ((i = span(buf, i, end, depth + 1)) < 0)
				return -1;
		return i - at == n ? i : -1;
	default:
		/* atom cache references, old funs, anything else */
		return -1;
	}
#undef NEED
}

static int decode_seq(struct dec *dc, int *index, struct ls_term *t, long n,
		      int depth)
{
	long k;

	/* Each element takes a byte at least: a longer claim is a lie. */
	if (n < 0 || n > dc->end - *index)
		return -EINVAL;
	t->n = (size_t)n;
	if (n && !(t->kids = arena_alloc(dc->tr, (size_t)n * sizeof(*t->kids))))
		return -ENOMEM;
	for (k = 0; k < n; k++) {
		int r = decode(dc, index, &t->kids[k], depth + 1);

		if (r)
			return r;
	}
	return 0;
}

static int decode_list(struct dec *dc, int *index, struct ls_term *t,
		       int depth)
{
	struct ls_term tail;
	int arity, r, nil = dc->buf[*index] == ERL_NIL_EXT;

	t->type = LS_TERM_LIST;
	if (ei_decode_list_header(dc->buf, index, &arity) || arity < 0)
		return -EINVAL;
	r = decode_seq(dc, index, t, arity, depth);
	if (r || nil)
		return r;
	/* the tail (a LIST_EXT of no element has one too): [] for a proper
	 * list, else decoded and dropped */
	memset(&tail, 0, sizeof(tail));
	return decode(dc, index, &tail, depth + 1);
}

static int decode_text(struct dec *dc, int *index, struct ls_term *t,
		       int size, int binary)
{
	char *s;
	long len = 0;

	if (size < 0 || size > dc->end - *index)
		return -EINVAL;
	s = arena_alloc(dc->tr, (size_t)size + 1);
	if (!s)
		return -ENOMEM;
	t->type = LS_TERM_STRING;
	if (binary ? ei_decode_binary(dc->buf, index, s, &len) :
	    ei_decode_string(dc->buf, index, s))
		return -EINVAL;
	if (binary)
		s[len] = 0;
	t->s = s;
	return 0;
}

/*
 * Skip a term the C node does not look into, by ei, where span() says it
 * ends.  ei_skip_term alone is not to be trusted with that: given a map
 * whose last value it cannot read (a float whose text sscanf rejects), it
 * stops there and reports success, so the map would end early and what
 * follows would be read from inside it.
 */
static int skip(struct dec *dc, int *index)
{
	long end = span((const unsigned char *)dc->buf, *index, dc->end, 0);

	if (end < 0 || ei_skip_term(dc->buf, index) || *index != end)
		return -EINVAL;
	return 0;
}

static int decode(struct dec *dc, int *index, struct ls_term *t, int depth)
{
	const char *buf = dc->buf;
	int type, size, arity, r = 0;
	long long v;
	erlang_pid pid;
	char *atom, name[MAXATOMLEN_UTF8];

	if (depth > MAX_DEPTH || *index >= dc->end ||
	    ei_get_type(buf, index, &type, &size))
		return -EINVAL;
	/* Sizes a tag claims are checked against what is left before ei
	 * reads them (strings, binaries, bignums; atoms are bounded). */
	if (size < 0 || (type != ERL_SMALL_TUPLE_EXT &&
			 type != ERL_LARGE_TUPLE_EXT && type != ERL_LIST_EXT &&
			 size > dc->end - *index))
		return -EINVAL;
	t->off = *index;
	switch (type) {
	case ERL_SMALL_INTEGER_EXT:
	case ERL_INTEGER_EXT:
	case ERL_SMALL_BIG_EXT:
	case ERL_LARGE_BIG_EXT:
		if (ei_decode_longlong(buf, index, &v)) {
			t->type = LS_TERM_OTHER;
			r = skip(dc, index);
		} else {
			t->type = LS_TERM_INT;
			t->i = v;
		}
		break;
	case ERL_FLOAT_EXT:
	case NEW_FLOAT_EXT:
		t->type = LS_TERM_FLOAT;
		r = ei_decode_double(buf, index, &t->f) ? -EINVAL : 0;
		break;
	case ERL_ATOM_EXT:
	case ERL_SMALL_ATOM_EXT:
	case ERL_ATOM_UTF8_EXT:
	case ERL_SMALL_ATOM_UTF8_EXT:
		t->type = LS_TERM_ATOM;
		if (ei_decode_atom(buf, index, name))
			return -EINVAL;
		atom = arena_alloc(dc->tr, strlen(name) + 1);
		if (!atom)
			return -ENOMEM;
		t->s = strcpy(atom, name);
		break;
	case ERL_STRING_EXT:
		r = decode_text(dc, index, t, size, 0);
		break;
	case ERL_BINARY_EXT:
		r = decode_text(dc, index, t, size, 1);
		break;
	case ERL_SMALL_TUPLE_EXT:
	case ERL_LARGE_TUPLE_EXT:
		t->type = LS_TERM_TUPLE;
		if (ei_decode_tuple_header(buf, index, &arity) || arity < 0)
			return -EINVAL;
		r = decode_seq(dc, index, t, arity, depth);
		break;
	case ERL_NIL_EXT:
	case ERL_LIST_EXT:
		r = decode_list(dc, index, t, depth);
		break;
	case ERL_PID_EXT:
	case ERL_NEW_PID_EXT:
		t->type = LS_TERM_PID;
		if (ei_decode_pid(buf, index, &pid))
			return -EINVAL;
		t->num = pid.num;
		t->serial = pid.serial;
		break;
	default:
		t->type = LS_TERM_OTHER;
		r = skip(dc, index);
		break;
	}
	t->len = *index - t->off;
	return r ? r : *index > dc->end ? -EINVAL : 0;
}

int ls_term_decode(const char *buf, int len, int *index,
		   struct ls_term_tree *t)
{
	struct dec dc = { .tr = t, .buf = buf, .end = len };
	long end;
	int r;

	memset(t, 0, sizeof(*t));
	t->buf = buf;
	if (*index < 0 || *index > len ||
	    (end = span((const unsigned char *)buf, *index, len, 0)) < 0)
		return -EINVAL;
	t->root = arena_alloc(t, sizeof(*t->root));
	if (!t->root)
		return -ENOMEM;
	r = decode(&dc, index, t->root, 0);
	if (!r && *index != end)
		r = -EINVAL;
	if (r)
		ls_term_free(t);
	return r;
}

void ls_term_free(struct ls_term_tree *t)
{
	struct chunk *c = t->arena, *next;

	for (; c; c = next) {
		next = c->next;
		free(c);
	}
	free(t->owned);
	memset(t, 0, sizeof(*t));
}

const struct ls_term *ls_term_at(const struct ls_term *t, size_t i)
{
	if (!t || (t->type != LS_TERM_TUPLE && t->type != LS_TERM_LIST) ||
	    i >= t->n)
		return NULL;
	return &t->kids[i];
}

int ls_term_is_atom(const struct ls_term *t, const char *name)
{
	return t && t->type == LS_TERM_ATOM && !strcmp(t->s, name);
}

const struct ls_term *ls_term_key(const struct ls_term *list, const char *key)
{
	size_t i;

	if (!list || list->type != LS_TERM_LIST)
		return NULL;
	for (i = 0; i < list->n; i++) {
		const struct ls_term *e = &list->kids[i];

		if (e->type == LS_TERM_TUPLE && e->n >= 1 &&
		    ls_term_is_atom(&e->kids[0], key))
			return e;
	}
	return NULL;
}

const struct ls_term *ls_term_val(const struct ls_term *list, const char *key)
{
	return ls_term_at(ls_term_key(list, key), 1);
}

int64_t ls_term_int(const struct ls_term *t, int64_t def)
{
	return t && t->type == LS_TERM_INT ? t->i : def;
}

const char *ls_term_raw(const struct ls_term_tree *tr, const struct ls_term *t,
			int *len)
{
	*len = t->len;
	return tr->buf + t->off;
}

const char *ls_term_show(const struct ls_term *t, char *buf, size_t cap)
{
	const struct ls_term *m, *f, *a;

	if (!t)
		snprintf(buf, cap, "?");
	else if (t->type == LS_TERM_PID)
		snprintf(buf, cap, "<0.%u.%u>", t->num, t->serial);
	else if (t->type == LS_TERM_ATOM || t->type == LS_TERM_STRING)
		snprintf(buf, cap, "%s", t->s);
	else if (t->type == LS_TERM_INT)
		snprintf(buf, cap, "%" PRId64, t->i);
	else if (t->type == LS_TERM_TUPLE && t->n == 3 &&
		 (m = &t->kids[0])->type == LS_TERM_ATOM &&
		 (f = &t->kids[1])->type == LS_TERM_ATOM &&
		 (a = &t->kids[2])->type == LS_TERM_INT)
		snprintf(buf, cap, "%s:%s/%" PRId64, m->s, f->s, a->i);
	else
		snprintf(buf, cap, "?");
	return buf;
}
