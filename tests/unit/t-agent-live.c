/*
 * t-agent-live.c - the live-block table against a reference model.
 */
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../../agent/live.h"
#include "tap.h"

#define N 200000

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

static size_t table_total(uint64_t *bytes)
{
	static struct ls_live_entry buf[N * 2];
	size_t n = 0, k, i;
	unsigned s;

	*bytes = 0;
	for (s = 0; s < LS_LIVE_SHARDS; s++) {
		k = ls_live_copy_shard(s, buf, N * 2);
		for (i = 0; i < k; i++)
			*bytes += buf[i].size;
		n += k;
	}
	return n;
}

static void test_model(void)
{
	static uint64_t live_size[N];	/* model: index -> size, 0 = free */
	uint64_t seed = 42, bytes, want_bytes = 0;
	size_t want_n = 0, i, errors = 0;
	struct ls_live_entry e, old;

	for (i = 0; i < 4 * N; i++) {
		size_t k = xorshift(&seed) % N;
		uint64_t addr = 0x7f0000000000ULL + k * 16;

		if (live_size[k]) {
			if (!ls_live_remove(addr, &e) || e.size != live_size[k] ||
			    e.site != (uint32_t)k)
				errors++;
			want_bytes -= live_size[k];
			want_n--;
			live_size[k] = 0;
		} else {
			memset(&e, 0, sizeof(e));
			e.addr = addr;
			e.size = 1 + xorshift(&seed) % 4096;
			e.site = (uint32_t)k;
			if (ls_live_insert(&e, &old) != 0)
				errors++;
			live_size[k] = e.size;
			want_bytes += e.size;
			want_n++;
		}
	}
	ok(errors == 0, "800k random inserts/removes agree with the model (%zu errors)", errors);
	is_u64(table_total(&bytes), want_n, "live entries counted");
	is_u64(bytes, want_bytes, "live bytes summed");
	is_u64(ls_live_count(), want_n, "ls_live_count");
	ok(!ls_live_remove(0x1234560, &e), "removing an unknown address finds nothing");
	ok(ls_live_mapped() <= (want_n * 4 + LS_LIVE_SHARDS * 256) * sizeof(e),
	   "table memory %zu bytes for %zu entries stays within 4 slots each",
	   ls_live_mapped(), want_n);
}

static void test_replace(void)
{
	struct ls_live_entry e = { .addr = 0x5000, .size = 10, .site = 1 }, old;

	ok(ls_live_insert(&e, &old) == 0, "insert new address");
	e.size = 20;
	e.site = 2;
	ok(ls_live_insert(&e, &old) == 1 && old.size == 10 && old.site == 1,
	   "insert over a live address returns the old entry");
	ok(ls_live_remove(0x5000, &old) && old.size == 20, "latest entry kept");
	ok(!ls_live_remove(0x5000, &old), "and removed once only");
}

struct thr { int id; size_t errors; };

static void *worker(void *arg)
{
	struct thr *t = arg;
	uint64_t base = 0x100000000ULL * (uint64_t)(t->id + 1);
	struct ls_live_entry e, out;
	size_t i, round;

	for (round = 0; round < 20; round++) {
		for (i = 0; i < 5000; i++) {
			memset(&e, 0, sizeof(e));
			e.addr = base + i * 32;
			e.size = i + 1;
			e.tid = (uint32_t)t->id;
			if (ls_live_insert(&e, &out))
				t->errors++;
		}
		for (i = 0; i < 5000; i++)
			if (!ls_live_remove(base + i * 32, &out) ||
			    out.size != i + 1 || out.tid != (uint32_t)t->id)
				t->errors++;
	}
	return NULL;
}

static void test_threads(void)
{
	pthread_t th[4];
	struct thr t[4];
	size_t errors = 0, before = ls_live_count();
	int i;

	for (i = 0; i < 4; i++) {
		t[i].id = i;
		t[i].errors = 0;
		pthread_create(&th[i], NULL, worker, &t[i]);
	}
	for (i = 0; i < 4; i++) {
		pthread_join(th[i], NULL);
		errors += t[i].errors;
	}
	ok(errors == 0, "4 threads inserting and removing concurrently: %zu errors", errors);
	is_u64(ls_live_count(), before, "nothing left behind by the threads");
}

/* Bytes a shard of this many groups maps (live.c: 16 control bytes and
 * 15 compact slots of 16 bytes a group). */
#define MAP(groups) ((groups) * (16 + 15 * 16))

/* live.c's growth, restated: a fifth more groups, at least one more, when
 * an insert finds the entries at 7/8 of the slots. */
static uint64_t grown(uint64_t n)
{
	return n + (n / 5 ? n / 5 : 1);
}

static uint64_t limit_of(uint64_t groups)
{
	return groups * 15 * 7 / 8;
}

