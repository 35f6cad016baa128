/*
 * thread.h - per-thread agent state: the recursion guard, the thread id,
 * call counters, a cache of recently seen stacks and a cache of pending
 * site-counter updates.
 *
 * Every counter here is written only by its own thread; snapshots read
 * them without stopping anyone.  Pending site updates are flushed into
 * the shared site counters once per LS_PENDING_FLUSH events per site, or
 * when evicted, so the shared cache lines are written rarely.  A seqlock
 * per thread lets a reader take a consistent copy of one pending entry.
 *
 * Records are reused after their thread has ended (its counters folded
 * into the global ones; see thread.c for why "ended" is the kernel's
 * word, not the key destructor's), so a program that creates a million
 * short-lived threads does not make the agent grow.
 */
#ifndef LEAKSCOPE_AGENT_THREAD_H
#define LEAKSCOPE_AGENT_THREAD_H

#include <stdint.h>
#include "../common/interpose.h"
#include "site.h"
#include "unwind.h"

/* The counted functions (common/interpose.def, kind ALLOC, FREE or MAP),
 * in the table's order. */
enum ls_fn {
#define LS_INTERPOSE(sym, NAME, field, ret, params, attr, kind, real, got, export) \
	LS_IP_COUNTED_##kind(LS_FN_##NAME,)
#include "../common/interpose.def"
	LS_FN_COUNT
};

extern const char *const ls_fn_names[LS_FN_COUNT];

/* Direct-mapped by site id.  128 entries let the C++ containers bench's
 * thousands of sites evict each other: flush_entry was 10% of its run
 * (69M of 712M instructions); 512 cut it to 4M, 1024 gained nothing. */
#define LS_PENDING 512		/* power of two: 64 KiB per thread */
#define LS_PENDING_FLUSH 255	/* events per entry before a flush (a byte) */
#define LS_STACK_CACHE 256	/* power of two */
#define LS_PEAK_BATCH (64 << 10)

/*
 * Histogram and temporary-allocation events that ride along with a site
 * delta (the last argument of ls_thread_site_delta): 0, or a bucket of
 * the size histogram, or of the lifetime histogram, optionally marked as
 * a temporary allocation.  Buckets as site.h's LS_HIST_BUCKETS.
 */
/* Histogram buckets counted in a pending entry: the higher ones (blocks
 * of 4 MiB and more, lifetimes of 9.1 hours and more) go straight to the
 * site.  Sized so that each fills its entry's line. */
#define LS_PENDING_SIZE_HIST 23
#define LS_PENDING_LIFE_HIST 24

/*
 * ls_hist_bucket() for a value below 2^63 (a block's size, a lifetime in
 * ticks), as the hooks compute it: 64 - clz(v) is 63 - clz(2v + 1),
 * which needs no test for 0 (two instructions fewer per event).
 */
static inline unsigned ls_hist_bucket_below63(uint64_t v)
{
	unsigned b = 63u - (unsigned)__builtin_clzll(2 * v + 1);

	return b < LS_HIST_BUCKETS - 1 ? b : LS_HIST_BUCKETS - 1;
}

#define LS_EV_SIZE(b) (0x100u | (unsigned)(b))
#define LS_EV_LIFE(b) (0x200u | (unsigned)(b))
#define LS_EV_TEMP 0x400u

/*
 * One site's unflushed deltas, two cache lines.  The first holds what
 * an allocation touches (the key, the live deltas and their copy at the
 * peak, the event count, the peak generation and the size histogram):
 * an allocation writes that line only, also when it is the entry's
 * first change since a new peak.  A free touches it and the second
 * (lifetime histogram, ended deltas, temporaries), which also holds the
 * site.
 *
 * key is the site id + 1 (0: empty), so that a zeroed entry matches no
 * site and the inline test is a single compare.  An entry keeps its
 * site after a flush (counters zeroed, events 0): the next event of the
 * same site stays on the inline path.  events == 0 means every counter
 * is zero.  peak_gen/peak_bytes/peak_blocks: this entry's live deltas as
 * they were when the global live total last reached its peak (valid when
 * peak_gen is the current peak generation, else the live deltas
 * themselves are that value: nothing changed since).  The allocated
 * deltas are not kept: they are the live deltas plus the ended ones
 * (ls_pending_alloc_bytes), which count what left the live figures other
 * than by an allocation's own add (frees, blocks replaced or resized;
 * negative for a block put back after a failed realloc), so that an
 * allocation, whose allocated and live deltas are the same, writes
 * neither.  The histogram counts fit a byte: an entry is flushed after
 * LS_PENDING_FLUSH events.
 */
