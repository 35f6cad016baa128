/*
 * thread.c - per-thread records and the flushing of their counters.
 */
#include <errno.h>
#include <stddef.h>
#include <pthread.h>
#include <sched.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "arena.h"
#include "lockrank.h"
#include "state.h"
#include "sys.h"
#include "thread.h"

const char *const ls_fn_names[LS_FN_COUNT] = {
#define LS_INTERPOSE(sym, NAME, field, ret, params, attr, kind, real, got, export) \
	LS_IP_COUNTED_##kind(#sym,)
#include "../common/interpose.def"
};

__thread struct ls_thread *ls_thread_tls;
static struct ls_thread *registry;
static ls_lock_t registry_lock = LS_LOCK_INIT;
static pthread_key_t exit_key;
uint32_t ls_threads_seen;
static uint32_t nrecords;

/* Counters of threads that have exited. */
static uint64_t retired_calls[LS_FN_COUNT];
struct ls_peak_state ls_peak;

_Static_assert(sizeof(struct ls_pending) == 128, "a pending entry is 128 bytes");
_Static_assert(__builtin_offsetof(struct ls_pending, site) == 64,
	       "an allocation's fields fill the entry's first line");

/*
 * Flushes into one site are serialized by a stripe lock, so that a site's
 * value at the peak is taken (lazily, on its first change after a new
 * peak) from counters no other flush is changing.  Flushes happen once
 * per LS_PENDING_FLUSH events per site and thread; the fork handlers take
 * every stripe.
 */
#define STRIPES 64
static ls_lock_t stripe[STRIPES];

void ls_pending_at_peak(const struct ls_pending *p, int64_t *bytes,
			int64_t *blocks)
{
	int cur = p->peak_gen == __atomic_load_n(&ls_peak.gen, __ATOMIC_RELAXED);

	*bytes = cur ? p->peak_bytes : p->live_bytes;
	*blocks = cur ? p->peak_blocks : p->live_blocks;
}

void ls_site_at_peak(const struct ls_site_rec *s, int64_t *bytes,
		     int64_t *blocks)
{
	uint32_t gen = __atomic_load_n(&ls_peak.gen, __ATOMIC_RELAXED);
	int cur = __atomic_load_n(&s->peak_gen, __ATOMIC_RELAXED) == gen;

	*bytes = __atomic_load_n(cur ? &s->peak_bytes : &s->live_bytes,
				 __ATOMIC_RELAXED);
	*blocks = __atomic_load_n(cur ? &s->peak_blocks : &s->live_blocks,
				  __ATOMIC_RELAXED);
}

/*
 * Add n (at least 1) to the site's histogram counter c (site.h): in its
 * pair if it has one, else in a free pair (taken with a compare-and-swap:
 * threads add at once), else in hist_more, mapped on first need from the
 * arena (a thread that loses the race to publish it leaves its copy
 * unused).  Without memory the event is counted as dropped.
 */
static void site_hist_add(struct ls_site_rec *s, unsigned c, uint64_t n)
{
	const uint64_t key = (uint64_t)c << LS_PAIR_SHIFT;
	uint64_t w, *more, *mine;
	unsigned i;

	for (i = 0; i < LS_SITE_PAIRS; i++) {
		w = __atomic_load_n(&s->hist_pair[i], __ATOMIC_RELAXED);
		while (!w || (w & ~LS_PAIR_COUNT) == key) {
			if (w && (w & LS_PAIR_COUNT) > LS_PAIR_COUNT - n)
				goto more;
			if (__atomic_compare_exchange_n(&s->hist_pair[i], &w,
							w ? w + n : key | n, 0,
							__ATOMIC_RELAXED,
							__ATOMIC_RELAXED))
				return;
		}
	}
more:
	more = __atomic_load_n(&s->hist_more, __ATOMIC_ACQUIRE);
	if (!more) {
		mine = ls_arena_alloc(2 * LS_HIST_BUCKETS * sizeof(*mine));
		if (!mine) {
			ls_agent_drop();
			return;
		}
		more = __atomic_compare_exchange_n(&s->hist_more, &more, mine, 0,
						   __ATOMIC_ACQ_REL,
						   __ATOMIC_ACQUIRE) ? mine : more;
	}
	__atomic_add_fetch(&more[c], n, __ATOMIC_RELAXED);
}

