/*
 * t-lib-report.c - filters, sorting, --top, and the three renderers on a
 * synthetic snapshot whose every figure is known.  One stack holds a real
 * return address of this test, so the text report's symbolized line is
 * checked too (function+offset, module, file:line of the call).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/json.h"
#include "../../lib/render.h"
#include "../../lib/symbolize.h"
#include "lib-fixture.h"
#include "lib-selfmap.h"
#include "tap.h"

LIB_FIXTURE_CALL_PAIR(ls_rep_caller, ls_rep_callee)

#define SEC 1000000000ULL

static char **make_argv(const char *const *args, size_t n)
{
	char **argv = xcalloc(n + 1, sizeof(*argv));
	size_t i;

	for (i = 0; i < n; i++)
		argv[i] = xstrdup(args[i]);
	return argv;
}

static void add_module(struct ls_snapshot *s, uint64_t lo, uint64_t hi,
		       const char *path)
{
	struct ls_module *m = &s->modules[s->nmodules++];

	memset(m, 0, sizeof(*m));
	m->lo = lo;
	m->hi = hi;
	m->gen_from = 1;
	m->gen_to = LSNAP_GEN_LOADED;
	m->build_id_len = 4;
	m->path = xstrdup(path);
}

static void add_site(struct ls_snapshot *s, uint32_t id, uint32_t kind,
		     int64_t bytes, int64_t blocks, uint64_t abytes,
		     uint64_t ablocks, const uint64_t *frames, uint32_t nframes)
{
	struct ls_site *t = &s->sites[s->nsites++];

	memset(t, 0, sizeof(*t));
	t->id = id;
	t->kind = kind;
	t->gen = 2;
	t->live_bytes = bytes;
	t->live_blocks = blocks;
	t->allocated_bytes = abytes;
	t->allocated_blocks = ablocks;
	t->nframes = nframes;
	t->frames = xcalloc(nframes + 1, sizeof(uint64_t));
	memcpy(t->frames, frames, nframes * sizeof(uint64_t));
}

static void add_block(struct ls_snapshot *s, uint64_t addr, uint64_t size,
		      uint64_t birth, uint32_t site, uint32_t tid)
{
	s->blocks[s->nblocks++] = (struct ls_block){ addr, size, birth, site,
						     tid, LSNAP_REACH_NONE };
}

static void base_header(struct ls_snapshot *s)
{
	static const char *const args[] = { "./prog", "-x" };

	s->hdr = (struct lsnap_header){ .pid = 4242, .ppid = 1,
		.wall_ns = 1700000000123456789ULL, .mono_ns = 100 * SEC,
		.start_mono_ns = 90 * SEC, .mode = LSNAP_MODE_FULL,
		.reason = LSNAP_REASON_EXIT, .nthreads = 3, .module_gen = 2 };
	s->argv = make_argv(args, 2);
	s->argc = 2;
}

/*
 * Sites, by id: 1 and 5 share their functions (unknown frames in the same
 * modules), 2 holds this test's return address under an agent frame, 3 is
 * an mmap, 4 holds nothing.  A block of an unlisted site (99) is ignored.
 */
