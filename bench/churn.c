/*
 * churn.c - the allocation churn the benchmark measures tracking cost on.
 *
 *   churn THREADS OPS_PER_THREAD SEED [RING_SLOTS]
 *
 * Each thread does OPS_PER_THREAD operations.  One operation picks a size
 * (16 B - 4 KiB, mostly small), allocates it with malloc, calloc or realloc
 * through a chain of 10-15 nested calls (4 families x 6 depths x 3 calls =
 * 72 distinct allocation stacks), writes a few bytes into it and stores it
 * in a random slot of a per-thread ring of live blocks (4096 slots unless
 * told), freeing the block that was there: most blocks die young.  One
 * block in 1000 is moved to a list that is never freed: some live forever.
 * A big ring (half a million slots) keeps many blocks live, to weigh what
 * a tracker spends per live block.
 *
 * It is built without frame pointers, as Debian's packages are, so a
 * tracker cannot lean on them.  Everything is deterministic for a seed:
 * the checksum printed at the end must not change under a tracker.
 *
 * With CHURN_GATE=1 in the environment it waits for a byte on stdin
 * before the work starts (after "ready" on stderr), so that `leakscope
 * attach` can be measured on the same work (bench/attach-bench).
 *
 * Output, one line on stdout:
 *   churn threads=T ops=N seed=S checksum=HEX live_blocks=L work_s=SECONDS
 * work_s is CLOCK_MONOTONIC around the thread work only (no process start,
 * no exit, no tracker report); live_blocks is the number of blocks live
 * when the work peaks (full rings plus the kept lists).
 */
#include <errno.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#define RING_SLOTS 4096
#define MAX_RING_SLOTS (1u << 24)
#define KEEP_EVERY 1000
#define MAX_THREADS 64

enum op_kind { OP_MALLOC, OP_CALLOC, OP_REALLOC };

struct op {
	enum op_kind kind;
	size_t size;
	void *old;		/* the block to realloc */
	uint64_t trail;		/* every frame mixes itself in: no two alike */
};

struct worker {
	pthread_t thread;
	unsigned id;
	uint64_t ops;
	uint64_t rng;
	uint64_t sum;
	uint64_t kept_count;
	uint64_t ring_live;	/* ring blocks live when the work ended */
	void *kept;		/* singly linked through each block's first word */
	unsigned ring_slots;
	void **ring;
};

/*
 * noipa: no inlining, cloning or identical-code folding, which at -O2
 * would otherwise merge the families into one chain and collapse stacks.
 */
#define CHAIN_FN __attribute__((noipa))