void ls_pending_event_far(struct ls_site_rec *site, unsigned ev)
{
	site_hist_add(site, (ev & 0x100u ? 0 : LS_HIST_BUCKETS) + (ev & 0xffu), 1);
}

/* Add n byte counts into the site's counters from c on: eight at a time,
 * since most are 0. */
static inline void add_hist(struct ls_site_rec *s, unsigned c,
			    const uint8_t *from, unsigned n)
{
	unsigned i, j;
	uint64_t w;

	for (i = 0; i < n; i += 8) {
		w = 0;
		memcpy(&w, from + i, n - i < 8 ? n - i : 8);
		for (j = i; w; j++, w >>= 8)
			if (w & 0xff)
				site_hist_add(s, c + j, w & 0xff);
	}
}

/* Move p's counts into its site, and zero them.  p keeps its site. */
static void flush_entry(struct ls_pending *p)
{
	struct ls_site_rec *s = p->site;
	ls_lock_t *l;
	uint32_t gen;
	int64_t pb, pk;

	if (!p->events)
		return;
	l = &stripe[s->id % STRIPES];
	ls_lock_ranked(l, LS_RANK_THREAD);
	gen = __atomic_load_n(&ls_peak.gen, __ATOMIC_RELAXED);
	if (s->peak_gen != gen) {	/* first change since the peak */
		__atomic_store_n(&s->peak_bytes, s->live_bytes, __ATOMIC_RELAXED);
		__atomic_store_n(&s->peak_blocks, s->live_blocks, __ATOMIC_RELAXED);
		__atomic_store_n(&s->peak_gen, gen, __ATOMIC_RELEASE);
	}
	ls_pending_at_peak(p, &pb, &pk);
	__atomic_add_fetch(&s->peak_bytes, pb, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->peak_blocks, pk, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->live_bytes, p->live_bytes, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->live_blocks, p->live_blocks, __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->alloc_bytes, ls_pending_alloc_bytes(p),
			   __ATOMIC_RELAXED);
	__atomic_add_fetch(&s->alloc_blocks, ls_pending_alloc_blocks(p),
			   __ATOMIC_RELAXED);
	ls_unlock_ranked(l, LS_RANK_THREAD);
	if (p->temp_blocks) {
		__atomic_add_fetch(&s->temp_blocks, p->temp_blocks,
				   __ATOMIC_RELAXED);
		__atomic_add_fetch(&s->temp_bytes, p->temp_bytes,
				   __ATOMIC_RELAXED);
	}
	add_hist(s, 0, p->size_hist, LS_PENDING_SIZE_HIST);
	add_hist(s, LS_HIST_BUCKETS, p->life_hist, LS_PENDING_LIFE_HIST);
	/* Everything but key and site: peak_gen 0 with zero deltas reads
	 * as "zero at the peak", which it is. */
	memset(&p->peak_gen, 0, offsetof(struct ls_pending, site) -
	       offsetof(struct ls_pending, peak_gen));
	memset(&p->ended_bytes, 0, sizeof(*p) -
	       offsetof(struct ls_pending, ended_bytes));
}

/* live is a new peak (or not): record it, and start a new generation so
 * that every site keeps its value of this moment on its next change. */
static void note_peak(int64_t now)
{
	uint64_t peak = __atomic_load_n(&ls_peak.peak, __ATOMIC_RELAXED);

	while (now > 0 && (uint64_t)now > peak) {
		if (__atomic_compare_exchange_n(&ls_peak.peak, &peak,
						(uint64_t)now, 1,
						__ATOMIC_RELAXED,
						__ATOMIC_RELAXED)) {
			__atomic_add_fetch(&ls_peak.gen, 1, __ATOMIC_RELEASE);
			__atomic_store_n(&ls_peak.peak_mono,
					 ls_now_ns(CLOCK_MONOTONIC_COARSE),
					 __ATOMIC_RELAXED);
			return;
		}
	}
}

void ls_thread_flush_live(struct ls_thread *t)
{
	int64_t now = __atomic_add_fetch(&ls_peak.live, t->live_delta,
					  __ATOMIC_RELAXED);

	t->live_delta = 0;
	note_peak(now);
}

void ls_thread_peak_check(struct ls_thread *t)
{
	ls_thread_flush_live(t);
}

