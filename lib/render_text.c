/*
 * render_text.c - the human-readable report, in the spirit of bcc's
 * memleak: a header, the sites with their stacks, then the totals.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "render.h"

static int estimates(const struct ls_render_ctx *c)
{
	return c->rep->snap->hdr.mode == LSNAP_MODE_SAMPLED;
}

/* Strings come from the traced program and its files: keep control
 * characters away from the terminal. */
void ls_text_safe(FILE *out, const char *s)
{
	for (; *s; s++)
		fputc((unsigned char)*s < 0x20 || *s == 0x7f ? '?' : *s, out);
}

static void put_frame_text(FILE *out, const char *indent,
			   const struct ls_symframe *f, unsigned parts)
{
	char buf[1024], *own;

	fputs(indent, out);
	fputs(ls_frame_text(f, parts, buf, sizeof(buf), &own), out);
	free(own);
}

void ls_text_frame_name(FILE *out, const char *indent,
			const struct ls_symframe *f)
{
	put_frame_text(out, indent, f, LS_FRAME_NAME);
}

/* The one way every text output prints a frame (reports, olds, diffs). */
void ls_text_frame(FILE *out, const struct ls_symframe *f)
{
	put_frame_text(out, "\t\t", f, LS_FRAME_ALL);
	fputc('\n', out);
}

/* "~" for an estimate, a minus sign, then v's digits: printf's "%s%"
 * PRIu64 without its parsing, which took a third of a 100k-stack
 * report's formatting (three numbers a stack). */
static void put_digits(const struct ls_render_ctx *c, int neg, uint64_t v)
{
	char buf[24], *p = buf + sizeof(buf);

	do
		*--p = (char)('0' + v % 10);
	while (v /= 10);
	if (neg)
		*--p = '-';
	if (estimates(c))
		*--p = '~';
	fwrite_unlocked(p, 1, (size_t)(buf + sizeof(buf) - p), c->out);
}

static void put_num(const struct ls_render_ctx *c, int64_t v)
{
	put_digits(c, v < 0, v < 0 ? -(uint64_t)v : (uint64_t)v);
}

static void put_unum(const struct ls_render_ctx *c, uint64_t v)
{
	put_digits(c, 0, v);
}

static void put_seconds(FILE *out, uint64_t ns)
{
	fprintf(out, "%" PRIu64 ".%03us", ns / 1000000000,
		(unsigned)(ns / 1000000 % 1000));
}

static void put_filters(const struct ls_render_ctx *c)
{
	const struct ls_report_opts *o = c->opts;

	if (o->growing)
		fputs("Filters: only sites whose live bytes keep growing\n",
		      c->out);
	if (!o->min_age_ns && !o->min_size && !o->max_size)
		return;
	fputs("Filters: only blocks", c->out);
	if (o->min_age_ns) {
		fputs(" at least ", c->out);
		put_seconds(c->out, o->min_age_ns);
		fputs(" old", c->out);
	}
	if (o->min_size)
		fprintf(c->out, "%s at least %" PRIu64 " bytes",
			o->min_age_ns ? "," : "", o->min_size);
	if (o->max_size)
		fprintf(c->out, "%s at most %" PRIu64 " bytes",
			o->min_age_ns || o->min_size ? "," : "", o->max_size);
	fputc('\n', c->out);
}

/* Attached to a running process: what came before is not in the report. */
static void put_attached(FILE *out, uint64_t wall_ns)
{
	time_t sec = (time_t)(wall_ns / 1000000000);
	char date[40] = "?";
	struct tm tm;

	if (gmtime_r(&sec, &tm))
		strftime(date, sizeof(date), "%Y-%m-%d %H:%M:%S UTC", &tm);
	fprintf(out, "Tracking since attaching at %s: blocks allocated "
		"before are not known\n", date);
}

/* The agent's notes, each on a line of its own after "Agent: ". */
static void put_notes(FILE *out, const char *notes)
{
	const char *nl;

	for (; notes && *notes; notes = nl + 1) {
		nl = strchr(notes, '\n');
		if (!nl)
			break;
		fputs("Agent: ", out);
		fwrite(notes, 1, (size_t)(nl - notes), out);
		fputc('\n', out);
	}
}

