/*
 * options.c - the report options shared by every reporting command.
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "cmd.h"
#include "../lib/util.h"

static int bad(const char *opt, const char *arg, const char *want)
{
	ls_error("invalid value '%s' for --%s: expected %s", arg, opt, want);
	return -1;
}

/* The flame graph's options (--format svg). */
static int flame_option(int c, const char *arg, struct ls_flame_opts *svg)
{
	switch (c) {
	case LS_OPT_TITLE:
		svg->title = arg;
		return 1;
	case LS_OPT_COUNT:
		if (!strcmp(arg, "bytes"))
			svg->count = LS_FLAME_COUNT_BYTES;
		else if (!strcmp(arg, "blocks"))
			svg->count = LS_FLAME_COUNT_BLOCKS;
		else
			return bad("count", arg, "bytes or blocks");
		return 1;
	case LS_OPT_INVERTED:
		svg->inverted = 1;
		return 1;
	case LS_OPT_COLORS:
		if (!strcmp(arg, "mem"))
			svg->colors = LS_FLAME_COLORS_MEM;
		else if (!strcmp(arg, "kind"))
			svg->colors = LS_FLAME_COLORS_KIND;
		else
			return bad("colors", arg, "mem or kind");
		return 1;
	}
	return 0;
}

int ls_report_option(int c, const char *arg, struct ls_report_opts *opts,
		     const char **output)
{
	uint64_t v;

	switch (c) {
	case LS_OPT_FORMAT:
		if (!strcmp(arg, "text"))
			opts->format = LS_FORMAT_TEXT;
		else if (!strcmp(arg, "json"))
			opts->format = LS_FORMAT_JSON;
		else if (!strcmp(arg, "folded"))
			opts->format = LS_FORMAT_FOLDED;
		else if (!strcmp(arg, "svg"))
			opts->format = LS_FORMAT_SVG;
		else if (!strcmp(arg, "pprof"))
			opts->format = LS_FORMAT_PPROF;
		else
			return bad("format", arg, "text, json, folded, svg or pprof");
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
	}
	return flame_option(c, arg, &opts->svg);
}

int ls_check_binary_output(const struct ls_report_opts *opts,
			   const char *output, int stdout_ok)
{
	if (!ls_format_is_binary(opts->format))
		return 0;
	if (!output) {
		ls_error("--format pprof is binary: give --output FILE%s",
			 stdout_ok ? " (or --output - for stdout)" : "");
		return -1;
	}
	if (!strcmp(output, "-") && stdout_ok && isatty(STDOUT_FILENO)) {
		ls_error("refusing to write binary pprof data to a terminal "
			 "(use --output FILE or a pipe)");
		return -1;
	}
	return 0;
}

int ls_output_write(const char *output,
		    int (*render)(FILE *out, void *arg), void *arg)
{
	struct ls_outfile of = { 0 };
	int r;

	if (!output || !strcmp(output, "-")) {
		r = render(stdout, arg);
		fflush(stdout);
		goto out;
	}
	r = ls_outfile_open(&of, output);
	if (r) {
		ls_error("cannot write '%s': %s", output, strerror(-r));
		return -1;
	}
	r = render(of.fp, arg);
	if (r)
		ls_outfile_abort(&of);
	else
		r = ls_outfile_commit(&of);
out:
	if (r)
		ls_error("cannot write the report: %s", strerror(-r));
	return r ? -1 : 0;
}