static void make_snap(struct ls_snapshot *s, const struct selfmap *self)
{
	const struct ls_module *exe = selfmap_find(self, seen_ra);
	uint64_t f1[] = { 0x7f0000001000, 0x401234, 0x10 };
	uint64_t f2[] = { 0x600100, seen_ra, 0x7f0000002000 };
	uint64_t f3[] = { 0x401000 };
	uint64_t f5[] = { 0x7f0000003000, 0x401234, 0x10 };
	int i;

	memset(s, 0, sizeof(*s));
	base_header(s);
	s->calls = xcalloc(4, sizeof(*s->calls));
	s->calls[0] = (struct ls_call_count){ "malloc", 4000 };
	s->calls[1] = (struct ls_call_count){ "calloc", 0 };
	s->calls[2] = (struct ls_call_count){ "free", 3988 };
	s->calls[3] = (struct ls_call_count){ "realloc", 7 };
	s->ncalls = 4;
	s->has_totals = 1;
	s->totals = (struct lsnap_totals){ 5330, 12, 99999, 5000, 6000, 64 };
	s->modules = xcalloc(4, sizeof(*s->modules));
	add_module(s, 0x400000, 0x500000, "/nonexistent/prog");
	add_module(s, 0x600000, 0x700000, "/nonexistent/libleakscope.so");
	add_module(s, 0x7f0000000000, 0x7f0000100000, "/nonexistent/libfoo.so");
	s->modules[s->nmodules] = *exe;
	s->modules[s->nmodules++].path = xstrdup(exe->path);
	s->sites = xcalloc(5, sizeof(*s->sites));
	add_site(s, 1, LSNAP_KIND_HEAP, 600, 3, 1000, 10, f1, 3);
	add_site(s, 2, LSNAP_KIND_HEAP, 600, 6, 2000, 20, f2, 3);
	add_site(s, 3, LSNAP_KIND_MMAP, 4096, 1, 8192, 2, f3, 1);
	add_site(s, 4, LSNAP_KIND_HEAP, 0, 0, 50, 5, f3, 1);
	add_site(s, 5, LSNAP_KIND_HEAP, 34, 2, 34, 2, f5, 3);
	s->has_blocks = 1;
	s->blocks = xcalloc(16, sizeof(*s->blocks));
	add_block(s, 0x1000, 100, 99 * SEC, 1, 7);
	add_block(s, 0x1100, 200, 95 * SEC, 1, 8);
	add_block(s, 0x1200, 300, 91 * SEC, 1, 7);
	for (i = 0; i < 6; i++)
		add_block(s, 0x2000 + 0x10 * i, 100, 99 * SEC + SEC / 2, 2, 9);
	add_block(s, 0x9000, 4096, 92 * SEC, 3, 7);
	add_block(s, 0x5000, 17, 98 * SEC, 5, 7);
	add_block(s, 0x5020, 17, 98 * SEC, 5, 7);
	add_block(s, 0xdead0, 1000, 50 * SEC, 99, 7);
}

/* "id:bytes/blocks,..." of a report, for compact comparisons. */
static const char *summary(const struct ls_report *rep)
{
	static char buf[512];
	size_t i, off = 0;

	buf[0] = 0;
	for (i = 0; i < rep->nsites && off < sizeof(buf); i++)
		off += (size_t)snprintf(buf + off, sizeof(buf) - off,
					"%s%u:%lld/%lld", i ? "," : "",
					rep->sites[i].site->id,
					(long long)rep->sites[i].live_bytes,
					(long long)rep->sites[i].live_blocks);
	return buf;
}

static int str_is(const char *got, const char *want)
{
	if (!strcmp(got, want))
		return 1;
	printf("#   got:  '%s'\n#   want: '%s'\n", got, want);
	return 0;
}

static int contains(const char *got, const char *want)
{
	const char *p;

	if (strstr(got, want))
		return 1;
	printf("#   missing: '%s'\n#   in:\n", want);
	for (p = got; *p; p += strcspn(p, "\n") + (p[strcspn(p, "\n")] != 0))
		printf("#   | %.*s\n", (int)strcspn(p, "\n"), p);
	return 0;
}

static void check_build(const struct ls_snapshot *s,
			struct ls_report_opts o, const char *want,
			size_t want_total, const char *what)
{
	struct ls_report rep;
	int ret;

	ls_report_opts_finish(&o);
	ret = ls_report_build(s, &o, &rep);
	ok(ret == 0 && str_is(summary(&rep), want) &&
	   rep.nsites_total == want_total, "%s (ret %d, %zu in total)", what,
	   ret, rep.nsites_total);
	ls_report_release(&rep);
}

static void test_opts(void)
{
	struct ls_report_opts o = { 0 };

	ls_report_opts_finish(&o);
	ok(!o.need_blocks, "no filter: no blocks needed");
	o.min_size = 1;
	ls_report_opts_finish(&o);
	ok(o.need_blocks, "min_size needs blocks");
	o = (struct ls_report_opts){ .max_size = 5 };
	ls_report_opts_finish(&o);
	ok(o.need_blocks, "max_size needs blocks");
	o = (struct ls_report_opts){ .min_age_ns = 5 };
	ls_report_opts_finish(&o);
	ok(o.need_blocks, "min_age needs blocks");
	o = (struct ls_report_opts){ .show_allocs = 1, .top = 3 };
	ls_report_opts_finish(&o);
	ok(o.need_blocks, "show_allocs needs blocks");
	o = (struct ls_report_opts){ .top = 3 };
	ls_report_opts_finish(&o);
	ok(!o.need_blocks, "top alone does not");
}