void ls_thread_site_delta_slow(struct ls_thread *t, uint32_t id,
			       struct ls_site_rec *site, int64_t dbytes,
			       int64_t dblocks, uint64_t abytes,
			       uint64_t ablocks, unsigned ev)
{
	struct ls_pending *p = &t->pending[id & (LS_PENDING - 1)];
	uint32_t gen = __atomic_load_n(&ls_peak.gen, __ATOMIC_RELAXED), seq;
	int other = p->key != ls_pending_key(id);

	if (!site && other) {
		site = ls_site_get(id);
		if (!site)
			return;
	}
	seq = ls_thread_seq_begin(t);
	if (other) {
		flush_entry(p);
		p->key = ls_pending_key(id);
		p->site = site;
	}
	if (p->peak_gen != gen) {
		p->peak_gen = gen;
		p->peak_bytes = p->live_bytes;
		p->peak_blocks = p->live_blocks;
	}
	if (ev)
		ls_pending_event(p, ev, dbytes, dblocks);
	p->live_bytes += dbytes;
	p->live_blocks += dblocks;
	p->ended_bytes += abytes - (uint64_t)dbytes;
	p->ended_blocks += ablocks - (uint64_t)dblocks;
	if (++p->events >= LS_PENDING_FLUSH)
		flush_entry(p);
	ls_thread_seq_end(t, seq);
}

/*
 * A record's life: FREE, claimed by a thread (USED), then EXITING once
 * the thread's key destructor has run.  glibc frees the thread's own
 * memory after the destructors (and later destructors may allocate), so
 * the thread keeps its record through ls_thread_tls until the kernel has
 * really ended it; only then does claim() take the record back.  Clearing
 * ls_thread_tls in the destructor instead made each of those late calls
 * claim a fresh record that nothing released: 10k short-lived threads
 * left 10k records (64 MiB) and a peak slack of 64 KiB each.
 */
enum { REC_FREE, REC_USED, REC_EXITING };

/* Move everything t counted into the shared figures. */
static void fold(struct ls_thread *t)
{
	unsigned i;
	uint32_t seq = ls_thread_seq_begin(t);

	for (i = 0; i < LS_PENDING; i++)
		flush_entry(&t->pending[i]);
	ls_thread_seq_end(t, seq);
	ls_thread_flush_live(t);
	for (i = 0; i < LS_FN_COUNT; i++) {
		__atomic_add_fetch(&retired_calls[i], t->calls[i],
				   __ATOMIC_RELAXED);
		__atomic_store_n(&t->calls[i], 0, __ATOMIC_RELAXED);
	}
}

static void thread_exit(void *arg)
{
	struct ls_thread *t = arg;

	fold(t);
	__atomic_store_n(&t->in_use, REC_EXITING, __ATOMIC_RELEASE);
}

/* Has the thread that left t in EXITING ended?  The kernel forgets a tid
 * only after the thread's last instruction; a tid already reused by a
 * new thread merely delays the reuse of t. */
static int rec_thread_gone(const struct ls_thread *t)
{
	int saved = errno, gone;

	gone = syscall(SYS_tgkill, getpid(), t->tid, 0) < 0 && errno == ESRCH;
	errno = saved;		/* claims happen inside the program's calls */
	return gone;
}

/* Take t if it is free, or if its thread has ended (what that thread
 * counted after its destructor is folded first). */
static int rec_take(struct ls_thread *t)
{
	int state = __atomic_load_n(&t->in_use, __ATOMIC_ACQUIRE);

	if (state == REC_USED ||
	    (state == REC_EXITING && !rec_thread_gone(t)))
		return 0;
	if (!__atomic_compare_exchange_n(&t->in_use, &state, REC_USED, 0,
					 __ATOMIC_ACQUIRE, __ATOMIC_RELAXED))
		return 0;
	if (state == REC_EXITING)
		fold(t);
	memset(t->stack_cache, 0, sizeof(t->stack_cache));
	return 1;
}

static struct ls_thread *claim(void)
{
	struct ls_thread *t;
	void *raw;

	for (t = __atomic_load_n(&registry, __ATOMIC_ACQUIRE); t; t = t->next)
		if (rec_take(t))
			return t;
	/* The arena aligns to 16 bytes: align the pending entries to their
	 * cache lines (an entry across three lines cost a line per event). */
	raw = ls_arena_alloc(sizeof(*t) + _Alignof(struct ls_thread) - 16);
	if (!raw)
		return NULL;
	t = (struct ls_thread *)(((uintptr_t)raw + _Alignof(struct ls_thread) - 1) &
				 ~(uintptr_t)(_Alignof(struct ls_thread) - 1));
	t->in_use = REC_USED;
	ls_lock_ranked(&registry_lock, LS_RANK_THREAD);
	t->next = registry;
	__atomic_store_n(&registry, t, __ATOMIC_RELEASE);
	__atomic_store_n(&nrecords, nrecords + 1, __ATOMIC_RELAXED);
	ls_unlock_ranked(&registry_lock, LS_RANK_THREAD);
	return t;
}

