/*
 * diff.c - matching the stacks of two snapshots and computing what
 * changed (see diff.h).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include "diff.h"
#include "util.h"
#include "stack.h"

/* The entries being collected, with a hash index on their keys. */
struct collect {
	struct ls_diff *d;
	size_t cap;
	struct ls_strindex index;	/* of d->entries by key */
};

const char *ls_diff_change_name(enum ls_diff_change c)
{
	static const char *const names[] = { "grew", "shrank", "new", "gone",
					     "same" };

	return c <= LS_DIFF_SAME ? names[c] : "unknown";
}

/* --- keys ----------------------------------------------------------------- */

/*
 * One frame of a key: what it is, never where it was (diff.h).  Fields
 * are split by US and frames by RS: no symbol or path holds those.
 */
static void key_frame(FILE *k, const struct ls_symframe *f)
{
	unsigned i;

	fprintf(k, "%s\x1f", f->module ? ls_sym_basename(f->module) : "");
	if (f->function && (f->line || f->inlined)) {
		fprintf(k, "%s\x1f%s\x1f%d", f->function, f->file ? f->file : "",
			f->line);
	} else if (f->function) {
		fprintf(k, "%s+0x%" PRIx64, f->function, f->offset);
	} else if (f->mod) {
		for (i = 0; i < f->mod->build_id_len; i++)
			fprintf(k, "%02x", f->mod->build_id[i]);
		fprintf(k, "+0x%" PRIx64, f->addr - f->mod->bias);
	} else {
		fprintf(k, "0x%" PRIx64, f->addr);
	}
	fputc('\x1e', k);
}

