/*
 * json.c - the streaming JSON writer.
 */
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include "json.h"

void ls_json_init(struct ls_json *j, FILE *out)
{
	memset(j, 0, sizeof(*j));
	j->out = out;
	j->first[0] = 1;
}

/* Comma and key before a value at the current level. */
static void member(struct ls_json *j, const char *key)
{
	int in_array = j->depth > 0 && j->is_array[j->depth];

	if (j->depth > 0 && !in_array && !key)
		j->err = -EINVAL;
	if (in_array && key)
		j->err = -EINVAL;
	if (!j->first[j->depth])
		fputc(',', j->out);
	j->first[j->depth] = 0;
	if (key && !in_array) {
		ls_json_escape(j->out, key, strlen(key));
		fputc(':', j->out);
	}
}

static void open_level(struct ls_json *j, const char *key, int array)
{
	member(j, key);
	fputc(array ? '[' : '{', j->out);
	if (j->depth + 1 >= LS_JSON_MAX_DEPTH) {
		j->err = -EINVAL;
		return;
	}
	j->depth++;
	j->first[j->depth] = 1;
	j->is_array[j->depth] = (unsigned char)array;
}

void ls_json_object(struct ls_json *j, const char *key)
{
	open_level(j, key, 0);
}

void ls_json_array(struct ls_json *j, const char *key)
{
	open_level(j, key, 1);
}

void ls_json_end(struct ls_json *j)
{
	if (j->depth == 0) {
		j->err = -EINVAL;
		return;
	}
	fputc(j->is_array[j->depth] ? ']' : '}', j->out);
	j->depth--;
}

static void ls_json_strn(struct ls_json *j, const char *key, const char *s,
			 size_t len)
{
	member(j, key);
	ls_json_escape(j->out, s, len);
}

void ls_json_str(struct ls_json *j, const char *key, const char *s)
{
	if (!s) {
		ls_json_null(j, key);
		return;
	}
	ls_json_strn(j, key, s, strlen(s));
}

void ls_json_u64(struct ls_json *j, const char *key, uint64_t v)
{
	member(j, key);
	fprintf(j->out, "%" PRIu64, v);
}

void ls_json_f64(struct ls_json *j, const char *key, double v, int digits)
{
	member(j, key);
	if (v != v || v > 1e300 || v < -1e300)
		fputs("null", j->out);
	else
		fprintf(j->out, "%.*f", digits, v);
}

void ls_json_i64(struct ls_json *j, const char *key, int64_t v)
{
	member(j, key);
	fprintf(j->out, "%" PRId64, v);
}

void ls_json_bool(struct ls_json *j, const char *key, int v)
{
	member(j, key);
	fputs(v ? "true" : "false", j->out);
}

void ls_json_null(struct ls_json *j, const char *key)
{
	member(j, key);
	fputs("null", j->out);
}

void ls_json_raw(struct ls_json *j, const char *key, const char *json,
		 size_t len)
{
	member(j, key);
	fwrite(json, 1, len, j->out);
}

void ls_json_ms(struct ls_json *j, const char *key, uint64_t ns)
{
	char frac[8];
	int n;

	member(j, key);
	fprintf(j->out, "%" PRIu64, ns / 1000000);
	if (ns % 1000000 == 0)
		return;
	n = snprintf(frac, sizeof(frac), "%06u", (unsigned)(ns % 1000000));
	while (n > 0 && frac[n - 1] == '0')
		frac[--n] = 0;
	fprintf(j->out, ".%s", frac);
}

/*
 * Length of the well-formed UTF-8 sequence at p (at most n bytes), or 0.
 * The second byte's range excludes overlong forms, surrogates and code
 * points above U+10FFFF (Unicode table 3-7).
 */
static size_t utf8_len(const unsigned char *p, size_t n)
{
	unsigned char lo = 0x80, hi = 0xbf;
	size_t need, i;

	if (p[0] < 0x80)
		return 1;
	if (p[0] >= 0xc2 && p[0] <= 0xdf)
		need = 2;
	else if (p[0] >= 0xe0 && p[0] <= 0xef)
		need = 3;
	else if (p[0] >= 0xf0 && p[0] <= 0xf4)
		need = 4;
	else
		return 0;
	if (p[0] == 0xe0)
		lo = 0xa0;
	else if (p[0] == 0xed)
		hi = 0x9f;
	else if (p[0] == 0xf0)
		lo = 0x90;
	else if (p[0] == 0xf4)
		hi = 0x8f;
	if (n < need || p[1] < lo || p[1] > hi)
		return 0;
	for (i = 2; i < need; i++)
		if (p[i] < 0x80 || p[i] > 0xbf)
			return 0;
	return need;
}

static void escape_ascii(FILE *out, unsigned char c)
{
	static const char short_esc[] = "btn\0fr";

	if (c == '"' || c == '\\') {
		fputc('\\', out);
		fputc(c, out);
	} else if (c >= 0x08 && c <= 0x0d && short_esc[c - 8]) {
		fputc('\\', out);
		fputc(short_esc[c - 8], out);
	} else if (c < 0x20 || c == 0x7f) {
		fprintf(out, "\\u%04x", c);
	} else {
		fputc(c, out);
	}
}

void ls_json_escape(FILE *out, const char *s, size_t len)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, k;

	fputc('"', out);
	while (i < len) {
		k = utf8_len(p + i, len - i);
		if (k == 0) {
			fputs("\\ufffd", out);
			k = 1;
		} else if (k == 1) {
			escape_ascii(out, p[i]);
		} else {
			fwrite(p + i, 1, k, out);
		}
		i += k;
	}
	fputc('"', out);
}

int ls_json_finish(struct ls_json *j)
{
	if (j->err)
		return j->err;
	if (j->depth != 0)
		return -EINVAL;
	return ferror(j->out) ? -EIO : 0;
}