/* Another thread held the loader's lock when the snapshot's refresh of
 * the module map asked: the map is an earlier walk's. */
static void put_module_walk(FILE *out, const struct ls_snapshot *s)
{
	if (!s->has_module_walk)
		return;
	if (s->has_loader)
		fprintf(out, "Note: thread %u held the loader's lock: ",
			s->loader.tid);
	else
		fputs("Note: another thread held the loader's lock: ", out);
	fputs("the module map is the one read ", out);
	put_seconds(out, ls_module_walk_age_ns(s));
	fputs(" before this snapshot; objects loaded or unloaded since are "
	      "not in it\n", out);
}

static void put_dropped(FILE *out, const struct ls_snapshot *s)
{
	if (s->dropped)
		fprintf(out, "Dropped: %" PRIu64 " allocation events the agent "
			"could not record (its memory ran out): figures are "
			"incomplete\n", s->dropped);
}

/* Which container the process runs in (docs/CONTAINERS.md). */
static void put_container(FILE *out, const struct ls_container *k)
{
	char name[300];

	fputs("In container ", out);
	ls_text_safe(out, ls_container_name(k, name, sizeof(name)));
	fprintf(out, " (its pid %d; namespaces pid:[%llu] mnt:[%llu] "
		"user:[%llu]", (int)k->nspid, (unsigned long long)k->ns_pid,
		(unsigned long long)k->ns_mnt, (unsigned long long)k->ns_user);
	if (k->cgroup[0]) {
		fputs("; cgroup ", out);
		ls_text_safe(out, k->cgroup);
	}
	fputs(")\n", out);
}

static void put_header(const struct ls_render_ctx *c)
{
	const struct ls_snapshot *s = c->rep->snap;
	size_t i;

	fprintf(c->out, "leakscope: pid %u", s->hdr.pid);
	if (s->argc) {
		fputs(" (", c->out);
		for (i = 0; i < s->argc; i++) {
			if (i)
				fputc(' ', c->out);
			ls_text_safe(c->out, s->argv[i]);
		}
		fputc(')', c->out);
	}
	if (s->postmortem)
		fputs(s->exited ? ", post-mortem after exit" : ", post-mortem",
		      c->out);
	else
		fputs(s->hdr.reason == LSNAP_REASON_REQUEST ? ", live" :
		      ", at exit", c->out);
	if (estimates(c))
		fprintf(c->out, ", sampled every %" PRIu64 " bytes on average: "
			"figures are estimates\n", s->hdr.sample_rate);
	else
		fputs(", full tracking\n", c->out);
	if (s->has_container)
		put_container(c->out, &s->container);
	if (s->has_attach)
		put_attached(c->out, s->attach.wall_ns);
	if (s->postmortem && s->has_history && !s->history.ticks)
		fprintf(c->out, "Note: the process ended before the agent's "
			"first growth sample (one every %u ms): its heap was "
			"never recorded, so the figures below are empty, not "
			"zero\n", (unsigned)s->history.period_ms);
	else if (s->torn)
		fputs("Note: the process died during an update: figures may "
		      "mix two samples\n", c->out);
	put_notes(c->out, s->notes);
	put_module_walk(c->out, s);
	put_dropped(c->out, s);
	put_filters(c);
}

static void put_blocks(const struct ls_render_ctx *c,
		       const struct ls_report_site *r)
{
	size_t i;

	for (i = 0; i < r->nblocks; i++) {
		const struct ls_block *b = r->blocks[i];

		fprintf(c->out, "\t\taddr = 0x%" PRIx64 " size = %" PRIu64
			" age = ", b->addr, b->size);
		put_seconds(c->out, ls_block_age_ns(c->rep->snap, b));
		fprintf(c->out, " tid = %u\n", b->tid);
	}
}

/* One log2 histogram on a line: "[lo, hi) count" for the non-empty
 * buckets; sizes in bytes, lifetimes in seconds. */
