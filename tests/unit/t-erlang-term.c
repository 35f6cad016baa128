/*
 * t-erlang-term.c - erlang/term.c: answers of a node decoded into trees,
 * and every malformed or truncated buffer refused instead of trusted.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <ei.h>
#include "tap.h"
#include "../../erlang/term.h"

/* [{memory, 4096}, {registered_name, foo}, {binary, [{1, 100, 1}, {2, 28, 3}]},
 *  {initial_call, {m, f, 3}}, "abc", <<"xyz">>, 1.5, 1 bsl 62, 1 bsl 70] */
static int encode_sample(ei_x_buff *x)
{
	return ei_x_new(x) || ei_x_encode_list_header(x, 9) ||
	       ei_x_encode_tuple_header(x, 2) || ei_x_encode_atom(x, "memory") ||
	       ei_x_encode_long(x, 4096) ||
	       ei_x_encode_tuple_header(x, 2) ||
	       ei_x_encode_atom(x, "registered_name") ||
	       ei_x_encode_atom(x, "foo") ||
	       ei_x_encode_tuple_header(x, 2) || ei_x_encode_atom(x, "binary") ||
	       ei_x_encode_list_header(x, 2) ||
	       ei_x_encode_tuple_header(x, 3) || ei_x_encode_long(x, 1) ||
	       ei_x_encode_long(x, 100) || ei_x_encode_long(x, 1) ||
	       ei_x_encode_tuple_header(x, 3) || ei_x_encode_long(x, 2) ||
	       ei_x_encode_long(x, 28) || ei_x_encode_long(x, 3) ||
	       ei_x_encode_empty_list(x) ||
	       ei_x_encode_tuple_header(x, 2) ||
	       ei_x_encode_atom(x, "initial_call") ||
	       ei_x_encode_tuple_header(x, 3) || ei_x_encode_atom(x, "m") ||
	       ei_x_encode_atom(x, "f") || ei_x_encode_long(x, 3) ||
	       ei_x_encode_string(x, "abc") ||
	       ei_x_encode_binary(x, "xyz", 3) ||
	       ei_x_encode_double(x, 1.5) ||
	       ei_x_encode_longlong(x, 1LL << 62) ||
	       ei_x_encode_ulonglong(x, ~0ULL) ||
	       ei_x_encode_empty_list(x);
}

static void test_decode(void)
{
	const struct ls_term *bins, *t;
	struct ls_term_tree tr;
	char buf[64];
	ei_x_buff x;
	int index = 0, len;

	ok(!encode_sample(&x), "sample encoded");
	ok(!ls_term_decode(x.buff, x.index, &index, &tr), "sample decoded");
	is_u64(index, x.index, "decoding consumed the whole term");
	is_u64(tr.root->n, 9, "nine elements");
	is_u64(ls_term_int(ls_term_val(tr.root, "memory"), -1), 4096,
	       "proplist lookup of memory");
	ok(ls_term_is_atom(ls_term_val(tr.root, "registered_name"), "foo"),
	   "registered_name is the atom foo");
	ok(!ls_term_val(tr.root, "links"), "missing key gives NULL");
	bins = ls_term_val(tr.root, "binary");
	is_u64(bins ? bins->n : 0, 2, "two binaries");
	is_u64(ls_term_int(ls_term_at(ls_term_at(bins, 1), 1), -1), 28,
	       "second binary's size");
	ok(!strcmp(ls_term_show(ls_term_val(tr.root, "initial_call"), buf,
				sizeof(buf)), "m:f/3"), "MFA shown as m:f/3");
	t = ls_term_at(tr.root, 4);
	ok(t && t->type == LS_TERM_STRING && !strcmp(t->s, "abc"),
	   "string list decoded");
	t = ls_term_at(tr.root, 5);
	ok(t && t->type == LS_TERM_STRING && !strcmp(t->s, "xyz"),
	   "binary decoded as text");
	t = ls_term_at(tr.root, 6);
	ok(t && t->type == LS_TERM_FLOAT && t->f == 1.5, "float decoded");
	is_u64(ls_term_int(ls_term_at(tr.root, 7), 0), 1ULL << 62, "bignum 2^62");
	t = ls_term_at(tr.root, 8);
	ok(t && t->type == LS_TERM_OTHER, "bignum beyond int64 is OTHER");
	ok(!ls_term_at(tr.root, 9), "index past the end gives NULL");
	ok(ls_term_int(ls_term_at(tr.root, 4), -7) == -7,
	   "int of a non-integer gives the default");
	t = ls_term_val(tr.root, "binary");
	ls_term_raw(&tr, t, &len);
	ok(len > 0 && len < x.index, "raw sub-term has its own extent");
	ls_term_free(&tr);
	ok(!tr.root && !tr.arena, "tree freed and zeroed");
	ei_x_free(&x);
}

