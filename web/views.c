/*
 * views.c - the API's answers about one snapshot: the report (the same
 * model, filters and JSON as `leakscope report --format json`), folded
 * stacks, stats, per-site growth history with trends and windowed deltas
 * (edLeak's timed slices), the oldest blocks; and the process list.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "../common/contract.h"
#include "../lib/diff.h"
#include "../lib/json.h"
#include "../lib/render.h"
#include "../lib/ropt.h"
#include "../lib/symbolize.h"
#include "../lib/trend.h"
#include "agents.h"
#include "listing.h"
#include "reply.h"
#include "store.h"
#include "views.h"

#define SPARK_POINTS 60

/* The flame graph's own URL state (search, zoom): its script's. */
static const char *const svg_state[] = { "s", "x", NULL };
static const char *const no_params[] = { NULL };

int ls_web_src_live(struct ls_web_req *r, const char *pid, int blocks,
		    struct ls_web_src *src, struct ls_web_reply *rep)
{
	memset(src, 0, sizeof(*src));
	if (!ls_web_parse_pid(pid, &src->pid))
		return ls_web_error(rep, 400, "'%.32s' is not a pid", pid);
	src->ref = ls_web_snap_get(&r->w->agents, src->pid, blocks, rep);
	if (!src->ref)
		return rep->status;
	src->snap = &src->ref->snap;
	src->agents = &r->w->agents;
	return 0;
}

int ls_web_src_saved(struct ls_web_req *r, const char *name,
		     struct ls_web_src *src, struct ls_web_reply *rep)
{
	memset(src, 0, sizeof(*src));
	if (!ls_web_store_name_ok(name))
		return ls_web_error(rep, 400, "'%.64s' is not a snapshot name",
				    name);
	if (ls_web_store_load(r->w, name, &src->own, rep))
		return rep->status;
	src->snap = &src->own;
	return 0;
}

void ls_web_src_release(struct ls_web_req *r, struct ls_web_src *src)
{
	if (src->ref)
		ls_web_snap_put(&r->w->agents, src->ref);
	else
		ls_snapshot_release(&src->own);
	memset(src, 0, sizeof(*src));
}

/* Run fn with a symbolizer: the process's shared one for a live source,
 * a new one for a file. */
static int with_sym(struct ls_web_src *src,
		    int (*fn)(const struct ls_snapshot *, struct ls_symbolizer *,
			      void *), void *arg)
{
	struct ls_symbolizer *sym;
	int r;

	if (src->ref)
		return ls_web_with_symbolizer(src->agents, src->pid, src->ref,
					      fn, arg);
	if (!(sym = ls_symbolizer_new(src->snap)))
		return -ENOMEM;
	r = fn(src->snap, sym, arg);
	ls_symbolizer_free(sym);
	return r;
}

/*
 * The report options of the query: a parameter for every row of
 * lib/ropt-table.h that user (LS_RO_WEB, LS_RO_SVG, LS_RO_WEB_DIFF,
 * LS_RO_OLDS: how stacks are shown) takes, spelled with '_', read and
 * checked by the same setter as the commands' options.  Only those and
 * extra are allowed when extra is not NULL.
 */
static int ropt_params(struct ls_web_req *r, unsigned user,
		       const char *const *extra, struct ls_report_opts *o,
		       struct ls_web_reply *rep)
{
	char keys[LS_ROPT_N][2][24], want[128];
	const char *allowed[2 * LS_ROPT_N + 16], *v;
	size_t i, n = 0;

