/*
 * t-lib-metrics.c - lib/metrics.c: which sites a process exports and in
 * what order, their labels from real symbolized frames of this test,
 * site ids that follow the code and not its load address, merged
 * duplicates, the exposition text (escaping, counters, OpenMetrics) and
 * container ids from cgroup paths.  promtool parses the real output in
 * tests/integration/t_fleet.py.
 */
#include <stdlib.h>
#include <string.h>
#include "../../lib/metrics.h"
#include "lib-fixture.h"
#include "lib-selfmap.h"
#include "tap.h"

#define SEC 1000000000ULL

LIB_FIXTURE_CALL_PAIR(ls_met_caller, ls_met_callee)

static void add_site(struct ls_snapshot *s, uint32_t id, int64_t bytes,
		     const uint64_t *frames, uint32_t nframes, int64_t step)
{
	struct ls_site *t = &s->sites[s->nsites++];

	memset(t, 0, sizeof(*t));
	t->id = id;
	t->kind = LSNAP_KIND_HEAP;
	t->gen = 1;
	t->live_bytes = bytes;
	t->live_blocks = bytes / 100;
	t->allocated_bytes = 2 * bytes;
	t->allocated_blocks = bytes / 50;
	t->nframes = nframes;
	t->frames = xcalloc(nframes, sizeof(uint64_t));
	memcpy(t->frames, frames, nframes * sizeof(uint64_t));
	t->history = series(bytes - 19 * step, step, 20);
	t->nhistory = 20;
}

/*
 * A process with five sites: 1 grows 100 B/s (linear) in this test's
 * own code, 2 is large and flat, 3 small and flat, 4 and 5 flat with one
 * stack in a module that is not on disk (so they merge).  lib_base is
 * where that module is loaded.
 */
static void make_snap(struct ls_snapshot *s, const struct selfmap *self,
		      uint64_t lib_base, const char *argv0)
{
	const struct ls_module *exe = selfmap_find(self, seen_ra);
	uint64_t f1[] = { seen_ra };
	uint64_t f2[] = { lib_base + 0x1000 };
	uint64_t f3[] = { lib_base + 0x2000 };
	uint64_t f4[] = { lib_base + 0x3000, lib_base + 0x3100 };
	struct ls_module *m;

	memset(s, 0, sizeof(*s));
	s->hdr = (struct lsnap_header){ .pid = 4242, .ppid = 1,
		.wall_ns = 1700000000ULL * SEC, .mono_ns = 100 * SEC,
		.start_mono_ns = 80 * SEC, .mode = LSNAP_MODE_FULL,
		.reason = LSNAP_REASON_REQUEST, .module_gen = 1 };
	s->argv = xcalloc(2, sizeof(*s->argv));
	s->argv[0] = xstrdup(argv0);
	s->argc = 1;
	s->has_totals = 1;
	s->totals = (struct lsnap_totals){ 56900, 569, 999999, 9999, 70000, 0 };
	s->dropped = 3;
	s->has_agent_memory = 1;
	s->agent_memory.mapped = 4096000;
	s->agent_memory.resident = 409600;
	s->has_history = 1;
	s->history = (struct lsnap_history){ .period_ms = 1000, .hist_len = 20,
					    .ticks = 20 };
	s->modules = xcalloc(2, sizeof(*s->modules));
	s->modules[0] = *exe;
	s->modules[0].path = xstrdup(exe->path);
	m = &s->modules[1];
	m->lo = lib_base;
	m->hi = lib_base + 0x100000;
	m->bias = lib_base;
	m->gen_from = 1;
	m->gen_to = LSNAP_GEN_LOADED;
	m->path = xstrdup("/nonexistent/libgone.so");
	s->nmodules = 2;
	s->sites = xcalloc(5, sizeof(*s->sites));
	add_site(s, 1, 2000, f1, 1, 100);
	add_site(s, 2, 50000, f2, 1, 0);
	add_site(s, 3, 900, f3, 1, 0);
	add_site(s, 4, 3000, f4, 2, 0);
	add_site(s, 5, 1000, f4, 2, 0);
}

static const struct ls_metrics_site *find_fn(const struct ls_metrics_proc *p,
					     const char *fn)
{
	size_t i;

	for (i = 0; i < p->nsites; i++)
		if (!strcmp(p->sites[i].function, fn))
			return &p->sites[i];
	return NULL;
}

static const struct ls_metrics_site *find_bytes(const struct ls_metrics_proc *p,
						int64_t bytes)
{
	size_t i;

	for (i = 0; i < p->nsites; i++)
		if (p->sites[i].live_bytes == bytes)
			return &p->sites[i];
	return NULL;
}

