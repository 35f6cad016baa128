/*
 * reach.c - the reachability scan: by default a mostly-concurrent mark in
 * the live process (reachcm.c: marked while the program runs, finished
 * with its threads stopped), or the fork method (reachfork.c), a
 * copy-on-write child scanning a frozen image.  This file is the lowest
 * of the scan's (it calls none of the others): memory access, the
 * regions of the maps and a root's pieces, the mark, the page cache, the
 * cliques, the sums.  The inventory and the fork image's whole scan are
 * reachrun.c's, the roots reachroots.c's, the allocator's memory
 * reachheap.c's; what the files share is in reachint.h.
 *
 * Phases (docs/REACHABILITY.md):
 *  1. gather (reachrun.c): every heap block of the live tables into one
 *     array, sorted by address (radix sort), and an index of the 1 MiB
 *     granules blocks cover, so that most words that are no heap pointer
 *     cost one probe;
 *  2. roots (reachroots.c): every readable, writable private mapping of
 *     /proc/self/maps, less the agent's own memory, less the allocator's
 *     (reachheap.c: its free chunks keep stale pointers; blocks are
 *     scanned only when reached), less each stack below its thread's
 *     stack pointer minus the 128-byte red zone (none below a thread
 *     waiting in a system call of the C library, ls_scan_red_zone());
 *     plus the stopped threads' registers.  Static TLS and the thread
 *     descriptors (with the DTV) lie in those mappings; dynamic TLS
 *     blocks are heap blocks the DTV points to;
 *  3. mark, as memcheck does: a pointer to a block's start from a root or
 *     a reachable block makes it reachable, any other pointer (into its
 *     inside, or from a possibly lost block) possibly lost;
 *  4. cliques: each block still unreached, in address order, floods the
 *     unreached blocks it points to (start or inside) as indirectly lost;
 *     a former clique leader reached this way joins the new clique (union
 *     find), so a cycle has one definitely lost block;
 *  5. sums per site, then the snapshot (snapwrite.c) to the caller's fd.
 *
 * The child's memory: 24 bytes per block (copy of the entry), 8 for the
 * sorted addresses, 1 for the state, 4 for the clique leader, the granule
 * index and a mark stack; never a copy of the heap.
 */
#include <errno.h>
#include <fcntl.h>
#include <dlfcn.h>
#include <link.h>
#include <pthread.h>
#include <poll.h>
#include <stdio.h>
#include <setjmp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <linux/userfaultfd.h>
#include "../common/contract.h"
#include "state.h"
#include "exitstop.h"
#include "figures.h"
#include "glibcheap.h"
#include "heapmodel.h"
#include "live.h"
#include "mmaps.h"
#include "real.h"
#include "modules.h"
#include "reach.h"
#include "reachint.h"
#include "site.h"
#include "snapwrite.h"
#include "sys.h"
#include "unwind.h"


struct lsnap_reach_how ls_scan_how;
struct reach_prep ls_scan_prep;
struct reach_at_exit ls_scan_exit;
struct scan ls_scan_child;
sigjmp_buf ls_scan_fault_jmp;
struct scan_cache ls_scan_cache;

/* --- memory of the child ----------------------------------------------- */

void *ls_scan_grab(struct scan *sc, size_t bytes)
{
	void *p;

	if (sc->ngrabs == MAX_GRABS)
		return NULL;
	p = ls_sys_map(bytes ? bytes : 1);
	if (!p)
		return NULL;
	sc->grabs[sc->ngrabs] = p;
	sc->grab_len[sc->ngrabs++] = bytes ? bytes : 1;
	if ((sc->mem += bytes) > sc->peak)
		sc->peak = sc->mem;
	return p;
}

void ls_scan_drop(struct scan *sc, void *p, size_t bytes)
{
	size_t i;

	if (!p)
		return;
	for (i = 0; i < sc->ngrabs; i++)
		if (sc->grabs[i] == p) {
			sc->grabs[i] = sc->grabs[--sc->ngrabs];
			sc->grab_len[i] = sc->grab_len[sc->ngrabs];
			break;
		}
	ls_sys_unmap(p, bytes ? bytes : 1);
	sc->mem -= bytes;
}

/* Every mapping of the scan back to the kernel (a concurrent check runs
 * in the live process); the scan is zeroed. */
void ls_scan_drop_all(struct scan *sc)
{
	while (sc->ngrabs) {
		sc->ngrabs--;
		ls_sys_unmap(sc->grabs[sc->ngrabs], sc->grab_len[sc->ngrabs]);
	}
	memset(sc, 0, sizeof(*sc));
}

/* --- reading memory ------------------------------------------------------ */

/* [a, a + len) into dst through the kernel: the bytes copied, 0 when
 * the first page is not there.  Never faults. */
size_t ls_scan_read_safe(const struct scan *sc, uint64_t a, void *dst,
			size_t len)
{
	struct iovec l = { dst, len }, r = { (void *)(uintptr_t)a, len };
	long n = syscall(SYS_process_vm_readv, sc->self, &l, 1UL, &r, 1UL, 0UL);

	return n > 0 ? (size_t)n : 0;
}

/*
 * [a, a + len) readable as words: in place in a frozen image (the
 * child's fault handler catches the rest), else through the window,
 * which is refilled from a little below a (marks walk chains downward
 * as often as upward).  NULL when some of it cannot be read.
 */
static const uint64_t *view(struct scan *sc, uint64_t a, uint64_t len)
{
	uint64_t base;

	if (!sc->safe)
		return (const uint64_t *)(uintptr_t)a;
	if (a >= sc->wbase && a + len <= sc->wbase + sc->wlen)
		return (const uint64_t *)(sc->win + (a - sc->wbase));
	if (len > WIN_BYTES / 2)
		return NULL;
	base = (a > WIN_BYTES / 8 ? a - WIN_BYTES / 8 : a) & ~4095ull;
	if (base > a)
		base = a;
	sc->wbase = base;
	sc->wlen = ls_scan_read_safe(sc, base, sc->win, WIN_BYTES);
	if (a + len > sc->wbase + sc->wlen) {
		sc->wbase = a;
		sc->wlen = ls_scan_read_safe(sc, a, sc->win, WIN_BYTES);
		if (len > sc->wlen)
			return NULL;
	}
	return (const uint64_t *)(sc->win + (a - sc->wbase));
}

