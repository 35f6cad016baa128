/*
 * track.c - the hooks' bookkeeping (hooks.c calls it with the guard
 * held): a block's site captured and recorded, a free settled, mappings
 * and their changes.
 */
#include <errno.h>
#include <string.h>
#include "../common/lsnap.h"
#include "track.h"
#include "guard.h"
#include "live.h"
#include "mmaps.h"
#include "real.h"
#include "sample.h"
#include "site.h"
#include "snapwrite.h"
#include "capture.h"
#include "sys.h"
#include "thread.h"
#include "tick.h"

/* --- bookkeeping, called from hooks ------------------------------------ */

static struct ls_site_rec *intern(struct ls_thread *t, const uint64_t *pcs,
			      uint32_t n, uint32_t kind)
{
	uint64_t h = ls_site_hash(pcs, n, kind);
	struct ls_site_rec **slot = &t->stack_cache[h & (LS_STACK_CACHE - 1)];
	struct ls_site_rec *s = *slot;

	if (s && ls_site_matches(s, pcs, n, kind, h))
		return s;
	s = ls_site_intern(pcs, n, kind, h);
	if (s)
		*slot = s;
	return s;
}

/* The memo did not know this walk: capture, intern, remember. */
static __attribute__((noinline))
struct ls_site_rec *capture_new(struct ls_thread *t, uint32_t kind)
{
	uint64_t pcs[LS_DEPTH_MAX];
	struct ls_site_rec *s;
	int n = ls_capture_site(pcs, ls_agent.depth, kind, &t->start,
				      &s);

	if (!s) {
		s = intern(t, pcs, (uint32_t)n, kind);
		if (s)
			ls_capture_remember(s);
	}
	return s;
}

static inline __attribute__((always_inline))
struct ls_site_rec *capture_site(struct ls_thread *t, uint32_t kind)
{
	struct ls_site_rec *s = NULL;

	/* Usually the memo knows the walk: no capture, no interning. */
	if (t->start.sp)
		s = ls_likely(ls_capture_memo_direct) ?
		    ls_unwind_memo_get(&t->start,
				       ls_capture_want_from(ls_agent.depth),
				       kind) :
		    ls_capture_memo(&t->start, ls_agent.depth, kind);
	if (!s)
		s = capture_new(t, kind);
	t->start.sp = 0;	/* used: a capture that did not set it starts
				 * where it is */
	return s;
}

/*
 * The bookkeeping below takes the sample rate as an argument, read once
 * per event: ls_sample_rate only changes before the agent is on.  The
 * hot paths (ls_track_malloc, ls_track_free) pass a literal 0 in full
 * tracking, so that their copy of the code has no test of the rate left
 * (each was a load and a branch, reloaded after every call the compiler
 * could not see into): ls_sample_est_at() for that rate.
 */

/* A recorded block goes away: settle its site (ev: LS_EV_*). */
static inline __attribute__((always_inline))
void settle_replaced(struct ls_thread *t, const struct ls_live_entry *old,
		     unsigned ev, uint64_t rate)
{
	int64_t b, k;

	ls_sample_est_at(rate, old->size, &b, &k);
	ls_thread_site_delta(t, old->site, NULL, -b, -k, 0, 0, ev);
}

/* Allocation calls this thread has made (recorded or not): a block is a
 * temporary when it is freed before the count moves on. */
static inline uint64_t alloc_calls(const struct ls_thread *t)
{
	return 0
#define LS_INTERPOSE(sym, NAME, field, ret, params, attr, kind, real, got, export) \
	LS_IP_ALLOC_##kind(+ t->calls[LS_FN_##NAME])
#include "../common/interpose.def"
		;
}

/* A block freed by the program: its lifetime, and whether it was this
 * thread's latest allocation (heaptrack's "temporary"). */
static inline __attribute__((always_inline))
unsigned free_event(const struct ls_thread *t, const struct ls_live_entry *e,
		    uint64_t rate)
{
	uint32_t now = ls_tick_now();
	unsigned ev = LS_EV_LIFE(ls_hist_bucket_below63(now > e->birth ?
							now - e->birth : 0));

	/* In full tracking every allocation sets last_addr, and no other
	 * block can have that address while it lives: the address says it
	 * all.  Sampled, the unrecorded allocations count through calls[]. */
	if (e->addr == t->last_addr &&
	    (!rate || alloc_calls(t) == t->last_allocs))
		ev |= LS_EV_TEMP;
	return ev;
}