static int build(struct ls_metrics_proc *p, const struct selfmap *self,
		 uint64_t base, size_t max, const char *argv0)
{
	struct ls_snapshot s;
	struct ls_symbolizer *sym;
	int r;

	make_snap(&s, self, base, argv0);
	sym = ls_symbolizer_new(&s);
	r = sym ? ls_metrics_proc_build(p, &s, sym, max, "abc123") : -1;
	ls_symbolizer_free(sym);
	ls_snapshot_release(&s);
	return r;
}

static void test_sites(const struct selfmap *self)
{
	struct ls_metrics_proc p, q;
	const struct ls_metrics_site *mine, *gone, *merged;
	char loc[64];

	ok(!build(&p, self, 0x7f0000000000ull, 20, "/usr/bin/prog"), "built");
	is_u64(p.sites_live, 5, "sites holding memory, before merging");
	is_u64(p.nsites, 4, "sites 4 and 5 read the same: merged into one");
	mine = find_fn(&p, "ls_met_caller");
	snprintf(loc, sizeof(loc), "t-lib-metrics.c:%d", call_line);
	ok(mine && !strcmp(mine->location, loc), "site 1: function "
	   "ls_met_caller at %s (got %s)", loc, mine ? mine->location : "none");
	ok(mine && !strcmp(mine->trend, "linear") &&
	   mine->bytes_per_second > 99.9 && mine->bytes_per_second < 100.1,
	   "site 1: linear at 100 B/s (got %s %.3f)", mine ? mine->trend : "-",
	   mine ? mine->bytes_per_second : 0);
	gone = find_bytes(&p, 50000);
	ok(gone && !strcmp(gone->function, "[libgone.so]") &&
	   !strcmp(gone->location, "") && !strcmp(gone->trend, "constant"),
	   "a frame without a name: [module], no location, constant");
	merged = find_bytes(&p, 4000);
	ok(merged && merged->live_blocks == 40, "merged: 3000 + 1000 bytes, "
	   "30 + 10 blocks");
	ok(!strcmp(p.command, "prog") && !strcmp(p.container, "abc123") &&
	   p.pid == 4242 && p.uptime_s == 20.0, "process labels and uptime");
	is_u64(p.live_bytes, 56900, "process live bytes from the totals");
	is_u64(p.dropped, 3, "dropped events");
	is_u64(p.agent_resident, 409600, "agent resident bytes");
	ls_metrics_proc_release(&p);

	/* max 2: the growing site first although it is small, then the
	 * largest flat one */
	ok(!build(&p, self, 0x7f0000000000ull, 2, "prog"), "built with 2 sites");
	ok(p.nsites == 2 && find_fn(&p, "ls_met_caller") &&
	   (p.sites[0].live_bytes == 50000 || p.sites[1].live_bytes == 50000),
	   "two sites: the growing one and the 50000-byte one");
	/* the same code loaded elsewhere: the same ids */
	ok(!build(&q, self, 0x7f1234560000ull, 2, "prog"), "built at another base");
	ok(q.nsites == 2 && !strcmp(p.sites[0].id, q.sites[0].id) &&
	   !strcmp(p.sites[1].id, q.sites[1].id),
	   "site ids do not depend on where a module is loaded (%s %s)",
	   p.sites[0].id, q.sites[0].id);
	ok(strcmp(p.sites[0].id, p.sites[1].id) && strlen(p.sites[0].id) == 16,
	   "ids are 16 hex digits, distinct");
	ls_metrics_proc_release(&q);
	ls_metrics_proc_release(&p);
}

static char *render(const struct ls_metrics_proc *p, size_t n, int om)
{
	struct ls_metrics_scrape sc = { .unreachable = 1, .collect_s = 0.25 };
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	if (!f)
		abort();
	ok(!ls_metrics_write(f, p, n, &sc, om) && !ls_metrics_end(f, om),
	   "written (%s)", om ? "OpenMetrics" : "text");
	fclose(f);
	return buf;
}

static void has_line(const char *text, const char *line)
{
	char *want;

	if (asprintf(&want, "\n%s\n", line) < 0)
		abort();
	if (!ok(strstr(text, want) != NULL, "line: %s", line))
		printf("# in:\n%s\n", text);
	free(want);
}

