/*
 * glibcheap.c - glibc's malloc heaps seen from outside (glibcheap.h).
 *
 * The offsets below are glibc's x86-64 layout from 2.27 (have_fastchunks)
 * to 2.38; each read is validated (glibcheap.h), so another layout gives
 * "no heap here", and the scan falls back to what it did without.
 */
#include <link.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <unistd.h>
#include "glibcheap.h"
#include "real.h"

#define HEAP_MAX (64ull << 20)	/* 2 * DEFAULT_MMAP_THRESHOLD_MAX */
#define MSTATE_SIZE 2200	/* sizeof(struct malloc_state) */
#define MS_FASTBINS 16		/* mfastbinptr fastbinsY[NFASTBINS] */
#define MS_TOP 96		/* mchunkptr top */
#define MS_BINS 112		/* mchunkptr bins[NBINS * 2 - 2] */
#define MS_NEXT 2160		/* struct malloc_state *next */
#define NFASTBINS 10
#define NBINS 128
#define TCACHE_MAX_CHUNK 1040	/* the chunk of a 1032-byte request */
#define PREV_INUSE 1ull
#define SIZE_BITS 7ull

static uint64_t tcache_key, main_arena;

uint64_t ls_glibcheap_tcache_key(void)
{
	return tcache_key;
}

uint64_t ls_glibcheap_main_arena(void)
{
	return main_arena;
}

uint64_t ls_glibcheap_arena_size(void)
{
	return MSTATE_SIZE;
}

/* The word at a, through the kernel: 0, or -1 when it is not mapped. */
static int self_peek(void *ctx, uint64_t a, uint64_t *v)
{
	struct iovec l = { v, 8 }, r = { (void *)(uintptr_t)a, 8 };

	return syscall(SYS_process_vm_readv, getpid(), &l, 1UL, &r, 1UL,
		       0UL) == 8 ? 0 : -1;
}

/* Not an address a process can have: a random key's top bits. */
static int unlike_pointer(uint64_t v)
{
	return v >> 48 != 0;
}

/*
 * One small chunk (48 bytes: the program's heap moves as little as
 * possible; a 2 KiB probe was enough to shift where a program under
 * RLIMIT_AS first fails), its word at offset 8 zeroed, freed: a tcache
 * puts the key there; a fastbin (the tcache bin full) leaves the zero,
 * a bin a pointer, neither with the top bits a random key has.
 */
static void learn_key(void)
{
	uint64_t *a = ls_real.malloc(40), k = 0;

	if (!a)
		return;
	a[1] = 0;
	ls_real.free(a);
	/* Freed: read through the kernel (the memory may be trimmed). */
	if (!self_peek(NULL, (uint64_t)(uintptr_t)(a + 1), &k) &&
	    unlike_pointer(k))
		tcache_key = k;
}

/* Empty bins of the arena at m link to themselves: count them. */
static unsigned empty_bins(const struct ls_gh_ops *ops, uint64_t m)
{
	uint64_t fd, bk, self;
	unsigned i, n = 0;

	for (i = 2; i < NBINS; i++) {
		self = m + MS_BINS + (i - 1) * 16 - 16;	/* bin_at(m, i) */
		if (ops->peek(ops->ctx, self + 16, &fd) ||
		    ops->peek(ops->ctx, self + 24, &bk))
			return 0;
		n += fd == self && bk == self;
	}
	return n;
}

/* A thread arena's struct: right after its first heap's heap_info. */
static int thread_arena(uint64_t m)
{
	uint64_t off = m & (HEAP_MAX - 1);

	return off == 32 || off == 48;
}

static int is_main_arena(const struct ls_gh_ops *ops, uint64_t m)
{
	uint64_t next;

	if (ops->peek(ops->ctx, m + MS_NEXT, &next))
		return 0;
	/* next: itself, or a thread arena; most bins empty. */
	return (next == m || thread_arena(next)) && empty_bins(ops, m) >= 32;
}

struct seg_search {
	uint64_t start[8], end[8];
	unsigned n;
};

static int libc_segments(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct seg_search *s = arg;
	const char *name = info->dlpi_name, *base;
	int i;

	base = name ? strrchr(name, '/') : NULL;
	base = base ? base + 1 : name;
	if (!base || strncmp(base, "libc.so", 7))
		return 0;
	for (i = 0; i < info->dlpi_phnum && s->n < 8; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
			continue;
		s->start[s->n] = (info->dlpi_addr + ph->p_vaddr + 7) & ~7ull;
		s->end[s->n++] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
	}
	return 1;
}

/* libc's own data: mapped as long as libc is, read in place. */
static int data_peek(void *ctx, uint64_t a, uint64_t *v)
{
	*v = *(const volatile uint64_t *)(uintptr_t)a;
	return 0;
}

static void find_main_arena(void)
{
	struct ls_gh_ops ops = { .peek = data_peek };
	struct seg_search s = { .n = 0 };
	uint64_t a;
	unsigned i;

	dl_iterate_phdr(libc_segments, &s);
	/* bin_at(m, 1)'s words are the first bins: a candidate m has
	 * bins[2k] == m + MS_BINS + 16k - 16 for an empty bin k + 1; look
	 * for the last bin (sizes no program keeps free), then check. */
	for (i = 0; i < s.n; i++)
		for (a = s.start[i]; a + 16 <= s.end[i]; a += 8) {
			uint64_t fd, m;

			data_peek(NULL, a, &fd);
			if (fd != a - 16)
				continue;
			m = a - (MS_BINS + (NBINS - 2) * 16);
			if (m < s.start[i] || m + MSTATE_SIZE > s.end[i] ||
			    !is_main_arena(&ops, m))
				continue;
			main_arena = m;
			return;
		}
}

