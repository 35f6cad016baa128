/*
 * ropt.c - the report options' rows, their one setter and their one
 * check (ropt.h).
 */
#include <stdio.h>
#include <string.h>
#include "../common/contract.h"
#include "render.h"
#include "ropt.h"
#include "util.h"

const struct ls_ropt_user ls_ropt_users[] = {
	{ LS_RO_REPORT, "report" }, { LS_RO_CHECK, "check" },
	{ LS_RO_DIFF, "diff" }, { LS_RO_RUN, "run" }, { LS_RO_TRACE, "trace" },
	{ LS_RO_WATCH, "watch" }, { LS_RO_TOP, "top" }, { LS_RO_OLDS, "olds" },
	{ LS_RO_WEB, "API report" }, { LS_RO_SVG, "API flamegraph.svg" },
	{ LS_RO_WEB_DIFF, "API diff" }, { LS_RO_NIF, "NIF report/1" },
	{ 0, NULL },
};

/* The flame graph's choices (rows COLORS and WIDTHS), NULL-terminated. */
static const char *const flame_colors[] = { "mem", "kind", NULL };
static const char *const flame_counts[] = { "bytes", "blocks", NULL };

#define F(field) offsetof(struct ls_report_opts, field), \
	sizeof(((struct ls_report_opts *)0)->field)

const struct ls_ropt ls_ropts[LS_ROPT_N] = {
#define LS_ROPT(id, name, sh, type, field, min, max, choices, argh, takes, \
		alias, alias_takes, help) \
	[LS_ROPT_##id] = { name, sh, type, F(field), min, max, choices, argh, \
			 takes, alias, alias_takes, help },
#include "ropt-table.h"
#undef LS_ROPT
};

/* a and b equal, '-' and '_' alike. */
static int same_name(const char *a, const char *b)
{
	for (; *a && *b; a++, b++)
		if (*a != *b && !(strchr("-_", *a) && strchr("-_", *b)))
			return 0;
	return *a == *b;
}

const struct ls_ropt *ls_ropt_find(const char *name, unsigned user)
{
	size_t i;

	for (i = 0; i < LS_ROPT_N; i++)
		if ((ls_ropts[i].takes & user) &&
		    same_name(ls_ropts[i].name, name))
			return &ls_ropts[i];
	for (i = 0; i < LS_ROPT_N; i++)
		if ((ls_ropts[i].alias_takes & user) && ls_ropts[i].alias &&
		    same_name(ls_ropts[i].alias, name))
			return &ls_ropts[i];
	return NULL;
}

static int store_uint(void *field, size_t size, uint64_t v)
{
	if (size == sizeof(uint64_t))
		memcpy(field, &v, sizeof(v));
	else if (size == sizeof(unsigned) && v <= UINT32_MAX)
		*(unsigned *)field = (unsigned)v;
	else
		return -1;
	return 0;
}

static int read_number(const struct ls_ropt *o, const char *text,
		       uint64_t *v)
{
	switch (o->type) {
	case LS_RT_COUNT:
		return ls_parse_count(text, v);
	case LS_RT_SIZE:
		return ls_parse_size(text, v);
	default:	/* LS_RT_MS */
		return ls_parse_count(text, v);
	}
}

static int read_bool(const char *text, int *out)
{
	if (!text || !strcmp(text, "1") || !strcmp(text, "true"))
		*out = 1;
	else if (!strcmp(text, "0") || !strcmp(text, "false"))
		*out = 0;
	else
		return -1;
	return 0;
}

int ls_ropt_set(const struct ls_ropt *o, struct ls_report_opts *opts,
		const char *text)
{
	void *field = (char *)opts + o->offset;
	uint64_t v;
	int i;

	if (o->type == LS_RT_BOOL)
		return read_bool(text, field);
	if (!text || !*text)
		return -1;
	switch (o->type) {
	case LS_RT_TEXT:
		*(const char **)field = text;
		return 0;
	case LS_RT_FORMAT:
		*(const struct ls_renderer **)field = ls_renderer_find(text);
		return *(const struct ls_renderer **)field ? 0 : -1;
	case LS_RT_CHOICE:
		for (i = 0; o->choices[i]; i++)
			if (!strcmp(o->choices[i], text)) {
				*(int *)field = i;
				return 0;
			}
		return -1;
	default:
		if (read_number(o, text, &v) || v < o->min ||
		    (o->max && v > o->max))
			return -1;
		if (o->type == LS_RT_MS)
			v *= 1000000;
		return store_uint(field, o->size, v);
	}
}

static const char *list(const char *const *names, const char *last,
			char *buf, size_t cap)
{
	size_t len = 0, i;

	buf[0] = 0;
	for (i = 0; names[i] && len < cap; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%s",
					!i ? "" : names[i + 1] ? ", " : last,
					names[i]);
	return buf;
}

const char *ls_ropt_want(const struct ls_ropt *o, char *buf, size_t cap)
{
	const char *names[16];
	const struct ls_renderer *r;
	size_t n = 0;

	switch (o->type) {
	case LS_RT_COUNT:
		snprintf(buf, cap, "a number from %llu to %llu",
			 (unsigned long long)o->min,
			 (unsigned long long)o->max);
		return buf;
	case LS_RT_SIZE:
		return o->min ? "a positive size such as 4096 or 64KiB" :
			"a size such as 4096 or 64KiB";
	case LS_RT_MS:
		return "milliseconds";
	case LS_RT_BOOL:
		return "1, 0, true or false";
	case LS_RT_TEXT:
		return "a non-empty text";
	case LS_RT_CHOICE:
		return list(o->choices, " or ", buf, cap);
	default:	/* LS_RT_FORMAT */
		for (r = ls_renderers; r->name && n < 15; r++)
			names[n++] = r->name;
		names[n] = NULL;
		return list(names, " or ", buf, cap);
	}
}

const char *ls_ropt_key(const struct ls_ropt *o, char *buf, size_t cap)
{
	size_t i;

	for (i = 0; o->name[i] && i + 1 < cap; i++)
		buf[i] = o->name[i] == '-' ? '_' : o->name[i];
	buf[i] = 0;
	return buf;
}

int ls_ropt_check(struct ls_report_opts *opts, int key, char *err, size_t cap)
{
	static const enum ls_ropt_id blocks[] = {
		LS_ROPT_MIN_AGE, LS_ROPT_MIN_SIZE, LS_ROPT_MAX_SIZE, LS_ROPT_SHOW_ALLOCS,
	};
	char names[128], k[32];
	size_t i, len = 0;

	ls_report_opts_finish(opts);
	if (opts->by == LS_BY_LIVE || !opts->need_blocks)
		return 0;
	for (i = 0; i < sizeof(blocks) / sizeof(blocks[0]); i++)
		len += (size_t)snprintf(names + len, sizeof(names) - len,
					"%s%s%s", !i ? "" : i + 1 <
					sizeof(blocks) / sizeof(blocks[0]) ?
					", " : " or ", key ? "" : "--",
					key ? ls_ropt_key(&ls_ropts[blocks[i]],
							  k, sizeof(k)) :
					ls_ropts[blocks[i]].name);
	snprintf(err, cap, "%sby%s%s cannot be combined with %s (they select "
		 "live blocks)", key ? "" : "--", key ? "=" : " ",
		 ls_report_by_names[opts->by], names);
	return -1;
}