/*
 * One shard in a steady state at high load: 75 blocks live in it (a
 * shard of 6 groups, 90 slots, 83% full), each removal followed by an insert at a
 * fresh address of the same shard, 500k times.  Entries that found their
 * first group full are counted in the groups they passed, and a removal
 * takes them out again: the shard must not grow, every entry must stay
 * findable, and the counts must all be back at 0 at the end.
 */
static uint64_t fresh_in(unsigned shard, uint64_t *next, uint64_t *seed)
{
	do
		*next += 16 * (1 + xorshift(seed) % 64);
	while (ls_live_shard(*next) != shard);
	return *next;
}

static void test_steady(void)
{
	enum { LIVE = 75, ROUNDS = 500000 };
	static uint64_t addrs[LIVE];
	uint64_t seed = 7, next = 0x7e0000000000ULL;
	struct ls_live_entry e, old;
	size_t i, errors = 0, mapped_max = 0, k;
	unsigned shard = ls_live_shard(next);

	for (i = 0; i < LIVE; i++) {
		memset(&e, 0, sizeof(e));
		e.addr = addrs[i] = fresh_in(shard, &next, &seed);
		e.size = e.addr & 0xffff;
		errors += ls_live_insert(&e, &old) != 0;
	}
	for (i = 0; i < ROUNDS; i++) {
		k = xorshift(&seed) % LIVE;
		if (!ls_live_remove(addrs[k], &e) ||
		    e.size != (addrs[k] & 0xffff))
			errors++;
		memset(&e, 0, sizeof(e));
		e.addr = addrs[k] = fresh_in(shard, &next, &seed);
		e.size = e.addr & 0xffff;
		errors += ls_live_insert(&e, &old) != 0;
		if (ls_live_shard_mapped(shard) > mapped_max)
			mapped_max = ls_live_shard_mapped(shard);
	}
	for (i = 0; i < LIVE; i++)
		errors += !ls_live_remove(addrs[i], &e) ||
			  e.size != (addrs[i] & 0xffff);
	ok(errors == 0 && ls_live_count() == 0, "500k removes and inserts "
	   "around 75 live blocks in one shard: %zu errors", errors);
	ok(mapped_max == MAP(6), "removals leave nothing behind: the shard "
	   "stays at 6 groups, 90 slots (%zu bytes mapped at most)",
	   mapped_max);
	is_u64(ls_live_shard_overflow(shard), 0,
	       "every overflow count back at 0 with the shard empty");
}

/*
 * Addresses that collide as much as the table allows: the same shard,
 * the same first group (for any table up to 8 groups) and the same
 * control byte.  The hash is restated from live.c: (a >> 4) * K, shard
 * bits 56-59 (with the 64 MiB window), control byte bits 49-55, first
 * group bits 17-48 scaled to the group count.
 */
static unsigned unused_shard(uint64_t *next);

static uint64_t first_group(uint64_t a, uint64_t groups)
{
	return (uint64_t)(uint32_t)((a >> 4) * 0x9e3779b97f4a7c15ULL >> 17) *
	       groups >> 32;
}

static uint64_t colliding(uint64_t like, uint64_t after)
{
	const uint64_t k = 0x9e3779b97f4a7c15ULL, mask = 0x0fffULL << 49;
	uint64_t want = (like >> 4) * k & mask, a, g;

	for (a = after + 16; ; a += 16) {
		if (((a >> 4) * k & mask) != want ||
		    ls_live_shard(a) != ls_live_shard(like))
			continue;
		for (g = 1; g <= 8 && first_group(a, g) == first_group(like, g); g++)
			;
		if (g > 8)
			return a;
	}
}

/*
 * 40 such addresses: the first group fills and the rest probe on, every
 * lookup meets slots whose control byte matches but whose address does
 * not, and removals leave deleted marks.  The inline paths of insert and
 * remove (first group only) must hand every such case to the general one.
 */
