/*
 * t-lib-hostile.c - snapshots another user could have written, with
 * figures at the edges of their types and nothing in their arrays, through
 * every report format, the statistics and diff.  The sums hold at
 * INT64_MAX instead of wrapping, and nothing is passed a
 * NULL it must not get.  tests/security/ubsan.sh builds this test and the
 * report library with -fsanitize=undefined, where any such fault stops it.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/diff.h"
#include "../../lib/render.h"
#include "../../lib/report.h"
#include "../../lib/symbolize.h"
#include "tap.h"

/* Every renderer on s, by every figure it can be sorted by: how many
 * reports were built and rendered without an error. */
static int render_all(const struct ls_snapshot *s, int *built)
{
	const struct ls_renderer *r;
	FILE *out = fopen("/dev/null", "w");
	int by, rendered = 0;

	*built = 0;
	for (r = ls_renderers; out && r->name; r++)
		for (by = LS_BY_LIVE; by <= LS_BY_TEMPORARY; by++) {
			struct ls_report_opts o = { .format = r, .by = by,
						    .show_allocs = by == LS_BY_LIVE,
						    .histogram = 1 };
			struct ls_symbolizer *sym = ls_symbolizer_new(s);
			struct ls_render_ctx c = { out, NULL, &o, sym };
			struct ls_report rep;

			ls_report_opts_finish(&o);
			if (!ls_report_build(s, &o, &rep)) {
				(*built)++;
				c.rep = &rep;
				rendered += r->render(&c) == 0;
				ls_report_release(&rep);
			}
			ls_symbolizer_free(sym);
		}
	if (out) {
		ls_render_stats_text(out, s);
		ls_render_stats_json(out, s);
		fclose(out);
	}
	return rendered;
}

/* n sites on one stack, live bytes and blocks from live[]. */
static void make(struct ls_snapshot *s, const int64_t *live, size_t n)
{
	size_t i;

	memset(s, 0, sizeof(*s));
	s->sites = calloc(n + 1, sizeof(*s->sites));
	s->blocks = calloc(2, sizeof(*s->blocks));
	for (i = 0; s->sites && i < n; i++) {
		struct ls_site *t = &s->sites[i];

		t->id = (uint32_t)i;
		t->live_bytes = t->live_blocks = live[i];
		t->allocated_bytes = t->allocated_blocks = UINT64_MAX;
		t->stats.peak_bytes = t->stats.peak_blocks = UINT64_MAX;
		t->stats.temp_bytes = t->stats.temp_blocks = INT64_MAX;
		t->frames = calloc(2, sizeof(uint64_t));
		t->nframes = 1;
		t->history = calloc(4, sizeof(int64_t));
		t->nhistory = 4;
		if (t->history) {
			t->history[0] = INT64_MIN;
			t->history[3] = INT64_MAX;
		}
	}
	s->nsites = n;
	s->has_history = 1;
	s->history = (struct lsnap_history){ .period_ms = 1000, .hist_len = 4,
					     .ticks = 4 };
	s->hdr.mono_ns = 5;
	s->hdr.start_mono_ns = UINT64_MAX;
	s->hdr.wall_ns = UINT64_MAX;
	s->has_totals = 1;
	s->totals.live_bytes = UINT64_MAX;
	if (s->blocks) {
		s->blocks[0] = (struct ls_block){ 0, UINT64_MAX, UINT64_MAX, 0, 0,
						  LSNAP_REACH_NONE };
		s->blocks[1] = (struct ls_block){ 0, UINT64_MAX, 0, 1, 0,
						  LSNAP_REACH_NONE };
		s->nblocks = 2;
	}
}

static int64_t diff_delta(const struct ls_snapshot *a,
			  const struct ls_snapshot *b, int *ok_build)
{
	struct ls_report_opts o = { 0 };
	FILE *out = fopen("/dev/null", "w");
	struct ls_diff d;
	int64_t delta = 0;

	ls_report_opts_finish(&o);
	*ok_build = !ls_diff_build(a, b, &o, &d);
	if (*ok_build) {
		delta = d.n ? d.entries[0].live_bytes_delta : 0;
		if (out)
			ls_diff_render(out, &d, &o);
		ls_diff_release(&d);
	}
	if (out)
		fclose(out);
	return delta;
}

int main(void)
{
	static const int64_t top[] = { INT64_MAX, INT64_MAX, 1 };
	static const int64_t bottom[] = { INT64_MIN, INT64_MIN };
	struct ls_snapshot empty = { 0 }, hi, lo;
	struct ls_report_opts o = { 0 };
	struct ls_report rep;
	int built, rendered, okb;

	rendered = render_all(&empty, &built);
	ok(built > 0 && rendered == built, "an empty snapshot: %d reports "
	   "built, %d rendered", built, rendered);
	make(&hi, top, 3);
	make(&lo, bottom, 2);
	ls_report_opts_finish(&o);
	memset(&rep, 0, sizeof(rep));
	okb = !ls_report_build(&hi, &o, &rep);
	ok(okb && rep.live_bytes == INT64_MAX && rep.live_blocks == INT64_MAX,
	   "live bytes over INT64_MAX held at INT64_MAX: %lld",
	   (long long)rep.live_bytes);
	ls_report_release(&rep);
	rendered = render_all(&hi, &built);
	ok(built > 0 && rendered == built, "figures at INT64_MAX: %d reports "
	   "built, %d rendered", built, rendered);
	rendered = render_all(&lo, &built);
	ok(built >= 0 && rendered == built, "figures at INT64_MIN: %d built, "
	   "%d rendered", built, rendered);
	ok(diff_delta(&lo, &hi, &okb) == INT64_MAX && okb,
	   "diff from INT64_MIN to INT64_MAX: the growth held at INT64_MAX");
	ok(diff_delta(&hi, &lo, &okb) == -INT64_MAX && okb,
	   "diff the other way (negative sites hold nothing): -INT64_MAX");
	diff_delta(&empty, &empty, &okb);
	ok(okb, "diff of two empty snapshots");
	ls_snapshot_release(&hi);
	ls_snapshot_release(&lo);
	return tap_done();
}