static void test_build(const struct ls_snapshot *s)
{
	struct ls_report_opts o = { 0 };
	struct ls_report rep;

	check_build(s, o, "3:4096/1,2:600/6,1:600/3,5:34/2", 4,
		    "counters: by bytes, then blocks; empty site dropped");
	o.top = 2;
	check_build(s, o, "3:4096/1,2:600/6", 4, "top 2");
	ls_report_build(s, &o, &rep);
	ok(rep.live_bytes == 5330 && rep.live_blocks == 12,
	   "figures of all kept sites, before top");
	ls_report_release(&rep);
	o = (struct ls_report_opts){ .min_size = 150 };
	check_build(s, o, "3:4096/1,1:500/2", 2, "min_size 150");
	o = (struct ls_report_opts){ .max_size = 150 };
	check_build(s, o, "2:600/6,1:100/1,5:34/2", 3, "max_size 150");
	o = (struct ls_report_opts){ .min_age_ns = 6 * SEC };
	check_build(s, o, "3:4096/1,1:300/1", 2, "min_age 6s");
	o = (struct ls_report_opts){ .min_age_ns = 6 * SEC, .min_size = 200,
				     .max_size = 400 };
	check_build(s, o, "1:300/1", 1, "age and size together");
	o = (struct ls_report_opts){ .min_size = 1 << 20 };
	check_build(s, o, "", 0, "nothing that large");
}

static void test_show_allocs(const struct ls_snapshot *s)
{
	struct ls_report_opts o = { .show_allocs = 1 };
	struct ls_report rep;
	const struct ls_report_site *r1;

	ls_report_opts_finish(&o);
	if (!ok(ls_report_build(s, &o, &rep) == 0, "show_allocs build"))
		return;
	ok(str_is(summary(&rep), "3:4096/1,2:600/6,1:600/3,5:34/2"),
	   "block sums agree with the counters");
	r1 = &rep.sites[2];
	ok(r1->nblocks == 3 && r1->blocks[0]->addr == 0x1200 &&
	   r1->blocks[1]->addr == 0x1100 && r1->blocks[2]->addr == 0x1000,
	   "blocks oldest first");
	ok(r1->allocated_bytes == 1000 && r1->allocated_blocks == 10,
	   "allocated figures come from the site");
	ok(rep.live_bytes == 5330, "the block of an unlisted site is ignored");
	ls_report_release(&rep);
	ok(rep.sites == NULL && rep.nsites == 0, "release zeroes");
	ls_report_release(&rep);
}

static void test_no_blocks(struct ls_snapshot *s)
{
	struct ls_report_opts o = { .min_size = 10 };
	struct ls_report rep;
	struct ls_site *keep = s->sites;
	size_t n = s->nsites;

	ls_report_opts_finish(&o);
	s->has_blocks = 0;
	ok(ls_report_build(s, &o, &rep) == -ENODATA,
	   "filters without a block list: -ENODATA");
	s->nsites = 0;
	ok(ls_report_build(s, &o, &rep) == 0 && rep.nsites_total == 0,
	   "... unless nothing is outstanding");
	ls_report_release(&rep);
	s->sites = keep;
	s->nsites = n;
	s->has_blocks = 1;
}

