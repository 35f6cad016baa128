/*
 * parse-options.c - the declarative option parser (parse-options.h).
 */
#include <stdarg.h>
#include <string.h>
#include "../lib/render.h"
#include "../lib/util.h"
#include "cli.h"
#include "parse-options.h"

void ls_usage_error(const struct ls_usage *u, const char *fmt, ...)
{
	char msg[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	ls_error("%s (see 'leakscope %s --help')", msg, u->name);
}

/* --- report options ------------------------------------------------- */

const struct ls_option ls_ropt_options[] = {
#define LS_ROPT(id, name, sh, type, field, min, max, choices, argh_, ...) \
	{ .kind = LS_OPT_REPORT, .long_name = name, .argh = argh_, \
	  .ropt = LS_ROPT_##id },
#include "../lib/ropt-table.h"
#undef LS_ROPT
	{ .kind = LS_OPT_END },
};

int ls_option_taken(const struct ls_usage *u, const struct ls_option *o)
{
	return o->kind != LS_OPT_REPORT ||
	       (ls_ropts[o->ropt].takes & u->ropts & ~LS_RO_MEMLEAK);
}

/* The short name of o in u, or 0. */
static int option_short(const struct ls_usage *u, const struct ls_option *o)
{
	if (o->kind != LS_OPT_REPORT)
		return o->short_name;
	return (u->ropts & LS_RO_MEMLEAK) &&
	       (ls_ropts[o->ropt].takes & LS_RO_MEMLEAK) ?
	       ls_ropts[o->ropt].short_name : 0;
}

/* The older spelling of report option o u still accepts, or NULL. */
static const char *alias_of(const struct ls_usage *u,
			    const struct ls_option *o)
{
	const struct ls_ropt *r = &ls_ropts[o->ropt];

	return o->kind == LS_OPT_REPORT && r->alias &&
	       (r->alias_takes & u->ropts) ? r->alias : NULL;
}

/* --- values ---------------------------------------------------------- */

/* Does the format option o take renderer r? */
static int format_fits(const struct ls_option *o, const struct ls_renderer *r)
{
	if ((o->flags & LS_OPTF_STATS) && !r->stats)
		return 0;
	return !(o->flags & LS_OPTF_DIFF) || r->diff;
}

static int parse_format(const struct ls_option *o, const char *arg,
			const struct ls_renderer **out)
{
	const struct ls_renderer *r = ls_renderer_find(arg);

	if (!r || !format_fits(o, r))
		return -1;
	*out = r;
	return 0;
}

static int parse_choice(const struct ls_option *o, const char *arg, int *out)
{
	int i;

	for (i = 0; o->choices[i]; i++)
		if (!strcmp(o->choices[i], arg)) {
			*out = i;
			return 0;
		}
	return -1;
}

static int parse_number(const struct ls_option *o, const char *arg,
			uint64_t *v)
{
	switch (o->kind) {
	case LS_OPT_UINT:
		return ls_parse_count(arg, v);
	case LS_OPT_SIZE:
		return ls_parse_size(arg, v);
	case LS_OPT_SECONDS:
		return ls_parse_seconds(arg, v);
	case LS_OPT_MS:
		if (ls_parse_count(arg, v) || *v > UINT64_MAX / 1000000)
			return -1;
		*v *= 1000000;
		return 0;
	default:
		return -1;
	}
}

static int in_range(const struct ls_option *o, uint64_t v)
{
	if ((o->flags & LS_OPTF_NONZERO) && !v)
		return 0;
	if (o->max && v > o->max)
		return 0;
	return v >= o->min;
}

/* Store arg into the field o names; -1 when it is no valid value. */
static int store(const struct ls_option *o, const char *arg, char *base)
{
	void *field = base + o->offset;
	uint64_t v;

	switch (o->kind) {
	case LS_OPT_FLAG:
		*(int *)field = 1;
		return 0;
	case LS_OPT_STRING:
		if (!*arg)
			return -1;
		*(const char **)field = arg;
		return 0;
	case LS_OPT_FORMAT:
		return parse_format(o, arg, field);
	case LS_OPT_CHOICE:
		return parse_choice(o, arg, field);
	case LS_OPT_CALLBACK:
		return o->cb(o, arg, base);
	case LS_OPT_REPORT:
		return ls_ropt_set(&ls_ropts[o->ropt],
				   (struct ls_report_opts *)field, arg);
	default:
		if (parse_number(o, arg, &v) || !in_range(o, v))
			return -1;
		*(uint64_t *)field = v;
		return 0;
	}
}

/* "one of a, b, c" into buf. */
static const char *one_of(const char *const *names, size_t n, char *buf,
			  size_t cap)
{
	size_t len = 0, i;

	buf[0] = 0;
	for (i = 0; i < n && len < cap; i++)
		len += (size_t)snprintf(buf + len, cap - len, "%s%s",
					i ? ", " : "one of ", names[i]);
	return buf;
}

static const char *wanted(const struct ls_option *o, char *buf, size_t cap)
{
	const char *names[32];
	const struct ls_renderer *r;
	size_t n = 0;

	if (o->want)
		return o->want;
	if (o->kind == LS_OPT_REPORT)
		return ls_ropt_want(&ls_ropts[o->ropt], buf, cap);
	if (o->kind == LS_OPT_CHOICE) {
		while (o->choices[n] && n < 32)
			n++;
		return one_of(o->choices, n, buf, cap);
	}
	if (o->kind != LS_OPT_FORMAT)
		return "a valid value";
	for (r = ls_renderers; r->name && n < 32; r++)
		if (format_fits(o, r))
			names[n++] = r->name;
	return one_of(names, n, buf, cap);
}

/* spelled: the option as typed ("-o", "--min-age"). */
static int bad_value(const struct ls_usage *u, const struct ls_option *o,
		     const char *arg, const char *spelled)
{
	const char *alias = o->kind == LS_OPT_REPORT ? alias_of(u, o) : NULL;
	char buf[256];

	/* A memleak short option (trace): say what it is, and that -o is
	 * no output file there. */
	if (spelled[1] != '-' && o->kind == LS_OPT_REPORT) {
		ls_error("invalid value '%s' for %s (--%s%s%s): expected %s%s",
			 arg, spelled, o->long_name, alias ? ", memleak's --" :
			 "", alias ? alias : "", wanted(o, buf, sizeof(buf)),
			 spelled[1] == 'o' ? "; the report's file is --output "
			 "FILE" : "");
		return -1;
	}
	ls_error("invalid value '%s' for --%s: expected %s", arg, o->long_name,
		 wanted(o, buf, sizeof(buf)));
	return -1;
}

/* --- finding options ------------------------------------------------- */

static const struct ls_option *find_long(const struct ls_usage *u,
					 const char *name, size_t len)
{
	const struct ls_option *const *t, *o;

	const char *alias;

	ls_usage_for_each(u, t, o)
		if (strlen(o->long_name) == len &&
		    !strncmp(o->long_name, name, len))
			return o;
	/* An older spelling, where no option of u has that name. */
	ls_usage_for_each(u, t, o)
		if ((alias = alias_of(u, o)) && strlen(alias) == len &&
		    !strncmp(alias, name, len))
			return o;
	return NULL;
}

static const struct ls_option *find_short(const struct ls_usage *u, int c)
{
	const struct ls_option *const *t, *o;

	ls_usage_for_each(u, t, o)
		if (option_short(u, o) == c)
			return o;
	return NULL;
}

static int takes_value(const struct ls_option *o)
{
	if (o->kind == LS_OPT_REPORT)
		return ls_ropts[o->ropt].argh != NULL;
	return o->kind != LS_OPT_FLAG;
}

/*
 * Apply o; its value is inline (after '=' or glued to a short option)
 * or the next argument.  Returns the number of extra arguments used, or
 * -1 after an error.
 */
static int apply(const struct ls_usage *u, const struct ls_option *o,
		 const char *inline_val, const char *next, const char *spelled,
		 char *base)
{
	if (!takes_value(o)) {
		if (inline_val) {
			ls_error("option '--%s' takes no value", o->long_name);
			return -1;
		}
		return store(o, NULL, base);
	}
	if (o->flags & LS_OPTF_OPTIONAL) {
		*(int *)(base + o->set_offset) = 1;
		if (!inline_val)
			return 0;
		return store(o, inline_val, base) ?
		       bad_value(u, o, inline_val, spelled) : 0;
	}
	if (!inline_val && !next) {
		ls_error("option '%s' needs a value", spelled);
		return -1;
	}
	if (store(o, inline_val ? inline_val : next, base))
		return bad_value(u, o, inline_val ? inline_val : next,
				 spelled);
	return inline_val ? 0 : 1;
}

static int is_help(const char *a)
{
	return !strcmp(a, "--help") || !strcmp(a, "-h");
}

/* One option argument at argv[i]; returns the arguments consumed, -1 on
 * error. */
static int one_option(const struct ls_usage *u, char **argv, int i, int argc,
		      char *base)
{
	const char *a = argv[i], *next = i + 1 < argc ? argv[i + 1] : NULL;
	const struct ls_option *o;

	if (a[1] == '-') {
		const char *eq = strchr(a + 2, '=');
		size_t len = eq ? (size_t)(eq - a - 2) : strlen(a + 2);

		o = find_long(u, a + 2, len);
		if (o)
			return apply(u, o, eq ? eq + 1 : NULL, next, a, base);
	} else if ((o = find_short(u, a[1]))) {
		char spelled[3] = { '-', a[1], 0 };

		return apply(u, o, a[2] ? a + 2 : NULL, next, spelled, base);
	}
	ls_usage_error(u, "unknown option '%s'", a);
	return -1;
}

int ls_parse_options(int argc, char **argv, const struct ls_usage *u,
		     unsigned flags, void *args)
{
	int i, n = 0, used;

	for (i = 1; i < argc; i++) {
		const char *a = argv[i];

		if (!strcmp(a, "--")) {
			while (++i < argc)
				argv[n++] = argv[i];
			break;
		}
		if (a[0] != '-' || !a[1]) {
			argv[n++] = argv[i];
			if (flags & LS_PARSE_STOP_AT_ARG) {
				while (++i < argc)
					argv[n++] = argv[i];
				break;
			}
			continue;
		}
		if (is_help(a)) {
			ls_usage_print(stdout, u);
			return LS_PARSE_HELP;
		}
		used = one_option(u, argv, i, argc, args);
		if (used < 0)
			return -1;
		i += used;
	}
	argv[n] = NULL;
	return n;
}

/* --- help ------------------------------------------------------------ */

void ls_option_label(const struct ls_usage *u, const struct ls_option *o,
		     char *buf, size_t cap)
{
	int n = 0, sh = option_short(u, o);

	if (sh)
		n = snprintf(buf, cap, "-%c, ", sh);
	if (n < 0 || (size_t)n >= cap)
		return;
	if (!takes_value(o))
		snprintf(buf + n, cap - n, "--%s", o->long_name);
	else if (o->flags & LS_OPTF_OPTIONAL)
		snprintf(buf + n, cap - n, "--%s[=%s]", o->long_name, o->argh);
	else
		snprintf(buf + n, cap - n, "--%s %s", o->long_name, o->argh);
}

void ls_option_help(const struct ls_usage *u, const struct ls_option *o,
		    char *buf, size_t cap)
{
	const char *alias = alias_of(u, o);
	char names[256];
	size_t len;

	if (o->kind == LS_OPT_REPORT)
		snprintf(buf, cap, "%s", ls_ropts[o->ropt].help);
	else if ((o->kind == LS_OPT_FORMAT || o->kind == LS_OPT_CHOICE) &&
		 !o->want)
		snprintf(buf, cap, "%s: %s", o->help,
			 wanted(o, names, sizeof(names)) + strlen("one of "));
	else
		snprintf(buf, cap, "%s", o->help);
	len = strlen(buf);
	if (alias && len < cap)
		snprintf(buf + len, cap - len, " (also --%s)", alias);
}

/* Help text lines after the first are indented under the first. */
static void put_indented(FILE *out, const char *text, int col)
{
	for (; *text; text++) {
		fputc(*text, out);
		if (*text == '\n')
			fprintf(out, "%*s", col, "");
	}
}

void ls_usage_print(FILE *out, const struct ls_usage *u)
{
	const struct ls_option *const *t, *o;
	char label[128], help[1024];

	fprintf(out, "usage: leakscope %s %s\n\n%s\n", u->name, u->synopsis,
		u->description);
	if (u->tables[0])
		fputs("\noptions:\n", out);
	ls_usage_for_each(u, t, o) {
		if (o->flags & LS_OPTF_HIDDEN)
			continue;
		ls_option_label(u, o, label, sizeof(label));
		ls_option_help(u, o, help, sizeof(help));
		fprintf(out, "  %-26s ", label);
		if (strlen(label) > 26)
			fprintf(out, "\n  %-26s ", "");
		put_indented(out, help, 29);
		fputc('\n', out);
	}
	fputs("  -h, --help                 this help\n", out);
	if (u->notes)
		fprintf(out, "\n%s\n", u->notes);
}