static void test_collisions(void)
{
	enum { N_COL = 40 };
	uint64_t addrs[N_COL];
	struct ls_live_entry e, old;
	size_t i, errors = 0, before = ls_live_count();

	addrs[0] = 0x6a0000000000ULL;
	unused_shard(&addrs[0]);	/* at most 8 groups, 40 entries: 4 */
	for (i = 1; i < N_COL; i++)
		addrs[i] = colliding(addrs[0], addrs[i - 1]);
	for (i = 0; i < N_COL; i++) {
		memset(&e, 0, sizeof(e));
		e.addr = addrs[i];
		e.size = i + 1;
		errors += ls_live_insert(&e, &old) != 0;
		if (i == 7) {	/* over each of 8, with the group not full */
			size_t j;

			for (j = 0; j <= i; j++) {
				e.addr = addrs[j];
				e.size = j + 1;
				errors += ls_live_insert(&e, &old) != 1 ||
					  old.addr != addrs[j];
			}
		}
	}
	ok(errors == 0 && ls_live_count() == before + N_COL,
	   "%d inserts colliding in shard, group and control byte", N_COL);
	ok(ls_live_shard_overflow(ls_live_shard(addrs[0])) > 0,
	   "the entries past their first group are counted there");
	/* Over every live one, from the last (farthest along the probe). */
	for (i = N_COL; i-- > 0;) {
		memset(&e, 0, sizeof(e));
		e.addr = addrs[i];
		e.size = 1000 + i;
		errors += ls_live_insert(&e, &old) != 1 || old.addr != addrs[i] ||
			  old.size != i + 1;
	}
	ok(errors == 0 && ls_live_count() == before + N_COL,
	   "inserting over each finds the live entry wherever it lies");
	/* A slot free in the first group, whose count is not 0: an insert
	 * over an entry further along must still find it there.  All out
	 * and back in order, without a rebuild: the first 15 fill the first
	 * group, and addrs[0] leaves a slot there. */
	for (i = 0; i < N_COL; i++)
		errors += !ls_live_remove(addrs[i], &e) || e.size != 1000 + i;
	for (i = 0; i < N_COL; i++) {
		memset(&e, 0, sizeof(e));
		e.addr = addrs[i];
		e.size = 1000 + i;
		errors += ls_live_insert(&e, &old) != 0;
	}
	errors += !ls_live_remove(addrs[0], &e) || e.size != 1000;
	for (i = N_COL; i-- > 16;) {
		memset(&e, 0, sizeof(e));
		e.addr = addrs[i];
		e.size = 1000 + i;
		errors += ls_live_insert(&e, &old) != 1 || old.addr != addrs[i] ||
			  old.size != 1000 + i;
	}
	memset(&e, 0, sizeof(e));
	e.addr = addrs[0];
	e.size = 1000;
	errors += ls_live_insert(&e, &old) != 0;
	ok(errors == 0 && ls_live_count() == before + N_COL,
	   "with a slot free in the first group, an insert over an entry "
	   "past it finds that entry");
	/* Every other one out, then the rest: deleted marks among matches. */
	for (i = 0; i < N_COL; i += 2)
		errors += !ls_live_remove(addrs[i], &e) || e.size != 1000 + i;
	for (i = 0; i < N_COL; i += 2)
		errors += ls_live_remove(addrs[i], &e);
	for (i = 1; i < N_COL; i += 2)
		errors += !ls_live_remove(addrs[i], &e) || e.size != 1000 + i;
	ok(errors == 0 && ls_live_count() == before,
	   "removing them in two passes finds each once, and no more");
	is_u64(ls_live_shard_overflow(ls_live_shard(addrs[0])), 0,
	       "and takes every one out of the overflow counts");
}

/*
 * A reachability check's change log (reach.c) must see every insert and
 * removal in order, the replaced entry of an insert over a live address
 * first: the inline paths step aside while it is on.
 */
static void test_log(void)
{
	static struct ls_live_log_rec buf[64];
	struct ls_live_entry e, old;
	uint64_t base = 0x690000000000ULL, n;
	size_t i, errors = 0;

	ls_live_log_start(buf, 64);
	for (i = 0; i < 10; i++) {
		memset(&e, 0, sizeof(e));
		e.addr = base + i * 48;
		e.size = i + 1;
		errors += ls_live_insert(&e, &old) != 0;
	}
	e.addr = base;
	e.size = 99;
	errors += ls_live_insert(&e, &old) != 1;	/* a replace: 2 records */
	for (i = 0; i < 10; i++)
		errors += !ls_live_remove(base + i * 48, &e);
	ls_live_log_stop();
	n = ls_live_log_count();
	is_u64(n, 22, "the change log holds 10 inserts, a replace (2) and 10 removals");
	for (i = 0; i < 10 && n == 22; i++)
		errors += buf[i].op != LS_LIVE_LOG_INSERT ||
			  buf[i].e.addr != base + i * 48 || buf[i].e.size != i + 1;
	errors += buf[10].op != LS_LIVE_LOG_REMOVE || buf[10].e.size != 1 ||
		  buf[11].op != LS_LIVE_LOG_INSERT || buf[11].e.size != 99;
	for (i = 0; i < 10 && n == 22; i++)
		errors += buf[12 + i].op != LS_LIVE_LOG_REMOVE ||
			  buf[12 + i].e.addr != base + i * 48;
	ok(errors == 0, "every record in order with its entry (%zu errors)", errors);
	memset(&e, 0, sizeof(e));
	e.addr = base;
	ls_live_insert(&e, &old);
	ls_live_remove(base, &e);
	is_u64(ls_live_log_count(), 22, "nothing logged once stopped");
}