static void test_sampled_blocks(void)
{
	struct ls_snapshot s = { 0 };
	struct ls_report_opts o = { .min_size = 1 };
	struct ls_report rep;
	uint64_t f[] = { 0x10 };

	base_header(&s);
	s.hdr.mode = LSNAP_MODE_SAMPLED;
	s.hdr.sample_rate = 1000;
	s.sites = xcalloc(1, sizeof(*s.sites));
	add_site(&s, 1, LSNAP_KIND_HEAP, 2633, 12, 0, 0, f, 1);
	s.has_blocks = 1;
	s.blocks = xcalloc(2, sizeof(*s.blocks));
	add_block(&s, 0x1000, 1000, 99 * SEC, 1, 1);
	add_block(&s, 0x2000, 100, 99 * SEC, 1, 1);
	ls_report_opts_finish(&o);
	ok(ls_report_build(&s, &o, &rep) == 0 &&
	   str_is(summary(&rep), "1:2633/12"),
	   "sampled blocks weighted by 1/(1-exp(-size/rate))");
	ls_report_release(&rep);
	ls_snapshot_release(&s);
}

/* --growing keeps the site whose history rises steadily, not the flat
 * one nor the one without history. */
static void test_growing(void)
{
	struct ls_snapshot s = { 0 };
	struct ls_report_opts o = { .growing = 1 };
	uint64_t f[] = { 0x10 };

	base_header(&s);
	s.has_history = 1;
	s.history = (struct lsnap_history){ .period_ms = 1000, .hist_len = 20,
					    .ticks = 20 };
	s.sites = xcalloc(3, sizeof(*s.sites));
	add_site(&s, 1, LSNAP_KIND_HEAP, 1900, 19, 1900, 19, f, 1);
	s.sites[0].history = series(0, 100, 20);
	s.sites[0].nhistory = 20;
	add_site(&s, 2, LSNAP_KIND_HEAP, 5000, 5, 5000, 5, f, 1);
	s.sites[1].history = series(5000, 0, 20);
	s.sites[1].nhistory = 20;
	add_site(&s, 3, LSNAP_KIND_HEAP, 100, 1, 100, 1, f, 1);
	check_build(&s, o, "1:1900/19", 1, "growing: the linear site only");
	o.growing = 0;
	check_build(&s, o, "2:5000/5,1:1900/19,3:100/1", 3, "without growing");
	s.has_history = 0;
	o.growing = 1;
	check_build(&s, o, "", 0, "growing without histories: nothing");
	ls_snapshot_release(&s);
}

static void test_leaks_over(struct ls_snapshot *s)
{
	ok(ls_report_leaks_over(s, 5329) && !ls_report_leaks_over(s, 5330),
	   "threshold on the totals");
	s->totals.live_bytes = 10;
	ok(ls_report_leaks_over(s, 9) && !ls_report_leaks_over(s, 10),
	   "the totals record wins");
	s->has_totals = 0;
	ok(ls_report_leaks_over(s, 5329) && !ls_report_leaks_over(s, 5330),
	   "without totals: the sum of the sites");
	s->has_totals = 1;
	s->totals.live_bytes = 5330;
}

/* Render rep into a malloc()ed string. */
static char *render(const struct ls_snapshot *s, struct ls_report_opts o,
		    int *ret)
{
	struct ls_report rep;
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);

	ls_report_opts_finish(&o);
	*ret = ls_report_build(s, &o, &rep);
	if (!*ret)
		*ret = ls_report_render(mem, &rep, &o, NULL);
	fclose(mem);
	ls_report_release(&rep);
	return buf;
}

static void test_text(const struct ls_snapshot *s, const char *exe_base)
{
	char want[4096];
	int ret;
	char *got = render(s, (struct ls_report_opts){ 0 }, &ret);

	snprintf(want, sizeof(want),
		 "leakscope: pid 4242 (./prog -x), at exit, full tracking\n"
		 "Top 4 of 4 stacks with outstanding allocations:\n"
		 "\t4096 bytes in 1 mapping from stack (mmap)\n"
		 "\t\t0x401000 [prog]\n"
		 "\t600 bytes in 6 allocations from stack\n"
		 "\t\tls_rep_caller+0x%lx [%s] t-lib-report.c:%d\n"
		 "\t\t0x7f0000002000 [libfoo.so]\n"
		 "\t600 bytes in 3 allocations from stack\n"
		 "\t\t0x7f0000001000 [libfoo.so]\n"
		 "\t\t0x401234 [prog]\n"
		 "\t\t0x10 [unknown]\n"
		 "\t34 bytes in 2 allocations from stack\n"
		 "\t\t0x7f0000003000 [libfoo.so]\n"
		 "\t\t0x401234 [prog]\n"
		 "\t\t0x10 [unknown]\n"
		 "\n"
		 "Totals: 5330 bytes live in 12 blocks; 5000 allocations "
		 "(99999 bytes) made; peak 6000 bytes live (exact to within "
		 "64 bytes)\n"
		 "Calls: malloc 4000, free 3988, realloc 7\n",
		 (unsigned long)(seen_ra - (uintptr_t)&ls_rep_caller), exe_base,
		 call_line);
	ok(ret == 0 && str_is(got, want), "text report, exact");
	free(got);
}