	for (i = 0; i < LS_ROPT_N; i++) {
		const struct ls_ropt *row = &ls_ropts[i];
		const char *k = ls_ropt_key(row, keys[i][0], sizeof(keys[i][0]));

		if (!(row->takes & user) && !(row->alias_takes & user))
			continue;
		v = row->takes & user ? ls_web_param(r, k) : NULL;
		if (row->takes & user)
			allowed[n++] = k;
		if (row->alias && (row->alias_takes & user)) {
			snprintf(keys[i][1], sizeof(keys[i][1]), "%s", row->alias);
			allowed[n++] = keys[i][1];
			if (!v && (v = ls_web_param(r, row->alias)))
				k = row->alias;
		}
		if (v && ls_ropt_set(row, o, v))
			return ls_web_error(rep, 400, "invalid value for '%s': "
					    "expected %s", k,
					    ls_ropt_want(row, want, sizeof(want)));
	}
	for (i = 0; extra && extra[i] && n + 1 < sizeof(allowed) /
	     sizeof(allowed[0]); i++)
		allowed[n++] = extra[i];
	allowed[n] = NULL;
	return extra && ls_web_params_only(r, allowed, rep) ? rep->status : 0;
}

/* How stacks are shown, as the commands' --depth, --full-names and
 * --hide-runtime (the rows `olds` takes): depth, full_names,
 * hide_runtime; with the view's own parameters own, the only ones. */
static int stack_params(struct ls_web_req *r, const char *const *own,
			struct ls_report_opts *o, struct ls_web_reply *rep)
{
	return ropt_params(r, LS_RO_OLDS, own, o, rep);
}

/* The report options of view user from the query, as the commands'
 * options; extra: the view's own parameters. */
static int report_opts(struct ls_web_req *r, const char *format,
		       unsigned user, const char *const *extra,
		       struct ls_report_opts *o, struct ls_web_reply *rep)
{
	char err[256];

	memset(o, 0, sizeof(*o));
	o->format = ls_renderer_find(format);
	if (!o->format)
		return ls_web_error(rep, 501, "this build has no %s renderer",
				    format);
	if (ropt_params(r, user, extra, o, rep))
		return rep->status;
	if (ls_ropt_check(o, 1, err, sizeof(err)))
		return ls_web_error(rep, 400, "%s", err);
	return 0;
}

struct render_arg {
	const struct ls_report_opts *opts;
	FILE *out;
};

static int render_cb(const struct ls_snapshot *snap, struct ls_symbolizer *sym,
		     void *arg)
{
	struct render_arg *a = arg;
	struct ls_report rep;
	int r = ls_report_build(snap, a->opts, &rep);

	if (r)
		return r;
	r = ls_report_render(a->out, &rep, a->opts, sym);
	ls_report_release(&rep);
	return r;
}

static void view_report(struct ls_web_req *r, struct ls_web_src *src,
			const char *format, struct ls_web_reply *rep)
{
	struct ls_report_opts opts;
	struct render_arg a = { &opts, NULL };
	struct ls_web_buf b;
	int e;

	if (report_opts(r, format, !strcmp(format, "svg") ? LS_RO_SVG :
			LS_RO_WEB, !strcmp(format, "svg") ? svg_state :
			no_params, &opts, rep))
		return;
	if (ls_web_buf_open(&b)) {
		ls_web_error(rep, 500, "out of memory");
		return;
	}
	a.out = b.fp;
	e = with_sym(src, render_cb, &a);
	if (e) {
		fclose(b.fp);
		free(b.data);
		if (e == -ENODATA)
			ls_web_error(rep, 400, "this snapshot has no block list: "
				     "min_age, min_size, max_size and show_allocs "
				     "need a live process or a saved snapshot");
		else
			ls_web_error(rep, 500, "cannot build the report: %s",
				     strerror(-e));
		return;
	}
	ls_web_buf_reply(&b, rep, opts.format->mime);
}

static void view_stats(struct ls_web_req *r, struct ls_web_src *src,
		       struct ls_web_reply *rep)
{
	struct ls_web_buf b;

	if (ls_web_params_only(r, NULL, rep))
		return;
	if (ls_web_buf_open(&b)) {
		ls_web_error(rep, 500, "out of memory");
		return;
	}
	ls_render_stats_json(b.fp, src->snap);
	ls_web_buf_reply(&b, rep, "application/json");
}

