/*
 * t-agent-glibcheap.c - glibc's heaps seen from outside (agent/glibcheap.c)
 * on heaps laid out by hand: a thread arena's heap_info and chunks, a
 * tcache-cached chunk, a fastbin chain through glibc's pointer mangling,
 * a walk that goes astray and resumes, headers that must be refused, and
 * random bytes that must never make the walk read outside the heap.
 * Then the real thing: this process's own glibc, a thread's arena found
 * and walked, the learned tcache key and main arena.
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "../../agent/glibcheap.h"
#include "../../agent/real.h"
#include "tap.h"

#define HEAP_MAX (64ull << 20)
#define KEY 0x5a5a1234deadbeefull

struct fake {
	uint64_t lo, hi;	/* readable */
	uint64_t tracked[8];
	unsigned ntracked;
	uint64_t got[64][2];	/* chunks passed */
	unsigned ngot;
	uint64_t resync_to;
	int outside;		/* a read outside [lo, hi) was asked */
};

static int fpeek(void *ctx, uint64_t a, uint64_t *v)
{
	struct fake *f = ctx;

	if (a < f->lo || a + 8 > f->hi) {
		f->outside++;
		return -1;
	}
	*v = *(const uint64_t *)(uintptr_t)a;
	return 0;
}

static uint64_t fresync(void *ctx, uint64_t p, uint64_t end)
{
	struct fake *f = ctx;
	uint64_t r = f->resync_to;

	f->resync_to = 0;
	return r > p && r < end ? r : 0;
}

static int ftracked(void *ctx, uint64_t user)
{
	struct fake *f = ctx;
	unsigned i;

	for (i = 0; i < f->ntracked; i++)
		if (f->tracked[i] == user)
			return 1;
	return 0;
}

static void fchunk(void *ctx, uint64_t user, uint64_t end)
{
	struct fake *f = ctx;

	if (f->ngot < 64) {
		f->got[f->ngot][0] = user;
		f->got[f->ngot++][1] = end;
	}
}

static void ffast(void *ctx, uint64_t chunk)
{
	fchunk(ctx, chunk, 0);
}

static uint64_t *w(uint64_t a)
{
	return (uint64_t *)(uintptr_t)a;
}

/* A chunk at p of size sz (flags: PREV_INUSE of the one before). */
static void chunk(uint64_t p, uint64_t sz, int prev_inuse)
{
	w(p)[1] = sz | (prev_inuse ? 1 : 0) | 4;	/* NON_MAIN_ARENA */
}

/* 128 MiB reserved, its 64 MiB-aligned middle made a heap of 132 KiB. */
static uint64_t make_heap(struct fake *f)
{
	size_t len = 2 * HEAP_MAX;
	char *m = mmap(NULL, len, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS |
		       MAP_NORESERVE, -1, 0);
	uint64_t h;

	if (m == MAP_FAILED)
		return 0;
	h = ((uint64_t)(uintptr_t)m + HEAP_MAX - 1) & ~(HEAP_MAX - 1);
	mprotect((void *)(uintptr_t)h, 0x21000, PROT_READ | PROT_WRITE);
	memset(f, 0, sizeof(*f));
	f->lo = h;
	f->hi = h + 0x21000;
	w(h)[0] = h + 48;	/* ar_ptr: the arena follows the header */
	w(h)[1] = 0;		/* prev */
	w(h)[2] = 0x21000;	/* size */
	w(h)[3] = 0x21000;	/* mprotect_size */
	return h;
}

static const struct ls_gh_ops *ops_of(struct fake *f)
{
	static struct ls_gh_ops ops = {
		.peek = fpeek, .resync = fresync, .tracked = ftracked,
		.chunk = fchunk,
	};

	ops.ctx = f;
	return &ops;
}