static void put_hist(const struct ls_render_ctx *c, const char *indent,
		     const char *title, const uint64_t *h, int life)
{
	const char *sep = "";
	unsigned b;

	fprintf(c->out, "%s%s:", indent, title);
	for (b = 0; b < LSNAP_HIST_BUCKETS; b++) {
		if (!h[b])
			continue;
		if (!b)
			fprintf(c->out, "%s %s", sep, life ? "<1/256 s" : "0 B");
		else if (life)
			fprintf(c->out, "%s %g-%g s", sep,
				(double)ls_hist_lo(b) / LSNAP_LIFE_TICKS_PER_S,
				(double)(ls_hist_lo(b) * 2) / LSNAP_LIFE_TICKS_PER_S);
		else if (b == LSNAP_HIST_BUCKETS - 1)
			fprintf(c->out, "%s >=%" PRIu64 " B", sep, ls_hist_lo(b));
		else
			fprintf(c->out, "%s %" PRIu64 "-%" PRIu64 " B", sep,
				ls_hist_lo(b), ls_hist_lo(b) * 2 - 1);
		fprintf(c->out, " x%" PRIu64, h[b]);
		sep = ",";
	}
	fputs(*sep ? "\n" : " none\n", c->out);
}

/* The figure --by names, leading the site's line. */
static void put_key(const struct ls_render_ctx *c,
		    const struct ls_report_site *r)
{
	int mmap = r->site->kind == LSNAP_KIND_MMAP;
	const char *what = mmap ? "mapping" : "allocation";

	switch (c->rep->by) {
	case LS_BY_PEAK:
		put_num(c, r->key_bytes);
		fputs(" bytes in ", c->out);
		put_num(c, r->key_blocks);
		fprintf(c->out, " %s%s at the peak (now ", what,
			r->key_blocks == 1 ? "" : "s");
		put_num(c, r->live_bytes);
		fprintf(c->out, " bytes) from stack%s", mmap ? " (mmap)" : "");
		return;
	case LS_BY_ALLOCATED:
	case LS_BY_TEMPORARY:
		put_num(c, r->key_bytes);
		fputs(" bytes in ", c->out);
		put_num(c, r->key_blocks);
		fprintf(c->out, " %s%s%s (%.0f/s, %.0f B/s) from stack%s",
			c->rep->by == LS_BY_TEMPORARY ? "temporary " : "", what,
			r->key_blocks == 1 ? "" : "s",
			ls_report_per_second(c->rep->snap, (uint64_t)r->key_blocks),
			ls_report_per_second(c->rep->snap, (uint64_t)r->key_bytes),
			mmap ? " (mmap)" : "");
		return;
	}
	put_num(c, r->live_bytes);
	fputs(" bytes in ", c->out);
	put_num(c, r->live_blocks);
	fputc(' ', c->out);
	fputs(what, c->out);
	fputs(r->live_blocks == 1 ? " from stack" : "s from stack", c->out);
	if (mmap)
		fputs(" (mmap)", c->out);
}

static int put_site(const struct ls_render_ctx *c,
		    const struct ls_report_site *r, struct ls_stack *st)
{
	const char *t;
	size_t len;
	int ret;

	fputc('\t', c->out);
	put_key(c, r);
	if (r->trend && r->trend->label != LS_TREND_UNKNOWN)
		fprintf(c->out, " [%s, %+.0f B/s]", ls_trend_name(r->trend->label),
			r->trend->bytes_per_second);
	fputc('\n', c->out);
	if (c->opts->histogram) {
		uint64_t size[LSNAP_HIST_BUCKETS], life[LSNAP_HIST_BUCKETS];

		ls_site_hist(c->rep->snap, r->site, size, life);
		put_hist(c, "\t\t", "sizes", size, 0);
		put_hist(c, "\t\t", "lifetimes", life, 1);
	}
	put_blocks(c, r);
	ret = ls_render_stack(c, r->site, st);
	if (ret)
		return ret;
	/* Each distinct frame formatted once: a report of 100k stacks
	 * prints millions of lines of a few frames. */
	if (!(t = ls_stack_lines(st, &len)))
		return -ENOMEM;
	fwrite_unlocked(t, 1, len, c->out);
	if (!st->n)
		fputs("\t\t(no stack)\n", c->out);
	return 0;
}

