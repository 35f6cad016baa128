/*
 * cmd-watch.c - `leakscope watch PID|FILE`: timed slices, then a trend
 * summary.
 *
 * watch takes its own slices: it reloads the target every interval
 * (asking a running process for a snapshot, or reading a file again: a
 * post-mortem file is updated in place as its process runs), prints the
 * sites whose live bytes changed in each, and at the end labels each site
 * from the series it collected.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include "../lib/json.h"
#include "../lib/trend.h"
#include "../lib/util.h"
#include "cmds.h"
#include "refresh.h"

#define A(field) LS_ARG(struct ls_watch_args, field)

static const struct ls_option own[] = {
	LS_OPT__INTERVAL(struct ls_watch_args, interval_ns, 'i',
			 " (slices; default 1)"),
	LS_OPT__COUNT(struct ls_watch_args, count, 'n', 100000,
		      " (slices; default 10; also --slices)"),
	/* The older spelling of --count, kept for scripts. */
	{ .kind = LS_OPT_UINT, .long_name = "slices", .offset = A(count),
	  .argh = "N", .help = NULL, .flags = LS_OPTF_NONZERO | LS_OPTF_HIDDEN,
	  .max = 100000, .want = "a positive number" },
	LS_OPT__FORMAT(struct ls_watch_args, r.ropts.format, LS_OPTF_STATS,
		       " (default text; json: one object per slice and one\n"
		       "for the trends, a line each)"),
	LS_OPT__OUTPUT(struct ls_watch_args, r.output, 'o', ""),
	{ .kind = LS_OPT_END },
};

const struct ls_usage ls_watch_usage = {
	"watch", "[OPTIONS] PID|FILE",
	"slices of a running process's growth, then each site's trend",
	"Take a snapshot every SECONDS for N slices, print the sites whose\n"
	"live bytes changed in each, then label every site's growth: constant,\n"
	"saturating (a cache filling), linear or exponential.",
	(const struct ls_option *const[]){ own, ls_ropt_options, NULL },
	NULL, LS_RO_WATCH,
};

void ls_watch_defaults(void *args)
{
	struct ls_watch_args *a = args;

	a->interval_ns = 1000000000u;
	a->count = 10;
}

struct series {
	uint32_t id;
	int64_t *v;		/* one value per slice, 0 before the site existed */
};

struct watch {
	const struct ls_watch_args *a;
	FILE *out;
	int json;		/* --format json: an object per line */
	struct series *s;
	size_t ns, cap;
	struct ls_namer names;
};

static struct series *series_of(struct watch *w, uint32_t id)
{
	struct series *s;
	size_t i;

	for (i = 0; i < w->ns; i++)
		if (w->s[i].id == id)
			return &w->s[i];
	if (LS_GROW(w->s, w->ns + 1, w->cap))
		return NULL;
	s = &w->s[w->ns];
	s->id = id;
	s->v = calloc(w->a->count + 1, sizeof(*s->v));
	if (!s->v)
		return NULL;
	w->ns++;
	return s;
}

/* A site's figures in a slice's JSON object. */
static void json_site(struct ls_json *j, const char *desc, int64_t delta,
		      const struct ls_site *site)
{
	ls_json_object(j, NULL);
	ls_json_u64(j, "site", site->id);
	ls_json_str(j, "where", desc);
	ls_json_i64(j, "delta_bytes", delta);
	ls_json_i64(j, "live_bytes", site->live_bytes);
	ls_json_i64(j, "live_blocks", site->live_blocks);
	ls_json_end(j);
}

