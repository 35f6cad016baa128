/*
 * options.c - the report options shared by every reporting command.
 */
#include <string.h>
#include "cmd.h"
#include "../lib/util.h"

static int bad(const char *opt, const char *arg, const char *want)
{
	ls_error("invalid value '%s' for --%s: expected %s", arg, opt, want);
	return -1;
}

/* The suppressions of this process's command line (one command runs). */
static struct ls_supp supp;
static int no_default;

int ls_report_supp_finish(struct ls_report_opts *opts, int want_default)
{
	if (want_default && !no_default && ls_supp_default(&supp)) {
		ls_error("out of memory");
		return -1;
	}
	opts->supp = supp.n ? &supp : NULL;
	return 0;
}

void ls_report_options_release(struct ls_report_opts *opts)
{
	ls_supp_release(&supp);
	opts->supp = NULL;
}

int ls_report_option(int c, const char *arg, struct ls_report_opts *opts,
		     const char **output)
{
	char err[4400];
	uint64_t v;

	switch (c) {
	case LS_OPT_FORMAT:
		if (!strcmp(arg, "text"))
			opts->format = LS_FORMAT_TEXT;
		else if (!strcmp(arg, "json"))
			opts->format = LS_FORMAT_JSON;
		else if (!strcmp(arg, "folded"))
			opts->format = LS_FORMAT_FOLDED;
		else
			return bad("format", arg, "text, json or folded");
		return 1;
	case LS_OPT_OUTPUT:
		if (!*arg)
			return bad("output", arg, "a file name");
		*output = arg;
		return 1;
	case LS_OPT_TOP:
		if (ls_parse_count(arg, &v) || !v)
			return bad("top", arg, "a positive number of stacks");
		opts->top = (size_t)v;
		return 1;
	case LS_OPT_MIN_AGE:
		if (ls_parse_count(arg, &v) || v > UINT64_MAX / 1000000)
			return bad("min-age", arg, "milliseconds");
		opts->min_age_ns = v * 1000000;
		return 1;
	case LS_OPT_MIN_SIZE:
		if (ls_parse_size(arg, &v))
			return bad("min-size", arg, "a size such as 4096 or 64KiB");
		opts->min_size = v;
		return 1;
	case LS_OPT_MAX_SIZE:
		if (ls_parse_size(arg, &v) || !v)
			return bad("max-size", arg, "a positive size such as 4096 or 64KiB");
		opts->max_size = v;
		return 1;
	case LS_OPT_SHOW_ALLOCS:
		opts->show_allocs = 1;
		return 1;
	case LS_OPT_ONLY:
		if (ls_reach_parse_kinds(arg, &opts->only, err, sizeof(err))) {
			ls_error("--only: %s", err);
			return -1;
		}
		return 1;
	case LS_OPT_SUPPRESSIONS:
		if (ls_supp_load(&supp, arg, err, sizeof(err))) {
			ls_error("%s", err);
			return -1;
		}
		return 1;
	case LS_OPT_GEN_SUPPRESSIONS:
		opts->gen_supp = 1;
		return 1;
	case LS_OPT_NO_DEFAULT_SUPP:
		no_default = 1;
		return 1;
	}
	return 0;
}
