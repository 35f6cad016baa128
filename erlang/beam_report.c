/*
 * beam_report.c - from the samples of `leakscope beam` to what it prints:
 * each series labelled with lib/trend.c, the growing ones first with the
 * kind of leak each means, then the node's figures now, then the native
 * sites of the node's agent.
 *
 * A series counts as growing when the trend is linear or exponential AND
 * it rose by a material amount over the window (the minimum per figure in
 * the kinds table below): a process heap that drifts by a few hundred
 * bytes is noise, not a leak, whatever its shape.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "beam_int.h"
#include "../lib/json.h"
#include "../lib/render.h"
#include "../lib/report.h"
#include "../lib/trend.h"

#define KIB 1024
#define MIB (1024 * 1024)

/* What a growing figure means, and how much rise is material. */
struct kind {
	const char *key;
	const char *title;
	const char *why;
	int64_t min_rise;
};

static const struct kind kinds[] = {
	{ "process_count", "process leak", "processes are started faster than "
	  "they exit", 10 },
	{ "process_group", "process leak", "processes started there "
	  "accumulate and never exit", 10 },
	{ "port_count", "port leak", "ports (sockets, files, external "
	  "programs) are opened and not closed", 5 },
	{ "atom_count", "atom leak", "atoms are never collected: the node "
	  "dies at the limit (list_to_atom/binary_to_atom on outside data)", 10 },
	{ "ets_count", "ETS table leak", "tables are created and not deleted",
	  3 },
	{ "ets_group", "ETS table leak", "tables of this name are created and "
	  "not deleted", 3 },
	{ "memory", "VM memory growth", "erlang:memory() of this type grows",
	  MIB },
	{ "allocator", "allocator growth", "the allocator holds more and more "
	  "carriers", MIB },
	{ "allocator_used", "allocator growth", "blocks in use in the "
	  "allocator grow", MIB },
	{ "rss", "OS memory growth", "the node's resident memory grows", MIB },
	{ "native", "native memory leak", "memory outside the VM's allocators "
	  "grows: a NIF, driver or library calling malloc directly (see the "
	  "native sites)", MIB },
	{ "proc_memory", "process memory growth", "the process keeps more and "
	  "more data (its state, a growing list or map, its dictionary)",
	  128 * KIB },
	{ "mailbox", "mailbox build-up", "messages arrive faster than the "
	  "process handles them, or never match its receive", 10 },
	{ "binary", "binary leak", "the process references more and more "
	  "refc binaries (over 64 bytes, outside its heap)", 64 * KIB },
	{ "monitors", "monitor leak", "the process monitors more and more "
	  "processes and never demonitors", 10 },
	{ "monitored_by", "monitor leak", "more and more processes monitor "
	  "this one", 10 },
	{ "links", "link leak", "the process links to more and more "
	  "processes", 10 },
	{ "ets_memory", "ETS table growth", "rows are inserted and never "
	  "deleted", 64 * KIB },
	{ "ets_size", "ETS table growth", "rows are inserted and never "
	  "deleted", 10 },
};

