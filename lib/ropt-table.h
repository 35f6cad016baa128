/*
 * ropt-table.h - the report options, one row each (an X-macro file: no
 * include guard; include it with LS_ROPT defined).  Every front-end takes
 * its report options from these rows: the commands (cli/report-args.c
 * makes them command-line options, --help and docs/OPTIONS.md), the web
 * API's query parameters (web/views.c) and the NIF's option map
 * (erlang/leakscope_nif.c); lib/ropt.c holds the one setter and the one
 * check.  Adding a report option = one row here and the field it sets in
 * struct ls_report_opts (report.h).
 *
 * LS_ROPT(ID, name, short, type, field, min, max, choices, argh, takes,
 *         alias, alias_takes, help)
 *   name     the command line's spelling ("min-size"); the web API and
 *            the NIF spell it with '_' ("min_size")
 *   short    the short option, or 0: bcc memleak's, so only where
 *            LS_RO_MEMLEAK is in takes (`leakscope trace`)
 *   type     LS_RT_*: how a value is read (ropt.h)
 *   field    of struct ls_report_opts
 *   min, max the bounds of a number (max 0: none)
 *   choices  LS_RT_CHOICE: the values, NULL-terminated
 *   argh     the value's name in help ("BYTES"), NULL for a flag
 *   takes    LS_RO_*: the commands and front-ends that take it
 *   alias    an older spelling still accepted where alias_takes says
 *   help     one line (may be continued with '\n')
 */

#define LS_RO_FILTERS (LS_RO_REPORT | LS_RO_CHECK | LS_RO_DIFF | LS_RO_RUN | \
		       LS_RO_TRACE | LS_RO_WEB | LS_RO_SVG | LS_RO_WEB_DIFF | \
		       LS_RO_NIF)
#define LS_RO_STACKS (LS_RO_FILTERS | LS_RO_WATCH | LS_RO_TOP | LS_RO_OLDS)
#define LS_RO_FLAME (LS_RO_REPORT | LS_RO_CHECK | LS_RO_DIFF | LS_RO_RUN | \
		     LS_RO_TRACE | LS_RO_SVG | LS_RO_WEB_DIFF)

LS_ROPT(TOP, "top", 'T', LS_RT_COUNT, top, 1, 1000000, NULL, "N",
	LS_RO_FILTERS | LS_RO_MEMLEAK, NULL, 0,
	"only the N biggest (stacks, by bytes or the --by figure)")
LS_ROPT(MIN_AGE, "min-age", 'o', LS_RT_MS, min_age_ns, 0, UINT64_MAX / 1000000,
	NULL, "MS", LS_RO_FILTERS | LS_RO_MEMLEAK, "older", LS_RO_TRACE,
	"only blocks at least MS milliseconds old")
LS_ROPT(MIN_SIZE, "min-size", 'z', LS_RT_SIZE, min_size, 0, 0, NULL, "BYTES",
	LS_RO_FILTERS | LS_RO_MEMLEAK, NULL, 0,
	"only blocks of at least BYTES (K, M, G suffixes)")
LS_ROPT(MAX_SIZE, "max-size", 'Z', LS_RT_SIZE, max_size, 1, 0, NULL, "BYTES",
	LS_RO_FILTERS | LS_RO_MEMLEAK, NULL, 0,
	"only blocks of at most BYTES")
LS_ROPT(GROWING, "growing", 0, LS_RT_BOOL, growing, 0, 1, NULL, NULL,
	LS_RO_REPORT | LS_RO_WEB | LS_RO_SVG | LS_RO_NIF, NULL, 0,
	"only sites whose growth is linear or exponential")
LS_ROPT(SHOW_ALLOCS, "show-allocs", 'a', LS_RT_BOOL, show_allocs, 0, 1, NULL,
	NULL, LS_RO_REPORT | LS_RO_CHECK | LS_RO_RUN | LS_RO_TRACE |
	LS_RO_WEB | LS_RO_NIF | LS_RO_MEMLEAK, NULL, 0,
	"list every outstanding block: address, size, age, thread")