static void test_text_allocs(struct ls_snapshot *s)
{
	struct ls_report_opts o = { .show_allocs = 1, .top = 1,
				    .min_age_ns = 6 * SEC };
	int ret;
	char *got;

	s->hdr.mode = LSNAP_MODE_SAMPLED;
	s->hdr.sample_rate = 512;
	s->hdr.reason = LSNAP_REASON_REQUEST;
	got = render(s, o, &ret);
	ok(ret == 0 && contains(got, "leakscope: pid 4242 (./prog -x), live, "
				"sampled every 512 bytes on average: figures "
				"are estimates\n"
				"Filters: only blocks at least 6.000s old\n"
				"Top 1 of 2 stacks with outstanding "
				"allocations:\n"), "sampled live header");
	ok(contains(got, "\t~4096 bytes in ~1 mapping from stack (mmap)\n"
		  "\t\taddr = 0x9000 size = 4096 age = 8.000s tid = 7\n"
		  "\t\t0x401000 [prog]\n\n"),
	   "estimates marked, a mapping weighs 1, block listed before the "
	   "stack");
	ok(contains(got, "Totals: ~5330 bytes live in ~12 blocks;"),
	   "totals marked as estimates");
	ok(contains(got, "Matching the filters: ~4773 bytes in ~3 blocks\n"),
	   "figures matching the filters (300 bytes weigh 676.6)");
	free(got);
	s->hdr.mode = LSNAP_MODE_FULL;
	s->hdr.sample_rate = 0;
	s->hdr.reason = LSNAP_REASON_EXIT;
}

static void test_folded(struct ls_snapshot *s)
{
	int ret;
	char *got = render(s, (struct ls_report_opts){
				   .format = ls_renderer_find("folded") }, &ret);

	ok(ret == 0 && str_is(got, "0x10;[prog];[libfoo.so] 634\n"
			      "[libfoo.so];ls_rep_caller 600\n"
			      "[prog] 4096\n"),
	   "folded: outermost first, merged, agent frames cut, sorted");
	free(got);
	free(s->modules[2].path);
	s->modules[2].path = xstrdup("/nonexistent/lib;x\n.so");
	got = render(s, (struct ls_report_opts){
			     .format = ls_renderer_find("folded"), .max_size = 20 },
		     &ret);
	ok(ret == 0 && str_is(got, "0x10;[prog];[lib:x?.so] 34\n"),
	   "folded: separators in names neutralized, filters applied");
	free(got);
}

