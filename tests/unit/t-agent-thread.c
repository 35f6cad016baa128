/*
 * t-agent-thread.c - the per-thread pending site counters (agent/thread.c,
 * thread.h): every figure exact per site through collisions in the
 * pending array, flushes after LS_PENDING_FLUSH events, histogram buckets
 * beyond the entry's and temporaries; a reader never gets a torn entry
 * while its thread changes it, nor from a thread stopped in the middle of
 * an update (that thread's entries are skipped, counted, after the
 * reader's bound); an exited thread's entries are folded.
 */
#include <pthread.h>
#include <string.h>
#include <time.h>
#include "../../agent/thread.h"
#include "tap.h"

#define SITES 1500		/* about 3 per pending entry */
#define THREADS 4
#define EVENTS 400000		/* per thread */

static struct ls_site_rec *site[SITES];

/* Ground truth, per thread and site (summed at the end). */
struct truth {
	int64_t live_b, live_k;
	uint64_t alloc_b, alloc_k, temp_b, temp_k;
	uint64_t size_hist[LS_HIST_BUCKETS], life_hist[LS_HIST_BUCKETS];
};
static struct truth truth[THREADS][SITES];

static pthread_barrier_t done, go_on;
static int running = THREADS;

/* One size per site, some beyond the entry's size buckets (4 MiB). */
static uint64_t size_of(uint32_t i)
{
	static const uint64_t sizes[] = { 24, 100, 5000, 3 << 20, 9 << 20 };

	return sizes[i % 5];
}

static uint64_t next(uint64_t *x)
{
	*x ^= *x << 13;
	*x ^= *x >> 7;
	*x ^= *x << 17;
	return *x;
}

static void *worker(void *arg)
{
	unsigned n = (unsigned)(uintptr_t)arg, i;
	struct ls_thread *t = ls_thread_self();
	uint64_t x = 0x9e3779b97f4a7c15ULL * (n + 1);

	for (i = 0; i < EVENTS; i++) {
		uint64_t r = next(&x);
		/* Most events on 300 hot sites, the rest anywhere: hot
		 * entries fill up and flush, cold ones evict each other. */
		uint32_t id = (uint32_t)(r % 8 ? (r >> 8) % 300 :
					 (r >> 8) % SITES);
		struct truth *w = &truth[n][id];
		uint64_t s = size_of(id);

		if (w->live_k > 0 && (r >> 40) % 2) {
			unsigned b = (unsigned)(r >> 48) % LS_HIST_BUCKETS;
			unsigned ev = LS_EV_LIFE(b);

			if ((r >> 56) % 5 == 0) {
				ev |= LS_EV_TEMP;
				w->temp_b += s;
				w->temp_k++;
			}
			w->life_hist[b]++;
			w->live_b -= (int64_t)s;
			w->live_k--;
			ls_thread_site_delta(t, id, (r >> 20) % 2 ? site[id] : NULL,
					     -(int64_t)s, -1, 0, 0, ev);
		} else {
			w->size_hist[ls_hist_bucket(s)]++;
			w->live_b += (int64_t)s;
			w->live_k++;
			w->alloc_b += s;
			w->alloc_k++;
			ls_thread_site_delta(t, id, site[id], (int64_t)s, 1, s, 1,
					     LS_EV_SIZE(ls_hist_bucket(s)));
		}
	}
	__atomic_sub_fetch(&running, 1, __ATOMIC_RELEASE);
	pthread_barrier_wait(&done);
	pthread_barrier_wait(&go_on);
	return NULL;
}

/* Site figures as a reader sums them: flushed plus every pending entry. */
static struct truth sums[SITES];
static unsigned torn;

static unsigned hist_sum(const uint8_t *h, unsigned n)
{
	unsigned i, s = 0;

	for (i = 0; i < n; i++)
		s += h[i];
	return s;
}

/* A consistent entry: one size per site, and every event either an
 * allocation (a size bucket) or a free (a lifetime bucket). */
