/*
 * t-cli-ropt.c - the report options' table (lib/ropt-table.h) and its one
 * setter and check (lib/ropt.c), which the commands, the web API and the
 * NIF all read their report options through: every row's bounds at their
 * edges, the API's spelling, the older spellings only where a row allows
 * them, and the rule between options.
 */
#include <stdint.h>
#include <string.h>
#include "../../common/contract.h"
#include "../../lib/render.h"
#include "../../lib/ropt.h"
#include "tap.h"

static struct ls_report_opts set(const char *name, unsigned user,
				 const char *text, int *ret)
{
	struct ls_report_opts o;
	const struct ls_ropt *r = ls_ropt_find(name, user);

	memset(&o, 0, sizeof(o));
	*ret = r ? ls_ropt_set(r, &o, text) : -99;
	return o;
}

static void test_bounds(void)
{
	struct ls_report_opts o;
	int r;

	o = set("top", LS_RO_REPORT, "1", &r);
	ok(!r && o.top == 1, "top 1 (the lowest)");
	o = set("top", LS_RO_WEB, "1000000", &r);
	ok(!r && o.top == 1000000, "top 1000000 (the highest)");
	set("top", LS_RO_NIF, "0", &r);
	ok(r == -1, "top 0 refused by every front-end alike");
	set("top", LS_RO_REPORT, "1000001", &r);
	ok(r == -1, "top 1000001 refused");
	o = set("depth", LS_RO_WATCH, "256", &r);
	ok(!r && o.depth == LS_DEPTH_MAX, "depth 256");
	set("depth", LS_RO_WATCH, "257", &r);
	ok(r == -1, "depth 257 refused");
	set("depth", LS_RO_WATCH, "0", &r);
	ok(r == -1, "depth 0 refused");
	o = set("min_age", LS_RO_WEB, "1500", &r);
	ok(!r && o.min_age_ns == 1500000000ull, "min_age 1500 ms in ns");
	o = set("min-size", LS_RO_REPORT, "64KiB", &r);
	ok(!r && o.min_size == 65536, "min-size 64KiB");
	set("max-size", LS_RO_REPORT, "0", &r);
	ok(r == -1, "max-size 0 refused");
	o = set("width", LS_RO_SVG, "200", &r);
	ok(!r && o.svg.width == 200, "width 200");
	set("width", LS_RO_SVG, "199", &r);
	ok(r == -1, "width 199 refused");
	o = set("by", LS_RO_NIF, "temporary", &r);
	ok(!r && o.by == LS_BY_TEMPORARY, "by temporary");
	set("by", LS_RO_NIF, "size", &r);
	ok(r == -1, "by size refused");
	o = set("show_allocs", LS_RO_WEB, "true", &r);
	ok(!r && o.show_allocs == 1, "show_allocs=true");
	o = set("show-allocs", LS_RO_REPORT, NULL, &r);
	ok(!r && o.show_allocs == 1, "--show-allocs (no value) sets it");
	set("show_allocs", LS_RO_WEB, "yes", &r);
	ok(r == -1, "show_allocs=yes refused");
	o = set("format", LS_RO_NIF, "memleak", &r);
	ok(!r && o.format == ls_renderer_find("memleak"), "format memleak");
	set("format", LS_RO_NIF, "png", &r);
	ok(r == -1, "format png refused");
}

static void test_who_takes(void)
{
	int r;

	ok(ls_ropt_find("widths", LS_RO_SVG) == &ls_ropts[LS_ROPT_WIDTHS] &&
	   ls_ropt_find("count", LS_RO_SVG) == &ls_ropts[LS_ROPT_WIDTHS],
	   "widths, and count its older spelling, on the API's flame graph");
	ok(!ls_ropt_find("count", LS_RO_RUN),
	   "count is no report option of run (run's own --count)");
	ok(ls_ropt_find("older", LS_RO_TRACE) == &ls_ropts[LS_ROPT_MIN_AGE] &&
	   !ls_ropt_find("older", LS_RO_REPORT),
	   "older (memleak's) spells min-age under trace only");
	ok(!ls_ropt_find("growing", LS_RO_CHECK) &&
	   ls_ropt_find("growing", LS_RO_REPORT), "growing: report, not check");
	ok(!ls_ropt_find("title", LS_RO_SVG), "no title parameter in the API");
	set("histogram", LS_RO_SVG, "1", &r);
	ok(r == -99, "histogram is no flame graph parameter");
}

static void test_check(void)
{
	struct ls_report_opts o;
	char err[256], key[32];
	int r;

	o = set("by", LS_RO_WEB, "peak", &r);
	o.min_size = 1;
	ok(ls_ropt_check(&o, 1, err, sizeof(err)) == -1 &&
	   !strcmp(err, "by=peak cannot be combined with min_age, min_size, "
		   "max_size or show_allocs (they select live blocks)"),
	   "by with a block filter refused, in the API's spelling: %s", err);
	ok(ls_ropt_check(&o, 0, err, sizeof(err)) == -1 &&
	   strstr(err, "--by peak cannot be combined with --min-age, "
		  "--min-size, --max-size or --show-allocs"),
	   "and in the command line's: %s", err);
	o = set("by", LS_RO_WEB, "peak", &r);
	ok(!ls_ropt_check(&o, 1, err, sizeof(err)) && !o.need_blocks,
	   "by peak alone passes");
	ok(!strcmp(ls_ropt_key(&ls_ropts[LS_ROPT_HIDE_RUNTIME], key,
			       sizeof(key)), "hide_runtime"),
	   "the API spells hide-runtime hide_runtime");
}

int main(void)
{
	test_bounds();
	test_who_takes();
	test_check();
	return tap_done();
}
