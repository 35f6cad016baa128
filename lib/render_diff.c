/*
 * render_diff.c - a diff of two snapshots (diff.h) as text, as JSON
 * (docs/DIFF.md) or as a differential flame graph (flamegraph.h).
 *
 * Text lists the stacks that grew (largest growth first), then those that
 * shrank (largest shrinkage first), then the new ones and the gone ones
 * (largest first); unchanged stacks are only counted.  JSON lists every
 * stack, unchanged ones included, largest growth first.  The flame graph
 * is NEW's live memory (widths), coloured by the change against BASE: red
 * grew, blue shrank; a gone stack has no width but its shrinkage shows in
 * its callers' colour.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "diff.h"
#include "flamegraph.h"
#include "json.h"
#include "render.h"

#define LS_JSON_DIFF_VERSION 1

static int sampled(const struct ls_snapshot *s)
{
	return s->hdr.mode == LSNAP_MODE_SAMPLED;
}

/* --- text ----------------------------------------------------------------- */

static void text_side(FILE *out, const char *label,
		      const struct ls_snapshot *s)
{
	size_t i;

	fprintf(out, "%s pid %u", label, s->hdr.pid);
	if (s->argc) {
		fputs(" (", out);
		for (i = 0; i < s->argc; i++) {
			if (i)
				fputc(' ', out);
			ls_text_safe(out, s->argv[i]);
		}
		fputc(')', out);
	}
	fputs(s->postmortem ? ", post-mortem" :
	      s->hdr.reason == LSNAP_REASON_REQUEST ? ", live" : ", at exit",
	      out);
	fprintf(out, ", up %" PRIu64 ".%03us", (s->hdr.mono_ns -
		s->hdr.start_mono_ns) / 1000000000, (unsigned)((s->hdr.mono_ns -
		s->hdr.start_mono_ns) / 1000000 % 1000));
	if (sampled(s))
		fprintf(out, ", sampled every %" PRIu64 " bytes (estimates)",
			s->hdr.sample_rate);
	fputc('\n', out);
}

static void text_header(FILE *out, const struct ls_diff *d)
{
	const struct ls_diff_totals *t = &d->totals;

	text_side(out, "leakscope diff: base", d->base);
	text_side(out, "                new ", d->newer);
	if (d->different_programs)
		fputs("Note: different programs; stacks matched by function, "
		      "file and line\n", out);
	fprintf(out, "Live: %" PRId64 " -> %" PRId64 " bytes (%+" PRId64
		"), %" PRId64 " -> %" PRId64 " blocks (%+" PRId64 ")\n",
		t->base_bytes, t->new_bytes, t->delta_bytes, t->base_blocks,
		t->new_blocks, t->delta_blocks);
	fprintf(out, "Stacks: %zu grew, %zu shrank, %zu new, %zu gone, %zu "
		"unchanged", t->count[LS_DIFF_GREW], t->count[LS_DIFF_SHRANK],
		t->count[LS_DIFF_NEW], t->count[LS_DIFF_GONE],
		t->count[LS_DIFF_SAME]);
	if (d->n < d->n_total)
		fprintf(out, "; the %zu that changed most shown", d->n);
	if (d->by != LS_BY_LIVE)
		fprintf(out, "; compared by %s bytes",
			ls_report_by_names[d->by]);
	fputc('\n', out);
}

/*
 * e's stack as the user asked to see it (--depth, --full-names,
 * --hide-runtime) into st, reused from entry to entry; the matching used
 * the whole stacks with full names.
 */
static int entry_view(const struct ls_diff_entry *e,
		      const struct ls_report_opts *o, struct ls_stack *st)
{
	int ret = ls_stack_set(st, e->frames, e->nframes);

	return ret ? ret : ls_stack_view(st, o->depth, o->full_names,
					 o->hide_runtime);
}

static void text_entry(FILE *out, const struct ls_diff *d,
		       const struct ls_diff_entry *e, const struct ls_stack *st)
{
	const char *fig = d->by == LS_BY_LIVE ? "" : ls_report_by_names[d->by];
	size_t i;

	fprintf(out, "\t%+" PRId64 " %s%sbytes, %+" PRId64 " blocks",
		e->by_bytes_delta, fig, *fig ? " " : "", e->by_blocks_delta);
	if (e->change == LS_DIFF_GREW || e->change == LS_DIFF_SHRANK)
		fprintf(out, ": %" PRId64 " -> %" PRId64 " bytes in %" PRId64
			" -> %" PRId64 " blocks", e->base.by_bytes,
			e->newer.by_bytes, e->base.by_blocks,
			e->newer.by_blocks);
	fputs(e->kind == LSNAP_KIND_MMAP ? " (mmap)\n" : "\n", out);
	for (i = 0; i < st->n; i++)
		ls_text_frame(out, &st->f[i]);
	if (!st->n)
		fputs("\t\t(no stack)\n", out);
}