/*
 * The log is a ring the reader empties as it goes: a writer may wrap
 * onto the slots given back, never onto one not yet read (that record
 * is lost, and ls_live_log_lost() says so).
 */
static void test_log_ring(void)
{
	static struct ls_live_log_rec buf[16];
	struct ls_live_entry e, old;
	uint64_t base = 0x6a0000000000ULL;
	size_t i, errors = 0;

	memset(buf, 0, sizeof(buf));
	ls_live_log_start(buf, 16);
	memset(&e, 0, sizeof(e));
	for (i = 0; i < 12; i++) {	/* 12 inserts */
		e.addr = base + i * 64;
		e.size = i + 1;
		ls_live_insert(&e, &old);
	}
	for (i = 0; i < 8; i++)		/* the reader takes 8 */
		__atomic_store_n(&buf[i].op, 0, __ATOMIC_RELAXED);
	ls_live_log_release(8);
	for (i = 0; i < 12; i++)	/* 12 removals: 24 in all, 16 unread */
		errors += !ls_live_remove(base + i * 64, &e);
	is_u64(ls_live_log_count(), 24, "24 records claimed");
	ok(!ls_live_log_lost(), "none lost: the ring wrapped onto slots given back");
	for (i = 0; i < 12; i++) {
		const struct ls_live_log_rec *r = &buf[(12 + i) % 16];

		errors += r->op != LS_LIVE_LOG_REMOVE || r->e.addr != base + i * 64;
	}
	ok(errors == 0, "the removals in order at slots 12..15, 0..7 (%zu errors)",
	   errors);
	e.addr = base;
	ls_live_insert(&e, &old);	/* the 25th: slot 8, not yet read */
	ok(ls_live_log_lost(), "a record over one not yet read is lost, and said");
	ls_live_log_stop();
	ls_live_remove(base, &e);
	ls_live_log_start(buf, 16);
	ok(!ls_live_log_lost(), "a new log starts with nothing lost");
	ls_live_log_stop();
}

/*
 * A shard's first arrays are one group (15 slots of 16 bytes and 16
 * control bytes), rebuilt a fifth larger (at least a group larger) when
 * an insert would take its used slots past 7/8: 13 entries fit, the 14th
 * grows it (the rebuild test is one compare with a limit kept per
 * shard).
 */
static unsigned unused_shard(uint64_t *next)
{
	unsigned shard;

	for (shard = ls_live_shard(*next); ls_live_shard_mapped(shard);
	     shard = ls_live_shard(*next))
		*next += 1ULL << 26;	/* another window */
	return shard;
}

static void test_growth(void)
{
	uint64_t seed = 11, next = 0x5c0000000000ULL, addrs[15];
	unsigned shard = unused_shard(&next);
	struct ls_live_entry e, old;
	size_t i, errors = 0, mapped1 = 0;

	for (i = 0; i < 15; i++) {
		memset(&e, 0, sizeof(e));
		e.addr = addrs[i] = fresh_in(shard, &next, &seed);
		e.size = i + 1;
		errors += ls_live_insert(&e, &old) != 0;
		if (i == 0)
			mapped1 = ls_live_shard_mapped(shard);
	}
	is_u64(mapped1, MAP(1), "a shard's first insert maps one group");
	is_u64(ls_live_shard_mapped(shard), MAP(2),
	       "the 14th insert grew it: 2 groups");
	for (i = 0; i < 15; i++)
		errors += !ls_live_remove(addrs[i], &e) || e.size != i + 1;
	ok(errors == 0, "15 inserts and removals in one shard: %zu errors",
	   errors);
}

/* 13 entries, the most one group holds: no rebuild yet. */
static void test_growth_edge(void)
{
	uint64_t seed = 13, next = 0x5d0000000000ULL, addrs[13];
	unsigned shard = unused_shard(&next);
	struct ls_live_entry e, old;
	size_t i, mapped;

	for (i = 0; i < 13; i++) {
		memset(&e, 0, sizeof(e));
		e.addr = addrs[i] = fresh_in(shard, &next, &seed);
		ls_live_insert(&e, &old);
	}
	mapped = ls_live_shard_mapped(shard);
	for (i = 0; i < 13; i++)
		ls_live_remove(addrs[i], &e);
	is_u64(mapped, MAP(1), "13 entries (7/8 of 15 slots) fit in one group");
}

/*
 * The prefetch: off while every shard is small, on from the rebuild that
 * takes one shard to 128 groups or more (1653 entries fit in 126, the
 * 1654th grows it to 151); it changes nothing in the table, and it never
 * faults, not even racing rebuilds that unmap the arrays it reads the
 * addresses of.
 */
struct prefetcher {
	uint64_t lo, hi;
	int stop;
	uint64_t rounds;
};