static void print_slice(struct watch *w, const struct ls_snapshot *snap,
			uint64_t k)
{
	struct ls_json j;
	char desc[512];
	size_t i;
	int any = 0;

	if (w->json) {
		ls_json_init(&j, w->out);
		ls_json_object(&j, NULL);
		ls_json_str(&j, "type", "slice");
		ls_json_u64(&j, "slice", k);
		ls_json_u64(&j, "slices", w->a->count);
		ls_json_ms(&j, "elapsed_ms", k * w->a->interval_ns);
		ls_json_u64(&j, "live_bytes", snap->totals.live_bytes);
		ls_json_u64(&j, "live_blocks", snap->totals.live_blocks);
		ls_json_array(&j, "changed");
	} else {
		fprintf(w->out, "[slice %" PRIu64 "/%" PRIu64 ", +%.1fs] %" PRIu64
			" bytes live in %" PRIu64 " blocks\n", k, w->a->count,
			(double)(k * w->a->interval_ns) / 1e9,
			snap->totals.live_bytes, snap->totals.live_blocks);
	}
	for (i = 0; i < snap->nsites; i++) {
		const struct ls_site *site = &snap->sites[i];
		struct series *s = series_of(w, site->id);
		int64_t before;

		if (!s)
			continue;
		s->v[k] = site->live_bytes;
		before = s->v[k - 1];
		if (site->live_bytes == before)
			continue;
		ls_namer_describe(&w->names, &w->a->r.ropts, site, desc,
				  sizeof(desc));
		if (w->json)
			json_site(&j, desc, site->live_bytes - before, site);
		else
			fprintf(w->out, "\t%+" PRId64 " bytes, now %" PRId64
				" in %" PRId64 " blocks: %s\n",
				site->live_bytes - before, site->live_bytes,
				site->live_blocks, desc);
		any = 1;
	}
	if (w->json) {
		ls_json_end(&j);
		ls_json_end(&j);
		fputc('\n', w->out);
	} else if (!any) {
		fputs("\tno site changed\n", w->out);
	}
	fflush(w->out);
}

struct verdict {
	const struct series *s;
	struct ls_trend t;
};

static int by_rate(const void *a, const void *b)
{
	const struct verdict *x = a, *y = b;

	return x->t.bytes_per_second > y->t.bytes_per_second ? -1 :
	       x->t.bytes_per_second < y->t.bytes_per_second;
}

static void put_verdict(struct watch *w, struct ls_json *j,
			const struct ls_snapshot *last, const struct verdict *v)
{
	const struct ls_site *site = ls_snapshot_site(last, v->s->id);
	int grows = v->t.label == LS_TREND_LINEAR ||
		    v->t.label == LS_TREND_EXPONENTIAL;
	char desc[512];

	if (!site || (!grows && !v->s->v[w->a->count]))
		return;
	ls_namer_describe(&w->names, &w->a->r.ropts, site, desc, sizeof(desc));
	if (!w->json) {
		fprintf(w->out, "\t%-11s %+12.0f B/s  %12" PRId64 " bytes  "
			"%s%s\n", ls_trend_name(v->t.label),
			v->t.bytes_per_second, v->s->v[w->a->count], desc,
			grows ? "  <- growing" : "");
		return;
	}
	ls_json_object(j, NULL);
	ls_json_u64(j, "site", site->id);
	ls_json_str(j, "where", desc);
	ls_json_str(j, "trend", ls_trend_name(v->t.label));
	ls_json_f64(j, "bytes_per_second", v->t.bytes_per_second, 1);
	ls_json_i64(j, "live_bytes", v->s->v[w->a->count]);
	ls_json_bool(j, "growing", grows);
	ls_json_end(j);
}

/*
 * A label needs LS_TREND_MIN_SAMPLES points.  With fewer slices, the
 * agent's own growth history (a sample per period, in the last snapshot)
 * labels the sites instead, when the source has one.
 */
static int classify(const struct watch *w, const struct ls_snapshot *last,
		    const struct series *s, int from_history, struct ls_trend *t)
{
	const struct ls_site *site;

	if (!from_history)
		return ls_trend_classify(s->v, w->a->count + 1,
					 (double)w->a->interval_ns / 1e9, t);
	site = ls_snapshot_site(last, s->id);
	if (!site || !site->history || !site->nhistory)
		return -ENODATA;
	return ls_trend_classify(site->history, site->nhistory,
				 last->history.period_ms / 1000.0, t);
}

_Static_assert(LS_TREND_MIN_SAMPLES == 5, "the summary's wording");

