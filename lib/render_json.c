/*
 * render_json.c - the machine-readable report: one compact JSON object per
 * snapshot on one line.  The schema is docs/JSON-REPORT.md (version 1);
 * any change here must keep to its stability rules.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "json.h"
#include "render.h"

#define LS_JSON_REPORT_VERSION 1

static void put_hex(struct ls_json *j, const char *key, uint64_t v)
{
	char buf[24];

	snprintf(buf, sizeof(buf), "0x%" PRIx64, v);
	ls_json_str(j, key, buf);
}

/* ISO 8601 UTC, millisecond precision. */
static void put_time(struct ls_json *j, const char *key, uint64_t wall_ns)
{
	time_t sec = (time_t)(wall_ns / 1000000000);
	char buf[64], date[40];
	struct tm tm;

	if (!gmtime_r(&sec, &tm) ||
	    !strftime(date, sizeof(date), "%Y-%m-%dT%H:%M:%S", &tm)) {
		ls_json_null(j, key);
		return;
	}
	snprintf(buf, sizeof(buf), "%s.%03uZ", date,
		 (unsigned)(wall_ns / 1000000 % 1000));
	ls_json_str(j, key, buf);
}

/* "notes": what the agent could not do as asked, a string a line. */
static void put_notes(struct ls_json *j, const char *notes)
{
	const char *nl;
	char line[LSNAP_NOTES_MAX];

	ls_json_array(j, "notes");
	for (; notes && (nl = strchr(notes, '\n')); notes = nl + 1) {
		snprintf(line, sizeof(line), "%.*s", (int)(nl - notes), notes);
		ls_json_str(j, NULL, line);
	}
	ls_json_end(j);
}

/* "stale_modules": null, or the module map is an earlier walk's because
 * another thread held the loader's lock: who, and how old the map is. */
static void put_module_walk(struct ls_json *j, const struct ls_snapshot *s)
{
	if (!s->has_module_walk) {
		ls_json_null(j, "stale_modules");
		return;
	}
	ls_json_object(j, "stale_modules");
	if (s->has_loader)
		ls_json_u64(j, "loader_lock_thread", s->loader.tid);
	else
		ls_json_null(j, "loader_lock_thread");
	ls_json_ms(j, "age_ms", ls_module_walk_age_ns(s));
	ls_json_u64(j, "walks_refused", s->module_walk.refused);
	ls_json_end(j);
}

static void put_container(struct ls_json *j, const struct ls_container *k)
{
	char name[300];

	ls_json_object(j, "container");
	ls_json_str(j, "name", ls_container_name(k, name, sizeof(name)));
	ls_json_str(j, "hostname", k->hostname);
	ls_json_str(j, "cgroup", k->cgroup);
	ls_json_u64(j, "pid_inside", (uint64_t)k->nspid);
	ls_json_object(j, "namespaces");
	ls_json_u64(j, "pid", k->ns_pid);
	ls_json_u64(j, "mnt", k->ns_mnt);
	ls_json_u64(j, "user", k->ns_user);
	ls_json_u64(j, "uts", k->ns_uts);
	ls_json_u64(j, "cgroup", k->ns_cgroup);
	ls_json_end(j);
	ls_json_end(j);
}

void ls_json_process(struct ls_json *j, const struct ls_snapshot *s)
{
	const struct lsnap_header *h = &s->hdr;
	size_t i;

	ls_json_u64(j, "pid", h->pid);
	if (s->has_container)
		put_container(j, &s->container);
	ls_json_u64(j, "ppid", h->ppid);
	ls_json_array(j, "command");
	for (i = 0; i < s->argc; i++)
		ls_json_str(j, NULL, s->argv[i]);
	ls_json_end(j);
	if (h->mode == LSNAP_MODE_SAMPLED) {
		ls_json_str(j, "mode", "sampled");
		ls_json_u64(j, "sample_rate", h->sample_rate);
	} else {
		ls_json_str(j, "mode", "full");
	}
	ls_json_str(j, "reason",
		    h->reason == LSNAP_REASON_REQUEST ? "live" : "exit");
	ls_json_bool(j, "postmortem", s->postmortem);
	if (s->postmortem) {
		ls_json_bool(j, "exited", s->exited);
		ls_json_bool(j, "torn", s->torn);
		ls_json_bool(j, "recorded", !s->has_history ||
			     s->history.ticks != 0);
	}
	put_time(j, "time", h->wall_ns);
	if (s->has_attach)
		put_time(j, "attached", s->attach.wall_ns);
	else
		ls_json_null(j, "attached");
	if (s->has_namespaces) {
		ls_json_object(j, "namespaces");
		ls_json_u64(j, "pid", s->namespaces.pid_ns);
		ls_json_u64(j, "mnt", s->namespaces.mnt_ns);
		ls_json_end(j);
	}
	ls_json_ms(j, "uptime_ms", h->mono_ns > h->start_mono_ns ?
		   h->mono_ns - h->start_mono_ns : 0);
	ls_json_u64(j, "threads", h->nthreads);
	put_notes(j, s->notes);
	put_module_walk(j, s);
}