static void put_totals(const struct ls_render_ctx *c)
{
	const struct ls_snapshot *s = c->rep->snap;
	const struct lsnap_totals *t = &s->totals;

	if (!s->has_totals)
		return;
	fputs("Totals: ", c->out);
	put_unum(c, t->live_bytes);
	fputs(" bytes live in ", c->out);
	put_unum(c, t->live_blocks);
	fputs(" blocks; ", c->out);
	put_unum(c, t->allocated_blocks);
	fputs(" allocations (", c->out);
	put_unum(c, t->allocated_bytes);
	fputs(" bytes) made; peak ", c->out);
	put_unum(c, t->peak_live_bytes);
	fputs(" bytes live", c->out);
	if (t->peak_slack)
		fprintf(c->out, " (exact to within %" PRIu64 " bytes)",
			t->peak_slack);
	fputc('\n', c->out);
}

/* Mappings not counted as live: the allocator's chunks, reservations. */
static void put_apart(const struct ls_render_ctx *c)
{
	const struct ls_snapshot *s = c->rep->snap;
	uint64_t a = ls_snapshot_apart_bytes(s, LSNAP_KIND_ALLOCATOR);
	uint64_t r = ls_snapshot_apart_bytes(s, LSNAP_KIND_RESERVED);

	if (!a && !r)
		return;
	fputs("Not counted as live: ", c->out);
	put_unum(c, a);
	fputs(" bytes mapped by the allocator, ", c->out);
	put_unum(c, r);
	fputs(" bytes reserved (PROT_NONE)\n", c->out);
}

static void put_matched(const struct ls_render_ctx *c)
{
	const struct ls_report_opts *o = c->opts;

	if (!o->min_age_ns && !o->min_size && !o->max_size)
		return;
	fputs("Matching the filters: ", c->out);
	put_num(c, c->rep->live_bytes);
	fputs(" bytes in ", c->out);
	put_num(c, c->rep->live_blocks);
	fputs(" blocks\n", c->out);
}

static void put_suppressed(const struct ls_render_ctx *c)
{
	const struct ls_report *rep = c->rep;

	if (!rep->supp_sites)
		return;
	fprintf(c->out, "Suppressed: %" PRIu64 " bytes in %" PRIu64 " blocks "
		"from %zu stacks (the C/C++ runtime's own, --suppressions)\n",
		rep->supp_bytes, rep->supp_blocks, rep->supp_sites);
}

static void put_calls(const struct ls_render_ctx *c)
{
	const struct ls_snapshot *s = c->rep->snap;
	const char *sep = "Calls: ";
	size_t i;

	for (i = 0; i < s->ncalls; i++) {
		if (!s->calls[i].count)
			continue;
		fputs(sep, c->out);
		ls_text_safe(c->out, s->calls[i].name);
		fprintf(c->out, " %" PRIu64, s->calls[i].count);
		sep = ", ";
	}
	if (strcmp(sep, "Calls: "))
		fputc('\n', c->out);
}

/* When the peak was, and what its sites held then. */
static void put_peak(const struct ls_render_ctx *c)
{
	const struct ls_snapshot *s = c->rep->snap;

	if (!s->has_peak) {
		fputs("No peak figures: this snapshot's source does not keep "
		      "them (an agent before them, or the eBPF tracer).\n",
		      c->out);
		return;
	}
	fputs("Peak: ", c->out);
	put_num(c, s->peak.sites_bytes);
	fputs(" bytes in ", c->out);
	put_num(c, s->peak.sites_blocks);
	fputs(" blocks live, ", c->out);
	put_seconds(c->out, s->peak.peak_mono_ns > s->hdr.start_mono_ns ?
		    s->peak.peak_mono_ns - s->hdr.start_mono_ns : 0);
	fputs(" after the start\n", c->out);
}

/* --- reachability: valgrind's loss records ------------------------------ */

struct loss_record {
	const struct ls_report_site *r;
	unsigned kind;
	uint64_t bytes, blocks, indirect;
};

static int cmp_record(const void *a, const void *b)
{
	const struct loss_record *x = a, *y = b;
	uint64_t tx = x->bytes + x->indirect, ty = y->bytes + y->indirect;

	if (x->kind != y->kind)
		return x->kind < y->kind ? -1 : 1;
	if (tx != ty)
		return tx > ty ? -1 : 1;
	return x->r->site->id < y->r->site->id ? -1 : x->r->site->id > y->r->site->id;
}