struct ls_pending {
	/* line 0: every event */
	uint32_t key;		/* site id + 1; 0 = empty */
	uint32_t peak_gen;
	int64_t live_bytes, live_blocks;
	int64_t peak_bytes, peak_blocks;
	uint8_t events;
	uint8_t size_hist[LS_PENDING_SIZE_HIST];
	/* line 1: frees, flushes, readers */
	struct ls_site_rec *site;	/* set whenever key is */
	uint64_t ended_bytes, ended_blocks;
	uint64_t temp_bytes, temp_blocks;	/* counter units, sample.h */
	uint8_t life_hist[LS_PENDING_LIFE_HIST];
} __attribute__((aligned(64)));

/* The entry's allocated bytes and blocks (counter units, sample.h). */
static inline uint64_t ls_pending_alloc_bytes(const struct ls_pending *p)
{
	return (uint64_t)p->live_bytes + p->ended_bytes;
}

static inline uint64_t ls_pending_alloc_blocks(const struct ls_pending *p)
{
	return (uint64_t)p->live_blocks + p->ended_blocks;
}

static inline uint32_t ls_pending_key(uint32_t id)
{
	return id + 1;
}

struct ls_thread {
	struct ls_thread *next;	/* registry, never unlinked */
	int in_use;
	int tid;
	uint32_t ordinal;	/* order of first use: seeds the sampler */
	uint32_t seq;		/* odd while pending[] is being changed */
	uint64_t calls[LS_FN_COUNT];
	int64_t live_delta;	/* not yet added to the global live total */
	uint64_t last_addr;	/* this thread's latest recorded allocation */
	uint64_t last_allocs;	/* its allocation calls (calls[]) then */
	uint64_t sample_left;	/* sampled mode: bytes to the next sample */
	uint64_t rng;
	int *err;		/* this thread's errno, saved around bookkeeping */
	/* The program frame that called the hook being recorded, where its
	 * stack walk starts; sp 0 when none (the walk then starts where
	 * the capture is). */
	struct ls_unwind_start start;
	/* The program's last switch off this thread's own stack by
	 * swapcontext() or setcontext() (agent/hooks.c): the stack pointer
	 * there (0: none, or it came back) and the context swapcontext()
	 * saved it in (0: setcontext(), nothing saved); co_top the top of
	 * the own stack, found at the first switch, co_span how far below
	 * it a hook takes the own stack to reach. */
	uint64_t co_sp, co_ucp, co_top, co_span;
	struct ls_pending pending[LS_PENDING];
	struct ls_site_rec *stack_cache[LS_STACK_CACHE];
};

extern __thread struct ls_thread *ls_thread_tls;
struct ls_thread *ls_thread_claim(void);

/* The calling thread's record, created on first use; NULL if the agent's
 * memory is exhausted.  Safe in hooks. */
static inline struct ls_thread *ls_thread_self(void)
{
	struct ls_thread *t = ls_thread_tls;

	return __builtin_expect(t != NULL, 1) ? t : ls_thread_claim();
}

/* Count one call of fn. */
static inline void ls_thread_count(struct ls_thread *t, enum ls_fn fn)
{
	__atomic_store_n(&t->calls[fn], t->calls[fn] + 1, __ATOMIC_RELAXED);
}

/*
 * The seqlock around a change of pending[]: seq is odd meanwhile, and
 * readers (ls_thread_each_pending) retry a copy that saw it odd or
 * changing.  Only the owning thread writes seq, so begin returns the
 * value it saw and end stores that plus 2 without reading it again.
 */
static inline uint32_t ls_thread_seq_begin(struct ls_thread *t)
{
	uint32_t s = t->seq;

	__atomic_store_n(&t->seq, s + 1, __ATOMIC_RELAXED);
	__atomic_thread_fence(__ATOMIC_RELEASE);
	return s;
}