static void put_reach_figs(struct ls_json *j, const char *key,
			   const struct ls_reach_figs *f);

static void put_totals(struct ls_json *j, const struct ls_snapshot *s)
{
	const struct lsnap_totals *t = &s->totals;

	if (!s->has_totals)
		return;
	ls_json_object(j, "totals");
	ls_json_u64(j, "live_bytes", t->live_bytes);
	ls_json_u64(j, "live_blocks", t->live_blocks);
	ls_json_u64(j, "allocated_bytes", t->allocated_bytes);
	ls_json_u64(j, "allocated_blocks", t->allocated_blocks);
	ls_json_u64(j, "peak_live_bytes", t->peak_live_bytes);
	ls_json_u64(j, "peak_slack", t->peak_slack);
	ls_json_u64(j, "allocator_mapped_bytes",
		    ls_snapshot_apart_bytes(s, LSNAP_KIND_ALLOCATOR));
	ls_json_u64(j, "reserved_bytes",
		    ls_snapshot_apart_bytes(s, LSNAP_KIND_RESERVED));
	ls_json_u64(j, "dropped", s->dropped);
	if (s->has_reach) {
		/* The whole check's figures: before filters and
		 * suppressions (the report's are in "reachability"). */
		struct ls_reach_figs f = { 0 };
		unsigned k;

		for (k = 0; k < LSNAP_REACH_KINDS; k++) {
			f.bytes[k] = s->reach.bytes[k];
			f.blocks[k] = s->reach.blocks[k];
		}
		f.indirect_bytes = s->reach.bytes[LSNAP_REACH_INDIRECT];
		f.indirect_blocks = s->reach.blocks[LSNAP_REACH_INDIRECT];
		put_reach_figs(j, "reachability", &f);
	}
	ls_json_end(j);
}

static void put_calls(struct ls_json *j, const struct ls_snapshot *s)
{
	size_t i;

	ls_json_object(j, "calls");
	for (i = 0; i < s->ncalls; i++)
		ls_json_u64(j, s->calls[i].name, s->calls[i].count);
	ls_json_end(j);
}

static void put_mallinfo(struct ls_json *j, const struct ls_snapshot *s)
{
	const struct lsnap_mallinfo *m = &s->mallinfo;

	if (!s->has_mallinfo)
		return;
	ls_json_object(j, "mallinfo");
	ls_json_u64(j, "arena", m->arena);
	ls_json_u64(j, "ordblks", m->ordblks);
	ls_json_u64(j, "smblks", m->smblks);
	ls_json_u64(j, "hblks", m->hblks);
	ls_json_u64(j, "hblkhd", m->hblkhd);
	ls_json_u64(j, "usmblks", m->usmblks);
	ls_json_u64(j, "fsmblks", m->fsmblks);
	ls_json_u64(j, "uordblks", m->uordblks);
	ls_json_u64(j, "fordblks", m->fordblks);
	ls_json_u64(j, "keepcost", m->keepcost);
	ls_json_end(j);
}

static const char *unwinder_name(uint32_t u)
{
	switch (u) {
	case LSNAP_UNWINDER_CFI: return "cfi";
	case LSNAP_UNWINDER_LIBUNWIND: return "libunwind";
	case LSNAP_UNWINDER_CHECK: return "check";
	case LSNAP_UNWINDER_NONE: return "none";
	}
	return "unknown";
}

static void put_unwind(struct ls_json *j, const struct ls_snapshot *s)
{
	const struct lsnap_unwind *u = &s->unwind;

	if (!s->has_unwind)
		return;
	ls_json_object(j, "unwind");
	ls_json_str(j, "unwinder", unwinder_name(u->unwinder));
	ls_json_u64(j, "walks", u->walks);
	ls_json_u64(j, "memo_hits", u->memo_hits);
	if (u->unwinder == LSNAP_UNWINDER_CHECK)
		ls_json_u64(j, "check_mismatches", u->check_mismatches);
	ls_json_end(j);
}