/* One record per site and kind, worst first: definitely lost, largest
 * (direct + indirect) first, then indirectly, possibly, still reachable. */
static struct loss_record *loss_records(const struct ls_report *rep, size_t *n)
{
	struct loss_record *v = calloc(rep->nsites * LSNAP_REACH_KINDS + 1,
				       sizeof(*v));
	size_t i;
	unsigned k;

	*n = 0;
	if (!v)
		return NULL;
	for (i = 0; i < rep->nsites; i++)
		for (k = 0; k < LSNAP_REACH_KINDS; k++) {
			const struct ls_reach_figs *f = rep->sites[i].reach;

			if (!f || !f->blocks[k])
				continue;
			v[*n] = (struct loss_record){
				.r = &rep->sites[i], .kind = k,
				.bytes = f->bytes[k], .blocks = f->blocks[k],
				.indirect = k == LSNAP_REACH_DEFINITE ?
					    f->indirect_bytes : 0,
			};
			(*n)++;
		}
	qsort(v, *n, sizeof(*v), cmp_record);
	return v;
}

/* The method asked for, why another ran, the heap model's figures. */
static void put_how(const struct ls_render_ctx *c, const struct ls_snapshot *s)
{
	const struct lsnap_reach_how *h = &s->reach_how;
	const char *why;

	if (!s->has_reach_how)
		return;
	why = ls_reach_fallback_text(h->fallback, NULL);
	if (why && !h->asked)
		fprintf(c->out, "Method: fork, not the concurrent mark asked "
			"for: %s (predicted %.3f ms, budget %.3f ms)\n", why,
			(double)h->predicted_ns / 1e6,
			(double)h->budget_ns / 1e6);
	else if (!h->asked && !(s->reach.flags & LSNAP_REACH_AT_EXIT))
		fprintf(c->out, "Method: concurrent mark, %u precleaning "
			"passes, %" PRIu64 " pages written at the stop, the "
			"agent's part of the stop %.3f ms (budget %.3f ms)\n",
			h->passes, h->dirty_pages, (double)h->stop_work_ns / 1e6,
			(double)h->budget_ns / 1e6);
	fprintf(c->out, "Heap model: %s; its memory outside tracked blocks: "
		"%" PRIu64 " bytes scanned as roots, %" PRIu64 " bytes not "
		"scanned (free, headers, its own state)\n",
		ls_heap_alloc_name(h->allocator), h->alloc_root_bytes,
		h->alloc_unscanned_bytes);
}

static void put_check(const struct ls_render_ctx *c)
{
	const struct ls_snapshot *s = c->rep->snap;
	const struct lsnap_reach *r = &s->reach;

	fputs("Reachability check", c->out);
	if (r->flags & LSNAP_REACH_AT_EXIT)
		fputs(" at exit", c->out);
	if (r->flags & LSNAP_REACH_CONCURRENT)
		fputs(" (concurrent mark)", c->out);
	if (s->reach_pause_ns)
		fprintf(c->out, ": %u threads held %.3f ms", r->nthreads,
			(double)s->reach_pause_ns / 1e6);
	fprintf(c->out, "; scanned %" PRIu64 " bytes of roots and %" PRIu64
		" of blocks in %.3f ms\n", r->root_bytes, r->heap_bytes,
		(double)r->scan_ns / 1e6);
	put_how(c, s);
	if (r->flags & LSNAP_REACH_NO_REGS)
		fputs("Note: other threads were still running: their stacks "
		      "were scanned whole, without their registers\n", c->out);
	if (r->flags & LSNAP_REACH_PARTIAL)
		fputs("Warning: the check ran out of memory: some blocks were "
		      "not scanned, and some blocks reported lost may not be\n",
		      c->out);
	if ((r->flags & LSNAP_REACH_LOADER_HELD) && s->has_loader)
		fprintf(c->out, "Note: thread %u held the loader's lock at the "
			"check: objects loaded or unloaded since were not "
			"seen\n", s->loader.tid);
	else if (r->flags & LSNAP_REACH_LOADER_HELD)
		fputs("Note: another thread held the loader's lock at the "
		      "check: objects loaded or unloaded since were not seen\n",
		      c->out);
	if (r->flags & LSNAP_REACH_TORN)
		fputs("Note: a thread was stopped inside the agent's tables: "
		      "a block being allocated or freed may be misfiled\n",
		      c->out);
	if (c->opts->only) {
		unsigned k;
		const char *sep = "Filters: only ";

		for (k = 0; k < LSNAP_REACH_KINDS; k++)
			if (c->opts->only & 1u << k) {
				fprintf(c->out, "%s%s", sep, ls_reach_kind_name(k));
				sep = ", ";
			}
		fputc('\n', c->out);
	}
}