static const struct kind *kind_of(const char *key)
{
	size_t i;

	for (i = 0; i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (!strcmp(kinds[i].key, key))
			return &kinds[i];
	return &kinds[0];
}

/* The per-process figures' kinds and names, in PM_* order. */
static const char *const pm_kind[PM_N] = {
	"proc_memory", "mailbox", "binary", NULL, "monitors", "monitored_by",
	"links",
};
static const char *const pm_metric[PM_N] = {
	"memory", "message_queue_len", "binary_memory", "reductions",
	"monitors", "monitored_by", "links",
};

struct finding {
	const struct kind *kind;
	char subject[400];
	char metric[96];
	char pid[32];		/* "<0.n.s>" for a process, else "" */
	int bytes;
	int64_t first, last, limit;
	int64_t *vals;		/* owned: the series from its first sample */
	size_t n;
	struct ls_trend trend;
	int growing;
	const struct beam_proc *proc;	/* a process's figure, else NULL */
	const struct beam_gc *gc;	/* --gc-check of that process */
};

struct analysis {
	struct finding *f;
	size_t n, cap;
};

/* The samples from the subject's first appearance to the last sample,
 * gaps filled with the previous value; 0 when it is gone at the end. */
static size_t extract(const int64_t *v, const uint8_t *seen, unsigned taken,
		      int64_t *out)
{
	size_t n = 0;
	unsigned i, first = taken;

	for (i = 0; i < taken; i++)
		if (seen[i]) {
			first = i;
			break;
		}
	if (first == taken || !seen[taken - 1])
		return 0;
	for (i = first; i < taken; i++, n++)
		out[n] = seen[i] ? v[i] : out[n - 1];
	return n;
}

static int add(struct analysis *a, const struct beam_data *d,
	       const char *kind, const char *subject, const char *metric,
	       const struct beam_proc *p, int bytes, const int64_t *v,
	       const uint8_t *seen, int64_t limit, int all)
{
	struct finding *f;
	int64_t *vals = malloc((d->taken ? d->taken : 1) * sizeof(*vals));
	size_t n;

	if (!vals)
		return -ENOMEM;
	n = extract(v, seen, d->taken, vals);
	if (!n) {
		free(vals);
		return 0;
	}
	if (a->n == a->cap) {
		size_t cap = a->cap ? 2 * a->cap : 256;
		void *nf = realloc(a->f, cap * sizeof(*a->f));

		if (!nf) {
			free(vals);
			return -ENOMEM;
		}
		a->f = nf;
		a->cap = cap;
	}
	f = &a->f[a->n];
	memset(f, 0, sizeof(*f));
	f->kind = kind_of(kind);
	snprintf(f->subject, sizeof(f->subject), "%s", subject);
	snprintf(f->metric, sizeof(f->metric), "%s", metric);
	if (p)
		snprintf(f->pid, sizeof(f->pid), "<0.%u.%u>", p->num, p->serial);
	f->proc = p;
	f->bytes = bytes;
	f->first = vals[0];
	f->last = vals[n - 1];
	f->limit = limit;
	f->vals = vals;
	f->n = n;
	if (ls_trend_classify(vals, n, d->period_s, &f->trend))
		f->trend.label = LS_TREND_UNKNOWN;
	f->growing = (f->trend.label == LS_TREND_LINEAR ||
		      f->trend.label == LS_TREND_EXPONENTIAL) &&
		     f->last - f->first >= f->kind->min_rise;
	/* Per-process figures are kept only when they matter. */
	if (!all && !f->growing) {
		free(vals);
		return 0;
	}
	a->n++;
	return 0;
}

/* Where a process runs: its initial call, or, for one spawned from a
 * fun (initial call erlang:apply/2), the function it is in. */
static const char *proc_where(const struct beam_proc *p)
{
	return strcmp(p->init, "erlang:apply/2") && p->init[0] ? p->init :
	       p->current;
}

static void proc_label(const struct beam_proc *p, char *buf, size_t cap)
{
	if (p->name[0])
		snprintf(buf, cap, "<0.%u.%u> %s (%s)", p->num, p->serial,
			 p->name, proc_where(p));
	else
		snprintf(buf, cap, "<0.%u.%u> %s (in %s)", p->num, p->serial,
			 p->init, p->current);
}

/* A process's binaries in the --gc-check, if it was there. */
static const struct beam_gc *gc_of(const struct beam_data *d,
				   const struct beam_proc *p)
{
	size_t i;

	for (i = 0; d->gc_done && p && i < d->ngc; i++)
		if (d->gc[i].num == p->num && d->gc[i].serial == p->serial)
			return &d->gc[i];
	return NULL;
}

/* What a forced collection let go of; a process that made new binaries
 * between the two counts let go of nothing, not a negative amount. */
static int64_t gc_bins(const struct beam_gc *g)
{
	return g->bins_before > g->bins_after ? g->bins_before - g->bins_after : 0;
}

static int64_t gc_bytes(const struct beam_gc *g)
{
	return g->bytes_before > g->bytes_after ?
	       g->bytes_before - g->bytes_after : 0;
}

static int analyse(const struct beam_data *d, struct analysis *a)
{
	char subject[400];
	size_t i;
	int k, r = 0;

	for (i = 0; !r && i < d->nscalars; i++) {
		const struct beam_scalar *s = &d->scalars[i];

		r = add(a, d, s->kind, s->name, s->name, NULL, s->bytes, s->v,
			s->seen, s->limit, 1);
	}
	for (i = 0; !r && i < d->procs_by_init.n; i++) {
		const struct beam_group *g = &d->procs_by_init.g[i];

		snprintf(subject, sizeof(subject), "processes in %s", g->key);
		r = add(a, d, "process_group", subject, "processes", NULL, 0,
			g->v, g->seen, 0, 1);
	}
	for (i = 0; !r && i < d->tabs_by_name.n; i++) {
		const struct beam_group *g = &d->tabs_by_name.g[i];

		snprintf(subject, sizeof(subject), "ETS tables named %s", g->key);
		r = add(a, d, "ets_group", subject, "tables", NULL, 0, g->v,
			g->seen, 0, 1);
	}
	for (i = 0; !r && i < d->ntabs; i++) {
		const struct beam_tab *t = &d->tabs[i];

		snprintf(subject, sizeof(subject), "ETS table %s (owner %s)",
			 t->name, t->owner);
		r = add(a, d, "ets_memory", subject, "memory", NULL, 1,
			t->memory, t->seen, 0, 1);
		if (!r)
			r = add(a, d, "ets_size", subject, "size", NULL, 0,
				t->size, t->seen, 0, 1);
	}
	for (i = 0; !r && i < PHASH; i++) {
		const struct beam_proc *p;

		for (p = d->phash[i]; !r && p; p = p->next) {
			proc_label(p, subject, sizeof(subject));
			for (k = 0; !r && k < PM_N; k++)
				if (pm_kind[k])
					r = add(a, d, pm_kind[k], subject,
						pm_metric[k], p, k != PM_MQ &&
						k < PM_REDUCTIONS, p->v[k],
						p->seen, 0, 0);
		}
	}
	for (i = 0; !r && i < a->n; i++)
		if (!strcmp(a->f[i].kind->key, "binary"))
			a->f[i].gc = gc_of(d, a->f[i].proc);
	return r;
}

static void analysis_free(struct analysis *a)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		free(a->f[i].vals);
	free(a->f);
}