void ls_glibcheap_learn(void)
{
	if (ls_real_alloc_lo || ls_real_alloc_hi || !ls_real.malloc)
		return;		/* not libc's malloc */
	learn_key();
	find_main_arena();
}

int ls_gh_thread_heap(const struct ls_gh_ops *ops, uint64_t h, uint64_t limit,
		      struct ls_gh_heap *out)
{
	uint64_t ar, prev, size, mprot, hinfo;

	if ((h & (HEAP_MAX - 1)) || limit <= h ||
	    ops->peek(ops->ctx, h, &ar) || ops->peek(ops->ctx, h + 8, &prev) ||
	    ops->peek(ops->ctx, h + 16, &size) ||
	    ops->peek(ops->ctx, h + 24, &mprot))
		return 0;
	if (!thread_arena(ar))
		return 0;
	hinfo = ar & (HEAP_MAX - 1);
	if (size <= hinfo + MSTATE_SIZE || size > HEAP_MAX || (size & 4095) ||
	    mprot < size || mprot > HEAP_MAX || h + size > limit)
		return 0;
	out->arena = ar;
	out->start = h;
	out->end = h + mprot < limit ? h + mprot : limit;
	out->top_end = h + size;
	if (ar - hinfo == h) {	/* the arena's first heap: its state follows */
		if (prev)
			return 0;
		out->first = ((ar + MSTATE_SIZE + 16 + 15) & ~15ull) - 16;
	} else {
		if (!prev || (prev & (HEAP_MAX - 1)))
			return 0;
		out->first = h + hinfo;
	}
	return out->first + 32 <= out->top_end;
}

int ls_gh_main_heap(const struct ls_gh_ops *ops, uint64_t start,
		    uint64_t end, struct ls_gh_heap *out)
{
	uint64_t top;

	if (!main_arena || ops->peek(ops->ctx, main_arena + MS_TOP, &top) ||
	    top < start || top >= end)
		return 0;
	out->start = start;
	out->end = end;
	/* brk's start is page-aligned: glibc puts its first chunk there */
	out->first = start;
	out->top_end = end;
	out->arena = main_arena;
	return 1;
}

/* Is the in-use looking chunk at p of size sz cached by a tcache? */
static int tcached(const struct ls_gh_ops *ops, uint64_t p, uint64_t sz,
		   uint64_t key)
{
	uint64_t w;

	return key && sz <= TCACHE_MAX_CHUNK &&
	       !ops->peek(ops->ctx, p + 24, &w) && w == key;
}

unsigned ls_gh_walk(const struct ls_gh_ops *ops, const struct ls_gh_heap *heap,
		    uint64_t key)
{
	uint64_t p = heap->first, end = heap->top_end, sz, nx;
	unsigned resyncs = 0;

	while (p + 32 <= end) {
		if (ops->peek(ops->ctx, p + 8, &sz))
			goto astray;
		sz &= ~SIZE_BITS;
		if (sz == 0)	/* an old heap's last fencepost */
			break;
		if (sz < 16 || (sz & 15) || sz > end - p)
			goto astray;
		if (p + sz == end)	/* the top chunk */
			break;
		if (ops->peek(ops->ctx, p + sz + 8, &nx))
			goto astray;
		/* In use: the next chunk says so.  A 16-byte chunk is a
		 * fencepost, no memory of the program's. */
		if ((nx & PREV_INUSE) && sz >= 32 &&
		    !ops->tracked(ops->ctx, p + 16) && !tcached(ops, p, sz, key))
			ops->chunk(ops->ctx, p + 16, p + sz + 8);
		p += sz;
		continue;
astray:
		resyncs++;
		p = ops->resync(ops->ctx, p, end);
		if (!p)
			break;
	}
	return resyncs;
}

/* Follow one fastbin's chain from its head. */
static uint64_t one_fastbin(const struct ls_gh_ops *ops, uint64_t e,
			    uint64_t bin_size, void (*fn)(void *, uint64_t),
			    uint64_t max)
{
	uint64_t n = 0, sz, fd;

	while (e && n < max) {
		if ((e & 15) || ops->peek(ops->ctx, e + 8, &sz) ||
		    (sz & ~SIZE_BITS) != bin_size ||
		    ops->peek(ops->ctx, e + 16, &fd))
			break;
		fn(ops->ctx, e);
		n++;
		/* PROTECT_PTR: the link's address >> 12, xored in */
		e = ((e + 16) >> 12) ^ fd;
	}
	return n;
}

void ls_gh_fastbins(const struct ls_gh_ops *ops, uint64_t main,
		    void (*fn)(void *ctx, uint64_t chunk), uint64_t max)
{
	uint64_t m = main, head, n = 0;
	unsigned i, hops = 0;

	if (!main)
		return;
	do {
		for (i = 0; i < NFASTBINS && n < max; i++)
			if (!ops->peek(ops->ctx, m + MS_FASTBINS + 8 * i, &head))
				n += one_fastbin(ops, head, 32 + 16 * i, fn,
						 max - n);
		if (ops->peek(ops->ctx, m + MS_NEXT, &m))
			break;
	} while (m != main && thread_arena(m) && ++hops < 1024);
}