static void put_agent_memory(struct ls_json *j, const struct ls_snapshot *s)
{
	const struct lsnap_agent_memory *m = &s->agent_memory;

	if (!s->has_agent_memory)
		return;
	ls_json_object(j, "agent_memory");
	ls_json_u64(j, "mapped", m->mapped);
	ls_json_u64(j, "resident", m->resident);
	ls_json_u64(j, "live_table_mapped", m->live_mapped);
	ls_json_u64(j, "live_table_resident", m->live_resident);
	ls_json_u64(j, "live_table_entries", m->live_entries);
	ls_json_u64(j, "arena_mapped", m->arena_mapped);
	ls_json_u64(j, "postmortem_resident", m->postmortem_resident);
	ls_json_u64(j, "thread_records", m->thread_records);
	ls_json_end(j);
}

void ls_json_filters(struct ls_json *j, const struct ls_report_opts *o)
{
	ls_json_object(j, "filters");
	ls_json_ms(j, "min_age_ms", o->min_age_ns);
	ls_json_u64(j, "min_size", o->min_size);
	if (o->max_size)
		ls_json_u64(j, "max_size", o->max_size);
	else
		ls_json_null(j, "max_size");
	if (o->top)
		ls_json_u64(j, "top", o->top);
	else
		ls_json_null(j, "top");
	ls_json_bool(j, "growing", o->growing);
	if (o->only) {		/* --only: the reachability kinds kept */
		ls_json_array(j, "only");
		for (unsigned k = 0; k < LSNAP_REACH_KINDS; k++)
			if (o->only & 1u << k)
				ls_json_str(j, NULL, ls_reach_kind_word(k));
		ls_json_end(j);
	}
	ls_json_end(j);
}

static void put_filters(struct ls_json *j, const struct ls_render_ctx *c)
{
	ls_json_filters(j, c->opts);
	ls_json_u64(j, "sites_total", c->rep->nsites_total);
	ls_json_object(j, "matched");
	ls_json_i64(j, "live_bytes", c->rep->live_bytes);
	ls_json_i64(j, "live_blocks", c->rep->live_blocks);
	ls_json_end(j);
}

/* {"definite": {"bytes", "blocks"}, ..., "held_indirect": {...}} */
static void put_reach_figs(struct ls_json *j, const char *key,
			   const struct ls_reach_figs *f)
{
	unsigned k;

	ls_json_object(j, key);
	for (k = 0; k < LSNAP_REACH_KINDS; k++) {
		ls_json_object(j, ls_reach_kind_word(k));
		ls_json_u64(j, "bytes", f->bytes[k]);
		ls_json_u64(j, "blocks", f->blocks[k]);
		ls_json_end(j);
	}
	ls_json_object(j, "held_indirect");
	ls_json_u64(j, "bytes", f->indirect_bytes);
	ls_json_u64(j, "blocks", f->indirect_blocks);
	ls_json_end(j);
	ls_json_end(j);
}

/* What valgrind's heuristics reached: {"stdstring": {bytes, blocks}...},
 * every heuristic listed. */
static void put_heuristics(struct ls_json *j, const struct ls_snapshot *s)
{
	unsigned k;

	if (!s->has_reach_heur)
		return;
	ls_json_object(j, "heuristics");
	for (k = 1; k < LSNAP_HEUR_KINDS; k++) {
		ls_json_object(j, ls_reach_heur_name(k));
		ls_json_u64(j, "bytes", s->reach_heur.bytes[k]);
		ls_json_u64(j, "blocks", s->reach_heur.blocks[k]);
		ls_json_end(j);
	}
	ls_json_end(j);
}

/* Which method ran and why, the pause budget, the heap model. */
static void put_how(struct ls_json *j, const struct ls_snapshot *s)
{
	const struct lsnap_reach_how *h = &s->reach_how;
	const char *word;

	if (!s->has_reach_how)
		return;
	ls_json_str(j, "method_asked", h->asked ? "fork" : "concurrent");
	if (ls_reach_fallback_text(h->fallback, &word)) {
		ls_json_str(j, "fallback", word);
		ls_json_str(j, "fallback_reason",
			    ls_reach_fallback_text(h->fallback, NULL));
	} else {
		ls_json_null(j, "fallback");
		ls_json_null(j, "fallback_reason");
	}
	if (h->budget_ns)
		ls_json_f64(j, "pause_budget_ms", (double)h->budget_ns / 1e6, 3);
	else
		ls_json_null(j, "pause_budget_ms");
	ls_json_f64(j, "stop_predicted_ms", (double)h->predicted_ns / 1e6, 3);
	ls_json_f64(j, "stop_work_ms", (double)h->stop_work_ns / 1e6, 3);
	ls_json_u64(j, "preclean_passes", h->passes);
	ls_json_u64(j, "dirty_pages", h->dirty_pages);
	ls_json_object(j, "heap_model");
	ls_json_str(j, "allocator", ls_heap_alloc_name(h->allocator));
	ls_json_u64(j, "untracked_scanned_bytes", h->alloc_root_bytes);
	ls_json_u64(j, "unscanned_bytes", h->alloc_unscanned_bytes);
	ls_json_end(j);
}