struct ls_thread *ls_thread_claim(void)
{
	struct ls_thread *t = claim();

	if (!t)
		return NULL;
	t->tid = ls_gettid();
	t->err = &errno;
	t->sample_left = 0;
	t->rng = 0;
	t->last_addr = 0;	/* a reused record: not this thread's block */
	t->co_sp = t->co_ucp = t->co_top = t->co_span = 0;	/* nor its stack */
	t->ordinal = __atomic_add_fetch(&ls_threads_seen, 1, __ATOMIC_RELAXED);
	ls_thread_tls = t;
	/* The destructor folds this record back when the thread exits.
	 * Keys below PTHREAD_KEY_2NDLEVEL_SIZE need no allocation. */
	pthread_setspecific(exit_key, t);
	return t;
}

void ls_thread_calls(uint64_t out[LS_FN_COUNT])
{
	struct ls_thread *t;
	unsigned i;

	for (i = 0; i < LS_FN_COUNT; i++)
		out[i] = __atomic_load_n(&retired_calls[i], __ATOMIC_RELAXED);
	for (t = __atomic_load_n(&registry, __ATOMIC_ACQUIRE); t; t = t->next)
		for (i = 0; i < LS_FN_COUNT; i++)
			out[i] += __atomic_load_n(&t->calls[i],
						  __ATOMIC_RELAXED);
}

/* Copy one entry; 0 when seq says it changed meanwhile. */
static int copy_entry(struct ls_thread *t, unsigned i, struct ls_pending *out)
{
	uint32_t s1 = __atomic_load_n(&t->seq, __ATOMIC_ACQUIRE), s2;

	memcpy(out, &t->pending[i], sizeof(*out));
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	s2 = __atomic_load_n(&t->seq, __ATOMIC_RELAXED);
	return s1 == s2 && !(s1 & 1);
}

/*
 * A consistent copy of t's pending entries, one entry at a time: an
 * entry copied while seq was odd or changed is copied again.  A copy of
 * the whole array at once (64 KiB) took longer than a busy thread's gap
 * between two events, so it hardly ever succeeded.  Each entry is
 * consistent in itself; entries are not taken at one instant (nor are
 * the sites' flushed counters, read after them).
 * A thread preempted in the middle of an update keeps seq odd until it
 * runs again, which on a loaded machine can take several time slices:
 * after 1000 tries the reader yields the CPU, and after 100 yields it
 * sleeps 1 ms at a time.  An entry is never taken torn: when seq
 * stays at one odd value for COPY_BOUND_NS (a thread stopped mid-update,
 * by a debugger or SIGSTOP, must not stop every reader), the entry is
 * skipped, its events 0 in out, and counted in the return unless it held
 * no events; the thread's later entries are then skipped after their 1000
 * tries, until seq moves again.
 */
#define COPY_BOUND_NS (200 * 1000000ull)

struct copy_wait {
	uint64_t since;		/* when seq was first seen at odd */
	uint32_t odd;
	unsigned yields;
};

/* Wait for t's writer after 1000 failed tries; 0: it is stuck. */
static int copy_waited(struct ls_thread *t, struct copy_wait *cw)
{
	uint32_t seq = __atomic_load_n(&t->seq, __ATOMIC_RELAXED);
	uint64_t now = ls_now_ns(CLOCK_MONOTONIC);

	if (!(seq & 1) || !cw->since || seq != cw->odd) {
		cw->since = now;	/* moving: a new episode */
		cw->odd = seq;
	} else if (now - cw->since >= COPY_BOUND_NS) {
		return 0;
	}
	if (cw->yields++ < 100)
		sched_yield();
	else
		ls_sys_sleep_ms(1);
	return 1;
}

static unsigned copy_pending(struct ls_thread *t, struct ls_pending *out)
{
	struct copy_wait cw = { 0, 0, 0 };
	unsigned i, tries, skipped = 0;

	for (i = 0; i < LS_PENDING; i++)
		for (tries = 0; !copy_entry(t, i, &out[i]); tries++)
			if (tries >= 1000) {
				if (!copy_waited(t, &cw)) {
					skipped += out[i].events != 0;
					out[i].events = 0;
					break;
				}
				tries = 0;
			}
	return skipped;
}