static inline void ls_thread_seq_end(struct ls_thread *t, uint32_t s)
{
	__atomic_store_n(&t->seq, s + 2, __ATOMIC_RELEASE);
}

/* Out of line: the pending entry holds another site or is due for a
 * flush (ls_thread_site_delta's slow path), and the peak's batch. */
void ls_thread_site_delta_slow(struct ls_thread *t, uint32_t id,
			       struct ls_site_rec *site, int64_t dbytes,
			       int64_t dblocks, uint64_t abytes,
			       uint64_t ablocks, unsigned ev);
/* A free follows growth that may have passed the peak: flush so that the
 * peak is taken at this local maximum (exact with one thread). */
void ls_thread_peak_check(struct ls_thread *t);
void ls_thread_flush_live(struct ls_thread *t);

/* The peak's generation: bumped each time the live total reaches a new
 * peak; and the live total and peak as flushed (one line, read by every
 * thread, written only at flushes). */
struct ls_peak_state {
	uint32_t gen;
	int64_t live;
	uint64_t peak;
	uint64_t peak_mono;	/* CLOCK_MONOTONIC_COARSE of the peak */
} __attribute__((aligned(64)));
extern struct ls_peak_state ls_peak;

/*
 * p, which the compiler can no longer see is p.  Adds to neighbouring
 * counters through p and through ls_pending_opaque(p) stay scalar adds
 * to memory: gcc's SLP vectorizer packed each pair into SSE (a move to
 * an xmm register per value, a shuffle, a 16-byte load, add and store),
 * 9 instructions for 4 adds on an allocation (callgrind: the inline site
 * counters 12% fewer instructions without it).
 */
static inline struct ls_pending *ls_pending_opaque(struct ls_pending *p)
{
	__asm__("" : "+r"(p));
	return p;
}

/* A histogram event whose bucket a pending entry does not count. */
void ls_pending_event_far(struct ls_site_rec *site, unsigned ev);

/* Apply a site event (LS_EV_*) to pending entry p. */
static inline void ls_pending_event(struct ls_pending *p, unsigned ev,
				    int64_t dbytes, int64_t dblocks)
{
	unsigned b = ev & 0xffu;

	if (ev & 0x100u) {
		if (__builtin_expect(b < LS_PENDING_SIZE_HIST, 1))
			p->size_hist[b]++;
		else
			ls_pending_event_far(p->site, ev);
	} else if (ev & 0x200u) {
		if (__builtin_expect(b < LS_PENDING_LIFE_HIST, 1))
			p->life_hist[b]++;
		else
			ls_pending_event_far(p->site, ev);
	}
	if (ev & LS_EV_TEMP) {	/* on a free: the deltas are negative */
		p->temp_blocks -= (uint64_t)dblocks;
		ls_pending_opaque(p)->temp_bytes -= (uint64_t)dbytes;
	}
}

/*
 * Change the live bytes and blocks of site id by dbytes, dblocks and its
 * allocated totals by abytes, ablocks (in sampled mode, in the fixed-point
 * units of sample.h).  site is the site itself when the caller has it,
 * else NULL: it is looked up only when the thread's pending entry holds
 * another site.  Inline: the common case is a few adds to the entry's
 * first line (an allocation) or its two lines (a free), which only this
 * thread writes, between the two stores readers' seqlock checks.
 */