/*
 * A table entry in four stores.  Written as a compound literal, GCC merges
 * the size and tid bit-fields into the stack slot one at a time (18
 * instructions per allocation); the word is built here instead.  The
 * x86-64 psABI allocates bit-fields from the least significant bit of
 * their unit: size is the word's low 40 bits, tid the high 24
 * (tests/integration/t_tick.py reads both back from a snapshot).
 */
static inline void entry_make(struct ls_live_entry *e, uint64_t addr,
			      uint64_t size, uint32_t tid, uint32_t site,
			      uint32_t birth)
{
	uint64_t w = (size & ((1ull << 40) - 1)) | (uint64_t)tid << 40;

	e->addr = addr;
	memcpy((char *)e + sizeof(e->addr), &w, sizeof(w));
	e->site = site;
	e->birth = birth;
}

static inline __attribute__((always_inline))
void insert(struct ls_thread *t, struct ls_site_rec *s, void *p, size_t size,
	    uint64_t rate)
{
	struct ls_live_entry e, old;
	int64_t b, k;
	int r;

	_Static_assert(sizeof(e) == 24, "entry: addr, size:40 tid:24, site, birth");
	entry_make(&e, (uint64_t)(uintptr_t)p, size, (uint32_t)t->tid, s->id,
		   ls_tick_now());
	r = ls_live_insert(&e, &old);
	if (r < 0) {
		ls_agent_drop();
		return;
	}
	if (r == 1)
		settle_replaced(t, &old, 0, rate);
	else if (rate)
		ls_sample_mark(e.addr);
	t->last_addr = e.addr;
	if (rate)
		t->last_allocs = alloc_calls(t);
	ls_sample_est_at(rate, size, &b, &k);
	ls_thread_site_delta(t, s->id, s, b, k, (uint64_t)b, (uint64_t)k,
			     LS_EV_SIZE(ls_hist_bucket_below63(size)));
	/* The entry's copy of p, in a frame that may lie right under the
	 * program's (ls_track_malloc): see hooks.c, malloc_slow. */
	e.addr = 0;
	__asm__ volatile("" :: "r"(&e) : "memory");
}

/*
 * The guard and errno are taken here rather than in a wrapper in hooks.c
 * (one call fewer per event).  Nothing relied on that call boundary: the
 * guard's increment and decrement carry their own compiler barriers
 * (guard.h), the capture and the table are opaque calls that the saved
 * errno's store cannot be moved above, and the hook has called the real
 * function before it calls this (hooks.c says why in that order).
 */
static inline __attribute__((always_inline))
void record(struct ls_thread *t, void *p, size_t size, uint64_t rate)
{
	int e = *t->err;
	struct ls_site_rec *s;

	ls_guard_enter();
	ls_live_prefetch((uint64_t)(uintptr_t)p);	/* under the capture */
	s = capture_site(t, LSNAP_KIND_HEAP);
	if (s)
		insert(t, s, p, size, rate);
	else
		ls_agent_drop();
	ls_guard_leave();
	*t->err = e;
}

__attribute__((noinline))
void ls_track_alloc(struct ls_thread *t, void *p, size_t size)
{
	record(t, p, size, ls_sample_rate);
}

/*
 * The block p a malloc or calloc returned: recorded in full tracking, and
 * sampled when a sample point falls in it.  Inlined into ls_track_malloc
 * and ls_track_calloc, so LS_UNWIND_HERE() describes their frame.
 */
static inline __attribute__((always_inline))
void *record_new(struct ls_thread *t, void *p, size_t size)
{
	if (!p)
		return p;
	if (ls_likely(!ls_sample_rate)) {
		t->start = LS_UNWIND_HERE();	/* the program's call */
		record(t, p, size, 0);
	} else if (ls_sample_take(t, size)) {
		t->start = LS_UNWIND_HERE();
		record(t, p, size, ls_sample_rate);
	}
	return p;
}

/*
 * The hooks' slow paths reach these by tail calls (agent.h): the caller
 * is the program, and LS_UNWIND_HERE() is its call into malloc.  The
 * bookkeeping is inline, in this one frame (with its registers saved
 * once), instead of a call from the hook's frame into ls_track_alloc's.
 */