static uint64_t rng_next(uint64_t *s)
{
	/* splitmix64: tiny, good enough, and the same on every libc */
	uint64_t z = (*s += 0x9e3779b97f4a7c15ULL);

	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static CHAIN_FN void *chain_leaf(struct op *op)
{
	void *p;

	switch (op->kind) {
	case OP_CALLOC:
		p = calloc(1, op->size);
		break;
	case OP_REALLOC:
		p = realloc(op->old, op->size);
		break;
	default:
		p = malloc(op->size);
		break;
	}
	/* Code after each call keeps it a call, not a tail jump. */
	__asm__ volatile("" : : "r"(p) : "memory");
	return p;
}

/*
 * Level N of family F: recurse while the requested depth is deeper, then
 * allocate.  Defined deepest first so no prototypes are needed.
 */
#define CHAIN_LAST(F, FID, N)						\
	static CHAIN_FN void *F##_##N(struct op *op, int depth)	\
	{								\
		void *p;						\
		(void)depth;						\
		op->trail = op->trail * 31 + (FID) * 64 + (N);		\
		p = chain_leaf(op);					\
		__asm__ volatile("" : : "r"(p) : "memory");		\
		return p;						\
	}

#define CHAIN_LEVEL(F, FID, N, NEXT)					\
	static CHAIN_FN void *F##_##N(struct op *op, int depth)	\
	{								\
		void *p;						\
		op->trail = op->trail * 31 + (FID) * 64 + (N);		\
		p = depth > (N) ? F##_##NEXT(op, depth) : chain_leaf(op); \
		__asm__ volatile("" : : "r"(p) : "memory");		\
		return p;						\
	}

#define CHAIN_FAMILY(F, FID)						\
	CHAIN_LAST(F, FID, 15)						\
	CHAIN_LEVEL(F, FID, 14, 15) CHAIN_LEVEL(F, FID, 13, 14)	\
	CHAIN_LEVEL(F, FID, 12, 13) CHAIN_LEVEL(F, FID, 11, 12)	\
	CHAIN_LEVEL(F, FID, 10, 11) CHAIN_LEVEL(F, FID, 9, 10)		\
	CHAIN_LEVEL(F, FID, 8, 9) CHAIN_LEVEL(F, FID, 7, 8)		\
	CHAIN_LEVEL(F, FID, 6, 7) CHAIN_LEVEL(F, FID, 5, 6)		\
	CHAIN_LEVEL(F, FID, 4, 5) CHAIN_LEVEL(F, FID, 3, 4)		\
	CHAIN_LEVEL(F, FID, 2, 3) CHAIN_LEVEL(F, FID, 1, 2)

CHAIN_FAMILY(parse, 1)
CHAIN_FAMILY(route, 2)
CHAIN_FAMILY(render, 3)
CHAIN_FAMILY(cache, 4)

static void *(*const chain_entry[])(struct op *, int) = {
	parse_1, route_1, render_1, cache_1,
};

/*
 * Mostly small, a few large: 60% 16-64 B, 25% -256 B, 10% -1 KiB, 5% -4 KiB,
 * in steps of 8 bytes as struct and buffer sizes mostly are.  (A size at
 * every byte makes ~300k distinct size x stack pairs, on which heaptrack
 * 1.4's interpreter degenerates: > 18 GiB and std::bad_alloc.)
 */
static size_t pick_size(uint64_t r)
{
	unsigned bucket = r % 100;
	uint64_t x = r >> 8;

	if (bucket < 60)
		return 16 + 8 * (x % 7);
	if (bucket < 85)
		return 64 + 8 * (x % 25);
	if (bucket < 95)
		return 256 + 8 * (x % 97);
	return 1024 + 8 * (x % 385);
}

static void touch(struct worker *w, const struct op *op, unsigned char *p,
		  uint64_t i)
{
	uint64_t v = i ^ ((uint64_t)w->id << 56);
	size_t size = op->size;

	/*
	 * Read only bytes whose value is defined (what realloc kept, what
	 * calloc zeroed): under a tracker the allocator hands out different
	 * addresses, and the checksum must not depend on them.
	 */
	if (op->kind == OP_REALLOC)
		w->sum += p[0];
	else if (op->kind == OP_CALLOC)
		w->sum += p[size - 1] + 1;
	memcpy(p + 8, &v, 8);
	p[0] = (unsigned char)i;
	p[size - 1] = (unsigned char)(i >> 8);
}

static void keep_forever(struct worker *w, void *p)
{
	memcpy(p, &w->kept, sizeof(void *));
	w->kept = p;
	w->kept_count++;
}

static int one_op(struct worker *w, uint64_t i)
{
	uint64_t r = rng_next(&w->rng);
	uint64_t path = rng_next(&w->rng);
	unsigned slot = (r >> 40) % w->ring_slots;
	unsigned kind = (r >> 32) % 100;
	struct op op = { .size = pick_size(r), .trail = i };
	void *p;

	if (kind >= 85 && w->ring[slot]) {
		op.kind = OP_REALLOC;
		op.old = w->ring[slot];
	} else {
		op.kind = kind < 70 ? OP_MALLOC : OP_CALLOC;
		if (w->ring[slot]) {
			w->sum += *(unsigned char *)w->ring[slot];
			free(w->ring[slot]);
		}
	}
	w->ring[slot] = NULL;
	p = chain_entry[path % 4](&op, 10 + (int)((path >> 8) % 6));
	if (!p)
		return -ENOMEM;
	touch(w, &op, p, i);
	w->sum += op.trail & 0xff;
	if (i % KEEP_EVERY == KEEP_EVERY - 1)
		keep_forever(w, p);
	else
		w->ring[slot] = p;
	return 0;
}

static void *worker_main(void *arg)
{
	struct worker *w = arg;
	uint64_t i;

	for (i = 0; i < w->ops; i++)
		if (one_op(w, i) < 0)
			return (void *)1;
	for (i = 0; i < w->ring_slots; i++) {
		w->ring_live += w->ring[i] != NULL;
		free(w->ring[i]);
	}
	return NULL;
}

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static int parse_u64(const char *s, uint64_t *out)
{
	char *end;

	errno = 0;
	*out = strtoull(s, &end, 10);
	return (errno || end == s || *end) ? -EINVAL : 0;
}

/* The rings come from mmap: outside the allocator being measured. */
static void **ring_new(uint64_t slots)
{
	void *p = mmap(NULL, slots * sizeof(void *), PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

int main(int argc, char **argv)
{
	static struct worker workers[MAX_THREADS];
	uint64_t nthreads, ops, seed, slots = RING_SLOTS, checksum = 0, live = 0;
	double t0, t1;
	unsigned i;
	int failed = 0;

	if ((argc != 4 && argc != 5) || parse_u64(argv[1], &nthreads) ||
	    parse_u64(argv[2], &ops) || parse_u64(argv[3], &seed) ||
	    (argc == 5 && parse_u64(argv[4], &slots)) || !nthreads ||
	    nthreads > MAX_THREADS || !slots || slots > MAX_RING_SLOTS) {
		fprintf(stderr, "usage: churn THREADS(1-%d) OPS_PER_THREAD SEED [RING_SLOTS]\n",
			MAX_THREADS);
		return 2;
	}
	for (i = 0; i < nthreads; i++) {
		workers[i].id = i;
		workers[i].ops = ops;
		workers[i].rng = seed * 1000003 + i;
		workers[i].ring_slots = slots;
		workers[i].ring = ring_new(slots);
		if (!workers[i].ring) {
			fprintf(stderr, "churn: cannot map a ring of %" PRIu64 " slots\n", slots);
			return 1;
		}
	}
	if (getenv("CHURN_GATE")) {
		char c;

		fputs("ready\n", stderr);
		if (read(0, &c, 1) != 1)
			return 1;
	}
	t0 = now();
	for (i = 0; i < nthreads; i++)
		if (pthread_create(&workers[i].thread, NULL, worker_main, &workers[i])) {
			fprintf(stderr, "churn: cannot create thread %u\n", i);
			return 1;
		}
	for (i = 0; i < nthreads; i++) {
		void *ret;

		pthread_join(workers[i].thread, &ret);
		failed |= ret != NULL;
		checksum = checksum * 1099511628211ULL + workers[i].sum;
		live += workers[i].kept_count + workers[i].ring_live;
	}
	t1 = now();
	if (failed) {
		fprintf(stderr, "churn: out of memory\n");
		return 1;
	}
	printf("churn threads=%" PRIu64 " ops=%" PRIu64 " seed=%" PRIu64
	       " checksum=%016" PRIx64 " live_blocks=%" PRIu64 " work_s=%.6f\n",
	       nthreads, ops, seed, checksum, live, t1 - t0);
	return 0;
}