/* One word at a (8-aligned); 0 or -1 when it cannot be read. */
int ls_scan_peek(struct scan *sc, uint64_t a, uint64_t *v)
{
	const uint64_t *w = view(sc, a, 8);

	if (!w)
		return -1;
	*v = *w;
	return 0;
}

int ls_scan_vec_push(struct scan *sc, struct vec *v, const void *e)
{
	if (v->len == v->cap) {
		size_t ncap = v->cap ? v->cap * 2 : 4096;
		void *n = ls_scan_grab(sc, ncap * v->elem);

		if (!n)
			return -ENOMEM;
		if (v->len)
			memcpy(n, v->p, v->len * v->elem);
		ls_scan_drop(sc, v->p, v->cap * v->elem);
		v->p = n;
		v->cap = ncap;
	}
	memcpy((char *)v->p + v->len++ * v->elem, e, v->elem);
	return 0;
}

/* LSD radix sort by address, 11 bits at a time over bits 4..47 (blocks
 * are 16-byte aligned below 2^48).  O(n), no recursion, no allocator. */
int ls_scan_radix_sort(struct scan *sc, struct ls_live_entry *a, size_t n)
{
	struct ls_live_entry *tmp, *b;
	static size_t cnt[2048];
	unsigned shift;
	size_t i;

	if (n < 2)
		return 0;
	tmp = ls_scan_grab(sc, n * sizeof(*tmp));
	if (!tmp)
		return -ENOMEM;
	b = tmp;
	for (shift = 4; shift < 48; shift += 11) {
		size_t sum = 0, c;

		memset(cnt, 0, sizeof(cnt));
		for (i = 0; i < n; i++)
			cnt[a[i].addr >> shift & 2047]++;
		for (i = 0; i < 2048; i++) {
			c = cnt[i];
			cnt[i] = sum;
			sum += c;
		}
		for (i = 0; i < n; i++)
			b[cnt[a[i].addr >> shift & 2047]++] = a[i];
		struct ls_live_entry *t = a;
		a = b;
		b = t;
	}
	/* 4 passes: the result is back in the caller's array. */
	ls_scan_drop(sc, tmp, n * sizeof(*tmp));
	return 0;
}

static struct gran *gran_slot(const struct scan *sc, uint64_t g)
{
	uint64_t i = (g * 0x9e3779b97f4a7c15ULL >> 20) & sc->gmask;

	while (sc->gran[i].key && sc->gran[i].key != g + 1)
		i = (i + 1) & sc->gmask;
	return &sc->gran[i];
}

int ls_scan_index_blocks(struct scan *sc)
{
	uint64_t ngran = 0, cap = 1024, g, last = 0;
	size_t i;

	sc->addr = ls_scan_grab(sc, sc->n * 8);
	sc->st = ls_scan_grab(sc, sc->n);
	sc->heur = ls_scan_grab(sc, sc->n);
	if (!sc->addr || !sc->st || !sc->heur)
		return -ENOMEM;
	for (i = 0; i < sc->n; i++) {
		uint64_t end = sc->blk[i].addr + (sc->blk[i].size ?
						  sc->blk[i].size : 1);

		sc->addr[i] = sc->blk[i].addr;
		for (g = sc->blk[i].addr >> GRANULE_SHIFT;
		     g <= (end - 1) >> GRANULE_SHIFT; g++)
			if (!ngran || g + 1 != last) {
				ngran++;
				last = g + 1;
			}
		if (end > sc->hi)
			sc->hi = end;
	}
	sc->lo = sc->n ? sc->addr[0] : 0;
	while (cap < ngran * 2)
		cap *= 2;
	sc->gmask = cap - 1;
	sc->gran = ls_scan_grab(sc, cap * sizeof(*sc->gran));
	if (!sc->gran)
		return -ENOMEM;
	for (i = 0; i < sc->n; i++) {
		uint64_t end = sc->blk[i].addr + (sc->blk[i].size ?
						  sc->blk[i].size : 1);

		for (g = sc->blk[i].addr >> GRANULE_SHIFT;
		     g <= (end - 1) >> GRANULE_SHIFT; g++) {
			struct gran *e = gran_slot(sc, g);

			if (!e->key) {
				e->key = g + 1;
				e->first = (uint32_t)i;
			}
			e->end = (uint32_t)i + 1;
		}
	}
	return 0;
}

/* The block w points into, or -1; *start: to its first byte. */
static inline int64_t lookup(const struct scan *sc, uint64_t w, int *start)
{
	const struct gran *e;
	uint64_t lo, hi, mid;

	if (w < sc->lo || w >= sc->hi)
		return -1;
	e = gran_slot(sc, w >> GRANULE_SHIFT);
	if (!e->key)
		return -1;
	lo = e->first;
	hi = e->end;
	while (hi - lo > 1) {	/* the last block starting at or before w */
		mid = (lo + hi) / 2;
		if (sc->addr[mid] <= w)
			lo = mid;
		else
			hi = mid;
	}
	if (sc->addr[lo] > w)
		return -1;
	*start = sc->addr[lo] == w;
	if (!*start && w - sc->addr[lo] >= sc->blk[lo].size)
		return -1;
	return (int64_t)lo;
}

static void push_block(struct scan *sc, uint64_t i)
{
	uint32_t v = (uint32_t)i;

	if (sc->pend && i > sc->finger) {
		sc->pend[i / 64] |= 1ull << (i % 64);
		if (i > sc->pmax)
			sc->pmax = i;
		return;
	}
	/* Out of memory, the block is not scanned: what only it points to
	 * may be reported lost, and the snapshot says so. */
	if (ls_scan_vec_push(sc, &sc->stack, &v))
		sc->partial = 1;
}

/* --- 2. roots: the regions, a root's pieces ------------------------------ */