static void test_json(void)
{
	static const char *const args[] = { "a\"b\\c", "\x01\n\xff", "\xc3\xa9" };
	struct ls_snapshot s = { 0 };
	uint64_t f[] = { 0x7f0000001000 };
	int ret;
	char *got;

	base_header(&s);
	while (s.argc)
		free(s.argv[--s.argc]);
	free(s.argv);
	s.argv = make_argv(args, 3);
	s.argc = 3;
	s.calls = xcalloc(1, sizeof(*s.calls));
	s.calls[0] = (struct ls_call_count){ "malloc", 3 };
	s.ncalls = 1;
	s.has_totals = 1;
	s.totals = (struct lsnap_totals){ 4096, 1, 8192, 2, 4096, 0 };
	s.has_mallinfo = 1;
	s.mallinfo = (struct lsnap_mallinfo){ 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 };
	s.modules = xcalloc(1, sizeof(*s.modules));
	add_module(&s, 0x7f0000000000, 0x7f0000100000,
		   "/nonexistent/lib\"q\".so");
	s.sites = xcalloc(1, sizeof(*s.sites));
	add_site(&s, 3, LSNAP_KIND_MMAP, 4096, 1, 8192, 2, f, 1);
	s.has_blocks = 1;
	s.blocks = xcalloc(1, sizeof(*s.blocks));
	add_block(&s, 0x9000, 4096, 92 * SEC, 3, 7);
	got = render(&s, (struct ls_report_opts){ .format = ls_renderer_find("json"),
			     .show_allocs = 1, .min_age_ns = 1500000 }, &ret);
	ok(ret == 0 && str_is(got,
		"{\"format\":\"leakscope-report\",\"version\":1,\"pid\":4242,"
		"\"ppid\":1,\"command\":[\"a\\\"b\\\\c\",\"\\u0001\\n\\ufffd\","
		"\"\xc3\xa9\"],\"mode\":\"full\",\"reason\":\"exit\","
		"\"postmortem\":false,\"time\":\"2023-11-14T22:13:20.123Z\",\"attached\":null,"
		"\"uptime_ms\":10000,\"threads\":3,\"notes\":[],"
		"\"stale_modules\":null,"
		"\"totals\":{\"live_bytes\":4096,\"live_blocks\":1,"
		"\"allocated_bytes\":8192,\"allocated_blocks\":2,"
		"\"peak_live_bytes\":4096,\"peak_slack\":0,"
		"\"allocator_mapped_bytes\":0,\"reserved_bytes\":0,"
		"\"dropped\":0},"
		"\"calls\":{\"malloc\":3},"
		"\"mallinfo\":{\"arena\":1,\"ordblks\":2,\"smblks\":3,"
		"\"hblks\":4,\"hblkhd\":5,\"usmblks\":6,\"fsmblks\":7,"
		"\"uordblks\":8,\"fordblks\":9,\"keepcost\":10},"
		"\"filters\":{\"min_age_ms\":1.5,\"min_size\":0,"
		"\"max_size\":null,\"top\":null,\"growing\":false},"
		"\"sites_total\":1,"
		"\"matched\":{\"live_bytes\":4096,\"live_blocks\":1},"
		"\"by\":\"live\",\"peak\":null,"
		"\"sites\":[{\"id\":3,\"kind\":\"mmap\",\"live_bytes\":4096,"
		"\"live_blocks\":1,\"allocated_bytes\":8192,"
		"\"allocated_blocks\":2,\"frames\":[{\"address\":"
		"\"0x7f0000001000\",\"function\":null,\"offset\":null,"
		"\"module\":\"/nonexistent/lib\\\"q\\\".so\",\"file\":null,"
		"\"line\":null,\"inlined\":false,"
		"\"text\":\"0x7f0000001000 [lib\\\"q\\\".so]\"}],"
		"\"blocks\":[{\"address\":"
		"\"0x9000\",\"size\":4096,\"age_ms\":8000,\"tid\":7}]}]}\n"),
	   "JSON report, exact, with escaping");
	free(got);
	s.hdr.mode = LSNAP_MODE_SAMPLED;
	s.hdr.sample_rate = 4096;
	got = render(&s, (struct ls_report_opts){ .format = ls_renderer_find("json") },
		     &ret);
	ok(ret == 0 && strstr(got, "\"mode\":\"sampled\",\"sample_rate\":4096,")
	   && !strstr(got, "\"blocks\""), "JSON sampled mode, no blocks "
	   "without show_allocs");
	free(got);
	ls_snapshot_release(&s);
}

/* ls_render_stats_text() into a malloc()ed string. */
static char *render_stats(const struct ls_snapshot *s)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);

	ls_render_stats_text(mem, s);
	fclose(mem);
	return buf;
}

/*
 * A snapshot whose module map is an earlier walk's, another thread
 * holding the loader's lock (LSNAP_LOADER, LSNAP_MODULE_WALK): one line
 * after the header in the report and in stats, "stale_modules" in JSON;
 * the age is the header's time less the walk's; none of it without the
 * walk record.
 */
