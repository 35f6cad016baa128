/*
 * util.h - small helpers of the report library and the command: number
 * parsing, the one growable array and the one index of strings.  Nothing
 * here prints or exits.
 */
#ifndef LEAKSCOPE_UTIL_H
#define LEAKSCOPE_UTIL_H

#include <stddef.h>
#include <stdint.h>

/*
 * "4096", "512K", "512KiB", "64M", "1G" (binary multiples) -> bytes.
 * Returns 0 or -EINVAL (junk, empty, negative) or -ERANGE.
 */
int ls_parse_size(const char *s, uint64_t *out);
/* A decimal count, no suffix. */
int ls_parse_count(const char *s, uint64_t *out);
/* Seconds, decimals allowed ("0.5") -> nanoseconds; must be > 0. */
int ls_parse_seconds(const char *s, uint64_t *ns);

/*
 * The growable array, as git's ALLOC_GROW: make room for need elements
 * of size el in *arr, whose capacity is *cap (doubled, from 16).  On
 * failure *arr is left as it was.  Returns 0 or -ENOMEM.
 */
int ls_grow(void *arr, size_t *cap, size_t need, size_t el);

/* LS_GROW(p, need, cap) for an array p of any element type. */
#define LS_GROW(p, need, cap) ls_grow(&(p), &(cap), (need), sizeof(*(p)))

/*
 * An index of strings the caller keeps in an array of its own: each
 * slot holds a position in that array + 1 (0: free), found by the
 * string's content (FNV-1a, open addressing, at most half full).  Zeroed
 * is empty; ls_strindex_release() frees it.
 */
struct ls_strindex {
	size_t *slot;
	size_t cap;		/* a power of two, or 0 */
};

/*
 * The slot of s among the n strings indexed so far (positions 0 to n-1,
 * read back through str(owner, pos)): *slot is s's position + 1 when it
 * is one of them, else 0, and a caller that adds s as position n stores
 * n + 1 there.  Grows the index first when it would be over half full.
 * NULL on ENOMEM.  The slot is valid until the next call.
 */
size_t *ls_strindex_slot(struct ls_strindex *x, const char *s, size_t n,
			 const char *(*str)(const void *owner, size_t pos),
			 const void *owner);
void ls_strindex_release(struct ls_strindex *x);

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t ls_mono_ns(void);

/*
 * Wait until fd is readable or deadline_ns (CLOCK_MONOTONIC) passes:
 * 0, -ETIMEDOUT, or the poll error.
 */
int ls_wait_readable(int fd, uint64_t deadline_ns);

/* a + b, held at INT64_MAX or INT64_MIN instead of overflowing: sums of
 * figures a snapshot file gives, which may be anything. */
static inline int64_t ls_add_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_add_overflow(a, b, &r))
		return b > 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* a - b, held the same way. */
static inline int64_t ls_sub_sat(int64_t a, int64_t b)
{
	int64_t r;

	if (__builtin_sub_overflow(a, b, &r))
		return b < 0 ? INT64_MAX : INT64_MIN;
	return r;
}

/* The same with an unsigned figure, itself held at INT64_MAX. */
static inline int64_t ls_add_sat_u(int64_t a, uint64_t b)
{
	return ls_add_sat(a, b > INT64_MAX ? INT64_MAX : (int64_t)b);
}

#endif