/* ------------------------------------------------------------ history */

struct hist_arg {
	struct ls_json *j;
	struct ls_report_opts view;
	uint64_t top, window_s, site;
	int one_site;
};

static int by_live_desc(const void *x, const void *y)
{
	const struct ls_site *a = *(const struct ls_site *const *)x;
	const struct ls_site *b = *(const struct ls_site *const *)y;

	if (a->live_bytes != b->live_bytes)
		return a->live_bytes > b->live_bytes ? -1 : 1;
	return a->id < b->id ? -1 : a->id > b->id;
}

/* The site's stack as the report shows it under the same view options
 * (depth, full_names, hide_runtime). */
static int put_frames(struct ls_json *j, struct ls_symbolizer *sym,
		      const struct ls_site *s, const struct ls_report_opts *view,
		      struct ls_stack *st)
{
	size_t i;
	int r = ls_stack_build(sym, s, st);

	if (!r)
		r = ls_stack_view(st, view->depth, view->full_names,
				  view->hide_runtime);
	if (r)
		return r;
	ls_json_array(j, "frames");
	for (i = 0; i < st->n; i++)
		ls_json_frame(j, &st->f[i]);
	ls_json_end(j);
	return 0;
}

static void put_trend(struct ls_json *j, const struct ls_snapshot *snap,
		      const struct ls_site *s)
{
	double period = snap->history.period_ms / 1000.0;
	struct ls_trend t;

	if (!period || ls_trend_classify(s->history, s->nhistory, period, &t))
		return;
	ls_json_object(j, "trend");
	ls_json_str(j, "label", ls_trend_name(t.label));
	ls_json_f64(j, "bytes_per_second", t.bytes_per_second, 1);
	ls_json_f64(j, "confidence", t.confidence, 3);
	ls_json_u64(j, "samples", t.nsamples);
	ls_json_end(j);
}

/* Live bytes now minus window_s seconds ago (or the oldest sample). */
static void put_window(struct ls_json *j, const struct ls_snapshot *snap,
		       const struct ls_site *s, uint64_t window_s)
{
	uint64_t period = snap->history.period_ms ? snap->history.period_ms : 1;
	uint64_t back = window_s * 1000 / period;
	size_t from;

	if (!window_s || !s->nhistory)
		return;
	from = back >= s->nhistory ? 0 : s->nhistory - 1 - back;
	ls_json_i64(j, "window_delta_bytes",
		    s->history[s->nhistory - 1] - s->history[from]);
}

static int put_hist_site(struct ls_json *j, const struct ls_snapshot *snap,
			 struct ls_symbolizer *sym, const struct ls_site *s,
			 struct hist_arg *a, struct ls_stack *st)
{
	uint32_t i;
	int r;

	ls_json_object(j, NULL);
	ls_json_u64(j, "id", s->id);
	ls_json_str(j, "kind", s->kind == LSNAP_KIND_MMAP ? "mmap" : "heap");
	ls_json_i64(j, "live_bytes", s->live_bytes);
	ls_json_i64(j, "live_blocks", s->live_blocks);
	ls_json_u64(j, "allocated_bytes", s->allocated_bytes);
	put_trend(j, snap, s);
	put_window(j, snap, s, a->window_s);
	ls_json_array(j, "history");
	for (i = 0; i < s->nhistory; i++)
		ls_json_i64(j, NULL, s->history[i]);
	ls_json_end(j);
	r = put_frames(j, sym, s, &a->view, st);
	ls_json_end(j);
	return r;
}

static int history_cb(const struct ls_snapshot *snap, struct ls_symbolizer *sym,
		      void *arg)
{
	struct hist_arg *a = arg;
	const struct ls_site **v = malloc((snap->nsites + 1) * sizeof(*v));
	struct ls_stack st = { 0 };
	size_t i, n = 0;
	int r = 0;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < snap->nsites; i++)
		if (snap->sites[i].nhistory &&
		    (!a->one_site || snap->sites[i].id == a->site))
			v[n++] = &snap->sites[i];
	qsort(v, n, sizeof(*v), by_live_desc);
	ls_json_array(a->j, "sites");
	for (i = 0; i < n && i < a->top && !r; i++)
		r = put_hist_site(a->j, snap, sym, v[i], a, &st);
	ls_json_end(a->j);
	ls_stack_release(&st);
	free(v);
	return r;
}

