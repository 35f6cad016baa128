/*
 * json.h - a small streaming JSON writer for the reports.
 *
 * Writes compact JSON (no whitespace) straight to a stdio stream; the
 * writer only tracks nesting to place commas.  Strings are escaped so
 * that the output is always valid UTF-8 JSON whatever the input bytes:
 * '"', '\\' and control characters are escaped, and bytes that are not
 * well-formed UTF-8 (stray continuation bytes, overlong forms, surrogates,
 * code points above U+10FFFF, truncated sequences) become \ufffd.
 *
 * Usage, where key is NULL for array elements and for the top level:
 *
 *   ls_json_init(&j, out);
 *   ls_json_object(&j, NULL);
 *   ls_json_str(&j, "name", "x");
 *   ls_json_end(&j);
 *   err = ls_json_finish(&j);
 *
 * Not thread-safe; one writer per stream.  Nesting deeper than
 * LS_JSON_MAX_DEPTH, or a key inside an array, is a programming error that
 * ls_json_finish() reports as -EINVAL.
 */
#ifndef LEAKSCOPE_JSON_H
#define LEAKSCOPE_JSON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define LS_JSON_MAX_DEPTH 16

struct ls_json {
	FILE *out;
	int depth;
	int err;			/* first misuse, as -errno */
	unsigned char first[LS_JSON_MAX_DEPTH];	/* no member written yet */
	unsigned char is_array[LS_JSON_MAX_DEPTH];
};

void ls_json_init(struct ls_json *j, FILE *out);

/* Open an object or array (as member key, or as an element if NULL). */
void ls_json_object(struct ls_json *j, const char *key);
void ls_json_array(struct ls_json *j, const char *key);
/* Close the innermost open object or array. */
void ls_json_end(struct ls_json *j);

/* Scalars.  ls_json_str() writes null when s is NULL. */
void ls_json_str(struct ls_json *j, const char *key, const char *s);
void ls_json_u64(struct ls_json *j, const char *key, uint64_t v);
void ls_json_i64(struct ls_json *j, const char *key, int64_t v);
void ls_json_bool(struct ls_json *j, const char *key, int v);
/* A finite double with `digits` decimals (null when not finite). */
void ls_json_f64(struct ls_json *j, const char *key, double v, int digits);
void ls_json_null(struct ls_json *j, const char *key);
/* A value that is already JSON (another renderer's whole object), written
 * as it is: the caller vouches for it. */
void ls_json_raw(struct ls_json *j, const char *key, const char *json,
		 size_t len);
/* A duration in nanoseconds written as milliseconds: an exact decimal,
 * without a fraction when it is whole (1500000 -> 1.5, 2000000 -> 2). */
void ls_json_ms(struct ls_json *j, const char *key, uint64_t ns);

/*
 * Write s[0..len) as a JSON string literal, quotes included, with the
 * escaping described above.  Useful on its own for tests and other
 * writers.
 */
void ls_json_escape(FILE *out, const char *s, size_t len);

/*
 * Check that every object and array was closed and that the stream took
 * every byte.  Returns 0, -EINVAL on misuse, or -EIO when writing failed.
 */
int ls_json_finish(struct ls_json *j);

#endif /* LEAKSCOPE_JSON_H */