/* The key of a stack, malloc()ed; NULL on ENOMEM. */
static char *make_key(uint32_t kind, const struct ls_stack *st)
{
	char *buf = NULL;
	size_t len = 0, i;
	FILE *k = open_memstream(&buf, &len);

	if (!k)
		return NULL;
	fprintf(k, "%s\x1e", kind == LSNAP_KIND_MMAP ? "mmap" : "heap");
	for (i = 0; i < st->n; i++)
		key_frame(k, &st->f[i]);
	if (fclose(k)) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* --- the entry table ------------------------------------------------------ */

static const char *entry_key(const void *d, size_t i)
{
	return ((const struct ls_diff *)d)->entries[i].key;
}

static int grow_entries(struct collect *c)
{
	return LS_GROW(c->d->entries, c->d->n + 1, c->cap) ? -ENOMEM : 0;
}

/* The entry of key, created when new; takes key in either case.  NULL
 * on ENOMEM (key freed). */
static struct ls_diff_entry *entry_for(struct collect *c, char *key,
				       uint32_t kind)
{
	struct ls_diff_entry *e;
	size_t *slot;

	slot = ls_strindex_slot(&c->index, key, c->d->n, entry_key, c->d);
	if (!slot || (!*slot && c->d->n == c->cap && grow_entries(c))) {
		free(key);
		return NULL;
	}
	if (*slot) {
		free(key);
		return &c->d->entries[*slot - 1];
	}
	e = &c->d->entries[c->d->n];
	memset(e, 0, sizeof(*e));
	e->key = key;
	e->kind = kind;
	*slot = ++c->d->n;
	return e;
}

/* --- collecting both sides ------------------------------------------------ */

static int keep_frames(struct ls_diff_entry *e, const struct ls_stack *st)
{
	struct ls_symframe *f = malloc((st->n ? st->n : 1) * sizeof(*f));

	if (!f)
		return -ENOMEM;
	if (st->n)	/* st->f is NULL for an empty stack */
		memcpy(f, st->f, st->n * sizeof(*f));
	free(e->frames);
	e->frames = f;
	e->nframes = st->n;
	return 0;
}

static int add_site(struct collect *c, const struct ls_report_site *r,
		    const struct ls_stack *st, int is_new)
{
	char *key = make_key(r->site->kind, st);
	struct ls_diff_entry *e = key ? entry_for(c, key, r->site->kind) : NULL;
	struct ls_diff_side *side;

	if (!e)
		return -ENOMEM;
	side = is_new ? &e->newer : &e->base;
	side->present = 1;
	side->nsites++;
	side->live_bytes = ls_add_sat(side->live_bytes, r->live_bytes);
	side->live_blocks = ls_add_sat(side->live_blocks, r->live_blocks);
	side->allocated_bytes += r->allocated_bytes;
	side->allocated_blocks += r->allocated_blocks;
	side->by_bytes = ls_add_sat(side->by_bytes, r->key_bytes);
	side->by_blocks = ls_add_sat(side->by_blocks, r->key_blocks);
	/* NEW's frames (addresses of the newer process) win. */
	if (!e->frames || (is_new && side->nsites == 1))
		return keep_frames(e, st);
	return 0;
}

static int add_snapshot(struct collect *c, const struct ls_snapshot *snap,
			struct ls_symbolizer *sym,
			const struct ls_report_opts *opts, int is_new)
{
	struct ls_report_opts o = *opts;
	struct ls_stack st = { 0 };
	struct ls_report rep;
	size_t i;
	int ret;

	o.top = 0;
	o.show_allocs = 0;
	o.growing = 0;
	ls_report_opts_finish(&o);
	ret = ls_report_build(snap, &o, &rep);
	if (ret)
		return ret;
	for (i = 0; i < rep.nsites && !ret; i++) {
		ret = ls_stack_build(sym, rep.sites[i].site, &st);
		if (!ret)
			ret = add_site(c, &rep.sites[i], &st, is_new);
	}
	ls_stack_release(&st);
	ls_report_release(&rep);
	return ret;
}

/* --- what changed --------------------------------------------------------- */

static enum ls_diff_change classify(const struct ls_diff_entry *e)
{
	if (!e->base.present)
		return LS_DIFF_NEW;
	if (!e->newer.present)
		return LS_DIFF_GONE;
	if (e->by_bytes_delta)
		return e->by_bytes_delta > 0 ? LS_DIFF_GREW : LS_DIFF_SHRANK;
	if (e->by_blocks_delta)
		return e->by_blocks_delta > 0 ? LS_DIFF_GREW : LS_DIFF_SHRANK;
	return LS_DIFF_SAME;
}

static void finish_entries(struct ls_diff *d)
{
	struct ls_diff_totals *t = &d->totals;
	size_t i;

	for (i = 0; i < d->n; i++) {
		struct ls_diff_entry *e = &d->entries[i];

		e->live_bytes_delta = ls_sub_sat(e->newer.live_bytes,
						 e->base.live_bytes);
		e->live_blocks_delta = ls_sub_sat(e->newer.live_blocks,
						  e->base.live_blocks);
		e->by_bytes_delta = ls_sub_sat(e->newer.by_bytes,
					       e->base.by_bytes);
		e->by_blocks_delta = ls_sub_sat(e->newer.by_blocks,
						e->base.by_blocks);
		e->change = classify(e);
		t->count[e->change]++;
		t->base_bytes = ls_add_sat(t->base_bytes, e->base.live_bytes);
		t->base_blocks = ls_add_sat(t->base_blocks, e->base.live_blocks);
		t->new_bytes = ls_add_sat(t->new_bytes, e->newer.live_bytes);
		t->new_blocks = ls_add_sat(t->new_blocks, e->newer.live_blocks);
	}
	t->delta_bytes = ls_sub_sat(t->new_bytes, t->base_bytes);
	t->delta_blocks = ls_sub_sat(t->new_blocks, t->base_blocks);
}

static int cmp_delta(const void *a, const void *b)
{
	const struct ls_diff_entry *x = a, *y = b;

	if (x->by_bytes_delta != y->by_bytes_delta)
		return x->by_bytes_delta > y->by_bytes_delta ? -1 : 1;
	if (x->by_blocks_delta != y->by_blocks_delta)
		return x->by_blocks_delta > y->by_blocks_delta ? -1 : 1;
	return strcmp(x->key, y->key);
}

static uint64_t magnitude(int64_t v)
{
	return v < 0 ? -(uint64_t)v : (uint64_t)v;
}

/* --top: the biggest changes either way; ties go to growth. */
static int cmp_magnitude(const void *a, const void *b)
{
	const struct ls_diff_entry *x = a, *y = b;
	uint64_t mx = magnitude(x->by_bytes_delta);
	uint64_t my = magnitude(y->by_bytes_delta);

	if (mx != my)
		return mx > my ? -1 : 1;
	return cmp_delta(a, b);
}

static void entry_release(struct ls_diff_entry *e)
{
	free(e->frames);
	free(e->key);
}

static void apply_top(struct ls_diff *d, size_t top)
{
	size_t i;

	if (!top || top >= d->n)
		return;
	qsort(d->entries, d->n, sizeof(*d->entries), cmp_magnitude);
	for (i = top; i < d->n; i++)
		entry_release(&d->entries[i]);
	d->n = top;
	qsort(d->entries, d->n, sizeof(*d->entries), cmp_delta);
}

/* The first module is the program itself (the agent lists it first). */
static int same_program(const struct ls_snapshot *a,
			const struct ls_snapshot *b)
{
	const struct ls_module *x = a->nmodules ? &a->modules[0] : NULL;
	const struct ls_module *y = b->nmodules ? &b->modules[0] : NULL;

	if (!x || !y)
		return !x && !y;
	return !strcmp(ls_sym_basename(x->path), ls_sym_basename(y->path)) &&
		x->build_id_len == y->build_id_len &&
		!memcmp(x->build_id, y->build_id, x->build_id_len);
}

int ls_diff_build(const struct ls_snapshot *base,
		  const struct ls_snapshot *newer,
		  const struct ls_report_opts *opts, struct ls_diff *d)
{
	struct collect c = { .d = d };
	int ret = -ENOMEM;

	memset(d, 0, sizeof(*d));
	d->base = base;
	d->newer = newer;
	d->by = opts->by;
	d->sym_base = ls_symbolizer_new(base);
	d->sym_new = ls_symbolizer_new(newer);
	if (!d->sym_base || !d->sym_new)
		goto out;
	ret = add_snapshot(&c, base, d->sym_base, opts, 0);
	if (!ret)
		ret = add_snapshot(&c, newer, d->sym_new, opts, 1);
	if (ret)
		goto out;
	finish_entries(d);
	if (d->n)	/* d->entries is NULL when empty */
		qsort(d->entries, d->n, sizeof(*d->entries), cmp_delta);
	d->n_total = d->n;
	apply_top(d, opts->top);
	d->different_programs = !same_program(base, newer);
out:
	ls_strindex_release(&c.index);
	if (ret)
		ls_diff_release(d);
	return ret;
}

void ls_diff_release(struct ls_diff *d)
{
	size_t i;

	if (!d)
		return;
	for (i = 0; i < d->n; i++)
		entry_release(&d->entries[i]);
	free(d->entries);
	ls_symbolizer_free(d->sym_base);
	ls_symbolizer_free(d->sym_new);
	memset(d, 0, sizeof(*d));
}