unsigned ls_thread_each_pending(void (*fn)(const struct ls_pending *, void *),
				void *arg)
{
	static struct ls_pending copy[LS_PENDING];	/* under caller's lock */
	static int said;
	struct ls_thread *t;
	unsigned i, skipped = 0, k;

	for (t = __atomic_load_n(&registry, __ATOMIC_ACQUIRE); t; t = t->next) {
		k = copy_pending(t, copy);
		if (k && !said++)
			ls_state_note("thread %d stayed in the middle of a "
				      "counter update for 200 ms (stopped?): "
				      "%u of its pending site entries were "
				      "left out of a reading, their sites' "
				      "allocated totals and histograms low "
				      "there (said once)", t->tid, k);
		skipped += k;
		for (i = 0; i < LS_PENDING; i++)
			if (copy[i].events)
				fn(&copy[i], arg);
	}
	return skipped;
}

void ls_thread_live_peak(int64_t *live, uint64_t *peak, uint64_t *slack)
{
	struct ls_thread *t;
	int64_t sum = __atomic_load_n(&ls_peak.live, __ATOMIC_RELAXED);
	uint32_t n = 0;

	for (t = __atomic_load_n(&registry, __ATOMIC_ACQUIRE); t; t = t->next) {
		sum += __atomic_load_n(&t->live_delta, __ATOMIC_RELAXED);
		n++;
	}
	*live = sum;
	*peak = __atomic_load_n(&ls_peak.peak, __ATOMIC_RELAXED);
	*slack = (uint64_t)n * LS_PEAK_BATCH;
}

void ls_thread_live_adjust(int64_t delta)
{
	__atomic_add_fetch(&ls_peak.live, delta, __ATOMIC_RELAXED);
}

void ls_thread_reset_peak(void)
{
	int64_t live;
	uint64_t peak, slack;

	ls_thread_live_peak(&live, &peak, &slack);
	__atomic_store_n(&ls_peak.peak, live > 0 ? (uint64_t)live : 0,
			 __ATOMIC_RELAXED);
	__atomic_add_fetch(&ls_peak.gen, 1, __ATOMIC_RELEASE);
	__atomic_store_n(&ls_peak.peak_mono, ls_now_ns(CLOCK_MONOTONIC_COARSE),
			 __ATOMIC_RELAXED);
}

void ls_thread_peak_settle(void)
{
	int64_t live;
	uint64_t peak, slack;

	ls_thread_live_peak(&live, &peak, &slack);
	note_peak(live);
}

uint32_t ls_thread_seen(void)
{
	return __atomic_load_n(&ls_threads_seen, __ATOMIC_RELAXED);
}

uint32_t ls_thread_records(void)
{
	return __atomic_load_n(&nrecords, __ATOMIC_RELAXED);
}

int ls_thread_init(void)
{
	return -pthread_key_create(&exit_key, thread_exit);
}

void ls_thread_lock_all(void)
{
	unsigned i;

	ls_lock_ranked(&registry_lock, LS_RANK_THREAD);
	for (i = 0; i < STRIPES; i++)
		ls_lock_ranked(&stripe[i], LS_RANK_THREAD);
}

void ls_thread_unlock_all(void)
{
	unsigned i;

	for (i = 0; i < STRIPES; i++)
		ls_unlock_ranked(&stripe[i], LS_RANK_THREAD);
	ls_unlock_ranked(&registry_lock, LS_RANK_THREAD);
}

/* In the child only the forking thread survives: fold every other record
 * as if its thread had exited, since their blocks live on in the child,
 * and free it at once (its thread does not exist here). */
void ls_thread_reset_child(void)
{
	struct ls_thread *t;
	unsigned i;

	ls_lock_reset(&registry_lock);
	for (i = 0; i < STRIPES; i++)
		ls_lock_reset(&stripe[i]);
	for (t = registry; t; t = t->next) {
		if (t == ls_thread_tls) {
			t->tid = ls_gettid();
			continue;
		}
		if (t->in_use != REC_FREE) {
			/* Its thread may have forked away mid-update: seq
			 * would stay odd, and fold() would flip its parity. */
			t->seq = 0;
			fold(t);
			t->in_use = REC_FREE;
		}
	}
}