static void check_entry(const struct ls_pending *p, void *arg)
{
	uint64_t s = size_of(p->site->id);
	uint64_t allocs = ls_pending_alloc_blocks(p);
	int64_t frees = (int64_t)allocs - p->live_blocks;

	(void)arg;
	if (p->key != ls_pending_key(p->site->id) ||
	    p->events != allocs + (uint64_t)frees ||
	    p->live_bytes != (int64_t)s * p->live_blocks ||
	    ls_pending_alloc_bytes(p) != s * allocs ||
	    p->temp_bytes != s * p->temp_blocks ||
	    hist_sum(p->size_hist, LS_PENDING_SIZE_HIST) > allocs ||
	    hist_sum(p->life_hist, LS_PENDING_LIFE_HIST) > (uint64_t)frees)
		torn++;
}

/* Add pending entry f's figures to the truth w; its histograms have
 * size_n and life_n buckets. */
#define ADD_FIGURES(w, f, size_n, life_n)					\
	do {								\
		unsigned i_;						\
									\
		(w)->live_b += (f)->live_bytes;				\
		(w)->live_k += (f)->live_blocks;			\
		(w)->alloc_b += ls_pending_alloc_bytes(f);		\
		(w)->alloc_k += ls_pending_alloc_blocks(f);		\
		(w)->temp_b += (f)->temp_bytes;				\
		(w)->temp_k += (f)->temp_blocks;			\
		for (i_ = 0; i_ < (size_n); i_++)			\
			(w)->size_hist[i_] += (f)->size_hist[i_];	\
		for (i_ = 0; i_ < (life_n); i_++)			\
			(w)->life_hist[i_] += (f)->life_hist[i_];	\
	} while (0)

/* Add site record s's figures to the truth w: its histograms' counters in
 * its pairs and its overflow block, as ls_site_hist() reads them. */
static void add_site(struct truth *w, const struct ls_site_rec *s)
{
	uint64_t h[2 * LS_HIST_BUCKETS];
	unsigned i;

	w->live_b += s->live_bytes;
	w->live_k += s->live_blocks;
	w->alloc_b += s->alloc_bytes;
	w->alloc_k += s->alloc_blocks;
	w->temp_b += s->temp_bytes;
	w->temp_k += s->temp_blocks;
	ls_site_hist(s, h);
	for (i = 0; i < LS_HIST_BUCKETS; i++) {
		w->size_hist[i] += h[i];
		w->life_hist[i] += h[LS_HIST_BUCKETS + i];
	}
}

static void add_entry(const struct ls_pending *p, void *arg)
{
	(void)arg;
	ADD_FIGURES(&sums[p->site->id], p, LS_PENDING_SIZE_HIST,
		    LS_PENDING_LIFE_HIST);
}

/* Sites whose figures (flushed, plus pending when with_pending) differ
 * from the truth. */
static unsigned wrong_sites(int with_pending)
{
	unsigned i, j, n, bad = 0;

	memset(sums, 0, sizeof(sums));
	if (with_pending)
		ls_thread_each_pending(add_entry, NULL);
	for (i = 0; i < SITES; i++) {
		struct truth *w = &sums[i], want;
		const struct ls_site_rec *s = site[i];

		memset(&want, 0, sizeof(want));
		for (n = 0; n < THREADS; n++) {
			want.live_b += truth[n][i].live_b;
			want.live_k += truth[n][i].live_k;
			want.alloc_b += truth[n][i].alloc_b;
			want.alloc_k += truth[n][i].alloc_k;
			want.temp_b += truth[n][i].temp_b;
			want.temp_k += truth[n][i].temp_k;
			for (j = 0; j < LS_HIST_BUCKETS; j++) {
				want.size_hist[j] += truth[n][i].size_hist[j];
				want.life_hist[j] += truth[n][i].life_hist[j];
			}
		}
		add_site(w, s);
		bad += memcmp(w, &want, sizeof(want)) != 0;
	}
	return bad;
}

/*
 * A thread stopped in the middle of an update (as by a debugger): it
 * records STOPPED_SITES sites, then leaves one entry torn (bytes without
 * its block) with seq odd until released.
 */
#define STOPPED_SITES 40
static pthread_barrier_t stopped, released;