static void test_layout(void)
{
	struct fake f;
	struct ls_gh_heap hp;
	uint64_t h = make_heap(&f), p, a, b, c, d, e, top;

	if (!ok(h != 0, "a 64 MiB-aligned heap mapped"))
		return;
	ok(ls_gh_thread_heap(ops_of(&f), h, f.hi, &hp), "its heap_info is accepted");
	is_u64(hp.first - h, 0x8d0, "the first chunk after header and arena (2.36)");
	is_u64(hp.top_end, h + 0x21000, "chunks up to size");
	is_u64(hp.end, h + 0x21000, "the allocator's memory up to mprotect_size");
	p = hp.first;
	a = p;			/* in use, untracked: a root */
	b = a + 48;		/* cached by a tcache */
	c = b + 48;		/* in use, tracked */
	d = c + 64;		/* in a fastbin */
	e = d + 48;		/* in use, untracked */
	top = e + 256;
	chunk(a, 48, 1);
	chunk(b, 48, 1);
	w(b)[3] = KEY;		/* user + 8 */
	chunk(c, 48 + 16, 1);
	chunk(d, 48, 1);
	chunk(e, 256, 1);
	chunk(top, h + 0x21000 - top, 1);
	f.tracked[f.ntracked++] = c + 16;
	ok(ls_gh_walk(ops_of(&f), &hp, KEY) == 0, "the walk needs no resync");
	is_u64(f.ngot, 3, "three in-use chunks untracked and not cached");
	is_u64(f.got[0][0], a + 16, "the first, from its user start");
	is_u64(f.got[0][1], b + 8, "to the next header's size field");
	is_u64(f.got[1][0], d + 16, "the fastbin chunk is the filter's job");
	is_u64(f.got[2][0], e + 16, "the last before the top chunk");
	ok(!f.outside, "no read outside the heap");

	/* Without the key the cached chunk is taken for one in use. */
	f.ngot = 0;
	ls_gh_walk(ops_of(&f), &hp, 0);
	is_u64(f.ngot, 4, "key unknown: the cached chunk passes too");

	/* The fastbin of 48-byte chunks (index 1) holds d then a second
	 * chunk, linked through PROTECT_PTR. */
	w(h + 48)[2 + 1] = d;			/* fastbinsY[1] */
	w(d)[2] = ((d + 16) >> 12) ^ b;		/* fd -> b */
	w(b)[2] = ((b + 16) >> 12) ^ 0;		/* fd -> NULL */
	w(h + 48 + 2160)[0] = h + 48;	/* next: itself */
	f.ngot = 0;
	ls_gh_fastbins(ops_of(&f), h + 48, ffast, 100);
	is_u64(f.ngot, 2, "two chunks in the fastbin");
	is_u64(f.got[0][0], d, "its head");
	is_u64(f.got[1][0], b, "the next, its link unmangled");
	/* A link to a chunk of another size ends the chain. */
	chunk(b, 64, 1);
	f.ngot = 0;
	ls_gh_fastbins(ops_of(&f), h + 48, ffast, 100);
	is_u64(f.ngot, 1, "a link to a wrong-sized chunk is not followed");
	chunk(b, 48, 1);

	/* A size rewritten under the walk: resumes at the known chunk. */
	w(c)[1] = 12345;
	f.resync_to = e;
	f.ngot = 0;
	ok(ls_gh_walk(ops_of(&f), &hp, KEY) == 1, "one resync");
	ok(f.ngot == 2 && f.got[1][0] == e + 16,
	   "the chunks after the resync point are walked");
	w(c)[1] = (48 + 16) | 5;

	/* Headers that are not a heap's. */
	w(h)[1] = h;		/* a first heap with a prev */
	ok(!ls_gh_thread_heap(ops_of(&f), h, f.hi, &hp), "first heap with prev: no");
	w(h)[1] = 0;
	w(h)[0] = h + 40;
	ok(!ls_gh_thread_heap(ops_of(&f), h, f.hi, &hp), "arena at +40: no");
	w(h)[0] = h + 48;
	w(h)[2] = 0x21001;
	ok(!ls_gh_thread_heap(ops_of(&f), h, f.hi, &hp), "size not page-aligned: no");
	w(h)[2] = 0x22000;
	ok(!ls_gh_thread_heap(ops_of(&f), h, f.hi, &hp), "size beyond the mapping: no");
	w(h)[2] = 0x21000;
	w(h)[3] = 0x20000;
	ok(!ls_gh_thread_heap(ops_of(&f), h, f.hi, &hp), "mprotect_size < size: no");
	w(h)[3] = 0x21000;
	ok(!ls_gh_thread_heap(ops_of(&f), h + 4096, f.hi, &hp), "not 64 MiB-aligned: no");
	ok(!ls_gh_thread_heap(ops_of(&f), h, h + 0x10000, &hp), "readable only in part: no");
}