/* Growing first: exponential before linear, then by rise relative to
 * the start. */
static int cmp_finding(const void *x, const void *y)
{
	const struct finding *a = x, *b = y;
	double ra, rb;

	if (a->growing != b->growing)
		return b->growing - a->growing;
	if (!a->growing)
		return 0;
	if (a->trend.label != b->trend.label)
		return a->trend.label == LS_TREND_EXPONENTIAL ? -1 : 1;
	ra = (double)(a->last - a->first) / (double)(llabs(a->first) + 1);
	rb = (double)(b->last - b->first) / (double)(llabs(b->first) + 1);
	return ra < rb ? 1 : ra > rb ? -1 : 0;
}

/* --- top lists -------------------------------------------------------- */

struct ranked {
	const struct beam_proc *p;
	int64_t v;
};

static int cmp_ranked(const void *x, const void *y)
{
	const struct ranked *a = x, *b = y;

	return a->v < b->v ? 1 : a->v > b->v ? -1 :
	       a->p->num < b->p->num ? -1 : a->p->num > b->p->num;
}

/* Processes alive at the end by figure k (for reductions, the growth
 * over the window, as recon's proc_window). */
static size_t rank(const struct beam_data *d, int k, struct ranked *out)
{
	unsigned last = d->taken - 1, i0;
	size_t n = 0, i;

	for (i = 0; i < PHASH; i++) {
		const struct beam_proc *p;

		for (p = d->phash[i]; p; p = p->next) {
			if (!p->seen[last])
				continue;
			out[n].p = p;
			out[n].v = p->v[k][last];
			if (k == PM_REDUCTIONS) {
				for (i0 = 0; !p->seen[i0]; i0++)
					;
				out[n].v -= p->v[k][i0];
			}
			n++;
		}
	}
	qsort(out, n, sizeof(*out), cmp_ranked);
	return n;
}