const struct region *ls_scan_region_of(const struct scan *sc, uint64_t a)
{
	const struct region *g = sc->regions.p;
	size_t lo = 0, hi = sc->regions.len;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (g[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < sc->regions.len && g[lo].start <= a ? &g[lo] : NULL;
}

/* The end of the readable memory that starts at a (adjacent readable
 * regions join), or a when a is not readable. */
uint64_t ls_scan_readable_until(const struct scan *sc, uint64_t a)
{
	const struct region *g = ls_scan_region_of(sc, a), *last;

	if (!g || !g->readable)
		return a;
	last = (const struct region *)sc->regions.p + sc->regions.len;
	while (g + 1 < last && g[1].start == g->end && g[1].readable)
		g++;
	return g->end;
}

/* Scan [a, b) of a root region (ls_scan_mark_roots catches a fault). */
static void mark_root(struct scan *sc, uint64_t a, uint64_t b)
{
	struct span sp = { a, b };

	if (a >= b)
		return;
	sc->root_bytes += b - a;
	if (sc->record && ls_scan_vec_push(sc, &sc->rootp, &sp))
		sc->partial = 1;
	ls_scan_mark_range(sc, a, b, 1);
}

int ls_scan_is_own(const struct scan *sc, uint64_t a, uint64_t *end)
{
	size_t i;

	for (i = 0; i < sc->nown; i++)
		if (a >= sc->own_start[i] && a < sc->own_start[i] + sc->own_len[i]) {
			*end = sc->own_start[i] + sc->own_len[i];
			return 1;
		}
	return 0;
}

/* The first block at or above address a. */
size_t ls_scan_first_block_from(const struct scan *sc, uint64_t a)
{
	size_t lo = 0, hi = sc->n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (sc->addr[mid] < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/*
 * Scan the piece [s, e) of a region, cutting out the agent's own ranges.
 * Own ranges are mappings of their own (ls_sys_map) or whole pages of
 * the agent's segments, so a cut at a range's start suffices.
 */
void ls_scan_mark_piece(struct scan *sc, uint64_t s, uint64_t e)
{
	uint64_t next = e, own_end;
	size_t i;

	while (s < e) {
		if (ls_scan_is_own(sc, s, &own_end)) {
			s = own_end;
			continue;
		}
		next = e;
		for (i = 0; i < sc->nown; i++)
			if (sc->own_start[i] > s && sc->own_start[i] < next)
				next = sc->own_start[i];
		mark_root(sc, s, next);
		s = next;
	}
}

/* --- valgrind's leak heuristics ------------------------------------------ */

/*
 * len bytes at a into buf, never through the window (the caller may be
 * iterating over it): through the kernel in the live process, in place
 * in the image when the maps say they are there.  0 or -1.
 */
static int cached(uint64_t a, uint64_t len);
static void copy_cached(void *buf, uint64_t a, size_t len);

static int read_aside(struct scan *sc, uint64_t a, void *buf, size_t len)
{
	struct iovec l = { buf, len }, r = { (void *)(uintptr_t)a, len };

	if (!sc->safe) {
		if (ls_scan_readable_until(sc, a) < a + len)
			return -1;
		memcpy(buf, (const void *)(uintptr_t)a, len);
		return 0;
	}
	if (cached(a, len)) {	/* the mark's page cache has it */
		copy_cached(buf, a, len);
		return 0;
	}
	return syscall(SYS_process_vm_readv, sc->self, &l, 1UL, &r, 1UL,
		       0UL) == (long)len ? 0 : -1;
}

#define VTABLE_WORDS 21		/* valgrind's VTABLE_MAX_CHECK + 1 */

/* In a readable file mapping (valgrind: a client file segment). */
static const struct region *file_region(const struct scan *sc, uint64_t a,
					int exec)
{
	const struct region *g = ls_scan_region_of(sc, a);

	return g && g->file && g->readable && (!exec || g->exec) ? g : NULL;
}

/*
 * Does p look like a vtable, as memcheck judges it: in a readable file
 * mapping, its first words (up to 21, within the mapping) null or
 * pointing into executable file mappings, two of them at least, before
 * one that does not.
 */
static int vtable_uncached(struct scan *sc, uint64_t p)
{
	const struct region *g = file_region(sc, p, 0);
	uint64_t w[VTABLE_WORDS];
	size_t n, i, fns = 0;

	if (!g || g->end - p < 8)
		return 0;
	n = (g->end - 8 - p) / 8 + 1;
	if (n > VTABLE_WORDS)
		n = VTABLE_WORDS;
	if (read_aside(sc, p, w, n * 8))
		return 0;
	for (i = 0; i < n; i++) {
		if (!w[i])
			continue;
		if (!file_region(sc, w[i], 1))
			return 0;
		if (++fns == 2)
			return 1;
	}
	return 0;
}

static int is_vtable(struct scan *sc, uint64_t p)
{
	size_t k = (p >> 3) * 0x9e3779b97f4a7c15ULL >> 55;	/* 9 bits */

	if (sc->vt[k].addr != p + 1) {
		sc->vt[k].addr = p + 1;
		sc->vt[k].is = vtable_uncached(sc, p);
	}
	return sc->vt[k].is;
}

/*
 * The heuristic (valgrind 3.19's --leak-check-heuristics=all, its
 * default, in its order) by which the interior pointer w makes block i
 * count as pointed to at its start, or 0:
 *  - stdstring: w at +24 of a block laid out as libstdc++'s reference-
 *    counted string (length <= capacity, capacity + 25 == size);
 *  - length64: w at +8 after a word holding size - 8 (sqlite's blocks);
 *  - newarray: w at +8 after a nonzero element count dividing size - 8
 *    (new[] of objects with a destructor);
 *  - multipleinheritance: w 8-aligned, the word at w and the block's
 *    first word both vtables (a pointer to a base class other than the
 *    first).
 * Words are taken as defined: valgrind also asks that they be.
 */
static uint8_t heuristic(struct scan *sc, size_t i, uint64_t w)
{
	uint64_t a = sc->addr[i], size = sc->blk[i].size, h[3], inner;

	if (w == a + 24 && !read_aside(sc, a, h, 16) &&
	    24 + h[1] + 1 == size && h[0] <= h[1])
		return LSNAP_HEUR_STDSTRING;
	if (w == a + 8 && !read_aside(sc, a, h, 8) && h[0]) {
		if (size - 8 == h[0])
			return LSNAP_HEUR_LENGTH64;
		if ((size - 8) % h[0] == 0)
			return LSNAP_HEUR_NEWARRAY;
	}
	if (!(w & 7) && w + 8 <= a + size && !read_aside(sc, w, &inner, 8) &&
	    !(inner & 7) && inner >= 4096 && !read_aside(sc, a, h, 8) &&
	    !(h[0] & 7) && h[0] >= 4096 && is_vtable(sc, inner) &&
	    is_vtable(sc, h[0]))
		return LSNAP_HEUR_MULTIPLE;
	return 0;
}

/*
 * Mark phase: one word seen from memory whose own state is definite (a
 * root, a reachable block) or not (a possibly lost block).  As memcheck:
 * a pointer to the start, or an interior pointer a heuristic accepts,
 * makes the block reachable from definite memory; any other, possibly
 * lost.  A start pointer to a block reached by heuristic clears it.
 */
static inline void mark_word(struct scan *sc, uint64_t w, int definite)
{
	int start, via;
	int64_t i = lookup(sc, w, &start);

	if (i < 0 || sc->st[i] == ST_GONE)
		return;
	if (sc->st[i] == ST_REACHABLE) {
		if (start)
			sc->heur[i] = 0;
		return;
	}
	via = start;
	if (!start) {
		sc->heur[i] = heuristic(sc, (size_t)i, w);
		via = sc->heur[i] != 0;
	}
	if (via && definite) {
		sc->st[i] = ST_REACHABLE;
		push_block(sc, (uint64_t)i);
	} else if (sc->st[i] == ST_UNREACHED) {
		sc->st[i] = ST_POSSIBLE;
		push_block(sc, (uint64_t)i);
	}
}

/*
 * fn on every aligned word of [a, b) that may point into the heap.  In
 * the live process the words are read piece by piece through the window;
 * a page that cannot be read (unmapped meanwhile) is skipped.
 */
void ls_scan_scan_words(struct scan *sc, uint64_t a, uint64_t b,
		       void (*fn)(struct scan *, uint64_t, uint32_t),
		       uint32_t arg)
{
	const uint64_t *w, *e;
	uint64_t n;

	a = (a + 7) & ~7ull;
	b &= ~7ull;
	while (a < b) {
		n = sc->safe && b - a > WIN_BYTES / 2 ? WIN_BYTES / 2 : b - a;
		w = view(sc, a, n);
		if (!w) {	/* up to the end of a's page, or skip it */
			n = ((a | 4095) + 1) - a;
			if (n > b - a)
				n = b - a;
			w = view(sc, a, n);
		}
		if (w)
			for (e = w + n / 8; w < e; w++)
				if (*w >= sc->lo && *w < sc->hi)
					fn(sc, *w, arg);
		a += n;
	}
}

static int cached(uint64_t a, uint64_t len);
static void scan_cached(struct scan *sc, uint64_t a, uint64_t len,
			void (*fn)(struct scan *, uint64_t, uint32_t),
			uint32_t arg);

void ls_scan_mark_from_block(struct scan *sc, uint64_t w, uint32_t definite)
{
	mark_word(sc, w, (int)definite);
}

void ls_scan_mark_range(struct scan *sc, uint64_t a, uint64_t b, int definite)
{
	const uint64_t *w, *e;

	if (sc->safe) {
		a = (a + 7) & ~7ull;
		b &= ~7ull;
		if (b > a && cached(a, b - a))
			scan_cached(sc, a, b - a, ls_scan_mark_from_block,
				    (uint32_t)definite);
		else
			ls_scan_scan_words(sc, a, b, ls_scan_mark_from_block,
				   (uint32_t)definite);
		return;
	}
	w = (const uint64_t *)((a + 7) & ~7ull);
	e = (const uint64_t *)(b & ~7ull);
	for (; w < e; w++)
		if (*w >= sc->lo && *w < sc->hi)
			mark_word(sc, *w, definite);
}

void ls_scan_on_fault(int sig)
{
	siglongjmp(ls_scan_fault_jmp, 1);
}


/* Block i's live words [*a, *b): a stack the exiting thread runs on is
 * dead below its cut (sc->cut_blk). */
static void block_live(const struct scan *sc, uint32_t i, uint64_t *a,
		       uint64_t *b)
{
	uint32_t k;

	for (k = 0; k < sc->ncut; k++)
		if (sc->cut_blk[k] == i) {
			*a = sc->cut_at[k];
			*b = sc->cut_end[k];
			return;
		}
}

void ls_scan_scan_block(struct scan *sc, uint32_t i,
		       void (*fn)(struct scan *, uint64_t, uint32_t), uint32_t arg)
{
	uint64_t a = sc->blk[i].addr, b = a + sc->blk[i].size, r;
	const uint64_t *w, *e;

	if (sc->ncut)
		block_live(sc, i, &a, &b);

	if (sc->safe) {		/* the reader skips what went away */
		sc->heap_bytes += b - a;
		ls_scan_scan_words(sc, a, b, fn, arg);
		return;
	}
	r = ls_scan_readable_until(sc, a);
	if (r < b)
		b = r;
	if (b <= a)
		return;
	sc->heap_bytes += b - a;
	w = (const uint64_t *)a;	/* blocks and cuts are 8-byte aligned */
	e = (const uint64_t *)(b & ~7ull);
	for (; w < e; w++)
		if (*w >= sc->lo && *w < sc->hi)
			fn(sc, *w, arg);
}

/*
 * The live process's memory is read through process_vm_readv(), whose
 * cost is about a microsecond per page it touches, whatever it copies
 * (here: 1.5M random 120-byte blocks one iovec each, 1,024 iovecs a
 * call, 2.2 s; the same 183 MiB read in order, 54 ms).  So the mark
 * reads pages, not blocks, into a cache of CACHE_PAGES pages (direct
 * mapped by page number), and each page once if it can: the blocks to
 * scan are taken in address order (mark_sweep), the pages they need and
 * the cache lacks read in one call, up to BATCH_IOVS pages, merged into
 * runs.  A python heap (1.5M blocks of ~100 bytes; its containers are
 * reachable only along the collector's list, one long chain) cost 3.3 s
 * of system time per check when a 64 KiB window was refilled per block.
 *
 * A page read at any time after the protection went on is as good as
 * one read at the stop (docs/REACHABILITY.md, "Why this is exact"), so a
 * cached page stays valid for the whole mark; the cache is emptied when
 * the pause begins (what the pause reads must be read then).
 */

static inline size_t cache_slot(uint64_t page)
{
	return (size_t)(page / PAGE_SZ) & (CACHE_PAGES - 1);
}

void ls_scan_cache_empty(void)
{
	memset(ls_scan_cache.tag, 0, sizeof(ls_scan_cache.tag));
}

/*
 * Add [a, a + len) to the batch, with the pages of it the cache lacks.
 * 0, or -1 when the batch is full (nothing added; a range of more than
 * BATCH_IOVS pages never fits).
 */
int ls_scan_batch_add(struct batch *b, uint64_t a, uint64_t len, uint32_t arg)
{
	uint64_t ps = a & ~(PAGE_SZ - 1), pe = (a + len + PAGE_SZ - 1) & ~(PAGE_SZ - 1);
	uint64_t p;
	size_t need = 0, k;

	if (b->n == BATCH_IOVS)
		return -1;
	for (p = ps; p < pe; p += PAGE_SZ) {
		k = cache_slot(p);
		if (ls_scan_cache.tag[k] == p + 1)
			continue;
		if (ls_scan_cache.serial[k] == b->serial)
			return -1;	/* this batch loads another page there */
		need++;
	}
	if (b->nlv + need > BATCH_IOVS || b->nrv + need > BATCH_IOVS)
		return -1;
	for (p = ps; p < pe; p += PAGE_SZ) {
		k = cache_slot(p);
		if (ls_scan_cache.tag[k] == p + 1)
			continue;
		ls_scan_cache.tag[k] = p + 1;
		ls_scan_cache.serial[k] = b->serial;
		b->lv[b->nlv].iov_base = ls_scan_cache.mem + k * PAGE_SZ;
		b->lv[b->nlv++].iov_len = PAGE_SZ;
		if (b->nrv && b->rend == p) {
			b->rv[b->nrv - 1].iov_len += PAGE_SZ;
		} else {
			b->rv[b->nrv].iov_base = (void *)(uintptr_t)p;
			b->rv[b->nrv++].iov_len = PAGE_SZ;
		}
		b->rend = p + PAGE_SZ;
	}
	b->a[b->n] = a;
	b->len[b->n] = len;
	b->arg[b->n++] = arg;
	return 0;
}

/* Whether every page of [a, a + len) is in the cache. */
static int cached(uint64_t a, uint64_t len)
{
	uint64_t p;

	for (p = a & ~(PAGE_SZ - 1); p < a + len; p += PAGE_SZ)
		if (ls_scan_cache.tag[cache_slot(p)] != p + 1)
			return 0;
	return 1;
}

/* [a, a + len) from the cache (cached() said it is all there). */
static void copy_cached(void *buf, uint64_t a, size_t len)
{
	uint8_t *d = buf;
	size_t n;

	for (; len; len -= n, a += n, d += n) {
		n = PAGE_SZ - (a & (PAGE_SZ - 1));
		if (n > len)
			n = len;
		memcpy(d, ls_scan_cache.mem + cache_slot(a) * PAGE_SZ +
		       (a & (PAGE_SZ - 1)), n);
	}
}

/* fn on the words of [a, a + len) (8-aligned), from the cache. */
static void scan_cached(struct scan *sc, uint64_t a, uint64_t len,
			void (*fn)(struct scan *, uint64_t, uint32_t),
			uint32_t arg)
{
	uint64_t e = a + len, pe;
	const uint64_t *w, *we;

	for (; a < e; a = pe) {
		pe = (a | (PAGE_SZ - 1)) + 1;
		if (pe > e)
			pe = e;
		w = (const uint64_t *)(ls_scan_cache.mem + cache_slot(a) * PAGE_SZ +
				       (a & (PAGE_SZ - 1)));
		for (we = w + (pe - a) / 8; w < we; w++)
			if (*w >= sc->lo && *w < sc->hi)
				fn(sc, *w, arg);
	}
}

struct batch ls_scan_batch = { .serial = 1 };	/* the control
							   thread's */

/* Read the batch's pages into the cache in one system call; those not
 * read (gone meanwhile) leave it. */
static void batch_load(struct scan *sc, struct batch *b)
{
	long got = 0;
	size_t k;

	if (b->nlv)
		got = syscall(SYS_process_vm_readv, sc->self, b->lv,
			      (unsigned long)b->nlv, b->rv,
			      (unsigned long)b->nrv, 0UL);
	if (got < 0)
		got = 0;
	for (k = (size_t)got / PAGE_SZ; k < b->nlv; k++)
		ls_scan_cache.tag[((uint8_t *)b->lv[k].iov_base - ls_scan_cache.mem) / PAGE_SZ] = 0;
}

/* The pages of [a, b) into the cache, as many as it holds, by batches;
 * for rescans whose ranges are known in advance. */
void ls_scan_cache_load(struct scan *sc, uint64_t a, uint64_t e)
{
	struct batch *b = &ls_scan_batch;
	uint64_t len;

	for (; a < e; a += len) {
		len = e - a < 256 * PAGE_SZ ? e - a : 256 * PAGE_SZ;
		if (ls_scan_batch_add(b, a, len, 0)) {
			batch_load(sc, b);
			b->n = b->nlv = b->nrv = 0;
			if (!++b->serial)
				b->serial = 1;
			if (ls_scan_batch_add(b, a, len, 0))
				return;
		}
		b->n = 0;	/* pages only, no range to scan */
	}
}

/* After ls_scan_cache_load()s: read what they asked for. */
void ls_scan_cache_flush(struct scan *sc)
{
	struct batch *b = &ls_scan_batch;

	batch_load(sc, b);
	b->n = b->nlv = b->nrv = 0;
	if (!++b->serial)
		b->serial = 1;
}

/*
 * Read the batch's pages in one system call and run fn(sc, word, arg)
 * on every word of its ranges; then empty it.  A short read means
 * memory went away meanwhile (a block freed and unmapped, a mapping
 * gone): the pages not read leave the cache, and a range not all in it
 * is scanned through the window, which skips what cannot be read page
 * by page.
 */
void ls_scan_batch_scan(struct scan *sc, struct batch *b,
		       void (*fn)(struct scan *, uint64_t, uint32_t))
{
	size_t k;

	batch_load(sc, b);
	for (k = 0; k < b->n; k++) {
		sc->heap_bytes += b->len[k];
		if (cached(b->a[k], b->len[k]))
			scan_cached(sc, b->a[k], b->len[k], fn, b->arg[k]);
		else
			ls_scan_scan_words(sc, b->a[k], b->a[k] + b->len[k], fn,
				   b->arg[k]);
	}
	b->n = b->nlv = b->nrv = 0;
	if (!++b->serial)	/* 0 is every slot's at first */
		b->serial = 1;
}

/* A range too big for any batch, alone: scanned through the window. */
void ls_scan_scan_alone(struct scan *sc, uint64_t a, uint64_t len,
		       void (*fn)(struct scan *, uint64_t, uint32_t),
		       uint32_t arg)
{
	sc->heap_bytes += len;
	ls_scan_scan_words(sc, a, a + len, fn, arg);
}



/*
 * The blocks marked behind the sweep's finger whose pages are cached are
 * scanned at once, depth first, and so are those they mark: a chain (the
 * collector's list of an interpreter) is followed as far as the cache
 * holds it instead of one block per sweep.  The rest wait in `later`
 * for the next sweep.
 */
static void follow_cached(struct scan *sc,
			  void (*fn)(struct scan *, uint64_t, uint32_t),
			  uint32_t head)
{
	while (sc->stack.len) {
		uint32_t i = ((uint32_t *)sc->stack.p)[--sc->stack.len];
		uint64_t len = sc->blk[i].size & ~7ull;

		if (sc->st[i] == ST_GONE)
			continue;
		if (!cached(sc->addr[i], len)) {
			if (ls_scan_vec_push(sc, &sc->later, &i))
				sc->partial = 1;
			continue;
		}
		sc->heap_bytes += len;
		scan_cached(sc, sc->addr[i], len, fn, fn == ls_scan_mark_from_block ?
			    sc->st[i] == ST_REACHABLE : head);
	}
}

/*
 * One sweep of the pending blocks [finger, pmax] in address order, a
 * batch at a time.  The finger is where the sweep stands when a batch
 * is scanned: the blocks marked above it join this sweep, the others
 * wait on the stack for the next.
 */
static void sweep_once(struct scan *sc,
		       void (*fn)(struct scan *, uint64_t, uint32_t),
		       uint32_t head)
{
	struct batch *b = &ls_scan_batch;
	size_t i = sc->finger;

	for (;;) {
		while (i <= sc->pmax) {
			uint64_t bits = sc->pend[i / 64] >> (i % 64);
			uint64_t len;
			uint32_t arg;

			if (!bits) {
				i = (i | 63) + 1;
				continue;
			}
			i += (size_t)__builtin_ctzll(bits);
			if (i > sc->pmax)
				break;
			len = sc->blk[i].size & ~7ull;
			arg = fn == ls_scan_mark_from_block ?
			      sc->st[i] == ST_REACHABLE : head;
			if (sc->st[i] != ST_GONE &&	/* freed meanwhile */
			    ls_scan_batch_add(b, sc->addr[i], len, arg)) {
				if (b->n)	/* full: read it first */
					break;
				sc->finger = i;
				sc->pend[i / 64] &= ~(1ull << (i % 64));
				ls_scan_scan_alone(sc, sc->addr[i], len, fn, arg);
				i++;
				continue;
			}
			sc->pend[i / 64] &= ~(1ull << (i % 64));
			i++;
		}
		if (!b->n)
			break;
		sc->finger = i - 1;
		ls_scan_batch_scan(sc, b, fn);
		follow_cached(sc, fn, head);
		if (sc->drain)
			sc->drain(sc, 0);
	}
	follow_cached(sc, fn, head);	/* what ls_scan_scan_alone() marked */
}

/*
 * Drain the stack in the live process: its blocks into the pending
 * bitmap, swept in address order; what the sweep marks behind its
 * finger goes to the stack for the next round.  Most of a heap is
 * marked in the first rounds; a long chain pointing downward takes a
 * round per block, each reading only its pages.
 */
static void drain_safe(struct scan *sc,
		       void (*fn)(struct scan *, uint64_t, uint32_t),
		       uint32_t head)
{
	uint64_t *pend = sc->pbits;

	/* Kept for the cliques' many small drains; swept bits are clear. */
	if (!pend)
		pend = sc->pbits = ls_scan_grab(sc, (sc->n + 63) / 64 * 8 + 8);
	if (!pend) {	/* no room for the bitmap: one block at a time */
		while (sc->stack.len) {
			uint32_t i = ((uint32_t *)sc->stack.p)[--sc->stack.len];

			ls_scan_scan_alone(sc, sc->addr[i], sc->blk[i].size & ~7ull, fn,
				   fn == ls_scan_mark_from_block ?
				   sc->st[i] == ST_REACHABLE : head);
		}
		return;
	}
	while (sc->stack.len) {
		const uint32_t *stk = sc->stack.p;
		size_t k, lo = SIZE_MAX, hi = 0;

		for (k = 0; k < sc->stack.len; k++) {
			pend[stk[k] / 64] |= 1ull << (stk[k] % 64);
			lo = stk[k] < lo ? stk[k] : lo;
			hi = stk[k] > hi ? stk[k] : hi;
		}
		sc->stack.len = 0;
		sc->pend = pend;
		sc->finger = lo;
		sc->pmax = hi;
		sweep_once(sc, fn, head);
		sc->pend = NULL;
		if (sc->later.len) {	/* the next sweep's */
			struct vec t = sc->stack;

			sc->stack = sc->later;
			sc->later = t;
			sc->later.len = 0;
		}
	}
}

void ls_scan_mark_all(struct scan *sc)
{
	uint32_t *stk;

	if (sc->safe) {
		drain_safe(sc, ls_scan_mark_from_block, 0);
		return;
	}
	while (sc->stack.len) {
		uint32_t i;

		stk = sc->stack.p;
		i = stk[--sc->stack.len];
		ls_scan_scan_block(sc, i, ls_scan_mark_from_block,
			   sc->st[i] == ST_REACHABLE);
	}
}

/* --- 4. cliques ---------------------------------------------------------- */

static uint32_t find_leader(uint32_t *leader, uint32_t x)
{
	uint32_t r = x, t;

	while (leader[r] != r)
		r = leader[r];
	while (leader[x] != r) {	/* path compression */
		t = leader[x];
		leader[x] = r;
		x = t;
	}
	return r;
}

static void clique_word(struct scan *sc, uint64_t w, uint32_t head)
{
	int start;
	int64_t k = lookup(sc, w, &start);

	if (k < 0 || (uint32_t)k == head || sc->st[k] != ST_UNREACHED)
		return;
	/* A block below head still unreached led a clique of its own:
	 * setting its leader merges that clique into this one. */
	sc->st[k] = ST_INDIRECT;
	sc->leader[k] = head;
	push_block(sc, (uint64_t)k);
}

int ls_scan_cliques(struct scan *sc)
{
	size_t i;

	sc->leader = ls_scan_grab(sc, sc->n * sizeof(uint32_t) + 1);
	if (!sc->leader)
		return -ENOMEM;
	for (i = 0; i < sc->n; i++)
		sc->leader[i] = (uint32_t)i;
	for (i = 0; i < sc->n; i++) {
		if (sc->st[i] != ST_UNREACHED)
			continue;
		push_block(sc, i);
		if (sc->safe) {
			drain_safe(sc, clique_word, (uint32_t)i);
			continue;
		}
		while (sc->stack.len) {
			uint32_t j = ((uint32_t *)sc->stack.p)[--sc->stack.len];

			ls_scan_scan_block(sc, j, clique_word, (uint32_t)i);
		}
	}
	return 0;
}

/* --- 5. sums ----------------------------------------------------------- */

static void count_block(struct ls_reach_result *res,
			const struct ls_live_entry *b, uint8_t c)
{
	res->totals.bytes[c] += b->size;
	res->totals.blocks[c]++;
	if (b->site < res->nsites) {
		res->sites[b->site].bytes[c] += b->size;
		res->sites[b->site].blocks[c]++;
	}
}

/*
 * After a concurrent mark: the blocks freed meanwhile out, those
 * allocated meanwhile in (reachable), in address order, as the writer
 * lists them.  nb is as ls_scan_scan_new() left it at the stop: compacted and
 * sorted, and the log was off from then on.
 */
static int merge_new(struct scan *sc, struct ls_reach_result *res)
{
	size_t i, j = 0, k = 0, nb = sc->nnb, cap;
	struct ls_live_entry *blk;
	uint8_t *cat;

	cap = sc->n + nb;
	blk = ls_scan_grab(sc, cap * sizeof(*blk));
	cat = ls_scan_grab(sc, cap);
	if (!blk || !cat)
		return -ENOMEM;
	for (i = 0; i < sc->n || j < nb;) {
		if (i < sc->n && sc->st[i] == ST_GONE) {
			i++;
			continue;
		}
		if (j < nb && (i == sc->n || sc->nb[j].addr < sc->blk[i].addr)) {
			blk[k] = sc->nb[j++];
			cat[k++] = LSNAP_REACH_REACHABLE;
		} else {
			blk[k] = sc->blk[i];
			cat[k++] = sc->st[i++];
		}
	}
	res->blocks = blk;
	res->cat = cat;
	res->nblocks = k;
	return 0;
}

/* The slot of the pair (lsite, site) in res->held. */
static struct lsnap_reach_held *held_slot(struct ls_reach_result *res,
					  uint32_t lsite, uint32_t site)
{
	uint64_t h = ((uint64_t)lsite << 32 | site) * 0x9e3779b97f4a7c15ull;
	size_t i = (size_t)(h >> 20) & res->held_mask;

	while (res->held[i].blocks && (res->held[i].leader_site != lsite ||
				       res->held[i].site != site))
		i = (i + 1) & res->held_mask;
	res->held[i].leader_site = lsite;
	res->held[i].site = site;
	return &res->held[i];
}

/* Room for one pair of sites per indirectly lost block, at most. */
static int held_grab(struct scan *sc, struct ls_reach_result *res)
{
	size_t i, n = 0, cap = 16;

	for (i = 0; i < sc->n; i++)
		n += sc->st[i] == ST_INDIRECT;
	if (!n)
		return 0;
	while (cap < 2 * n)
		cap *= 2;
	res->held = ls_scan_grab(sc, cap * sizeof(*res->held));
	if (!res->held)
		return -ENOMEM;
	res->held_mask = cap - 1;
	return 0;
}

int ls_scan_sum_up(struct scan *sc, struct ls_reach_result *res)
{
	static const uint8_t cat_of[] = {
		[ST_UNREACHED] = LSNAP_REACH_DEFINITE,
		[ST_POSSIBLE] = LSNAP_REACH_POSSIBLE,
		[ST_REACHABLE] = LSNAP_REACH_REACHABLE,
		[ST_INDIRECT] = LSNAP_REACH_INDIRECT,
	};
	uint32_t nsites = ls_site_count() + 1;
	size_t i, gone = 0;

	res->sites = ls_scan_grab(sc, nsites * sizeof(*res->sites));
	if (!res->sites || held_grab(sc, res))
		return -ENOMEM;
	res->nsites = nsites;
	for (i = 0; i < nsites; i++)
		res->sites[i].site = (uint32_t)i;
	for (i = 0; i < sc->nnb; i++)	/* allocated during the mark */
		if (sc->nb[i].addr)
			count_block(res, &sc->nb[i], LSNAP_REACH_REACHABLE);
	for (i = 0; i < sc->n; i++) {
		const struct ls_live_entry *b = &sc->blk[i];
		uint8_t c;

		if (sc->st[i] == ST_GONE) {
			gone++;
			continue;
		}
		c = cat_of[sc->st[i]];
		sc->st[i] = c;	/* the state array becomes the categories */
		count_block(res, b, c);
		/* As memcheck counts them: whatever the block's state. */
		if (sc->heur[i] && sc->heur[i] < LSNAP_HEUR_KINDS) {
			res->heur.bytes[sc->heur[i]] += b->size;
			res->heur.blocks[sc->heur[i]]++;
		}
		if (c == LSNAP_REACH_INDIRECT) {
			uint32_t l = find_leader(sc->leader, (uint32_t)i);
			uint32_t s = sc->blk[l].site;
			struct lsnap_reach_held *h = held_slot(res, s, b->site);

			h->bytes += b->size;
			h->blocks++;
			if (s < nsites) {
				res->sites[s].indirect_bytes += b->size;
				res->sites[s].indirect_blocks++;
			}
		}
	}
	res->blocks = sc->blk;
	res->cat = sc->st;
	res->nblocks = sc->n;
	return gone || sc->nnb ? merge_new(sc, res) : 0;
}

/* The start of a small /proc file, NUL-terminated: its length, or -1. */
ssize_t ls_scan_read_proc(const char *path, char *buf, size_t cap)
{
	ssize_t n;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return -1;
	buf[n] = 0;
	return n;
}

/* The process's threads but the caller, up to cap. */
size_t ls_scan_other_threads(pid_t *tids, size_t cap)
{
	char buf[4096];
	size_t n = 0;
	long k, off;
	int fd = open("/proc/self/task", O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	while ((k = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (off = 0; off < k;) {
			const char *name = buf + off + 19;	/* d_name */
			unsigned short reclen;
			pid_t tid = (pid_t)strtol(name, NULL, 10);

			memcpy(&reclen, buf + off + 16, sizeof(reclen));
			off += reclen;
			if (tid > 0 && tid != ls_gettid() && n < cap)
				tids[n++] = tid;
		}
	close(fd);
	return n;
}

/* A word of struct lsnap_check_thread's regs: every stop fills them in
 * PTRACE_GETREGS's layout, struct user_regs_struct. */
#define REG(r) (offsetof(struct user_regs_struct, r) / 8)

/*
 * Thread tid as /proc shows it while it waits in a system call ("NR
 * args... sp pc"): *t its record in PTRACE_GETREGS's layout, the call's
 * number in orig_rax, its six arguments, the stack pointer and the pc,
 * every other register 0; *sig (if not NULL) a hash of the whole line,
 * which changes when the thread moves.  0, or -1 when it runs or is
 * stopped outside a call ("running", "-1 sp pc").
 */
int ls_scan_blocked_thread(pid_t tid, struct lsnap_check_thread *t,
			   uint64_t *sig)
{
	static const uint8_t arg[6] = { REG(rdi), REG(rsi), REG(rdx),
					REG(r10), REG(r8), REG(r9) };
	char path[64], buf[256], *p, *e;
	uint64_t v[9];
	ssize_t n;
	int i;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	n = ls_scan_read_proc(path, buf, sizeof(buf));
	if (sig)
		*sig = n > 0 ? lsnap_fnv1a(0xcbf29ce484222325ULL, buf,
					   (uint64_t)n) : 0;
	if (n <= 0 || buf[0] < '0' || buf[0] > '9')
		return -1;
	for (i = 0, p = buf; i < 9; i++, p = e) {
		v[i] = strtoull(p, &e, i ? 16 : 10);
		if (e == p)
			return -1;
	}
	memset(t, 0, sizeof(*t));
	t->tid = (uint32_t)tid;
	t->nregs = sizeof(struct user_regs_struct) / 8;
	t->regs[REG(orig_rax)] = v[0];
	for (i = 0; i < 6; i++)
		t->regs[arg[i]] = v[1 + i];
	t->regs[REG(rsp)] = t->sp = v[7];
	t->regs[REG(rip)] = v[8];
	return 0;
}

/*
 * The bytes below stopped thread t's stack pointer that its stack's
 * roots take in (docs/REACHABILITY.md, "The red zone").  None when it
 * waits in a system call of the C library: orig_rax holds the call's
 * number (not -1) and the two bytes before rip are libc's `syscall`
 * instruction (0f 05).  Every frame of the program's then made a call,
 * which no leaf function in the middle of using its red zone does, and
 * libc's wrappers keep nothing of the program's below their stack
 * pointer: what lies there is the dead words of calls that returned.
 * Otherwise the 128-byte red zone, where a leaf function may keep live
 * locals: a thread stopped between two instructions, a system call the
 * program made itself (a leaf may hold a word in its red zone across
 * it), registers not known.  libc's code is mapped for the process's
 * life: its two bytes are read in place, in the image as in the live
 * process.
 */
uint64_t ls_scan_red_zone(const struct lsnap_check_thread *t)
{
	const uint8_t *insn;
	uint64_t rip;

	if (t->nregs <= REG(rip) || (int64_t)t->regs[REG(orig_rax)] < 0)
		return RED_ZONE;
	rip = t->regs[REG(rip)];
	if (rip < ls_scan_prep.libc_lo + 2 || rip > ls_scan_prep.libc_hi)
		return RED_ZONE;
	insn = (const uint8_t *)(uintptr_t)(rip - 2);
	return insn[0] == 0x0f && insn[1] == 0x05 ? 0 : RED_ZONE;
}

/* The stack pointers of the threads that wait in a system call and the
 * red zone of each (ls_scan_red_zone()), and ours (with the red zone);
 * up to cap. */
size_t ls_scan_blocked_sps(uint64_t *sps, uint64_t *reds, size_t cap,
			   uint64_t self_sp)
{
	struct lsnap_check_thread t;
	pid_t tids[256];
	size_t n = 0, i, nt = ls_scan_other_threads(tids, 256);

	if (cap) {
		sps[n] = self_sp;
		reds[n++] = RED_ZONE;
	}
	for (i = 0; i < nt && n < cap; i++)
		if (!ls_scan_blocked_thread(tids[i], &t, NULL)) {
			sps[n] = t.sp;
			reds[n++] = ls_scan_red_zone(&t);
		}
	return n;
}

/* --- the child ------------------------------------------------------------ */

void ls_scan_note_own(struct scan *sc)
{
	unsigned i;

	sc->nown = ls_sys_own_copy(sc->own_start, sc->own_len,
				   LS_SYS_OWN_SLOTS);
	for (i = 0; i < ls_scan_prep.nseg; i++) {
		sc->own_start[sc->nown] = ls_scan_prep.seg_start[i];
		sc->own_len[sc->nown++] = ls_scan_prep.seg_end[i] - ls_scan_prep.seg_start[i];
	}
	/* The allocator's own state is no memory of the program's either. */
	if (ls_glibcheap_main_arena()) {
		sc->own_start[sc->nown] = ls_glibcheap_main_arena();
		sc->own_len[sc->nown++] = ls_glibcheap_arena_size();
	}
}


/* The mark's inline steps, for the other files of the scan. */
int64_t ls_scan_lookup(const struct scan *sc, uint64_t w, int *start)
{
	return lookup(sc, w, start);
}

void ls_scan_mark_word(struct scan *sc, uint64_t w, int definite)
{
	mark_word(sc, w, definite);
}