/* The check itself: when, how long the threads were held, its cost. */
static void put_check(struct ls_json *j, const struct ls_render_ctx *c)
{
	const struct ls_snapshot *s = c->rep->snap;
	const struct lsnap_reach *r = &s->reach;

	if (!s->has_reach)
		return;
	ls_json_object(j, "check");
	ls_json_bool(j, "at_exit", !!(r->flags & LSNAP_REACH_AT_EXIT));
	ls_json_str(j, "method", r->flags & LSNAP_REACH_CONCURRENT ?
		    "concurrent" : "fork");
	ls_json_bool(j, "all_registers", !(r->flags & LSNAP_REACH_NO_REGS));
	ls_json_bool(j, "torn", !!(r->flags & LSNAP_REACH_TORN));
	ls_json_bool(j, "partial", !!(r->flags & LSNAP_REACH_PARTIAL));
	ls_json_bool(j, "loader_lock_held",
		     !!(r->flags & LSNAP_REACH_LOADER_HELD));
	if ((r->flags & LSNAP_REACH_LOADER_HELD) && s->has_loader)
		ls_json_u64(j, "loader_lock_thread", s->loader.tid);
	else
		ls_json_null(j, "loader_lock_thread");
	ls_json_u64(j, "threads_stopped", r->nthreads);
	if (s->reach_pause_ns) {
		ls_json_f64(j, "pause_ms", (double)s->reach_pause_ns / 1e6, 3);
		/* Where it went: stopping the threads, the agent's answer
		 * (rescan or clone), the rest is letting them go. */
		ls_json_f64(j, "pause_stop_ms", (double)s->reach_stop_ns / 1e6, 3);
		ls_json_f64(j, "pause_agent_ms", (double)s->reach_agent_ns / 1e6,
			    3);
	} else {
		ls_json_null(j, "pause_ms");
	}
	put_how(j, s);
	ls_json_f64(j, "scan_ms", (double)r->scan_ns / 1e6, 3);
	ls_json_u64(j, "root_bytes", r->root_bytes);
	ls_json_u64(j, "heap_bytes_scanned", r->heap_bytes);
	ls_json_u64(j, "memory_bytes", r->mem_bytes);
	put_heuristics(j, s);
	ls_json_end(j);
	put_reach_figs(j, "reachability", &c->rep->reach);
	ls_json_object(j, "suppressed");
	ls_json_u64(j, "bytes", c->rep->supp_bytes);
	ls_json_u64(j, "blocks", c->rep->supp_blocks);
	ls_json_u64(j, "sites", c->rep->supp_sites);
	ls_json_end(j);
}

void ls_json_frame(struct ls_json *j, const struct ls_symframe *f)
{
	char buf[512], *own;

	ls_json_object(j, NULL);
	put_hex(j, "address", f->addr);
	ls_json_str(j, "function", f->function);
	if (f->function && !f->inlined)
		ls_json_u64(j, "offset", f->offset);
	else
		ls_json_null(j, "offset");
	ls_json_str(j, "module", f->module);
	ls_json_str(j, "file", f->file);
	if (f->line)
		ls_json_u64(j, "line", (uint64_t)f->line);
	else
		ls_json_null(j, "line");
	ls_json_bool(j, "inlined", f->inlined);
	ls_json_str(j, "text", ls_frame_text(f, LS_FRAME_ALL, buf, sizeof(buf),
					     &own));
	free(own);
	ls_json_end(j);
}