static void summary(struct watch *w, const struct ls_snapshot *last)
{
	double secs = (double)w->a->interval_ns / 1e9;
	struct verdict *v = calloc(w->ns + 1, sizeof(*v));
	struct ls_json j;
	int few = w->a->count + 1 < LS_TREND_MIN_SAMPLES;
	int hist = few && last->has_history && last->history.period_ms;
	size_t i, n = 0;

	if (!v)
		return;
	for (i = 0; i < w->ns; i++) {
		if (classify(w, last, &w->s[i], hist, &v[n].t))
			continue;
		v[n++].s = &w->s[i];
	}
	qsort(v, n, sizeof(*v), by_rate);
	if (w->json) {
		ls_json_init(&j, w->out);
		ls_json_object(&j, NULL);
		ls_json_str(&j, "type", "trends");
		ls_json_str(&j, "from", hist ? "agent-history" : few ?
			    "too-few-slices" : "slices");
		ls_json_array(&j, "sites");
	} else if (hist)
		fprintf(w->out, "\nTrend from the agent's samples, one per %.1fs (%" PRIu64
		       " slices are too few for a label: it needs %d points; "
		       "growing sites are leak suspects, saturating ones look "
		       "like caches):\n", last->history.period_ms / 1000.0,
		       w->a->count, LS_TREND_MIN_SAMPLES);
	else
		fprintf(w->out, "\nTrend over %" PRIu64 " slices of %.1fs (growing sites "
		       "are leak suspects; saturating ones look like caches)%s"
		       "\n", w->a->count, secs, few ?
		       ": too few for a label, which needs at least 5 points "
		       "(slices + 1)" : ":");
	for (i = 0; i < n; i++)
		put_verdict(w, &j, last, &v[i]);
	if (w->json) {
		ls_json_end(&j);
		ls_json_end(&j);
		fputc('\n', w->out);
	}
	free(v);
}

static void first_slice(struct watch *w, struct ls_snapshot *snap)
{
	size_t i;

	for (i = 0; i < snap->nsites; i++) {
		struct series *s = series_of(w, snap->sites[i].id);

		if (s)
			s->v[0] = snap->sites[i].live_bytes;
	}
	ls_namer_update(&w->names, snap);
}

/* The slices; returns the last slice reached. */
static uint64_t slices(struct watch *w, const char *target,
		       struct ls_snapshot *last)
{
	struct ls_snapshot snap;
	uint64_t k;

	for (k = 1; k <= w->a->count && !ls_refresh_stop; k++) {
		ls_refresh_sleep(w->a->interval_ns);
		if (ls_refresh_stop || ls_refresh_load(target, &snap))
			break;
		print_slice(w, &snap, k);
		ls_snapshot_release(last);
		*last = snap;
		/* A copy for the names: the last one is kept for the summary. */
		if (w->names.base.hdr.module_gen != last->hdr.module_gen &&
		    !ls_refresh_load(target, &snap))
			ls_namer_update(&w->names, &snap);
	}
	return k;
}

int ls_cmd_watch(struct ls_invocation *inv)
{
	struct watch w = { .a = inv->args };
	struct ls_snapshot snap, last = { 0 };
	struct ls_output out;
	int ret = LS_EXIT_ERROR;
	size_t i;

	ls_refresh_catch_signals();
	if (ls_refresh_load(inv->argv[0], &snap))
		return LS_EXIT_ERROR;
	if (ls_open_output(&out, w.a->r.output ? w.a->r.output : "-")) {
		ls_snapshot_release(&snap);
		return LS_EXIT_ERROR;
	}
	w.out = out.fp;
	w.json = ls_renderer_of(&w.a->r.ropts) == ls_renderer_find("json");
	first_slice(&w, &snap);
	if (slices(&w, inv->argv[0], &last) > w.a->count) {
		summary(&w, &last);
		ret = LS_EXIT_OK;
	} else if (ls_refresh_stop) {
		ret = LS_EXIT_OK;
	}
	if (ret != LS_EXIT_OK)
		ls_output_abort(&out);
	else if (ls_commit_output(&out))
		ret = LS_EXIT_ERROR;
	ls_snapshot_release(&last);
	ls_namer_release(&w.names);
	for (i = 0; i < w.ns; i++)
		free(w.s[i].v);
	free(w.s);
	return ret;
}