static void *prefetcher_main(void *arg)
{
	struct prefetcher *p = arg;
	uint64_t a;

	while (!__atomic_load_n(&p->stop, __ATOMIC_ACQUIRE)) {
		for (a = p->lo; a < p->hi; a += 16 * 37)
			ls_live_prefetch_lines(a);
		p->rounds++;
	}
	return NULL;
}

static void test_prefetch(void)
{
	static uint64_t addrs[20000];
	uint64_t seed = 17, next = 0x5e0000000000ULL, first;
	unsigned shard = unused_shard(&next);
	static struct ls_live_entry buf[1700];
	struct ls_live_entry e, old;
	struct prefetcher pf;
	pthread_t th;
	size_t i, errors = 0, mapped126 = 0, n, rebuilds = 0;
	uint64_t g = 1;
	int on126 = -1;

	is_u64((uint64_t)ls_live_prefetch_on, 0,
	       "no prefetching while shards are small");
	ls_live_prefetch_lines(next);	/* a shard without arrays */
	ls_live_prefetch(next);
	while (limit_of(g) < 1653)
		g = grown(g);
	is_u64(g, 126, "restated: 126 groups hold 1653 entries");
	first = next;
	for (i = 0; i < 1654; i++) {
		memset(&e, 0, sizeof(e));
		e.addr = addrs[i] = fresh_in(shard, &next, &seed);
		e.size = i + 1;
		errors += ls_live_insert(&e, &old) != 0;
		if (i == 1652) {
			mapped126 = ls_live_shard_mapped(shard);
			on126 = ls_live_prefetch_on;
		}
	}
	is_u64(mapped126, MAP(126), "1653 entries: 126 groups");
	is_u64((uint64_t)on126, 0, "126 groups: still no prefetching");
	is_u64(ls_live_shard_mapped(shard), MAP(151), "the 1654th: 151 groups");
	is_u64((uint64_t)ls_live_prefetch_on, 1, "151 groups: prefetching on");
	for (i = 0; i < 1654; i++)
		ls_live_prefetch(addrs[i]);
	for (i = first; i < next + 4096; i += 16)
		ls_live_prefetch_lines(i);	/* absent ones too */
	n = ls_live_copy_shard(shard, buf, 1700);
	is_u64(n, 1654, "prefetching left the shard's 1654 entries");
	for (i = 0; i < 1654; i++)
		errors += !ls_live_remove(addrs[i], &e) || e.size != i + 1;
	ok(errors == 0, "prefetched entries removed with their sizes: "
	   "%zu errors", errors);

	/* Racing rebuilds: one shard grows from nothing to 1599 groups. */
	for (g = 1; limit_of(g) < 20000; g = grown(g))
		rebuilds++;
	shard = unused_shard(&next);
	pf = (struct prefetcher){ .lo = next, .hi = next + 20000 * 16 * 40 };
	if (pthread_create(&th, NULL, prefetcher_main, &pf)) {
		ok(0, "pthread_create");
		return;
	}
	for (i = 0; i < 20000; i++) {
		memset(&e, 0, sizeof(e));
		e.addr = addrs[i] = fresh_in(shard, &next, &seed);
		e.size = 1;
		errors += ls_live_insert(&e, &old) != 0;
		if (i % 2000 == 0)	/* let the other thread in */
			sched_yield();
	}
	__atomic_store_n(&pf.stop, 1, __ATOMIC_RELEASE);
	pthread_join(th, NULL);
	for (i = 0; i < 20000; i++)
		errors += !ls_live_remove(addrs[i], &e);
	ok(errors == 0 && pf.rounds > 0,
	   "20000 inserts through %zu rebuilds while another thread "
	   "prefetched (%llu rounds): %zu errors", rebuilds + 1,
	   (unsigned long long)pf.rounds, errors);
}

/*
 * A shard whose lock another thread holds: an insert and a removal wait
 * for it (the inline paths only try the lock once, then wait out of
 * line), and do their work once it is released.
 */
struct waiter {
	uint64_t addr;		/* insert it, or remove it (remove) */
	int remove, ret, done;
	struct ls_live_entry out;
};