/* memcheck's "of which reachable via heuristic" lines, when any. */
static void put_heuristics(const struct ls_render_ctx *c)
{
	const struct ls_snapshot *s = c->rep->snap;
	const struct lsnap_reach_heur *h = &s->reach_heur;
	unsigned k, any = 0;

	for (k = 1; k < LSNAP_HEUR_KINDS && s->has_reach_heur; k++)
		any += h->blocks[k] != 0;
	if (!any)
		return;
	fputs("                      of which reachable via heuristic:\n",
	      c->out);
	for (k = 1; k < LSNAP_HEUR_KINDS; k++)
		if (h->blocks[k])
			fprintf(c->out, "                        %-19s: %" PRIu64
				" bytes in %" PRIu64 " blocks\n",
				ls_reach_heur_name(k), h->bytes[k],
				h->blocks[k]);
}

static void put_summary(const struct ls_render_ctx *c)
{
	const struct ls_report *rep = c->rep;
	static const char *const label[LSNAP_REACH_KINDS] = {
		"   definitely lost", "   indirectly lost",
		"     possibly lost", "   still reachable",
	};
	unsigned k;

	fputs("LEAK SUMMARY:\n", c->out);
	for (k = 0; k < LSNAP_REACH_KINDS; k++)
		fprintf(c->out, "%s: %" PRIu64 " bytes in %" PRIu64 " blocks\n",
			label[k], rep->reach.bytes[k], rep->reach.blocks[k]);
	put_heuristics(c);
	fprintf(c->out, "        suppressed: %" PRIu64 " bytes in %" PRIu64
		" blocks\n", rep->supp_bytes, rep->supp_blocks);
}

/* The first frame with a name: what a suppression of the record names. */
static const char *supp_name(const struct ls_stack *st)
{
	size_t i;

	for (i = 0; i < st->n; i++)
		if (st->f[i].function)
			return st->f[i].function;
	return st->n && st->f[0].module ? ls_sym_basename(st->f[0].module) :
	       NULL;
}

static void put_gen_supp(const struct ls_render_ctx *c,
			 const struct loss_record *v, size_t n)
{
	struct ls_stack st = { 0 };
	size_t i;

	fputs("\nSuppressions for these records (LeakSanitizer syntax, "
	      "for --suppressions FILE):\n", c->out);
	for (i = 0; i < n; i++) {
		const char *name;

		if (v[i].kind == LSNAP_REACH_REACHABLE ||
		    ls_render_stack(c, v[i].r->site, &st))
			continue;
		name = supp_name(&st);
		if (!name)
			continue;
		fprintf(c->out, "# loss record %zu of %zu: %s\nleak:", i + 1, n,
			ls_reach_kind_name(v[i].kind));
		ls_text_safe(c->out, name);
		fputc('\n', c->out);
	}
	ls_stack_release(&st);
}