static void put_history_head(struct ls_json *j, const struct ls_snapshot *s,
			     uint64_t window_s)
{
	ls_json_u64(j, "pid", s->hdr.pid);
	ls_json_bool(j, "has_history", s->has_history);
	ls_json_u64(j, "period_ms", s->history.period_ms);
	ls_json_u64(j, "capacity", s->history.hist_len);
	ls_json_u64(j, "ticks", s->history.ticks);
	if (window_s)
		ls_json_u64(j, "window_s", window_s);
}

static void view_history(struct ls_web_req *r, struct ls_web_src *src,
			 struct ls_web_reply *rep)
{
	static const char *const params[] = { "top", "site", "window", NULL };
	struct hist_arg a = { .top = 20 };
	struct ls_web_buf b;
	struct ls_json j;
	int e;

	if (stack_params(r, params, &a.view, rep) ||
	    ls_web_param_count(r, "top", 100000, &a.top, rep) ||
	    ls_web_param_count(r, "site", UINT32_MAX, &a.site, rep) ||
	    ls_web_param_count(r, "window", 86400, &a.window_s, rep))
		return;
	a.one_site = ls_web_param(r, "site") != NULL;
	if (!a.top || a.one_site)
		a.top = SIZE_MAX;
	if (ls_web_json_begin(&b, &j, "leakscope-history", rep))
		return;
	a.j = &j;
	put_history_head(&j, src->snap, a.window_s);
	e = with_sym(src, history_cb, &a);
	ls_web_json_end(&b, &j, e, 200, rep);
}

/* --------------------------------------------------------------- olds */

struct olds_arg {
	struct ls_json *j;
	struct ls_report_opts view;
	uint64_t n;
};

static int olds_cb(const struct ls_snapshot *snap, struct ls_symbolizer *sym,
		   void *arg)
{
	struct olds_arg *a = arg;

	return ls_json_olds(a->j, snap, &a->view, sym, (size_t)a->n);
}

static void view_olds(struct ls_web_req *r, struct ls_web_src *src,
		      struct ls_web_reply *rep)
{
	static const char *const params[] = { "n", NULL };
	struct olds_arg a = { .n = 10 };
	struct ls_web_buf b;
	struct ls_json j;
	int e;

	if (stack_params(r, params, &a.view, rep) ||
	    ls_web_param_count(r, "n", 100000, &a.n, rep))
		return;
	if (!src->snap->has_blocks) {
		ls_web_error(rep, 400, "this snapshot has no block list");
		return;
	}
	if (ls_web_json_begin(&b, &j, "leakscope-olds", rep))
		return;
	a.j = &j;
	ls_json_u64(&j, "pid", src->snap->hdr.pid);
	e = with_sym(src, olds_cb, &a);
	ls_web_json_end(&b, &j, e, 200, rep);
}

/* ------------------------------------------------------------ dispatch */

static const char *const views[] = {
	"report", "folded", "flamegraph.svg", "stats", "history", "olds",
};

int ls_web_view_known(const char *view)
{
	size_t i;

	for (i = 0; i < sizeof(views) / sizeof(views[0]); i++)
		if (!strcmp(view, views[i]))
			return 1;
	return 0;
}

void ls_web_view(struct ls_web_req *r, struct ls_web_src *src,
		 const char *view, struct ls_web_reply *rep)
{
	if (!strcmp(view, "report"))
		view_report(r, src, "json", rep);
	else if (!strcmp(view, "folded"))
		view_report(r, src, "folded", rep);
	else if (!strcmp(view, "flamegraph.svg"))
		view_report(r, src, "svg", rep);
	else if (!strcmp(view, "stats"))
		view_stats(r, src, rep);
	else if (!strcmp(view, "history"))
		view_history(r, src, rep);
	else
		view_olds(r, src, rep);
}