__attribute__((noinline))
void *ls_track_malloc(size_t n, struct ls_thread *t)
{
	int e = *t->err;
	void *p;

	ls_thread_count(t, LS_FN_MALLOC);
	p = ls_real.malloc(n);
	ls_thread_keep_errno(t->err, e, p);
	return record_new(t, p, n);
}

__attribute__((noinline))
void *ls_track_calloc(size_t n, size_t m, struct ls_thread *t)
{
	int e = *t->err;
	void *p;

	ls_thread_count(t, LS_FN_CALLOC);
	p = ls_real.calloc(n, m);
	ls_thread_keep_errno(t->err, e, p);
	return record_new(t, p, n * m);
}

__attribute__((noinline))
void *ls_track_new(uint64_t a, uint64_t b, uint64_t c, struct ls_thread *t,
		   ls_new_fn real)
{
	int e = *t->err;
	void *p;

	ls_thread_count(t, LS_FN_MALLOC);
	p = real(a, b, c);
	ls_thread_keep_errno(t->err, e, p);
	return record_new(t, p, a);
}

/* Take p out of the live table; in sampled mode the filter answers for
 * almost every block that was never recorded. */
static inline __attribute__((always_inline))
int take(uint64_t addr, struct ls_live_entry *e, uint64_t rate)
{
	if (rate && !ls_sample_maybe(addr))
		return 0;
	if (!ls_live_remove(addr, e))
		return 0;
	if (rate)
		ls_sample_unmark(addr);
	return 1;
}

/*
 * As ls_track_alloc: guard and errno here.  The real free runs between
 * the removal and the settling: on a large heap the removal's table
 * lines miss, and nothing the real free does depends on them, so the
 * core runs free's work while they arrive (python3 with
 * PYTHONMALLOC=malloc, docs/PERFORMANCE.md).  The order that matters is
 * kept: the entry is out of the table, under its shard's lock, before
 * the real free can hand the block to another thread, whose insert of
 * the same address must not find it.  The guard is not held across the
 * real free (an allocator under the agent may munmap in it, which must
 * be seen), and errno is the one the real free leaves, as without the
 * agent.
 */
static inline __attribute__((always_inline))
void untrack(void *p, struct ls_thread *t, uint64_t rate, ls_release_fn rel,
	     uint64_t b, uint64_t c)
{
	int err = *t->err, got;
	struct ls_live_entry e;

	ls_guard_enter();
	got = take((uint64_t)(uintptr_t)p, &e, rate);
	ls_guard_leave();
	*t->err = err;
	if (rel)
		rel(p, b, c);
	else
		ls_real.free(p);
	if (got) {
		err = *t->err;
		ls_guard_enter();
		settle_replaced(t, &e, free_event(t, &e, rate), rate);
		ls_guard_leave();
		*t->err = err;
	}
}

__attribute__((noinline))
void ls_track_free(void *p, struct ls_thread *t)
{
	if (ls_likely(!ls_sample_rate))
		untrack(p, t, 0, NULL, 0, 0);
	else
		untrack(p, t, ls_sample_rate, NULL, 0, 0);
}

__attribute__((noinline))
void ls_track_delete(void *p, struct ls_thread *t, ls_release_fn rel,
		     uint64_t b, uint64_t c)
{
	untrack(p, t, ls_sample_rate, rel, b, c);
}

int ls_track_take(struct ls_thread *t, void *p, void *saved)
{
	struct ls_live_entry *e = saved;

	_Static_assert(sizeof(*e) == LS_TRACK_SAVED, "saved entry size");
	if (!take((uint64_t)(uintptr_t)p, e, ls_sample_rate))
		return 0;
	settle_replaced(t, e, 0, ls_sample_rate);	/* resized, not ended */
	return 1;
}

void ls_track_restore(struct ls_thread *t, const void *saved)
{
	const struct ls_live_entry *e = saved;
	struct ls_site_rec *s = ls_site_get(e->site);
	struct ls_live_entry old;
	int64_t b, k;

	if (!s || ls_live_insert(e, &old) < 0)
		return;
	if (ls_sample_rate)
		ls_sample_mark(e->addr);
	/* Back as it was: live again, but not a new allocation. */
	ls_sample_est(e->size, &b, &k);
	ls_thread_site_delta(t, s->id, s, b, k, 0, 0, 0);
}