static void *stopper(void *arg)
{
	struct ls_thread *t = ls_thread_self();
	struct ls_pending *p = &t->pending[0];
	uint32_t i, seq;

	(void)arg;
	for (i = 0; i < STOPPED_SITES; i++)	/* ids 0..39: entries 0..39 */
		ls_thread_site_delta(t, i, site[i], (int64_t)size_of(i), 1,
				     size_of(i), 1,
				     LS_EV_SIZE(ls_hist_bucket(size_of(i))));
	seq = ls_thread_seq_begin(t);
	p->live_bytes += (int64_t)size_of(0);
	pthread_barrier_wait(&stopped);
	pthread_barrier_wait(&released);
	p->live_bytes -= (int64_t)size_of(0);
	ls_thread_seq_end(t, seq);
	return NULL;
}

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + ts.tv_nsec / 1e9;
}

static void check_stopped_writer(void)
{
	pthread_t th;
	unsigned skipped;
	double t0, took;

	pthread_barrier_init(&stopped, NULL, 2);
	pthread_barrier_init(&released, NULL, 2);
	pthread_create(&th, NULL, stopper, NULL);
	pthread_barrier_wait(&stopped);
	torn = 0;
	t0 = now_s();
	skipped = ls_thread_each_pending(check_entry, NULL);
	took = now_s() - t0;
	ok(torn == 0, "a thread stopped mid-update: no torn entry read "
	   "(%u torn)", torn);
	ok(skipped == STOPPED_SITES, "its %u entries skipped, counted: %u",
	   STOPPED_SITES, skipped);
	ok(took >= 0.2 && took < 5, "the reader waited the 200 ms bound, "
	   "not forever: %.3f s", took);
	pthread_barrier_wait(&released);
	pthread_join(th, NULL);
	torn = skipped = 0;
	skipped = ls_thread_each_pending(check_entry, NULL);
	ok(torn == 0 && skipped == 0, "released: every entry read again "
	   "(%u torn, %u skipped)", torn, skipped);
}

int main(void)
{
	pthread_t th[THREADS];
	uint64_t pcs[3];
	unsigned i, reads = 0, far = 0, skipped = 0;

	ok(ls_thread_init() == 0, "thread keys");
	for (i = 0; i < SITES; i++) {
		pcs[0] = 0x401000;
		pcs[1] = 0x402000 + i;
		pcs[2] = i;
		site[i] = ls_site_intern(pcs, 3, 0, ls_site_hash(pcs, 3, 0));
	}
	ok(site[SITES - 1] && site[SITES - 1]->id == SITES - 1,
	   "%u sites for %u pending entries", SITES, LS_PENDING);
	pthread_barrier_init(&done, NULL, THREADS + 1);
	pthread_barrier_init(&go_on, NULL, THREADS + 1);
	for (i = 0; i < THREADS; i++)
		pthread_create(&th[i], NULL, worker, (void *)(uintptr_t)i);
	/* Read while they write: every copy consistent. */
	while (__atomic_load_n(&running, __ATOMIC_ACQUIRE)) {
		skipped += ls_thread_each_pending(check_entry, NULL);
		reads++;
	}
	ok(torn == 0, "%u reads of the pending entries while %u threads "
	   "changed them: %u torn entries (%u skipped)", reads, THREADS,
	   torn, skipped);
	pthread_barrier_wait(&done);
	torn = 0;
	ls_thread_each_pending(check_entry, NULL);
	ok(torn == 0, "every entry consistent at rest");
	i = wrong_sites(1);
	ok(i == 0, "live, allocated, temporaries and both histograms exact "
	   "per site, flushed plus pending (%u sites wrong)", i);
	ok(wrong_sites(0) > 0, "and some of it still pending (a reader that "
	   "skipped the entries would be wrong)");
	for (i = 0; i < SITES; i++) {
		uint64_t h[2 * LS_HIST_BUCKETS];

		ls_site_hist(site[i], h);
		far += h[ls_hist_bucket(9 << 20)] != 0;
	}
	ok(far > 0, "sizes beyond the entry's buckets went to %u sites", far);
	for (i = far = 0; i < SITES; i++)
		far += site[i]->hist_more != NULL;
	ok(far > 0, "%u of %u sites needed counters beyond their record's "
	   "%u pairs, taken by threads at once (the exact figures above read "
	   "both)", far, SITES, LS_SITE_PAIRS);
	pthread_barrier_wait(&go_on);
	for (i = 0; i < THREADS; i++)
		pthread_join(th[i], NULL);
	i = wrong_sites(0);
	ok(i == 0, "threads gone: everything folded into the sites (%u "
	   "sites wrong)", i);
	check_stopped_writer();
	return tap_done();
}
