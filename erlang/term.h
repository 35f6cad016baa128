/*
 * term.h - Erlang terms decoded from the external format (ei) into a small
 * tree the C node can walk.
 *
 * The C node reads what a remote node answers; nothing in an answer is
 * trusted: every node is typed, lists and tuples carry their length, and
 * the accessors return NULL or a default for whatever is missing or of
 * another type, so a node of another OTP release (other shapes in
 * system_info answers) gives missing figures, never a crash.  A decoded
 * node also keeps where its encoding lies in the source buffer, so a
 * sub-term (a list of pids, of ETS table ids) can be sent back verbatim.
 *
 * A tree and its strings come from one arena: ls_term_free() releases all.
 * Not thread-safe per tree; no global state.
 */
#ifndef LEAKSCOPE_ERLANG_TERM_H
#define LEAKSCOPE_ERLANG_TERM_H

#include <stddef.h>
#include <stdint.h>

enum ls_term_type {
	LS_TERM_INT,		/* fits int64 */
	LS_TERM_FLOAT,
	LS_TERM_ATOM,		/* s: the name */
	LS_TERM_STRING,		/* s: a binary or a list of bytes */
	LS_TERM_TUPLE,		/* kids[0..n) */
	LS_TERM_LIST,		/* kids[0..n), proper part only */
	LS_TERM_PID,		/* num, serial */
	LS_TERM_OTHER,		/* ref, port, fun, map, big > 64 bits ... */
};

/* 40 bytes: an answer about 100,000 processes is a few million of them. */
struct ls_term {
	enum ls_term_type type;
	int off, len;		/* encoding in the source buffer */
	size_t n;		/* TUPLE, LIST: elements */
	union {
		int64_t i;	/* INT */
		double f;	/* FLOAT */
		const char *s;	/* ATOM, STRING */
		struct ls_term *kids;	/* TUPLE, LIST */
		struct {
			unsigned num, serial;	/* PID */
		};
	};
};

struct ls_term_tree {
	struct ls_term *root;
	const char *buf;	/* the source, borrowed */
	void *arena;
	char *owned;		/* a source copy the tree owns, or NULL */
};

/*
 * Decode the term at buf[*index] (after the version byte when the caller
 * skipped it); the buffer holds len bytes.  Returns 0, or -EINVAL for a
 * malformed, truncated or too deep term, or one of a kind the C node
 * never receives (the whole term is walked by a bounded reader before ei
 * reads any of it: ei itself reads past a lying length), -ENOMEM.  buf
 * must outlive the tree for ls_term_raw().
 */
int ls_term_decode(const char *buf, int len, int *index,
		   struct ls_term_tree *t);
/* Free the tree, its strings and the owned source copy. */
void ls_term_free(struct ls_term_tree *t);

/* Element i of a tuple or list, or NULL. */
const struct ls_term *ls_term_at(const struct ls_term *t, size_t i);
/* Is t the atom name? */
int ls_term_is_atom(const struct ls_term *t, const char *name);
/* In a proplist [{Key, V...}], the first tuple whose first element is the
 * atom key (the whole tuple), or NULL. */
const struct ls_term *ls_term_key(const struct ls_term *list, const char *key);
/* The second element of that tuple, or NULL. */
const struct ls_term *ls_term_val(const struct ls_term *list, const char *key);
/* t as an integer, or def when it is not one. */
int64_t ls_term_int(const struct ls_term *t, int64_t def);
/* The encoding of t, from the tree's buffer. */
const char *ls_term_raw(const struct ls_term_tree *tr, const struct ls_term *t,
			int *len);
/* Erlang's printed form of a few types into buf ("<0.84.0>", "foo",
 * "m:f/3" for {M,F,A}); "?" for others. */
const char *ls_term_show(const struct ls_term *t, char *buf, size_t cap);

#endif