static void put_blocks(struct ls_json *j, const struct ls_render_ctx *c,
		       const struct ls_report_site *r)
{
	size_t i;

	ls_json_array(j, "blocks");
	for (i = 0; i < r->nblocks; i++) {
		const struct ls_block *b = r->blocks[i];

		ls_json_object(j, NULL);
		put_hex(j, "address", b->addr);
		ls_json_u64(j, "size", b->size);
		ls_json_ms(j, "age_ms", ls_block_age_ns(c->rep->snap, b));
		ls_json_u64(j, "tid", b->tid);
		ls_json_end(j);
	}
	ls_json_end(j);
}

static void put_hist(struct ls_json *j, const char *key, const uint64_t *h)
{
	unsigned b;

	ls_json_array(j, key);
	for (b = 0; b < LSNAP_HIST_BUCKETS; b++)
		ls_json_u64(j, NULL, h[b]);
	ls_json_end(j);
}

/* Peak, activity, temporaries and histograms of one site. */
static void put_site_stats(struct ls_json *j, const struct ls_render_ctx *c,
			   const struct ls_site *s)
{
	const struct ls_snapshot *snap = c->rep->snap;
	uint64_t size[LSNAP_HIST_BUCKETS], life[LSNAP_HIST_BUCKETS];

	ls_json_i64(j, "peak_bytes", s->stats.peak_bytes);
	ls_json_i64(j, "peak_blocks", s->stats.peak_blocks);
	ls_json_f64(j, "allocated_bytes_per_second",
		    ls_report_per_second(snap, s->allocated_bytes), 1);
	ls_json_f64(j, "allocated_blocks_per_second",
		    ls_report_per_second(snap, s->allocated_blocks), 1);
	ls_json_u64(j, "temporary_bytes", s->stats.temp_bytes);
	ls_json_u64(j, "temporary_blocks", s->stats.temp_blocks);
	ls_site_hist(snap, s, size, life);
	put_hist(j, "size_histogram", size);
	put_hist(j, "lifetime_histogram", life);
}

/* When the process peaked, and the whole process's histograms. */
static void put_peak(struct ls_json *j, const struct ls_render_ctx *c)
{
	const struct ls_snapshot *s = c->rep->snap;

	ls_json_str(j, "by", ls_report_by_names[c->rep->by]);
	if (!s->has_peak) {
		ls_json_null(j, "peak");
		return;
	}
	ls_json_object(j, "peak");
	ls_json_ms(j, "time_ms", s->peak.peak_mono_ns > s->hdr.start_mono_ns ?
		   s->peak.peak_mono_ns - s->hdr.start_mono_ns : 0);
	ls_json_i64(j, "sites_bytes", s->peak.sites_bytes);
	ls_json_i64(j, "sites_blocks", s->peak.sites_blocks);
	ls_json_end(j);
	if (!c->rep->has_histogram)
		return;
	ls_json_object(j, "histogram");
	ls_json_u64(j, "buckets", LSNAP_HIST_BUCKETS);
	ls_json_u64(j, "lifetime_ticks_per_second", LSNAP_LIFE_TICKS_PER_S);
	put_hist(j, "sizes", c->rep->size_hist);
	put_hist(j, "lifetimes", c->rep->life_hist);
	ls_json_end(j);
}

static int put_site(struct ls_json *j, const struct ls_render_ctx *c,
		    const struct ls_report_site *r, struct ls_stack *st)
{
	size_t i;
	int ret = ls_render_stack(c, r->site, st);

	if (ret)
		return ret;
	ls_json_object(j, NULL);
	ls_json_u64(j, "id", r->site->id);
	ls_json_str(j, "kind", ls_site_kind_name(r->site->kind));
	ls_json_i64(j, "live_bytes", r->live_bytes);
	ls_json_i64(j, "live_blocks", r->live_blocks);
	ls_json_u64(j, "allocated_bytes", r->allocated_bytes);
	ls_json_u64(j, "allocated_blocks", r->allocated_blocks);
	if (c->rep->snap->has_peak)
		put_site_stats(j, c, r->site);
	if (c->rep->snap->has_reach && r->site->kind != LSNAP_KIND_MMAP)
		put_reach_figs(j, "reachability", r->reach);
	if (r->trend) {
		ls_json_object(j, "trend");
		ls_json_str(j, "label", ls_trend_name(r->trend->label));
		ls_json_f64(j, "bytes_per_second", r->trend->bytes_per_second, 1);
		ls_json_f64(j, "confidence", r->trend->confidence, 3);
		ls_json_u64(j, "samples", r->trend->nsamples);
		ls_json_end(j);
	}
	ls_json_array(j, "frames");
	for (i = 0; i < st->n; i++)
		ls_json_frame(j, &st->f[i]);
	ls_json_end(j);
	if (c->opts->show_allocs)
		put_blocks(j, c, r);
	ls_json_end(j);
	return 0;
}