static void human(char *buf, size_t cap, int64_t v, int bytes)
{
	double x = (double)v;

	if (!bytes)
		snprintf(buf, cap, "%" PRId64, v);
	else if (llabs(v) >= MIB)
		snprintf(buf, cap, "%.1f MiB", x / MIB);
	else if (llabs(v) >= KIB)
		snprintf(buf, cap, "%.1f KiB", x / KIB);
	else
		snprintf(buf, cap, "%" PRId64 " B", v);
}

static void rate_str(char *buf, size_t cap, double r, int bytes)
{
	char h[48];

	if (bytes) {
		human(h, sizeof(h), (int64_t)r, 1);
		snprintf(buf, cap, "%s%s/s", r >= 0 ? "+" : "", h);
	} else {
		snprintf(buf, cap, "%+.1f/s", r);
	}
}

/* --- text ------------------------------------------------------------- */

static void text_finding(FILE *out, const struct finding *f)
{
	char a[48], b[48], rate[64];

	human(a, sizeof(a), f->first, f->bytes);
	human(b, sizeof(b), f->last, f->bytes);
	rate_str(rate, sizeof(rate), f->trend.bytes_per_second, f->bytes);
	fprintf(out, "  %-22s %s\n", f->kind->title, f->subject);
	fprintf(out, "      %s %s -> %s", f->metric, a, b);
	if (f->limit)
		fprintf(out, " of %" PRId64 " limit", f->limit);
	fprintf(out, ", %s, %s over %zu samples\n",
		ls_trend_name(f->trend.label), rate, f->n);
	fprintf(out, "      %s\n", f->kind->why);
	if (f->gc) {
		human(a, sizeof(a), gc_bytes(f->gc), 1);
		fprintf(out, "      --gc-check: a collection freed %" PRId64
			" of its %" PRId64 " binaries (%s)%s\n",
			gc_bins(f->gc),
			f->gc->bins_before, a,
			2 * (gc_bins(f->gc)) >
			f->gc->bins_before ? ": garbage it had not collected, "
			"not a leak" : "");
	}
}

static const struct finding *find(const struct analysis *a, const char *name)
{
	size_t i;

	for (i = 0; i < a->n; i++)
		if (!a->f[i].pid[0] && !strcmp(a->f[i].metric, name))
			return &a->f[i];
	return NULL;
}

static void text_counts(FILE *out, const struct analysis *a)
{
	static const char *const names[] = { "process_count", "port_count",
					      "atom_count", "ets_count" };
	size_t i;

	fputs("Counts:\n", out);
	for (i = 0; i < 4; i++) {
		const struct finding *f = find(a, names[i]);

		if (!f)
			continue;
		fprintf(out, "  %-14s %" PRId64, names[i], f->last);
		if (f->limit)
			fprintf(out, " of %" PRId64 " (%.2f%%)", f->limit,
				100.0 * (double)f->last / (double)f->limit);
		fprintf(out, ", %s\n", ls_trend_name(f->trend.label));
	}
}

static void text_memory(FILE *out, const struct analysis *a)
{
	char h[48], used[48];
	size_t i;

	fputs("erlang:memory():\n", out);
	for (i = 0; i < a->n; i++) {
		const struct finding *f = &a->f[i];

		if (strncmp(f->metric, "memory.", 7))
			continue;
		human(h, sizeof(h), f->last, 1);
		fprintf(out, "  %-16s %12s, %s\n", f->metric + 7, h,
			ls_trend_name(f->trend.label));
	}
	fputs("Allocators (allocated / used):\n", out);
	for (i = 0; i < a->n; i++) {
		const struct finding *f = &a->f[i], *u;
		char uname[128];
		size_t len = strlen(f->metric);

		if (strncmp(f->metric, "alloc.", 6) || len < 10 ||
		    strcmp(f->metric + len - 10, ".allocated"))
			continue;
		snprintf(uname, sizeof(uname), "%.*s.used", (int)(len - 10),
			 f->metric);
		u = find(a, uname);
		human(h, sizeof(h), f->last, 1);
		human(used, sizeof(used), u ? u->last : 0, 1);
		fprintf(out, "  %-16.*s %12s / %-12s %s\n", (int)(len - 16),
			f->metric + 6, h, used, ls_trend_name(f->trend.label));
	}
}