/* Every proper prefix of a valid term is refused: the buffer is padded
 * with zeros (no valid tag) so nothing is read past it. */
static void test_truncated(void)
{
	struct ls_term_tree tr;
	ei_x_buff x;
	int cut, accepted = 0, index;

	encode_sample(&x);
	for (cut = 0; cut < x.index; cut++) {
		char *p = calloc((size_t)x.index + 64, 1);

		memcpy(p, x.buff, (size_t)cut);
		index = 0;
		if (!ls_term_decode(p, cut, &index, &tr)) {
			accepted++;
			ls_term_free(&tr);
		}
		free(p);
	}
	is_u64(accepted, 0, "of %d proper prefixes, none decodes", x.index);
	/* The same bytes whole but with a short length: refused too. */
	index = 0;
	ok(ls_term_decode(x.buff, x.index - 1, &index, &tr) == -EINVAL,
	   "length one short refused");
	ei_x_free(&x);
}

static void test_garbage(void)
{
	static const char junk[][8] = {
		{ 0x00 }, { (char)0xff, 1, 2 }, { 'h', (char)0xff, 0, 0, 0 },
		{ 'l', 0x7f, (char)0xff, (char)0xff, (char)0xff },
	};
	struct ls_term_tree tr;
	size_t i;
	int index, refused = 0;

	for (i = 0; i < sizeof(junk) / sizeof(junk[0]); i++) {
		char buf[64] = { 0 };

		memcpy(buf, junk[i], sizeof(junk[i]));
		index = 0;
		if (ls_term_decode(buf, (int)sizeof(buf), &index, &tr))
			refused++;
		else
			ls_term_free(&tr);
	}
	is_u64(refused, sizeof(junk) / sizeof(junk[0]),
	       "unknown tags and impossible lengths refused");
}

/* Nesting deeper than any answer is refused, not recursed into. */
static void test_deep(void)
{
	struct ls_term_tree tr;
	ei_x_buff x;
	int i, index = 0;

	ei_x_new(&x);
	for (i = 0; i < 100; i++)
		ei_x_encode_tuple_header(&x, 1);
	ei_x_encode_long(&x, 1);
	ok(ls_term_decode(x.buff, x.index, &index, &tr) == -EINVAL,
	   "100 nested tuples refused");
	ei_x_free(&x);
}

/*
 * A map whose last value is an old-style float whose text sscanf cannot
 * read: ei_skip_term stops at it and reports success, so a decoder that
 * trusted it would end the map early and read what follows from inside
 * it.  The whole answer is refused instead.
 */
static void test_map_unreadable_float(void)
{
	static const unsigned char ans[] = {
		131, 104, 2, 119, 3, 'r', 'e', 'x',
		116, 0, 0, 0, 2,
		119, 1, 'a', 97, 1,
		119, 1, 'b',
		99, 'e', 'a', 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0,
	};
	struct ls_term_tree tr;
	int index = 1, skipped = 8, r;

	_Static_assert(sizeof(ans) == 21 + 32, "the float's tag and 31 bytes");
	/* What ei makes of the map: it ends before the float, no error. */
	r = ei_skip_term((const char *)ans, &skipped);
	ok(!r && skipped == 21, "ei_skip_term ends the map before the float "
	   "it cannot read (status %d, ends at %d)", r, skipped);
	ok(ls_term_decode((const char *)ans, (int)sizeof(ans), &index,
			  &tr) == -EINVAL,
	   "an answer holding such a map refused");
}

int main(void)
{
	test_decode();
	test_truncated();
	test_garbage();
	test_deep();
	test_map_unreadable_float();
	return tap_done();
}