int ls_render_json(const struct ls_render_ctx *c)
{
	const struct ls_snapshot *s = c->rep->snap;
	struct ls_stack st = { 0 };
	struct ls_json j;
	size_t i;
	int ret = 0;

	ls_json_init(&j, c->out);
	ls_json_object(&j, NULL);
	ls_json_str(&j, "format", "leakscope-report");
	ls_json_u64(&j, "version", LS_JSON_REPORT_VERSION);
	ls_json_process(&j, s);
	put_totals(&j, s);
	put_calls(&j, s);
	put_mallinfo(&j, s);
	put_unwind(&j, s);
	put_filters(&j, c);
	put_peak(&j, c);
	put_check(&j, c);
	ls_json_array(&j, "sites");
	for (i = 0; i < c->rep->nsites && !ret; i++)
		ret = put_site(&j, c, &c->rep->sites[i], &st);
	ls_stack_release(&st);
	if (ret)
		return ret;
	ls_json_end(&j);
	ls_json_end(&j);
	fputc('\n', c->out);
	ret = ls_json_finish(&j);
	return ret == -EIO ? 0 : ret;	/* write errors: report.c checks */
}

/* `leakscope stats --format json`: the process, totals, calls and
 * allocator figures of a report, with site counts instead of sites. */
int ls_render_stats_json(FILE *out, const struct ls_snapshot *s)
{
	struct ls_json j;
	uint64_t live = 0;
	size_t i;

	for (i = 0; i < s->nsites; i++)
		live += s->sites[i].live_blocks > 0;
	ls_json_init(&j, out);
	ls_json_object(&j, NULL);
	ls_json_str(&j, "format", "leakscope-stats");
	ls_json_u64(&j, "version", 1);
	ls_json_process(&j, s);
	put_totals(&j, s);
	ls_json_u64(&j, "sites", s->nsites);
	ls_json_u64(&j, "sites_live", live);
	put_calls(&j, s);
	put_mallinfo(&j, s);
	put_unwind(&j, s);
	put_agent_memory(&j, s);
	ls_json_end(&j);
	fputc('\n', out);
	return ls_json_finish(&j);
}

/* --- the oldest blocks (`olds --format json`, the web API's olds) ---- */

static int json_old(struct ls_json *j, const struct ls_render_ctx *c,
		    const struct ls_block *b, struct ls_stack *st)
{
	const struct ls_snapshot *snap = c->rep->snap;
	const struct ls_site *site = ls_snapshot_site(snap, b->site);
	char addr[24];
	size_t i;
	int r = 0;

	snprintf(addr, sizeof(addr), "0x%llx", (unsigned long long)b->addr);
	ls_json_object(j, NULL);
	ls_json_str(j, "address", addr);
	ls_json_u64(j, "size", b->size);
	ls_json_ms(j, "age_ms", ls_block_age_ns(snap, b));
	ls_json_u64(j, "tid", b->tid);
	ls_json_u64(j, "site", b->site);
	if (site && !(r = ls_render_stack(c, site, st))) {
		ls_json_array(j, "frames");
		for (i = 0; i < st->n; i++)
			ls_json_frame(j, &st->f[i]);
		ls_json_end(j);
	}
	ls_json_end(j);
	return r;
}

int ls_json_olds(struct ls_json *j, const struct ls_snapshot *snap,
		 const struct ls_report_opts *opts, struct ls_symbolizer *sym,
		 size_t n)
{
	const struct ls_block **v = malloc((snap->nblocks + 1) * sizeof(*v));
	struct ls_report rep = { .snap = snap };
	struct ls_render_ctx c = { .rep = &rep, .opts = opts, .sym = sym };
	struct ls_stack st = { 0 };
	size_t i;
	int r = 0;

	if (!v)
		return -ENOMEM;
	/* The snapshot may be shared (the web server's): sort pointers. */
	for (i = 0; i < snap->nblocks; i++)
		v[i] = &snap->blocks[i];
	qsort(v, snap->nblocks, sizeof(*v), ls_block_cmp_age);
	ls_json_u64(j, "blocks_total", snap->nblocks);
	ls_json_array(j, "blocks");
	for (i = 0; i < snap->nblocks && i < n && !r; i++)
		r = json_old(j, &c, v[i], &st);
	ls_json_end(j);
	ls_stack_release(&st);
	free(v);
	return r;
}