static void text_native_gap(FILE *out, const struct beam_data *d,
			    const struct analysis *a)
{
	const struct finding *rss = find(a, "rss"), *nat = find(a, "native");
	char r1[48], r2[48];

	if (!rss || !nat) {
		fputs("Native memory: unknown (the node is not on this host)\n",
		      out);
		return;
	}
	human(r1, sizeof(r1), rss->last, 1);
	human(r2, sizeof(r2), nat->last, 1);
	fprintf(out, "Native memory: RSS %s, outside the allocators %s, %s\n",
		r1, r2, ls_trend_name(nat->trend.label));
}

static void text_top(FILE *out, const struct beam_data *d, int k,
		     const char *title, struct ranked *buf, unsigned top)
{
	char label[400], v[48];
	size_t n = rank(d, k, buf), i;
	int bytes = k == PM_MEMORY || k == PM_BINARY;

	fprintf(out, "Top processes by %s:\n", title);
	for (i = 0; i < n && i < top; i++) {
		if (!buf[i].v && k != PM_MEMORY)
			break;
		proc_label(buf[i].p, label, sizeof(label));
		human(v, sizeof(v), buf[i].v, bytes);
		fprintf(out, "  %12s  %s\n", v, label);
	}
}

/* Tables alive at the end, by memory now. */
static size_t tabs_by_memory(const struct beam_data *d,
			     const struct beam_tab **out)
{
	unsigned last = d->taken - 1;
	size_t n = 0, i, j;

	for (i = 0; i < d->ntabs; i++)
		if (d->tabs[i].seen[last])
			out[n++] = &d->tabs[i];
	/* insertion sort on the last value: tables are few */
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && out[j]->memory[last] >
			    out[j - 1]->memory[last]; j--) {
			const struct beam_tab *t = out[j];

			out[j] = out[j - 1];
			out[j - 1] = t;
		}
	return n;
}

static void text_ets(FILE *out, const struct beam_data *d, unsigned top)
{
	const struct beam_tab **t = calloc(d->ntabs + 1, sizeof(*t));
	unsigned last = d->taken - 1;
	size_t n, i;
	char h[48];

	if (!t)
		return;
	n = tabs_by_memory(d, t);
	fputs("ETS tables by memory:\n", out);
	for (i = 0; i < n && i < top; i++) {
		human(h, sizeof(h), t[i]->memory[last], 1);
		fprintf(out, "  %12s  %" PRId64 " rows  %s (owner %s)\n", h,
			t[i]->size[last], t[i]->name, t[i]->owner);
	}
	free(t);
}

static void text_gc(FILE *out, const struct beam_data *d, unsigned top)
{
	struct beam_gc *g = d->gc;
	size_t i, j, n = d->ngc;

	fputs("GC check (--gc-check: refc binaries let go by a forced "
	      "garbage collection):\n", out);
	for (i = 1; i < n; i++)
		for (j = i; j > 0 && gc_bins(&g[j]) > gc_bins(&g[j - 1]); j--) {
			struct beam_gc t = g[j];

			g[j] = g[j - 1];
			g[j - 1] = t;
		}
	for (i = 0; i < n && i < top; i++) {
		char h[48];

		if (!gc_bins(&g[i]))
			break;
		human(h, sizeof(h), gc_bytes(&g[i]), 1);
		fprintf(out, "  %6" PRId64 " binaries (%s) freed  %s\n",
			gc_bins(&g[i]), h, g[i].label);
	}
}

/* The agent's growing sites, through the report library's text
 * renderer, or why there are none. */
static int native_report(FILE *out, const struct beam_data *d,
			 struct ls_report_opts *o)
{
	struct ls_report rep;
	int r;

	o->growing = 1;
	ls_report_opts_finish(o);
	r = ls_report_build(&d->native, o, &rep);
	if (r)
		return r;
	r = ls_report_render(out, &rep, o, NULL);
	ls_report_release(&rep);
	return r;
}