int ls_web_view_has_diff(void)
{
	return 1;
}

int ls_web_view_has_svg(void)
{
	return 1;
}

int ls_web_view_has_diff_svg(void)
{
	const struct ls_renderer *svg = ls_renderer_find("svg");

	return svg && ls_diff_format_ok(svg);
}

/* ---------------------------------------------------------------- diff */

/* One side of a diff: a saved snapshot's name, or "pid:N" for a live
 * process now (with its blocks when the filters need them). */
static int diff_side(struct ls_web_req *r, const char *param, int blocks,
		     struct ls_web_src *src, struct ls_web_reply *rep)
{
	const char *v = ls_web_param(r, param);

	memset(src, 0, sizeof(*src));
	if (!v)
		return ls_web_error(rep, 400, "'%s' is missing: a saved "
				    "snapshot's name or pid:N", param);
	if (!strncmp(v, "pid:", 4))
		return ls_web_src_live(r, v + 4, blocks, src, rep);
	return ls_web_src_saved(r, v, src, rep);
}

/* format=json (the default) or svg; *f names it. */
static int diff_format(struct ls_web_req *r, const char **f,
		       struct ls_web_reply *rep)
{
	const char *v = ls_web_param(r, "format");
	const struct ls_renderer *rr;

	*f = v ? v : "json";
	if (strcmp(*f, "json") && strcmp(*f, "svg"))
		return ls_web_error(rep, 400, "format is json or svg");
	rr = ls_renderer_find(*f);
	if (!rr || !ls_diff_format_ok(rr))
		return ls_web_error(rep, 501, "this build cannot draw a diff "
				    "as %s", *f);
	return 0;
}

static void diff_render(struct ls_web_src *base, struct ls_web_src *newer,
			const struct ls_report_opts *opts,
			struct ls_web_reply *rep)
{
	struct ls_web_buf b;
	struct ls_diff d;
	int e = ls_diff_build(base->snap, newer->snap, opts, &d);

	if (e == -ENODATA) {
		ls_web_error(rep, 400, "a snapshot has no block list for these "
			     "filters");
		return;
	}
	if (e || ls_web_buf_open(&b)) {
		if (!e)
			ls_diff_release(&d);
		ls_web_error(rep, 500, "cannot compare the snapshots");
		return;
	}
	e = ls_diff_render(b.fp, &d, opts);
	ls_diff_release(&d);
	if (e) {
		fclose(b.fp);
		free(b.data);
		ls_web_error(rep, 500, "cannot render the diff: %s", strerror(-e));
		return;
	}
	ls_web_buf_reply(&b, rep, opts->format->mime);
}

void ls_web_view_diff(struct ls_web_req *r, struct ls_web_reply *rep)
{
	/* With the report options of LS_RO_WEB_DIFF. */
	static const char *const params[] = { "from", "to", "format", "s", "x",
					      NULL };
	struct ls_web_src base, newer;
	struct ls_report_opts opts;
	const char *format;

	if (strcmp(r->method, "GET") && strcmp(r->method, "HEAD")) {
		ls_web_error(rep, 405, "this endpoint needs GET");
		return;
	}
	if (diff_format(r, &format, rep) ||
	    report_opts(r, format, LS_RO_WEB_DIFF, params, &opts, rep) ||
	    diff_side(r, "from", opts.need_blocks, &base, rep))
		return;
	if (!diff_side(r, "to", opts.need_blocks, &newer, rep)) {
		diff_render(&base, &newer, &opts, rep);
		ls_web_src_release(r, &newer);
	}
	ls_web_src_release(r, &base);
}

/* ---------------------------------------------------------- processes */