static int render_reach(const struct ls_render_ctx *c)
{
	struct ls_stack st = { 0 };
	struct loss_record *v;
	size_t n, i, k;
	int ret = 0;

	put_header(c);
	put_check(c);
	v = loss_records(c->rep, &n);
	if (!v)
		return -ENOMEM;
	fputc('\n', c->out);
	for (i = 0; i < n && !ret; i++) {
		if (v[i].indirect)
			fprintf(c->out, "%" PRIu64 " (%" PRIu64 " direct, %" PRIu64
				" indirect) bytes", v[i].bytes + v[i].indirect,
				v[i].bytes, v[i].indirect);
		else
			fprintf(c->out, "%" PRIu64 " bytes", v[i].bytes);
		fprintf(c->out, " in %" PRIu64 " blocks are %s in loss record "
			"%zu of %zu\n", v[i].blocks, ls_reach_kind_name(v[i].kind),
			i + 1, n);
		ret = ls_render_stack(c, v[i].r->site, &st);
		for (k = 0; !ret && k < st.n; k++)
			ls_text_frame(c->out, &st.f[k]);
		if (!ret && !st.n)
			fputs("\t\t(no stack)\n", c->out);
		fputc('\n', c->out);
	}
	ls_stack_release(&st);
	if (!ret) {
		put_summary(c);
		if (c->opts->gen_supp)
			put_gen_supp(c, v, n);
	}
	free(v);
	return ret;
}

int ls_render_text(const struct ls_render_ctx *c)
{
	const struct ls_report *rep = c->rep;
	struct ls_stack st = { 0 };
	size_t i;
	int ret = 0;

	static const char *const what[] = {
		"with outstanding allocations",
		"holding memory at the peak",
		"that allocated",
		"with temporary allocations",
	};

	if (rep->snap->has_reach)
		return render_reach(c);
	put_header(c);
	if (rep->by == LS_BY_PEAK)
		put_peak(c);
	if (!rep->nsites_total)
		fprintf(c->out, "No stacks %s.\n", what[rep->by]);
	else
		fprintf(c->out, "Top %zu of %zu stacks %s:\n", rep->nsites,
			rep->nsites_total, what[rep->by]);
	for (i = 0; i < rep->nsites && !ret; i++)
		ret = put_site(c, &rep->sites[i], &st);
	ls_stack_release(&st);
	if (ret)
		return ret;
	fputc('\n', c->out);
	put_totals(c);
	put_apart(c);
	put_matched(c);
	put_suppressed(c);
	put_calls(c);
	if (rep->has_histogram) {
		put_hist(c, "", "Allocation sizes", rep->size_hist, 0);
		put_hist(c, "", "Lifetimes at free", rep->life_hist, 1);
	} else if (c->opts->histogram) {
		fputs("No histograms: this snapshot's source does not keep "
		      "them.\n", c->out);
	}
	return 0;
}

/* --- stats ------------------------------------------------------------- */

static uint64_t live_sites(const struct ls_snapshot *s)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < s->nsites; i++)
		n += s->sites[i].live_blocks > 0;
	return n;
}

static void stats_unwind(FILE *fp, const struct lsnap_unwind *u)
{
	uint64_t all = u->walks + u->memo_hits;

	fprintf(fp, "stacks:    %" PRIu64 " captured, %" PRIu64
		" walked, %.1f%% from the walk memo", all, u->walks,
		all ? 100.0 * (double)u->memo_hits / (double)all : 0.0);
	if (u->unwinder == LSNAP_UNWINDER_CHECK)
		fprintf(fp, ", %" PRIu64 " differ from libunwind",
			u->check_mismatches);
	fputc('\n', fp);
}

#define MIB(n) ((double)(n) / 1048576.0)

/* What the agent itself holds: in all, for the live blocks, the rest. */
static void stats_agent(FILE *fp, const struct lsnap_agent_memory *m)
{
	fprintf(fp, "agent:     %.1f MiB resident of %.1f MiB mapped; "
		"live table %.1f MiB", MIB(m->resident), MIB(m->mapped),
		MIB(m->live_resident));
	if (m->live_entries)
		fprintf(fp, " (%.1f bytes a live block)",
			(double)m->live_resident / (double)m->live_entries);
	fprintf(fp, ", sites and threads %.1f MiB, post-mortem file %.1f "
		"MiB\n", MIB(m->arena_mapped), MIB(m->postmortem_resident));
}

