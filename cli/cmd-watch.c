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
#include "../lib/trend.h"
#include "../lib/util.h"
#include "cmds.h"
#include "refresh.h"

#define A(field) LS_ARG(struct ls_watch_args, field)

static const struct ls_option own[] = {
	{ .kind = LS_OPT_SECONDS,
	  .short_name = 'i',
	  .long_name = "interval",
	  .offset = A(interval_ns),
	  .argh = "SECONDS",
	  .help = "time between slices (default 1)",
	  .want = "seconds" },
	{ .kind = LS_OPT_UINT,
	  .short_name = 'n',
	  .long_name = "slices",
	  .offset = A(slices),
	  .argh = "N",
	  .help = "number of slices (default 10)",
	  .flags = LS_OPTF_NONZERO,
	  .max = 100000,
	  .want = "1 to 100000 slices" },
	{ .kind = LS_OPT_END },
};

const struct ls_usage ls_watch_usage = {
	"watch", "[OPTIONS] PID|FILE",
	"slices of a running process's growth, then each site's trend",
	"Take a snapshot every SECONDS for N slices, print the sites whose\n"
	"live bytes changed in each, then label every site's growth: constant,\n"
	"saturating (a cache filling), linear or exponential.",
	(const struct ls_option *const[]){ own, ls_stack_options, NULL },
	NULL,
};

void ls_watch_defaults(void *args)
{
	struct ls_watch_args *a = args;

	a->interval_ns = 1000000000u;
	a->slices = 10;
}

struct series {
	uint32_t id;
	int64_t *v;		/* one value per slice, 0 before the site existed */
};

struct watch {
	const struct ls_watch_args *a;
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
	s->v = calloc(w->a->slices + 1, sizeof(*s->v));
	if (!s->v)
		return NULL;
	w->ns++;
	return s;
}

static void print_slice(struct watch *w, const struct ls_snapshot *snap,
			uint64_t k)
{
	char desc[512];
	size_t i;
	int any = 0;

	printf("[slice %" PRIu64 "/%" PRIu64 ", +%.1fs] %" PRIu64 " bytes live "
	       "in %" PRIu64 " blocks\n", k, w->a->slices,
	       (double)(k * w->a->interval_ns) / 1e9, snap->totals.live_bytes,
	       snap->totals.live_blocks);
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
		printf("\t%+" PRId64 " bytes, now %" PRId64 " in %" PRId64
		       " blocks: %s\n", site->live_bytes - before,
		       site->live_bytes, site->live_blocks, desc);
		any = 1;
	}
	if (!any)
		puts("\tno site changed");
	fflush(stdout);
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

static void put_verdict(struct watch *w, const struct ls_snapshot *last,
			const struct verdict *v)
{
	const struct ls_site *site = ls_snapshot_site(last, v->s->id);
	int grows = v->t.label == LS_TREND_LINEAR ||
		    v->t.label == LS_TREND_EXPONENTIAL;
	char desc[512];

	if (!site || (!grows && !v->s->v[w->a->slices]))
		return;
	ls_namer_describe(&w->names, &w->a->r.ropts, site, desc, sizeof(desc));
	printf("\t%-11s %+12.0f B/s  %12" PRId64 " bytes  %s%s\n",
	       ls_trend_name(v->t.label), v->t.bytes_per_second,
	       v->s->v[w->a->slices], desc, grows ? "  <- growing" : "");
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
		return ls_trend_classify(s->v, w->a->slices + 1,
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
	int few = w->a->slices + 1 < LS_TREND_MIN_SAMPLES;
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
	if (hist)
		printf("\nTrend from the agent's samples, one per %.1fs (%" PRIu64
		       " slices are too few for a label: it needs %d points; "
		       "growing sites are leak suspects, saturating ones look "
		       "like caches):\n", last->history.period_ms / 1000.0,
		       w->a->slices, LS_TREND_MIN_SAMPLES);
	else
		printf("\nTrend over %" PRIu64 " slices of %.1fs (growing sites "
		       "are leak suspects; saturating ones look like caches)%s"
		       "\n", w->a->slices, secs, few ?
		       ": too few for a label, which needs at least 5 points "
		       "(slices + 1)" : ":");
	for (i = 0; i < n; i++)
		put_verdict(w, last, &v[i]);
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

	for (k = 1; k <= w->a->slices && !ls_refresh_stop; k++) {
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
	int ret = LS_EXIT_ERROR;
	size_t i;

	ls_refresh_catch_signals();
	if (ls_refresh_load(inv->argv[0], &snap))
		return LS_EXIT_ERROR;
	first_slice(&w, &snap);
	if (slices(&w, inv->argv[0], &last) > w.a->slices) {
		summary(&w, &last);
		ret = LS_EXIT_OK;
	} else if (ls_refresh_stop) {
		ret = LS_EXIT_OK;
	}
	ls_snapshot_release(&last);
	ls_namer_release(&w.names);
	for (i = 0; i < w.ns; i++)
		free(w.s[i].v);
	free(w.s);
	return ret;
}