static int report_text(FILE *out, const struct beam_data *d,
		       const struct ls_beam_opts *o, const struct analysis *a)
{
	struct ls_report_opts ro = { .format = ls_renderer_find("text"),
				     .top = o->top };
	struct ranked *buf = calloc(d->nprocs + 1, sizeof(*buf));
	size_t i, ngrow = 0;
	int r = 0;

	if (!buf)
		return -ENOMEM;
	fprintf(out, "leakscope beam: node %s, OTP %s, os pid %ld, %u samples "
		"every %gs", d->node, d->otp, d->os_pid, d->taken,
		d->interval_s);
	if (d->period_s > 1.05 * d->interval_s)
		fprintf(out, " (%.3gs measured: a sample takes longer than "
			"the interval)", d->period_s);
	fputs("\n\n", out);
	for (i = 0; i < a->n; i++)
		ngrow += a->f[i].growing;
	if (ngrow) {
		fprintf(out, "Growing: %zu series (leak suspects)\n", ngrow);
		for (i = 0; i < ngrow; i++)
			text_finding(out, &a->f[i]);
	} else {
		fprintf(out, "Growing: nothing%s\n", d->taken <
			LS_TREND_MIN_SAMPLES ? " (too few samples to tell: "
			"take at least 5)" : "");
	}
	fputc('\n', out);
	text_counts(out, a);
	text_memory(out, a);
	text_native_gap(out, d, a);
	text_top(out, d, PM_MEMORY, "memory", buf, o->top);
	text_top(out, d, PM_MQ, "message_queue_len", buf, o->top);
	text_top(out, d, PM_BINARY, "binary memory", buf, o->top);
	text_top(out, d, PM_REDUCTIONS, "reductions (over the window)", buf,
		 o->top);
	text_top(out, d, PM_MONITORS, "monitors", buf, o->top);
	text_top(out, d, PM_LINKS, "links", buf, o->top);
	text_ets(out, d, o->top);
	if (d->gc_done)
		text_gc(out, d, o->top);
	fputs("\nNative sites (the node's leakscope agent):\n", out);
	if (d->has_native)
		r = native_report(out, d, &ro);
	else
		fprintf(out, "  none: %s\n", d->native_why);
	free(buf);
	return r;
}

/* --- JSON ------------------------------------------------------------- */

static void json_finding(struct ls_json *j, const struct finding *f)
{
	size_t i;

	ls_json_object(j, NULL);
	ls_json_str(j, "kind", f->kind->key);
	ls_json_str(j, "title", f->kind->title);
	ls_json_str(j, "subject", f->subject);
	ls_json_str(j, "metric", f->metric);
	if (f->pid[0])
		ls_json_str(j, "pid", f->pid);
	ls_json_str(j, "unit", f->bytes ? "bytes" : "count");
	ls_json_i64(j, "first", f->first);
	ls_json_i64(j, "last", f->last);
	if (f->limit)
		ls_json_i64(j, "limit", f->limit);
	ls_json_str(j, "trend", ls_trend_name(f->trend.label));
	ls_json_f64(j, "rate_per_s", f->trend.bytes_per_second, 3);
	ls_json_bool(j, "growing", f->growing);
	if (f->growing)
		ls_json_str(j, "why", f->kind->why);
	if (f->gc) {
		ls_json_object(j, "gc_check");
		ls_json_i64(j, "binaries_before", f->gc->bins_before);
		ls_json_i64(j, "binaries_freed",
			    gc_bins(f->gc));
		ls_json_i64(j, "bytes_freed",
			    gc_bytes(f->gc));
		ls_json_end(j);
	}
	ls_json_array(j, "values");
	for (i = 0; i < f->n; i++)
		ls_json_i64(j, NULL, f->vals[i]);
	ls_json_end(j);
	ls_json_end(j);
}