static void test_stale_modules(struct ls_snapshot *s)
{
	static const char line[] = "Note: thread 4321 held the loader's "
		"lock: the module map is the one read 2.750s before this "
		"snapshot; objects loaded or unloaded since are not in it\n";
	struct ls_report_opts json = { .format = ls_renderer_find("json") };
	char want[512];
	int ret;
	char *got;

	s->has_loader = 1;
	s->loader.tid = 4321;
	s->has_module_walk = 1;
	s->module_walk = (struct lsnap_module_walk){
		.walk_mono_ns = 97 * SEC + SEC / 4, .refused = 3 };
	snprintf(want, sizeof(want), "at exit, full tracking\n%sTop 4 of 4 ",
		 line);
	got = render(s, (struct ls_report_opts){ 0 }, &ret);
	ok(ret == 0 && contains(got, want), "text: the stale module map's "
	   "line, thread and age, after the header");
	free(got);
	got = render_stats(s);
	ok(contains(got, line), "stats: the same line");
	free(got);
	got = render(s, json, &ret);
	ok(ret == 0 && contains(got, "\"notes\":[],\"stale_modules\":{"
				"\"loader_lock_thread\":4321,\"age_ms\":2750,"
				"\"walks_refused\":3},\"totals\":"),
	   "JSON: stale_modules with the thread, the age, the walks refused");
	free(got);
	s->has_loader = 0;
	s->module_walk.walk_mono_ns = 101 * SEC;
	got = render(s, json, &ret);
	ok(ret == 0 && contains(got, "\"stale_modules\":{"
				"\"loader_lock_thread\":null,\"age_ms\":0,"),
	   "JSON: no thread recorded; a walk stamped after the header is "
	   "0 ms old");
	free(got);
	got = render(s, (struct ls_report_opts){ 0 }, &ret);
	ok(ret == 0 && contains(got, "Note: another thread held the loader's "
				"lock: the module map is the one read 0.000s "
				"before"), "text: no thread recorded");
	free(got);
	s->has_module_walk = 0;
	got = render(s, (struct ls_report_opts){ 0 }, &ret);
	ok(ret == 0 && !strstr(got, "loader's lock"),
	   "text: no line without the walk record");
	free(got);
}

static char *escaped(const char *s, size_t len)
{
	char *buf = NULL;
	size_t n = 0;
	FILE *mem = open_memstream(&buf, &n);

	ls_json_escape(mem, s, len);
	fclose(mem);
	return buf;
}

static void check_escape(const char *in, size_t len, const char *want,
			 const char *what)
{
	char *got = escaped(in, len);

	ok(str_is(got, want), "escape: %s", what);
	free(got);
}

static void test_json_writer(void)
{
	struct ls_json j;
	char *buf = NULL;
	size_t n = 0;
	FILE *mem;

	check_escape("\"\\/\b\f\n\r\t\x1f\x7f", 10,
		     "\"\\\"\\\\/\\b\\f\\n\\r\\t\\u001f\\u007f\"",
		     "quotes, backslash and control characters");
	check_escape("a\0b", 3, "\"a\\u0000b\"", "embedded NUL");
	check_escape("\xe2\x82\xac \xf0\x9f\x98\x80", 8,
		     "\"\xe2\x82\xac \xf0\x9f\x98\x80\"", "valid UTF-8 kept");
	check_escape("\xc0\xaf", 2, "\"\\ufffd\\ufffd\"", "overlong form");
	check_escape("\xed\xa0\x80", 3, "\"\\ufffd\\ufffd\\ufffd\"",
		     "surrogate");
	check_escape("\xf4\x90\x80\x80", 4,
		     "\"\\ufffd\\ufffd\\ufffd\\ufffd\"", "above U+10FFFF");
	check_escape("x\xe2\x82", 3, "\"x\\ufffd\\ufffd\"",
		     "truncated sequence");
	check_escape("\x80z", 2, "\"\\ufffdz\"", "stray continuation byte");
	mem = open_memstream(&buf, &n);
	ls_json_init(&j, mem);
	ls_json_object(&j, NULL);
	ls_json_ms(&j, "a", 0);
	ls_json_ms(&j, "b", 1);
	ls_json_ms(&j, "c", 2000000);
	ls_json_ms(&j, "d", 1234567);
	ls_json_array(&j, "e");
	ls_json_i64(&j, NULL, -5);
	ls_json_bool(&j, NULL, 1);
	ls_json_str(&j, NULL, NULL);
	ls_json_end(&j);
	ls_json_end(&j);
	ok(ls_json_finish(&j) == 0, "balanced document finishes");
	fclose(mem);
	ok(str_is(buf, "{\"a\":0,\"b\":0.000001,\"c\":2,\"d\":1.234567,"
		  "\"e\":[-5,true,null]}"), "writer: commas, ms, nesting");
	free(buf);
	mem = open_memstream(&buf, &n);
	ls_json_init(&j, mem);
	ls_json_object(&j, NULL);
	ok(ls_json_finish(&j) == -EINVAL, "unclosed object: -EINVAL");
	fclose(mem);
	free(buf);
}