static void test_text(const struct selfmap *self)
{
	struct ls_metrics_proc p;
	char *t, *l1, *l2, site[128];
	const struct ls_metrics_site *gone;

	ok(!build(&p, self, 0x7f0000000000ull, 20, "/x/a\"b\\c\nd\xff" "\xc3\xa9"),
	   "built with an awkward command");
	gone = find_bytes(&p, 50000);
	t = render(&p, 1, 0);
	has_line(t, "leakscope_process_live_bytes{pid=\"4242\",command="
		 "\"a\\\"b\\\\c\\nd?\xc3\xa9\",container=\"abc123\"} 56900");
	has_line(t, "# TYPE leakscope_process_allocated_bytes_total counter");
	has_line(t, "leakscope_process_allocated_bytes_total{pid=\"4242\","
		 "command=\"a\\\"b\\\\c\\nd?\xc3\xa9\",container=\"abc123\"} 999999");
	has_line(t, "leakscope_process_dropped_events_total{pid=\"4242\","
		 "command=\"a\\\"b\\\\c\\nd?\xc3\xa9\",container=\"abc123\"} 3");
	snprintf(site, sizeof(site), "site=\"%s\",function=\"[libgone.so]\","
		 "location=\"\",kind=\"heap\"", gone ? gone->id : "?");
	if (asprintf(&l1, "leakscope_site_live_bytes{pid=\"4242\",command="
		     "\"a\\\"b\\\\c\\nd?\xc3\xa9\",container=\"abc123\",%s} 50000",
		     site) < 0 ||
	    asprintf(&l2, "leakscope_site_trend{pid=\"4242\",command="
		     "\"a\\\"b\\\\c\\nd?\xc3\xa9\",container=\"abc123\",%s,"
		     "trend=\"constant\"} 1", site) < 0)
		abort();
	has_line(t, l1);
	has_line(t, l2);
	free(l1);
	free(l2);
	has_line(t, "leakscope_exporter_unreachable_processes 1");
	has_line(t, "leakscope_exporter_collect_seconds 0.25");
	ok(!strstr(t, "# EOF"), "the text format has no # EOF");
	free(t);
	t = render(&p, 1, 1);
	has_line(t, "# TYPE leakscope_process_allocated_bytes counter");
	ok(strstr(t, "\nleakscope_process_allocated_bytes_total{") != NULL,
	   "OpenMetrics: counter samples end in _total");
	ok(strlen(t) > 6 && !strcmp(t + strlen(t) - 6, "# EOF\n"),
	   "OpenMetrics: ends with # EOF");
	free(t);
	ls_metrics_proc_release(&p);
}

static void test_container(void)
{
	static const char id[] =
		"0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef";
	char in[1024], out[80];

	snprintf(in, sizeof(in), "0::/system.slice/docker-%s.scope\n", id);
	ok(ls_metrics_container_parse(in, out, sizeof(out)) &&
	   !strcmp(out, "0123456789ab"), "docker (cgroup v2): %s", out);
	snprintf(in, sizeof(in), "12:pids:/docker/%s\n11:cpu:/docker/%s\n", id, id);
	ok(ls_metrics_container_parse(in, out, sizeof(out)) &&
	   !strcmp(out, "0123456789ab"), "docker (cgroup v1): %s", out);
	snprintf(in, sizeof(in), "0::/kubepods.slice/kubepods-burstable.slice/"
		 "kubepods-burstable-pod1234.slice/cri-containerd-%s.scope\n", id);
	ok(ls_metrics_container_parse(in, out, sizeof(out)) &&
	   !strcmp(out, "0123456789ab"), "containerd in Kubernetes: %s", out);
	ok(ls_metrics_container_parse("0::/machine.slice/machine-web\\x2d1.scope"
				      "/payload\n", out, sizeof(out)) &&
	   !strcmp(out, "web-1"), "systemd-nspawn machine: %s", out);
	ok(!ls_metrics_container_parse("0::/user.slice/user-0.slice/session-3"
				       ".scope\n", out, sizeof(out)) && !*out,
	   "a login session is no container");
	snprintf(in, sizeof(in), "0::/docker/%.63s\n", id);
	ok(!ls_metrics_container_parse(in, out, sizeof(out)), "63 hex digits "
	   "are no container id");
	snprintf(in, sizeof(in), "0::/docker/%sf\n", id);
	ok(!ls_metrics_container_parse(in, out, sizeof(out)), "65 hex digits "
	   "are no container id");
}

static void test_accept(void)
{
	ok(ls_metrics_wants_openmetrics("application/openmetrics-text;"
					"version=1.0.0,text/plain;q=0.5"),
	   "Prometheus's Accept: OpenMetrics");
	ok(!ls_metrics_wants_openmetrics("text/plain") &&
	   !ls_metrics_wants_openmetrics(NULL), "text/plain or none: text");
}

int main(void)
{
	struct selfmap self = { 0 };

	ls_met_caller();
	selfmap_read(&self);
	test_sites(&self);
	test_text(&self);
	test_container();
	test_accept();
	selfmap_free(&self);
	return tap_done();
}