int ls_render_stats_text(FILE *fp, const struct ls_snapshot *s)
{
	const struct lsnap_totals *t = &s->totals;
	const struct lsnap_mallinfo *m = &s->mallinfo;
	size_t i;

	fprintf(fp, "pid %u, %s, %u threads seen, up %.1fs\n", s->hdr.pid,
		s->hdr.mode == LSNAP_MODE_SAMPLED ? "sampled (estimates)" :
		"full tracking", s->hdr.nthreads,
		(double)(s->hdr.mono_ns - s->hdr.start_mono_ns) / 1e9);
	fprintf(fp, "live:      %" PRIu64 " bytes in %" PRIu64 " blocks, peak %"
		PRIu64 " bytes\n", t->live_bytes, t->live_blocks,
		t->peak_live_bytes);
	fprintf(fp, "allocated: %" PRIu64 " bytes in %" PRIu64 " blocks\n",
		t->allocated_bytes, t->allocated_blocks);
	fprintf(fp, "sites:     %zu, %" PRIu64 " holding memory\n", s->nsites,
		live_sites(s));
	fputs("calls:    ", fp);
	for (i = 0; i < s->ncalls; i++)
		fprintf(fp, " %s %" PRIu64, s->calls[i].name, s->calls[i].count);
	fputc('\n', fp);
	if (s->has_mallinfo)
		fprintf(fp, "allocator: arena %" PRIu64 ", in use %" PRIu64
			", free %" PRIu64 ", mmapped %" PRIu64 " in %" PRIu64
			" blocks, releasable %" PRIu64 "\n", m->arena, m->uordblks,
			m->fordblks, m->hblkhd, m->hblks, m->keepcost);
	if (s->has_unwind)
		stats_unwind(fp, &s->unwind);
	if (s->has_agent_memory)
		stats_agent(fp, &s->agent_memory);
	put_notes(fp, s->notes);
	put_module_walk(fp, s);
	put_dropped(fp, s);
	return 0;
}

/* --- olds -------------------------------------------------------------- */

static int by_birth(const void *a, const void *b)
{
	const struct ls_block *x = a, *y = b;

	return x->birth_ns < y->birth_ns ? -1 : x->birth_ns > y->birth_ns ? 1 :
	       x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int put_old(const struct ls_render_ctx *c, const struct ls_block *b,
		   struct ls_stack *st)
{
	const struct ls_snapshot *snap = c->rep->snap;
	const struct ls_site *site = ls_snapshot_site(snap, b->site);
	size_t i;
	int ret;

	fprintf(c->out, "\tage %.3fs size %" PRIu64 " addr 0x%" PRIx64
		" tid %u\n", (double)(snap->hdr.mono_ns - b->birth_ns) / 1e9,
		b->size, b->addr, b->tid);
	if (!site || !c->sym)
		return 0;
	ret = ls_render_stack(c, site, st);
	for (i = 0; !ret && i < st->n; i++)
		ls_text_frame(c->out, &st->f[i]);
	return ret;
}

int ls_render_olds(FILE *out, struct ls_snapshot *snap,
		   const struct ls_report_opts *opts, struct ls_symbolizer *sym,
		   size_t n)
{
	struct ls_report rep = { .snap = snap };
	struct ls_render_ctx c = { .out = out, .rep = &rep, .opts = opts,
				   .sym = sym };
	struct ls_stack st = { 0 };
	size_t i;
	int ret = 0;

	if (!snap->has_blocks)
		return -ENODATA;
	if (snap->nblocks)	/* an empty block list may be NULL */
		qsort(snap->blocks, snap->nblocks, sizeof(*snap->blocks),
		      by_birth);
	fprintf(out, "pid %u: %zu oldest of %zu live blocks\n", snap->hdr.pid,
		n < snap->nblocks ? n : snap->nblocks, snap->nblocks);
	for (i = 0; i < snap->nblocks && i < n && !ret; i++)
		ret = put_old(&c, &snap->blocks[i], &st);
	ls_stack_release(&st);
	return ret;
}

/* --- one line per site (watch, top) ---------------------------------- */

int ls_render_site_summary(struct ls_symbolizer *sym,
			   const struct ls_report_opts *opts,
			   const struct ls_site *site, char *buf, size_t cap)
{
	struct ls_render_ctx c = { .opts = opts, .sym = sym };
	struct ls_stack st = { 0 };
	int ret = sym ? ls_render_stack(&c, site, &st) : 0;

	ls_stack_summary(&st, 3, buf, cap);
	ls_stack_release(&st);
	return ret;
}