static void test_write_error(const struct ls_snapshot *s)
{
	struct ls_report_opts o = { 0 };
	struct ls_report rep;
	FILE *full = fopen("/dev/full", "w");

	if (!full) {
		printf("# skip: no /dev/full\n");
		return;
	}
	ls_report_build(s, &o, &rep);
	ok(ls_report_render(full, &rep, &o, NULL) == -ENOSPC,
	   "write error reported as -ENOSPC");
	ls_report_release(&rep);
	fclose(full);
}

/* --top N picks its sites apart from the whole sort: the same N, in the
 * same order, for every N, over sites whose bytes and blocks tie often
 * (the site id decides), and the sums still over all of them. */
static void test_top_select(void)
{
	enum { N = 600 };
	static const uint64_t frame = 0x1000;
	static const size_t tops[] = { 1, 2, 7, 100, 299, 300, 301, 599, 600,
				       1000 };
	struct ls_snapshot s = { 0 };
	struct ls_report_opts o = { 0 };
	struct ls_report all, top;
	uint32_t x = 12345;
	size_t i, k, wrong = 0, sums = 0;

	s.sites = xcalloc(N, sizeof(*s.sites));
	for (i = 0; i < N; i++) {
		x = x * 1103515245u + 12345u;
		/* ids out of order, bytes from 10 values, blocks from 3 */
		add_site(&s, (uint32_t)((i * 7919) % N) + 1, LSNAP_KIND_HEAP,
			 (int64_t)(x >> 16) % 10 * 64 + 64,
			 (int64_t)(x >> 8) % 3 + 1, 0, 0, &frame, 1);
	}
	ok(!ls_report_build(&s, &o, &all) && all.nsites == N,
	   "the whole sort of %d sites", N);
	for (k = 0; k < sizeof(tops) / sizeof(tops[0]); k++) {
		o.top = tops[k];
		if (ls_report_build(&s, &o, &top)) {
			wrong++;
			continue;
		}
		if (top.nsites != (tops[k] < N ? tops[k] : N) ||
		    top.nsites_total != N)
			wrong++;
		for (i = 0; i < top.nsites; i++)
			wrong += top.sites[i].site != all.sites[i].site;
		sums += top.live_bytes != all.live_bytes ||
			top.live_blocks != all.live_blocks;
		ls_report_release(&top);
	}
	ok(!wrong, "--top 1 to 1000 of %d: the whole sort's first sites, in "
	   "its order (%zu wrong)", N, wrong);
	ok(!sums, "--top: the totals over every site (%zu wrong)", sums);
	ls_report_release(&all);
	ls_snapshot_release(&s);
}

int main(void)
{
	struct selfmap self = { 0 };
	struct ls_snapshot s;

	ls_rep_caller();
	selfmap_read(&self);
	make_snap(&s, &self);
	test_opts();
	test_build(&s);
	test_show_allocs(&s);
	test_no_blocks(&s);
	test_sampled_blocks();
	test_growing();
	test_top_select();
	test_leaks_over(&s);
	test_text(&s, ls_sym_basename(self.exe));
	test_text_allocs(&s);
	test_stale_modules(&s);
	test_write_error(&s);
	test_folded(&s);
	test_json();
	test_json_writer();
	ls_snapshot_release(&s);
	selfmap_free(&self);
	return tap_done();
}
