/*
 * t-lib-diff.c - how lib/diff.c matches stacks across two snapshots whose
 * modules sit at other addresses (ASLR): frames without symbols by build
 * id and offset from the load bias, frames without a module by raw
 * address; sites with one key added up; the changes, the order, --top,
 * the totals and the program check, on synthetic snapshots whose every
 * figure is known.  (Symbolized frames are matched in
 * tests/integration/t_diff.py on real programs.)
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/diff.h"
#include "lib-fixture.h"
#include "tap.h"

/* A snapshot with one module "/nonexistent/NAME" (build id id4) loaded
 * at bias, room for 8 sites. */
static void snap_init(struct ls_snapshot *s, uint64_t bias, const char *name,
		      const char *id4)
{
	struct ls_module *m;
	char path[64];

	memset(s, 0, sizeof(*s));
	s->hdr.pid = (uint32_t)(bias >> 20);
	s->argv = xcalloc(1, sizeof(*s->argv));
	s->modules = xcalloc(1, sizeof(*s->modules));
	s->sites = xcalloc(8, sizeof(*s->sites));
	m = &s->modules[s->nmodules++];
	m->bias = bias;
	m->lo = bias;
	m->hi = bias + 0x100000;
	m->gen_from = 0;
	m->gen_to = LSNAP_GEN_LOADED;
	m->build_id_len = 4;
	memcpy(m->build_id, id4, 4);
	snprintf(path, sizeof(path), "/nonexistent/%s", name);
	m->path = xstrdup(path);
}

/* A site whose frames are offsets into the module (or, with absolute,
 * raw addresses). */
static void site(struct ls_snapshot *s, uint32_t id, int64_t bytes,
		 int64_t blocks, const uint64_t *off, uint32_t n, int absolute)
{
	struct ls_site *t = &s->sites[s->nsites++];
	uint32_t i;

	t->id = id;
	t->live_bytes = bytes;
	t->live_blocks = blocks;
	t->allocated_bytes = (uint64_t)bytes;
	t->allocated_blocks = (uint64_t)blocks;
	t->nframes = n;
	t->frames = xcalloc(n, sizeof(uint64_t));
	for (i = 0; i < n; i++)
		t->frames[i] = absolute ? off[i] : s->modules[0].bias + off[i];
}

static const struct ls_diff_entry *find(const struct ls_diff *d,
					uint64_t first_off)
{
	size_t i;

	for (i = 0; i < d->n; i++)
		if (d->entries[i].nframes && d->entries[i].frames[0].mod &&
		    d->entries[i].frames[0].addr -
		    d->entries[i].frames[0].mod->bias == first_off)
			return &d->entries[i];
	return NULL;
}

static const uint64_t stack_a[] = { 0x1234, 0x2000 };
static const uint64_t stack_b[] = { 0x1300, 0x2000 };
static const uint64_t stack_c[] = { 0x1400, 0x2000 };
static const uint64_t stack_d[] = { 0x1500 };
static const uint64_t raw[] = { 0x10 };

/*
 * base (bias 0x400000): a 100/1 (two sites: 60/1 + 40/0), b 500/5,
 * c 70/7, d 9/1, raw 8/1; 687 bytes in 15 blocks.
 * new (bias 0x7f0000000000): a 400/4, b 200/2, c 70/7, e 50/5 (d gone),
 * raw 8/1 (the same raw address: the same key); 728 bytes in 19 blocks.
 */
static void make(struct ls_snapshot *b, struct ls_snapshot *n,
		 const char *new_id)
{
	static const uint64_t stack_e[] = { 0x1600, 0x2000 };

	snap_init(b, 0x400000, "prog", "\x01\x02\x03\x04");
	site(b, 1, 60, 1, stack_a, 2, 0);
	site(b, 2, 40, 0, stack_a, 2, 0);
	site(b, 3, 500, 5, stack_b, 2, 0);
	site(b, 4, 70, 7, stack_c, 2, 0);
	site(b, 5, 9, 1, stack_d, 1, 0);
	site(b, 6, 8, 1, raw, 1, 1);
	snap_init(n, 0x7f0000000000, "prog", new_id);
	site(n, 9, 200, 2, stack_b, 2, 0);
	site(n, 8, 400, 4, stack_a, 2, 0);
	site(n, 7, 70, 7, stack_c, 2, 0);
	site(n, 6, 50, 5, stack_e, 2, 0);
	site(n, 5, 8, 1, raw, 1, 1);
}