LS_ROPT(BY, "by", 0, LS_RT_CHOICE, by, 0, 0, ls_report_by_names, "ORDER",
	LS_RO_REPORT | LS_RO_CHECK | LS_RO_DIFF | LS_RO_RUN | LS_RO_TRACE |
	LS_RO_WEB | LS_RO_SVG | LS_RO_WEB_DIFF | LS_RO_NIF, NULL, 0,
	"rank stacks by: live (bytes live now, default), peak (live\n"
	"when the process peaked), allocated, temporary")
LS_ROPT(HISTOGRAM, "histogram", 0, LS_RT_BOOL, histogram, 0, 1, NULL, NULL,
	LS_RO_REPORT | LS_RO_RUN | LS_RO_TRACE | LS_RO_WEB | LS_RO_NIF, NULL, 0,
	"allocation sizes and lifetimes at free (log2 buckets), per\n"
	"stack and for the whole process")
LS_ROPT(DEPTH, "depth", 0, LS_RT_COUNT, depth, LS_DEPTH_MIN, LS_DEPTH_MAX,
	NULL, "N", LS_RO_STACKS, NULL, 0,
	"frames per stack, " LS_RO_STR(LS_DEPTH_MIN) "-"
	LS_RO_STR(LS_DEPTH_MAX) " (run: captured, default "
	LS_RO_STR(LS_DEPTH_DEFAULT) ";\nother commands: shown, default all)")
LS_ROPT(FULL_NAMES, "full-names", 0, LS_RT_BOOL, full_names, 0, 1, NULL, NULL,
	LS_RO_STACKS, NULL, 0,
	"C++ names with their template arguments (by default cut to\n"
	"<…>: std::_Rb_tree<…>::_M_get_node())")
LS_ROPT(HIDE_RUNTIME, "hide-runtime", 0, LS_RT_BOOL, hide_runtime, 0, 1, NULL,
	NULL, LS_RO_STACKS, NULL, 0,
	"leave out the frames of libc, libstdc++ and ld.so below and\n"
	"above the program's own")
LS_ROPT(TITLE, "title", 0, LS_RT_TEXT, svg.title, 0, 0, NULL, "TEXT",
	LS_RO_FLAME & ~(LS_RO_SVG | LS_RO_WEB_DIFF), NULL, 0,
	"the flame graph's title (svg)")
LS_ROPT(INVERTED, "inverted", 0, LS_RT_BOOL, svg.inverted, 0, 1, NULL, NULL,
	LS_RO_FLAME, NULL, 0,
	"icicle graph: the root at the top (svg)")
LS_ROPT(COLORS, "colors", 0, LS_RT_CHOICE, svg.colors, 0, 0,
	flame_colors, "PALETTE", LS_RO_FLAME, NULL, 0,
	"the flame graph's palette: mem (greens by function) or kind\n"
	"(hues by frame kind) (svg)")
LS_ROPT(WIDTHS, "widths", 0, LS_RT_CHOICE, svg.count, 0, 0,
	flame_counts, "WHAT", LS_RO_FLAME, "count",
	LS_RO_REPORT | LS_RO_CHECK | LS_RO_DIFF | LS_RO_TRACE | LS_RO_SVG |
	LS_RO_WEB_DIFF,
	"what the flame graph's widths measure: bytes or blocks (svg)")
LS_ROPT(WIDTH, "width", 0, LS_RT_COUNT, svg.width, 200, 20000, NULL, "PIXELS",
	LS_RO_SVG | LS_RO_WEB_DIFF, NULL, 0,
	"the flame graph's width in pixels (default 1200)")
LS_ROPT(FORMAT, "format", 0, LS_RT_FORMAT, format, 0, 0, NULL, "FORMAT",
	LS_RO_NIF, NULL, 0,
	"report format")