/* The process's total live bytes per growth sample: the sum of its
 * sites' rings, aligned on the newest sample (a ring that is shorter
 * started later). */
static void put_sparkline(struct ls_json *j, const struct ls_snapshot *s)
{
	int64_t sum[SPARK_POINTS] = { 0 };
	size_t i, k, n = 0;

	for (i = 0; i < s->nsites; i++) {
		const struct ls_site *site = &s->sites[i];
		size_t m = site->nhistory < SPARK_POINTS ? site->nhistory :
			   SPARK_POINTS;

		n = m > n ? m : n;
		for (k = 0; k < m; k++)
			sum[SPARK_POINTS - m + k] +=
				site->history[site->nhistory - m + k];
	}
	ls_json_array(j, "history");
	for (k = SPARK_POINTS - n; k < SPARK_POINTS; k++)
		ls_json_i64(j, NULL, sum[k]);
	ls_json_end(j);
}

static void put_process(struct ls_json *j, const struct ls_snapshot *s)
{
	uint64_t live = 0;
	size_t i;

	for (i = 0; i < s->nsites; i++)
		live += s->sites[i].live_blocks > 0;
	ls_json_object(j, NULL);
	ls_json_process(j, s);
	ls_json_u64(j, "live_bytes", s->totals.live_bytes);
	ls_json_u64(j, "live_blocks", s->totals.live_blocks);
	ls_json_u64(j, "allocated_bytes", s->totals.allocated_bytes);
	ls_json_u64(j, "peak_live_bytes", s->totals.peak_live_bytes);
	ls_json_u64(j, "sites", s->nsites);
	ls_json_u64(j, "sites_live", live);
	ls_json_u64(j, "period_ms", s->history.period_ms);
	put_sparkline(j, s);
	ls_json_end(j);
}

static void put_processes(struct ls_web_req *r, struct ls_json *j,
			  const pid_t *pids, size_t n)
{
	struct ls_web_snap **snaps = calloc(n + 1, sizeof(*snaps));
	int *bad = calloc(n + 1, sizeof(*bad));
	size_t i, nerr = 0;

	/* In parallel, by the agent timeout: slow agents cost the list
	 * their timeout once (web/listing.c). */
	if (!snaps || !bad || ls_web_snap_get_many(&r->w->agents, pids, n,
						   r->w->agent_timeout_ms + 500,
						   snaps, bad))
		for (i = 0; i < n && bad; i++)
			bad[i] = 500;
	ls_json_array(j, "processes");
	for (i = 0; i < n && snaps; i++) {
		if (snaps[i]) {
			put_process(j, &snaps[i]->snap);
			ls_web_snap_put(&r->w->agents, snaps[i]);
		} else if (bad && bad[i])
			nerr++;
	}
	ls_json_end(j);
	/* Agents that did not answer (busy, gone since the scan). */
	ls_json_array(j, "unreachable");
	for (i = 0; i < n && nerr; i++)
		if (bad[i]) {
			ls_json_object(j, NULL);
			ls_json_u64(j, "pid", (uint64_t)pids[i]);
			ls_json_u64(j, "status", (uint64_t)bad[i]);
			ls_json_end(j);
		}
	ls_json_end(j);
	free(snaps);
	free(bad);
}

void ls_web_view_processes(struct ls_web_req *r, struct ls_web_reply *rep)
{
	struct ls_web_buf b;
	struct ls_json j;
	pid_t *pids = NULL;
	ssize_t n;

	if (ls_web_params_only(r, NULL, rep))
		return;
	n = ls_web_agents_list(&pids);
	if (n < 0) {
		ls_web_error(rep, 500, "cannot list processes: %s",
			     strerror((int)-n));
		return;
	}
	if (!ls_web_json_begin(&b, &j, "leakscope-processes", rep)) {
		put_processes(r, &j, pids, (size_t)n);
		ls_web_json_end(&b, &j, 0, 200, rep);
	}
	free(pids);
}