static int cmp_shrank(const void *a, const void *b)
{
	const struct ls_diff_entry *x = *(const struct ls_diff_entry *const *)a;
	const struct ls_diff_entry *y = *(const struct ls_diff_entry *const *)b;

	if (x->by_bytes_delta != y->by_bytes_delta)
		return x->by_bytes_delta < y->by_bytes_delta ? -1 : 1;
	return x < y ? -1 : x > y;
}

/* The entries of one change, in the order text shows them. */
static int text_section(FILE *out, const struct ls_diff *d,
			const struct ls_report_opts *opts,
			enum ls_diff_change which, const char *title)
{
	const struct ls_diff_entry **v = malloc((d->n ? d->n : 1) * sizeof(*v));
	struct ls_stack st = { 0 };
	size_t i, n = 0;
	int ret = 0;

	if (!v)
		return -ENOMEM;
	for (i = 0; i < d->n; i++)
		if (d->entries[i].change == which)
			v[n++] = &d->entries[i];
	/* Entries come largest growth first; shrinkage wants the reverse. */
	if (which == LS_DIFF_SHRANK || which == LS_DIFF_GONE)
		qsort(v, n, sizeof(*v), cmp_shrank);
	if (n)
		fprintf(out, "\n%s:\n", title);
	for (i = 0; i < n && !ret; i++) {
		ret = entry_view(v[i], opts, &st);
		if (!ret)
			text_entry(out, d, v[i], &st);
	}
	ls_stack_release(&st);
	free(v);
	return ret;
}

int ls_render_diff_text(FILE *out, const struct ls_diff *d,
			const struct ls_report_opts *opts)
{
	int ret;

	text_header(out, d);
	ret = text_section(out, d, opts, LS_DIFF_GREW,
			   "Grew (largest growth first)");
	if (!ret)
		ret = text_section(out, d, opts, LS_DIFF_SHRANK, "Shrank");
	if (!ret)
		ret = text_section(out, d, opts, LS_DIFF_NEW, "New (only in new)");
	if (!ret)
		ret = text_section(out, d, opts, LS_DIFF_GONE,
				   "Gone (only in base)");
	return ret;
}

/* --- JSON ----------------------------------------------------------------- */

static void json_totals(struct ls_json *j, const struct ls_diff *d)
{
	const struct ls_diff_totals *t = &d->totals;
	enum ls_diff_change c;

	ls_json_object(j, "totals");
	ls_json_object(j, "base");
	ls_json_i64(j, "live_bytes", t->base_bytes);
	ls_json_i64(j, "live_blocks", t->base_blocks);
	ls_json_end(j);
	ls_json_object(j, "new");
	ls_json_i64(j, "live_bytes", t->new_bytes);
	ls_json_i64(j, "live_blocks", t->new_blocks);
	ls_json_end(j);
	ls_json_i64(j, "live_bytes_delta", t->delta_bytes);
	ls_json_i64(j, "live_blocks_delta", t->delta_blocks);
	ls_json_object(j, "stacks");
	for (c = LS_DIFF_GREW; c <= LS_DIFF_SAME; c++)
		ls_json_u64(j, ls_diff_change_name(c), t->count[c]);
	ls_json_end(j);
	ls_json_end(j);
}

/* by: the diff compares another figure than live (--by): it is shown. */
static void json_side(struct ls_json *j, const char *key,
		      const struct ls_diff_side *s, int by)
{
	ls_json_object(j, key);
	ls_json_bool(j, "present", s->present);
	ls_json_i64(j, "live_bytes", s->live_bytes);
	ls_json_i64(j, "live_blocks", s->live_blocks);
	ls_json_u64(j, "allocated_bytes", s->allocated_bytes);
	ls_json_u64(j, "allocated_blocks", s->allocated_blocks);
	if (by) {
		ls_json_i64(j, "by_bytes", s->by_bytes);
		ls_json_i64(j, "by_blocks", s->by_blocks);
	}
	ls_json_u64(j, "sites", s->nsites);
	ls_json_end(j);
}

static void json_entry(struct ls_json *j, const struct ls_diff *d,
		       const struct ls_diff_entry *e, const struct ls_stack *st)
{
	int by = d->by != LS_BY_LIVE;
	size_t i;

	ls_json_object(j, NULL);
	ls_json_str(j, "change", ls_diff_change_name(e->change));
	ls_json_str(j, "kind", e->kind == LSNAP_KIND_MMAP ? "mmap" : "heap");
	ls_json_i64(j, "live_bytes_delta", e->live_bytes_delta);
	ls_json_i64(j, "live_blocks_delta", e->live_blocks_delta);
	if (by) {
		ls_json_i64(j, "by_bytes_delta", e->by_bytes_delta);
		ls_json_i64(j, "by_blocks_delta", e->by_blocks_delta);
	}
	json_side(j, "base", &e->base, by);
	json_side(j, "new", &e->newer, by);
	ls_json_array(j, "frames");
	for (i = 0; i < st->n; i++)
		ls_json_frame(j, &st->f[i]);
	ls_json_end(j);
	ls_json_end(j);
}