static inline __attribute__((always_inline))
void ls_thread_site_delta(struct ls_thread *t, uint32_t id,
					struct ls_site_rec *site, int64_t dbytes,
					int64_t dblocks, uint64_t abytes,
					uint64_t ablocks, unsigned ev)
{
	struct ls_pending *p, *q;
	uint32_t gen, seq;

	/* The first decrease after growth is a local maximum of this
	 * thread's live bytes: a new peak if it passes the flushed one. */
	if (dbytes < 0 && t->live_delta > 0 &&
	    __atomic_load_n(&ls_peak.live, __ATOMIC_RELAXED) + t->live_delta >
	    (int64_t)__atomic_load_n(&ls_peak.peak, __ATOMIC_RELAXED))
		ls_thread_peak_check(t);
	gen = __atomic_load_n(&ls_peak.gen, __ATOMIC_RELAXED);
	/* The entry's address in one register: seen through, gcc folded
	 * the offset of pending[] into each access and rebuilt the address
	 * from the index three times (11 instructions more per allocation
	 * with its free, docs/perf-log/hookbk.md). */
	p = ls_pending_opaque(&t->pending[id & (LS_PENDING - 1)]);
	if (__builtin_expect(p->key != ls_pending_key(id) ||
			     p->events >= LS_PENDING_FLUSH - 1, 0)) {
		ls_thread_site_delta_slow(t, id, site, dbytes, dblocks,
					  abytes, ablocks, ev);
	} else {
		seq = ls_thread_seq_begin(t);
		if (__builtin_expect(p->peak_gen != gen, 0)) {
			p->peak_gen = gen;
			p->peak_bytes = p->live_bytes;
			p->peak_blocks = p->live_blocks;
		}
		if (ev)
			ls_pending_event(p, ev, dbytes, dblocks);
		p->live_bytes += dbytes;
		p->ended_bytes += abytes - (uint64_t)dbytes;
		q = ls_pending_opaque(p);
		q->live_blocks += dblocks;
		q->ended_blocks += ablocks - (uint64_t)dblocks;
		q->events++;
		ls_thread_seq_end(t, seq);
	}
	t->live_delta += dbytes;
	if (__builtin_expect(t->live_delta > LS_PEAK_BATCH ||
			     t->live_delta < -LS_PEAK_BATCH, 0))
		ls_thread_flush_live(t);
}

/* Sum of every thread's calls (live and exited). */
void ls_thread_calls(uint64_t out[LS_FN_COUNT]);

/*
 * Per-site counters including the unflushed deltas of all threads:
 * fn(pending-delta, arg) is called for each pending entry holding
 * something (events > 0; its site is p->site), on a consistent copy.
 * Never a torn entry: an entry whose thread stays in the middle of an
 * update for 200 ms (stopped there) is skipped.  Returns the number of
 * entries skipped (their events are missing from what fn saw).  Waits
 * (sched_yield, 1 ms sleeps) for a thread preempted mid-update: not in
 * hooks.
 */
unsigned ls_thread_each_pending(void (*fn)(const struct ls_pending *, void *),
				void *arg);

/* Global live total and its peak (exact to within LS_PEAK_BATCH per
 * thread). */
void ls_thread_live_peak(int64_t *live, uint64_t *peak, uint64_t *slack);
/* Before a reader takes the per-site peak figures: when the live total
 * now (flushed plus every thread's unflushed delta) passes the recorded
 * peak, this moment becomes the peak.  Not in hooks. */
void ls_thread_peak_settle(void);
/* Site s's live bytes and blocks at the peak, in counter units, from its
 * flushed counters (the threads' pending entries: ls_pending_at_peak). */
void ls_site_at_peak(const struct ls_site_rec *s, int64_t *bytes,
		     int64_t *blocks);
void ls_pending_at_peak(const struct ls_pending *p, int64_t *bytes,
			int64_t *blocks);
/* Add delta to the global live total (blocks forgotten by a reset). */
void ls_thread_live_adjust(int64_t delta);
/* Restart the peak from the current live total (after a reset). */
void ls_thread_reset_peak(void);
/* Threads the agent has seen (records ever used). */
uint32_t ls_thread_seen(void);
extern uint32_t ls_threads_seen;

/*
 * errno after a successful allocation: e, what the program had before
 * the call, while the program has had no thread of its own but its first.
 * Then glibc's allocator, left alone, takes its single-threaded path,
 * which never changes errno on success; the agent's own thread makes it
 * take the multi-threaded one, which after a failed sbrk or mmap retries
 * in another arena and may return a block with ENOMEM left in errno.
 * Once the program has threads, glibc does that natively too, and errno
 * stays as glibc leaves it.
 */
static inline void ls_thread_keep_errno(int *err, int e, const void *p)
{
	if (p && __atomic_load_n(&ls_threads_seen, __ATOMIC_RELAXED) <= 1)
		*err = e;
}
/* Thread records in the registry (in use or waiting for reuse). */
uint32_t ls_thread_records(void);

/* At the agent's start, outside any hook. */
int ls_thread_init(void);
/* Fork handlers. */
void ls_thread_lock_all(void);
void ls_thread_unlock_all(void);
void ls_thread_reset_child(void);

#endif