static void expect(const struct ls_diff *d, uint64_t off,
		   enum ls_diff_change c, int64_t db, int64_t dn, uint32_t nb,
		   const char *what)
{
	const struct ls_diff_entry *e = find(d, off);

	if (!ok(e != NULL, "%s: found", what))
		return;
	ok(e->change == c && e->live_bytes_delta == db &&
	   e->live_blocks_delta == dn && e->base.nsites == nb,
	   "%s: %s %+lld bytes %+lld blocks from %u base sites", what,
	   ls_diff_change_name(c), (long long)db, (long long)dn, nb);
}

static void test_matching(void)
{
	struct ls_report_opts o = { 0 };
	struct ls_snapshot b, n;
	struct ls_diff d;
	size_t i;

	make(&b, &n, "\x01\x02\x03\x04");
	ls_report_opts_finish(&o);
	ok(ls_diff_build(&b, &n, &o, &d) == 0, "built");
	is_u64(d.n, 6, "six stacks");
	expect(&d, 0x1234, LS_DIFF_GREW, 300, 3, 2, "a: two base sites added up");
	expect(&d, 0x1300, LS_DIFF_SHRANK, -300, -3, 1, "b");
	expect(&d, 0x1400, LS_DIFF_SAME, 0, 0, 1, "c");
	expect(&d, 0x1500, LS_DIFF_GONE, -9, -1, 1, "d");
	expect(&d, 0x1600, LS_DIFF_NEW, 50, 5, 0, "e");
	ok(d.entries[0].live_bytes_delta == 300 &&
	   d.entries[1].live_bytes_delta == 50 &&
	   d.entries[5].live_bytes_delta == -300, "largest growth first");
	for (i = 0; i < d.n; i++)
		if (!d.entries[i].frames[0].mod)
			ok(d.entries[i].change == LS_DIFF_SAME &&
			   d.entries[i].frames[0].addr == 0x10,
			   "a frame outside every module matches by address");
	ok(d.entries[0].frames[0].addr == 0x7f0000001234,
	   "frames are NEW's when NEW has the stack");
	ok(d.totals.base_bytes == 687 && d.totals.new_bytes == 728 &&
	   d.totals.delta_bytes == 41 && d.totals.base_blocks == 15 &&
	   d.totals.new_blocks == 19 && d.totals.delta_blocks == 4,
	   "totals 687 -> 728 bytes (+41), 15 -> 19 blocks (+4)");
	ok(d.totals.count[LS_DIFF_GREW] == 1 && d.totals.count[LS_DIFF_SAME] == 2,
	   "counts per change");
	ok(!d.different_programs, "the same program");
	ls_diff_release(&d);

	o.top = 2;
	ok(ls_diff_build(&b, &n, &o, &d) == 0, "built with --top 2");
	ok(d.n == 2 && d.n_total == 6 && d.entries[0].live_bytes_delta == 300 &&
	   d.entries[1].live_bytes_delta == -300 && d.totals.delta_bytes == 41,
	   "--top 2: the two biggest changes either way, totals of all");
	ls_diff_release(&d);
	ls_snapshot_release(&b);
	ls_snapshot_release(&n);

	/* A rebuilt program: another build id, so unsymbolized frames
	 * cannot be matched, and the programs differ. */
	make(&b, &n, "\x09\x09\x09\x09");
	o.top = 0;
	ok(ls_diff_build(&b, &n, &o, &d) == 0, "built against a rebuild");
	ok(d.different_programs, "different programs (build ids differ)");
	ok(d.totals.count[LS_DIFF_NEW] == 4 && d.totals.count[LS_DIFF_GONE] == 4 &&
	   d.totals.count[LS_DIFF_SAME] == 1,
	   "no symbol, other build id: nothing matches but the raw address");
	ls_diff_release(&d);
	ls_snapshot_release(&b);
	ls_snapshot_release(&n);
}

static void test_nodata(void)
{
	struct ls_report_opts o = { .min_size = 16 };
	struct ls_snapshot b, n;
	struct ls_diff d;

	make(&b, &n, "\x01\x02\x03\x04");
	ls_report_opts_finish(&o);
	ok(ls_diff_build(&b, &n, &o, &d) == -ENODATA && d.n == 0 &&
	   !d.entries, "block filters without block lists: -ENODATA, empty");
	ls_diff_release(&d);
	ls_snapshot_release(&b);
	ls_snapshot_release(&n);
}

int main(void)
{
	test_matching();
	test_nodata();
	return tap_done();
}