int ls_render_diff_json(FILE *out, const struct ls_diff *d,
		       const struct ls_report_opts *opts)
{
	struct ls_stack st = { 0 };
	struct ls_json j;
	size_t i;
	int ret = 0;

	ls_json_init(&j, out);
	ls_json_object(&j, NULL);
	ls_json_str(&j, "format", "leakscope-diff");
	ls_json_u64(&j, "version", LS_JSON_DIFF_VERSION);
	ls_json_object(&j, "base");
	ls_json_process(&j, d->base);
	ls_json_end(&j);
	ls_json_object(&j, "new");
	ls_json_process(&j, d->newer);
	ls_json_end(&j);
	ls_json_bool(&j, "different_programs", d->different_programs);
	if (d->by != LS_BY_LIVE)
		ls_json_str(&j, "by", ls_report_by_names[d->by]);
	ls_json_filters(&j, opts);
	json_totals(&j, d);
	ls_json_u64(&j, "sites_total", d->n_total);
	ls_json_array(&j, "sites");
	for (i = 0; i < d->n && !ret; i++) {
		ret = entry_view(&d->entries[i], opts, &st);
		if (!ret)
			json_entry(&j, d, &d->entries[i], &st);
	}
	ls_stack_release(&st);
	if (ret)
		return ret;
	ls_json_end(&j);
	ls_json_end(&j);
	fputc('\n', out);
	ret = ls_json_finish(&j);
	return ret == -EIO ? 0 : ret;	/* write errors: checked below */
}

/* --- differential flame graph --------------------------------------------- */

static int64_t nonneg(int64_t v)
{
	return v > 0 ? v : 0;
}

/* The stacks --top left out, as one frame on the root: the graph's
 * root stays the totals. */
static int svg_others(struct ls_flame *fg, const struct ls_diff *d)
{
	struct ls_flame_value all = ls_flame_total(fg), v;
	struct ls_flame_frame f = { .kind = LS_FLAME_KIND_UNKNOWN };
	size_t left = d->n_total - d->n;
	char name[64];

	if (!left)
		return 0;
	v.bytes = nonneg(d->totals.new_bytes - all.bytes);
	v.blocks = nonneg(d->totals.new_blocks - all.blocks);
	v.delta_bytes = d->totals.delta_bytes - all.delta_bytes;
	v.delta_blocks = d->totals.delta_blocks - all.delta_blocks;
	snprintf(name, sizeof(name), "[%zu other stack%s]", left,
		 left == 1 ? "" : "s");
	f.name = name;
	return ls_flame_add(fg, &f, 1, LS_FLAME_ROOT_FIRST, &v);
}

/* "pid 4242 -> pid 4300 (./server): live bytes of NEW, ...", malloc()ed. */
static char *svg_subtitle(const struct ls_diff *d,
			  const struct ls_flame_opts *o)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);

	if (!mem)
		return NULL;
	fprintf(mem, "pid %u -> pid %u", d->base->hdr.pid, d->newer->hdr.pid);
	if (d->newer->argc)
		fprintf(mem, " (%s)", d->newer->argv[0]);
	fprintf(mem, ": width = %s %s now, red grew, blue shrank (%+" PRId64
		" bytes, %+" PRId64 " blocks)", ls_report_by_names[d->by],
		o->count == LS_FLAME_COUNT_BLOCKS ? "blocks" : "bytes",
		d->totals.delta_bytes, d->totals.delta_blocks);
	if (sampled(d->base) || sampled(d->newer))
		fputs(", sampled: estimates", mem);
	if (fclose(mem)) {
		free(buf);
		return NULL;
	}
	return buf;
}

static int svg_stacks(struct ls_flame *fg, const struct ls_diff *d,
		      const struct ls_report_opts *opts)
{
	struct ls_stack st = { 0 };
	size_t i;
	int ret = 0;

	for (i = 0; i < d->n && !ret; i++) {
		const struct ls_diff_entry *e = &d->entries[i];
		struct ls_flame_value v = {
			.bytes = nonneg(e->newer.by_bytes),
			.blocks = nonneg(e->newer.by_blocks),
			.delta_bytes = e->by_bytes_delta,
			.delta_blocks = e->by_blocks_delta,
		};

		ret = entry_view(e, opts, &st);
		if (!ret)
			ret = ls_flame_add_symstack(fg, &st, &v);
	}
	ls_stack_release(&st);
	return ret;
}

int ls_render_diff_svg(FILE *out, const struct ls_diff *d,
		      const struct ls_report_opts *opts)
{
	struct ls_flame *fg = ls_flame_new();
	struct ls_flame_opts o = opts->svg;
	char *sub = NULL;
	int ret = -ENOMEM;

	if (!fg)
		goto out;
	o.differential = 1;
	ret = svg_stacks(fg, d, opts);
	if (!ret)
		ret = svg_others(fg, d);
	if (ret)
		goto out;
	if (!o.subtitle) {
		o.subtitle = sub = svg_subtitle(d, &o);
		if (!sub) {
			ret = -ENOMEM;
			goto out;
		}
	}
	ret = ls_flame_write_svg(out, fg, &o);
out:
	free(sub);
	ls_flame_free(fg);
	return ret;
}