static void *waiter_main(void *arg)
{
	struct waiter *w = arg;
	struct ls_live_entry e = { .addr = w->addr, .size = 77, .site = 7 };

	w->ret = w->remove ? ls_live_remove(w->addr, &w->out) :
		 ls_live_insert(&e, &w->out);
	__atomic_store_n(&w->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static void test_wait(void)
{
	struct waiter w[2] = {
		{ .addr = 0x5e0000001000ULL },
		{ .addr = 0x5e0000002000ULL, .remove = 1 },
	};
	struct ls_live_entry e = { .addr = w[1].addr, .size = 55, .site = 5 };
	struct timespec ts = { 0, 50 * 1000 * 1000 };
	size_t before = ls_live_count();
	int early = 0, i;
	pthread_t th[2];

	ls_live_insert(&e, &w[0].out);
	ls_live_lock_all();
	for (i = 0; i < 2; i++)
		pthread_create(&th[i], NULL, waiter_main, &w[i]);
	/* A wrong build finishes at once; a right one never does. */
	nanosleep(&ts, NULL);
	for (i = 0; i < 2; i++)
		early += __atomic_load_n(&w[i].done, __ATOMIC_ACQUIRE);
	ls_live_unlock_all();
	for (i = 0; i < 2; i++)
		pthread_join(th[i], NULL);
	ok(!early, "an insert and a removal wait while their shard is locked "
	   "(%d did not)", early);
	ok(w[0].ret == 0 && w[1].ret == 1 && w[1].out.size == 55 &&
	   w[1].out.site == 5, "then they insert, and remove the right entry");
	ok(ls_live_remove(w[0].addr, &e) && e.size == 77 && e.site == 7 &&
	   ls_live_count() == before, "the waiting insert's entry is there");
}


/* Every field of a and b equal. */
static int same(const struct ls_live_entry *a, const struct ls_live_entry *b)
{
	return a->addr == b->addr && a->size == b->size && a->tid == b->tid &&
	       a->site == b->site && a->birth == b->birth;
}

static size_t wide_total(void)
{
	size_t n = 0;
	unsigned i;

	for (i = 0; i < LS_LIVE_SHARDS; i++)
		n += ls_live_shard_wide(i);
	return n;
}

/* Whether shard idx's copy holds an entry equal to e. */
static int copied(const struct ls_live_entry *e)
{
	static struct ls_live_entry buf[1 << 16];
	size_t n = ls_live_copy_shard(ls_live_shard(e->addr), buf, 1 << 16), i;

	for (i = 0; i < n && n <= 1 << 16; i++)
		if (same(&buf[i], e))
			return 1;
	return 0;
}

/*
 * Entries at the edges of the compact slot (live.c: address / 8 in 44
 * bits, site in 20, size in 18, the thread as an index) and just past
 * them: the first kind stays in the compact table, the second goes to
 * the wide one, and both come back field for field, from a copy and
 * from a removal.
 */
static void test_edges(void)
{
	static const struct {
		uint64_t addr, size;
		uint32_t tid, site, birth;
		int wide;
		const char *what;
	} c[] = {
		{ 0x7ffffffffff8ULL, 40, 1, 1, 1, 0, "the highest 8-aligned address below 2^47" },
		{ 0x800000000000ULL, 40, 1, 1, 1, 1, "an address at 2^47" },
		{ 0xfffffffffffffff0ULL, 40, 1, 1, 1, 1, "an address in the top 16 bytes" },
		{ 0x4a0000000004ULL, 40, 1, 1, 1, 1, "an address 4-aligned" },
		{ 0x4a0000000101ULL, 40, 1, 1, 1, 1, "an odd address" },
		{ 0x4a0000000208ULL, 40, 1, 1, 1, 0, "an address 8-aligned" },
		{ 0x4a0000000300ULL, (1ULL << 18) - 1, 1, 1, 1, 0, "the largest compact size" },
		{ 0x4a0000000400ULL, 1ULL << 18, 1, 1, 1, 1, "a size of 256 KiB" },
		{ 0x4a0000000500ULL, (1ULL << 40) - 1, 1, 1, 1, 1, "the largest size" },
		{ 0x4a0000000600ULL, 0, 1, 1, 1, 0, "a size of 0" },
		{ 0x4a0000000700ULL, 24, 1, (1u << 20) - 1, 1, 0, "the largest compact site" },
		{ 0x4a0000000800ULL, 24, 1, 1u << 20, 1, 1, "site 2^20" },
		{ 0x4a0000000900ULL, 24, 1, UINT32_MAX, 1, 1, "the largest site" },
		{ 0x4a0000000a00ULL, 24, 1, 1, UINT32_MAX, 0, "the latest birth" },
		{ 0x4a0000000b00ULL, 24, 1, 1, 0, 0, "birth 0" },
		{ 0x4a0000000c00ULL, 24, (1u << 22) - 1, 1, 1, 0, "thread id 2^22 - 1" },
		{ 0x4a0000000d00ULL, 24, 1u << 22, 1, 1, 0, "thread id 2^22" },
		{ 0x4a0000000e00ULL, 24, (1u << 24) - 1, 1, 1, 0, "the largest thread id" },
	};
	struct ls_live_entry e, out, old;
	size_t i, n = sizeof(c) / sizeof(c[0]), w0 = wide_total();

	for (i = 0; i < n; i++) {
		size_t before = wide_total();

		memset(&e, 0, sizeof(e));
		e.addr = c[i].addr;
		e.size = c[i].size;
		e.tid = c[i].tid;
		e.site = c[i].site;
		e.birth = c[i].birth;
		ok(ls_live_insert(&e, &old) == 0 &&
		   wide_total() - before == (size_t)c[i].wide && copied(&e),
		   "%s: kept %s, copied back whole", c[i].what,
		   c[i].wide ? "wide" : "compact");
		ok(ls_live_remove(e.addr, &out) && same(&out, &e) &&
		   !ls_live_remove(e.addr, &out), "%s: removed whole, once", c[i].what);
	}
	is_u64(wide_total(), w0, "the wide tables are empty again");
}

/*
 * An address first in one table, then the other: an insert over it takes
 * the old entry out of the table it was in and returns it, logged before
 * the new one, and each removal finds the latest.
 */
static void test_cross(void)
{
	static struct ls_live_log_rec buf[16];
	struct ls_live_entry small = { .addr = 0x4b0000000100ULL, .size = 32,
				       .tid = 5, .site = 9, .birth = 3 };
	struct ls_live_entry big = small, old, out;
	size_t w0 = wide_total(), n0 = ls_live_count();

	big.size = 1ULL << 30;
	big.site = 10;
	ls_live_log_start(buf, 16);
	ok(ls_live_insert(&small, &old) == 0, "a small block: compact");
	ok(ls_live_insert(&big, &old) == 1 && same(&old, &small) &&
	   wide_total() == w0 + 1 && ls_live_count() == n0 + 1,
	   "a large one at its address: the small one returned, the large one wide");
	ok(ls_live_insert(&small, &old) == 1 && same(&old, &big) &&
	   wide_total() == w0 && ls_live_count() == n0 + 1,
	   "a small one again: the large one returned, out of the wide table");
	ok(ls_live_remove(small.addr, &out) && same(&out, &small) &&
	   ls_live_count() == n0, "the removal finds the latest");
	ls_live_log_stop();
	is_u64(ls_live_log_count(), 6, "six records");
	ok(buf[0].op == LS_LIVE_LOG_INSERT && same(&buf[0].e, &small) &&
	   buf[1].op == LS_LIVE_LOG_REMOVE && same(&buf[1].e, &small) &&
	   buf[2].op == LS_LIVE_LOG_INSERT && same(&buf[2].e, &big) &&
	   buf[3].op == LS_LIVE_LOG_REMOVE && same(&buf[3].e, &big) &&
	   buf[4].op == LS_LIVE_LOG_INSERT && same(&buf[4].e, &small) &&
	   buf[5].op == LS_LIVE_LOG_REMOVE && same(&buf[5].e, &small),
	   "in order, each replaced entry before the one that replaced it");
}

/*
 * A shard that holds a wide entry, no check running: the compact inserts
 * around it take the inline path, which must look in the wide table for
 * their address too.  12 small blocks in the shard of a large one (its
 * compact table one group, which 13 entries fit: every insert below has
 * room in its first group and no count to follow) all come back and
 * leave the large one there; a small one at the large one's address
 * (freed through a path the agent does not see) replaces it: the large
 * one is returned, out of the wide table, and a removal finds only the
 * small one.
 */
static void test_wide_shard(void)
{
	enum { SMALL = 12 };
	uint64_t seed = 17, next = 0x4c0000000000ULL, addrs[SMALL];
	unsigned shard = unused_shard(&next);
	struct ls_live_entry big = { .size = 1ULL << 20, .tid = 5, .site = 11,
				     .birth = 7 }, e, old, out;
	size_t i, errors = 0, n0 = ls_live_count();

	big.addr = fresh_in(shard, &next, &seed);
	ok(ls_live_insert(&big, &old) == 0 && ls_live_shard_wide(shard) == 1,
	   "a block of 1 MiB: wide");
	for (i = 0; i < SMALL; i++) {
		memset(&e, 0, sizeof(e));
		e.addr = addrs[i] = fresh_in(shard, &next, &seed);
		e.size = i + 1;
		e.tid = 5;
		e.site = 12;
		errors += ls_live_insert(&e, &old) != 0 || !copied(&e);
	}
	/* One compact group and one wide group (15 entries of 24 bytes). */
	ok(errors == 0 && ls_live_shard_wide(shard) == 1 && copied(&big) &&
	   ls_live_count() == n0 + SMALL + 1 &&
	   ls_live_shard_mapped(shard) == MAP(1) + 16 + 15 * 24,
	   "12 small blocks in its shard: all compact, the large one kept "
	   "(%zu errors)", errors);
	memset(&e, 0, sizeof(e));
	e.addr = big.addr;
	e.size = 48;
	e.tid = 5;
	e.site = 13;
	ok(ls_live_insert(&e, &old) == 1 && same(&old, &big) &&
	   ls_live_shard_wide(shard) == 0 && ls_live_count() == n0 + SMALL + 1,
	   "a small one at the large one's address: the large one returned, "
	   "out of the wide table");
	ok(ls_live_remove(big.addr, &out) && same(&out, &e) &&
	   !ls_live_remove(big.addr, &out), "the removal finds the small one, once");
	for (i = 0; i < SMALL; i++)
		errors += !ls_live_remove(addrs[i], &out) || out.size != i + 1;
	ok(errors == 0 && ls_live_count() == n0, "and the 12 come back");
}

/*
 * Thread ids get 12288 indexes, in the order they first insert; the
 * earlier tests used eight (0 to 3, 5, 2^22 - 1, 2^22 and 2^24 - 1).
 * 17000 new ids: 12280 of them get an index, the other 4720 entries go to
 * the wide tables, and all come back with their ids; an id seen before
 * takes no new index.
 */
static void test_many_threads(void)
{
	enum { T = 17000 };
	uint64_t base = 0x4c0000000000ULL;
	struct ls_live_entry e, out;
	size_t i, errors = 0, w0 = wide_total();

	for (i = 0; i < T; i++) {
		memset(&e, 0, sizeof(e));
		e.addr = base + i * 64;
		e.tid = (uint32_t)(100000 + i);
		e.size = i % 100;
		errors += ls_live_insert(&e, &out) != 0;
	}
	is_u64(wide_total() - w0, 4720, "4720 entries past the 12288th thread id are wide");
	memset(&e, 0, sizeof(e));
	e.addr = base - 64;
	e.tid = 100000;		/* seen: has an index */
	errors += ls_live_insert(&e, &out) != 0;
	is_u64(wide_total() - w0, 4720, "a thread id seen before stays compact");
	errors += !ls_live_remove(base - 64, &out) || out.tid != 100000;
	for (i = 0; i < T; i++)
		errors += !ls_live_remove(base + i * 64, &out) ||
			  out.tid != 100000 + i || out.size != i % 100;
	ok(errors == 0 && wide_total() == w0, "every entry back with its thread id "
	   "(%zu errors)", errors);
}

/*
 * A million blocks of 24 to 40 bytes laid out as glibc would (48-byte
 * steps): the table maps at most 24 bytes per live block, the bound
 * live.h states (17.1 bytes a slot at 73% full or more), and every
 * entry comes back.
 */
/*
 * One window's 16 shards hold about as many entries each: grown in step,
 * the table would be at 73% load (23.4 bytes a block) at the low point
 * of every cycle.  Spread over the cycle (live.c, grown()), it stays
 * near 80% (21.4) at every count once its shards are spread (from
 * 134,400 blocks in a window): checked every 25,000 blocks from 250,000
 * to 1,350,000, all in one 64 MiB window.
 */
static void test_memory(void)
{
	enum { M = 1350000, FROM = 250000, STEP = 25000 };
	uint64_t base = 0x300000000000ULL, before = ls_live_mapped();
	struct ls_live_entry e, out;
	size_t i, errors = 0, n0 = ls_live_count(), worst_at = 0;
	double per, worst = 0, at1m = 0;

	for (i = 0; i < M; i++) {
		memset(&e, 0, sizeof(e));
		e.addr = base + i * 48;
		e.size = 24 + i % 17;
		e.site = (uint32_t)(i % 5000);
		e.birth = (uint32_t)i;
		e.tid = 1;
		errors += ls_live_insert(&e, &out) != 0;
		if (i + 1 >= FROM && (i + 1) % STEP == 0) {
			per = (double)(ls_live_mapped() - before) / (double)(i + 1);
			if (per > worst) {
				worst = per;
				worst_at = i + 1;
			}
			if (i + 1 == 1000000)
				at1m = per;
		}
	}
	ok(at1m >= 17.0 && at1m <= 22.0, "1M live blocks: %.2f bytes mapped each",
	   at1m);
	ok(worst <= 22.0, "at most 22 bytes mapped a block at every count from "
	   "%d to %d: worst %.2f at %zu", FROM, M, worst, worst_at);
	for (i = 0; i < M; i++)
		errors += !ls_live_remove(base + i * 48, &out) ||
			  out.size != 24 + i % 17 || out.site != i % 5000 ||
			  out.birth != (uint32_t)i || out.tid != 1;
	ok(errors == 0 && ls_live_count() == n0, "and all come back (%zu errors)",
	   errors);
}

int main(void)
{
	test_steady();		/* first: on shards never grown */
	test_growth();
	test_growth_edge();
	test_prefetch();	/* before test_model grows shards */
	test_wait();
	test_collisions();
	test_log();
	test_log_ring();
	test_replace();
	test_model();
	test_threads();
	test_edges();
	test_cross();
	test_wide_shard();
	test_many_threads();	/* after every test that sets a thread id */
	test_memory();
	return tap_done();
}