static uint64_t xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* Random words where the chunks are: the walk stays inside. */
static void test_garbage(void)
{
	struct fake f;
	struct ls_gh_heap hp;
	uint64_t h = make_heap(&f), seed = 7, a, i;
	unsigned round, bad = 0, passed_out = 0;

	if (!h || !ls_gh_thread_heap(ops_of(&f), h, f.hi, &hp))
		return;
	for (round = 0; round < 200; round++) {
		for (a = hp.first; a < f.hi; a += 8) {
			uint64_t r = xorshift(&seed);

			/* small sizes often, so walks go far */
			*w(a) = round & 1 ? r : (r & 0x3f0) | (r >> 62);
		}
		f.ngot = 0;
		f.outside = 0;
		f.resync_to = hp.first + 16 * (xorshift(&seed) % 64);
		for (i = 0; i < 10; i++)	/* fastbinsY[i]: into the chunks */
			w(h + 48)[2 + i] = hp.first + 16 * (xorshift(&seed) % 4096);
		w(h + 48 + 2160)[0] = h + 48;
		ls_gh_walk(ops_of(&f), &hp, KEY);
		bad += f.outside != 0;
		for (i = 0; i < f.ngot; i++)
			passed_out += f.got[i][0] < hp.first ||
				      f.got[i][1] > hp.top_end + 8;
		ls_gh_fastbins(ops_of(&f), h + 48, ffast, 1000);
	}
	is_u64(bad, 0, "200 random heaps: no read outside the heap");
	is_u64(passed_out, 0, "no chunk passed outside the heap's chunks");
}

/* This process's glibc: a thread's arena found and walked. */
static void *in_thread(void *arg)
{
	void **p = arg;

	p[0] = malloc(4000);
	return NULL;
}

static int self_peek(void *ctx, uint64_t a, uint64_t *v)
{
	*v = *(const uint64_t *)(uintptr_t)a;
	return 0;
}

static void test_real(void)
{
	static struct ls_gh_ops ops = { .peek = self_peek };
	struct ls_gh_heap hp;
	pthread_t t;
	void *p[1] = { 0 };
	uint64_t h;

	ls_real_init();
	ls_real_find_allocator();
	ls_glibcheap_learn();
	ok(ls_glibcheap_tcache_key() >> 48 != 0, "the tcache key learned");
	ok(ls_glibcheap_main_arena() != 0, "the main arena found in libc's data");
	if (pthread_create(&t, NULL, in_thread, p) || pthread_join(t, NULL))
		return;
	h = (uint64_t)(uintptr_t)p[0] & ~(HEAP_MAX - 1);
	ok(ls_gh_thread_heap(&ops, h, h + HEAP_MAX, &hp),
	   "the thread's heap_info accepted (limit: the heap's own end)");
	ok(hp.first < (uint64_t)(uintptr_t)p[0] && hp.top_end > (uint64_t)(uintptr_t)p[0],
	   "the thread's block lies among its chunks");
	free(p[0]);
}

int main(void)
{
	test_layout();
	test_garbage();
	test_real();
	return tap_done();
}