static void json_top(struct ls_json *j, const struct beam_data *d, int k,
		     const char *key, struct ranked *buf, unsigned top)
{
	size_t n = rank(d, k, buf), i;
	char pid[32];

	ls_json_array(j, key);
	for (i = 0; i < n && i < top; i++) {
		const struct beam_proc *p = buf[i].p;

		snprintf(pid, sizeof(pid), "<0.%u.%u>", p->num, p->serial);
		ls_json_object(j, NULL);
		ls_json_str(j, "pid", pid);
		if (p->name[0])
			ls_json_str(j, "name", p->name);
		else
			ls_json_null(j, "name");
		ls_json_str(j, "initial_call", p->init);
		ls_json_str(j, "current_function", p->current);
		ls_json_i64(j, "value", buf[i].v);
		ls_json_end(j);
	}
	ls_json_end(j);
}

static int json_native(struct ls_json *j, const struct beam_data *d,
		       unsigned top)
{
	struct ls_report_opts ro = { .format = ls_renderer_find("json"),
				     .top = top };
	char *buf = NULL;
	size_t len = 0;
	FILE *mem;
	int r;

	if (!d->has_native) {
		ls_json_null(j, "native");
		ls_json_str(j, "native_unavailable", d->native_why);
		return 0;
	}
	mem = open_memstream(&buf, &len);
	if (!mem)
		return -ENOMEM;
	r = native_report(mem, d, &ro);
	if (fclose(mem) && !r)
		r = -ENOMEM;
	while (!r && len && (buf[len - 1] == '\n'))
		len--;
	if (!r)
		ls_json_raw(j, "native", buf, len);
	free(buf);
	return r;
}

static int report_json(FILE *out, const struct beam_data *d,
		       const struct ls_beam_opts *o, const struct analysis *a)
{
	struct ranked *buf = calloc(d->nprocs + 1, sizeof(*buf));
	struct ls_json j;
	size_t i;
	int r;

	if (!buf)
		return -ENOMEM;
	ls_json_init(&j, out);
	ls_json_object(&j, NULL);
	ls_json_str(&j, "format", "leakscope-beam");
	ls_json_u64(&j, "version", 1);
	ls_json_str(&j, "node", d->node);
	ls_json_str(&j, "otp_release", d->otp);
	ls_json_i64(&j, "os_pid", d->os_pid);
	ls_json_f64(&j, "interval_s", d->interval_s, 3);
	ls_json_f64(&j, "period_s", d->period_s, 3);
	ls_json_u64(&j, "samples", d->taken);
	ls_json_array(&j, "series");
	for (i = 0; i < a->n; i++)
		json_finding(&j, &a->f[i]);
	ls_json_end(&j);
	ls_json_object(&j, "top");
	json_top(&j, d, PM_MEMORY, "memory", buf, o->top);
	json_top(&j, d, PM_MQ, "message_queue_len", buf, o->top);
	json_top(&j, d, PM_BINARY, "binary_memory", buf, o->top);
	json_top(&j, d, PM_REDUCTIONS, "reductions", buf, o->top);
	json_top(&j, d, PM_MONITORS, "monitors", buf, o->top);
	json_top(&j, d, PM_LINKS, "links", buf, o->top);
	ls_json_end(&j);
	if (d->gc_done) {
		ls_json_array(&j, "gc_check");
		for (i = 0; i < d->ngc; i++) {
			const struct beam_gc *g = &d->gc[i];

			if (!gc_bins(g))
				continue;
			ls_json_object(&j, NULL);
			ls_json_str(&j, "process", g->label);
			ls_json_i64(&j, "binaries_freed",
				    gc_bins(g));
			ls_json_i64(&j, "bytes_freed",
				    gc_bytes(g));
			ls_json_end(&j);
		}
		ls_json_end(&j);
	}
	r = json_native(&j, d, o->top);
	ls_json_end(&j);
	fputc('\n', out);
	free(buf);
	return r ? r : ls_json_finish(&j);
}

int ls_beam_report(FILE *out, const struct beam_data *d,
		   const struct ls_beam_opts *o)
{
	struct analysis a = { 0 };
	int r;

	if (!d->taken)
		return -ENODATA;
	r = analyse(d, &a);
	if (!r) {
		qsort(a.f, a.n, sizeof(*a.f), cmp_finding);
		r = o->json ? report_json(out, d, o, &a) :
		    report_text(out, d, o, &a);
	}
	analysis_free(&a);
	return r;
}