/*
 * A change of a mapping site.  Allocator chunks and reservations are
 * not live memory: their sites keep their bytes, but the global live
 * figure (and so the peak) never sees them.  The slow path updates the
 * site alone (the inline one adds to live_delta).
 */
static void mapping_delta(struct ls_thread *t, struct ls_site_rec *s,
			  int64_t dbytes, int64_t dblocks, uint64_t abytes,
			  uint64_t ablocks, unsigned ev)
{
	if (lsnap_kind_live(s->kind))
		ls_thread_site_delta(t, s->id, s, dbytes, dblocks, abytes,
				     ablocks, ev);
	else
		ls_thread_site_delta_slow(t, s->id, s, dbytes, dblocks,
					  abytes, ablocks, ev);
}

void ls_track_mmap(struct ls_thread *t, void *p, size_t len, uint32_t kind)
{
	struct ls_site_rec *s = capture_site(t, kind);
	struct ls_live_entry e = {
		.addr = (uint64_t)(uintptr_t)p,
		.size = len,
		.birth = ls_tick_now(),
		.tid = (uint32_t)t->tid,
	};

	if (!s) {
		ls_agent_drop();
		return;
	}
	e.site = s->id;
	/* Mappings are few and large: always recorded, weight 1. */
	if (ls_mmaps_add(&e))
		ls_agent_drop();
	else
		mapping_delta(t, s, (int64_t)len * ls_sample_scale(),
			      ls_sample_scale(),
			      len * (uint64_t)ls_sample_scale(),
			      (uint64_t)ls_sample_scale(),
			      LS_EV_SIZE(ls_hist_bucket(len)));
}

static void mmap_changed(uint32_t site, int64_t dbytes, int64_t dblocks,
			 void *arg)
{
	struct ls_site_rec *s = ls_site_get(site);

	if (s)
		mapping_delta(arg, s, dbytes * ls_sample_scale(),
			      dblocks * ls_sample_scale(), 0, 0, 0);
}

void ls_track_munmap(struct ls_thread *t, void *p, size_t len)
{
	ls_mmaps_remove((uint64_t)(uintptr_t)p, len, mmap_changed, t);
}

static int kind_of(uint32_t site, uint32_t kind)
{
	struct ls_site_rec *s = ls_site_get(site);

	return s && s->kind == kind;
}

static int is_reserved(uint32_t site)
{
	return kind_of(site, LSNAP_KIND_RESERVED);
}

static int is_program_map(uint32_t site)
{
	return kind_of(site, LSNAP_KIND_MMAP);
}

int ls_track_mremap(struct ls_thread *t, void *old, size_t oldlen, void *p,
		    size_t newlen, uint32_t kind)
{
	uint32_t site;

	/* A moved or grown reservation stays one: mremap keeps the
	 * protection, and the new pages get it too. */
	if (ls_mmaps_site_at((uint64_t)(uintptr_t)old, &site) &&
	    is_reserved(site) && kind == LSNAP_KIND_MMAP)
		kind = LSNAP_KIND_RESERVED;
	if (!ls_mmaps_remove((uint64_t)(uintptr_t)old, oldlen, mmap_changed, t))
		return 0;
	ls_track_mmap(t, p, newlen, kind);
	return 1;
}

/*
 * Committing part of a reservation with mprotect() (V8, wasm runtimes,
 * glibc's own heaps) is the same as mapping over it with MAP_FIXED: the
 * pieces become the program's mappings, at the mprotect call's site;
 * making the program's mapping inaccessible (decommit, a guard area)
 * turns it into reserved address space.  Protection changes between
 * accessible modes, and allocator chunks, change nothing.
 */
void ls_track_mprotect(struct ls_thread *t, void *p, size_t len, int prot)
{
	int none = prot == PROT_NONE;
	uint64_t at = (uint64_t)(uintptr_t)p, end = at + len, lo, hi;
	struct ls_unwind_start start = t->start;

	while (at < end && ls_mmaps_take(at, end - at, none ? is_program_map :
					 is_reserved, mmap_changed, t, &lo, &hi)) {
		t->start = start;	/* each piece from the caller */
		ls_track_mmap(t, (void *)(uintptr_t)lo, hi - lo, none ?
			      LSNAP_KIND_RESERVED : LSNAP_KIND_MMAP);
		at = hi;
	}
}
