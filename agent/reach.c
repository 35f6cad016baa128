/*
 * reach.c - the reachability scan: by default a mostly-concurrent mark in
 * the live process (cm_*: marked while the program runs, finished with
 * its threads stopped, see "a mostly-concurrent mark" below), or the
 * fork method, a copy-on-write child scanning a frozen image.
 *
 * Phases (docs/REACHABILITY.md):
 *  1. gather: every heap block of the live tables into one array, sorted
 *     by address (radix sort), and an index of the 1 MiB granules blocks
 *     cover, so that most words that are no heap pointer cost one probe;
 *  2. roots: every readable, writable private mapping of /proc/self/maps,
 *     less the agent's own memory, less the allocator's (heap_range: its
 *     free chunks keep stale pointers; blocks are scanned only when
 *     reached), less each stack below its thread's stack pointer minus
 *     the 128-byte red zone; plus the stopped threads' registers.  Static TLS and the thread descriptors (with the DTV) lie
 *     in those mappings; dynamic TLS blocks are heap blocks the DTV points
 *     to;
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
#include "site.h"
#include "snapwrite.h"
#include "sys.h"
#include "unwind.h"

#define RED_ZONE 128
#define GRANULE_SHIFT 20

/* ST_GONE: freed during a concurrent mark (not in the result). */
enum { ST_UNREACHED = 0, ST_POSSIBLE, ST_REACHABLE, ST_INDIRECT, ST_GONE };

/* A growable array of the child's own memory. */
struct vec {
	void *p;
	size_t len, cap;	/* in elements */
	size_t elem;
};

struct region {
	uint64_t start, end;
	unsigned readable : 1, writable : 1, shared : 1, file : 1, stack : 1,
		 exec : 1, heap : 1;
};

struct span {
	uint64_t start, end;
};

#define WIN_BYTES (64u << 10)	/* the safe reader's window */
#define MAX_GRABS 256

struct nb_slot {
	uint64_t addr;		/* 0 = empty */
	uint64_t idx;		/* into nb */
};

struct gran {
	uint64_t key;		/* granule + 1; 0 = empty */
	uint32_t first, end;	/* blocks overlapping it */
};

struct scan {
	struct ls_live_entry *blk;
	uint64_t *addr;		/* blk[i].addr, dense for the search */
	uint8_t *st;
	uint32_t *leader;
	size_t n;
	uint64_t lo, hi;	/* [first block, end of the last) */
	struct gran *gran;
	uint64_t gmask;
	struct vec regions;	/* struct region, sorted */
	struct vec stack;	/* uint32_t block indices to scan */
	struct vec later;	/* the same, for the next sweep (live) */
	uint64_t own_start[LS_SYS_OWN_SLOTS + 9], own_len[LS_SYS_OWN_SLOTS + 9];
	size_t nown;
	uint64_t mem, peak;	/* bytes mapped now and at most */
	uint64_t root_bytes, heap_bytes;
	int partial;		/* out of memory: some blocks not scanned */
	/* A concurrent mark (cm_*) runs in the live process: memory is
	 * read through process_vm_readv(), never in place (a block or a
	 * mapping may go away under the reader; at the stop, where none
	 * can, in place): pages into the cache (batch_*), roots and single
	 * words through a window. */
	int safe;
	pid_t self;
	uint8_t *win;
	uint64_t wbase, wlen;
	int record;		/* note the root pieces scanned in rootp */
	struct vec rootp;	/* struct span, ascending */
	struct vec regd;	/* struct span: ranges write-protected */
	int uffd;
	struct ls_live_log_rec *log;	/* the change log, a ring */
	size_t log_cap;
	uint64_t log_done;	/* its records applied */
	int log_on, log_bad;	/* log_bad: the first error of log_drain */
	struct ls_live_entry *nb;	/* blocks allocated during the mark */
	uint8_t *nbdone;	/* nb[i] scanned while the program ran */
	size_t nnb, nbcap;
	struct nb_slot *nbslot;	/* nb's index by address */
	size_t nbmask;
	void *grabs[MAX_GRABS];	/* every mapping, to give it back */
	size_t grab_len[MAX_GRABS];
	size_t ngrabs;
	uint64_t scan_ns;	/* so far */
	uint32_t nth;
	int torn;
	/* The live process's mark sweeps its pending blocks in address
	 * order (mark_sweep); a block marked above the finger joins the
	 * sweep, one at or below it waits on the stack. */
	uint64_t *pend;		/* bitmap over the blocks, NULL: no sweep */
	uint64_t *pbits;	/* its memory */
	size_t finger, pmax;
	/* glibc's free chunks cached in fastbins (glibcheap.h): an open
	 * hash of chunk addresses, fmask + 1 slots, 0 = empty. */
	uint64_t *fast;
	uint64_t fmask, nfast;
	unsigned resyncs;	/* chunk walks that went astray */
	size_t wcur;		/* the walk's cursor into addr */
	/* valgrind's leak heuristics: which one made block i reachable
	 * (enum lsnap_reach_heur, 0 none), and a cache of addresses
	 * already judged vtables or not. */
	uint8_t *heur;
	struct { uint64_t addr; int is; } vt[512];
	/* The allocator's memory outside tracked blocks: scanned as roots,
	 * and not scanned (heapmodel.h). */
	uint64_t alloc_root, alloc_unscanned;
	/* The concurrent mark's stop: the written pages (struct span),
	 * listed before any is rescanned, and when the stop's work must
	 * end (0: no bound); overrun once it passed. */
	struct vec dirty;
	uint64_t deadline;
	int overrun;
};

/* How the current check runs (struct lsnap_reach_how): set by the
 * control thread, read by the child and by the concurrent mark. */
static struct lsnap_reach_how how;

/* Filled by ls_reach_prepare(), read by the child. */
static struct {
	uint64_t seg_start[8], seg_end[8];	/* the agent's own writable
						   PT_LOAD segments */
	unsigned nseg;
	struct lsnap_mallinfo mallinfo;
	pid_t pid, ppid;
	uint64_t tid_off;	/* of the tid in glibc's struct pthread, 0
				   when this glibc's is not known */
} prep;

/* The check at exit: the other threads waiting in a system call, and
 * where the agent's exit path began on the exiting thread's stack. */
#define EXIT_THREADS 256

static struct {
	struct lsnap_check_thread th[EXIT_THREADS];
	uint64_t sig[EXIT_THREADS];
	uint64_t frame;		/* ls_reach_note_exit_frame() */
	/* Where the exiting thread's live frames begin (0: not known, the
	 * stack is scanned from frame), and the registers its caller of
	 * exit() held (nregs 0: not known). */
	uint64_t live;
	uint64_t regs[LS_REACH_EXIT_REGS];
	uint32_t nregs;
	/* ls_reach_note_exit_call(): the first call of the process. */
	pid_t call_pid, call_claim, call_tid;
	uint64_t call_cfa, call_regs[LS_REACH_EXIT_REGS];
	uint32_t call_nregs;
} at_exit;

static struct scan sc_static;	/* the child's; static: no stack for 260 KiB */
static sigjmp_buf fault_jmp;

/* --- memory of the child ----------------------------------------------- */

static void *grab(struct scan *sc, size_t bytes)
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

static void drop(struct scan *sc, void *p, size_t bytes)
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
static void drop_all(struct scan *sc)
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
static size_t read_safe(const struct scan *sc, uint64_t a, void *dst,
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
	sc->wlen = read_safe(sc, base, sc->win, WIN_BYTES);
	if (a + len > sc->wbase + sc->wlen) {
		sc->wbase = a;
		sc->wlen = read_safe(sc, a, sc->win, WIN_BYTES);
		if (len > sc->wlen)
			return NULL;
	}
	return (const uint64_t *)(sc->win + (a - sc->wbase));
}

/* One word at a (8-aligned); 0 or -1 when it cannot be read. */
static int peek(struct scan *sc, uint64_t a, uint64_t *v)
{
	const uint64_t *w = view(sc, a, 8);

	if (!w)
		return -1;
	*v = *w;
	return 0;
}

static int vec_push(struct scan *sc, struct vec *v, const void *e)
{
	if (v->len == v->cap) {
		size_t ncap = v->cap ? v->cap * 2 : 4096;
		void *n = grab(sc, ncap * v->elem);

		if (!n)
			return -ENOMEM;
		if (v->len)
			memcpy(n, v->p, v->len * v->elem);
		drop(sc, v->p, v->cap * v->elem);
		v->p = n;
		v->cap = ncap;
	}
	memcpy((char *)v->p + v->len++ * v->elem, e, v->elem);
	return 0;
}

/* --- 1. gather --------------------------------------------------------- */

/* Shard i into buf: under its lock in the live process, without in a
 * frozen image. */
static size_t copy_shard(const struct scan *sc, unsigned i,
			 struct ls_live_entry *buf, size_t cap, int *torn)
{
	if (sc->safe)
		return ls_live_copy_shard(i, buf, cap);
	return ls_live_copy_shard_frozen(i, buf, cap, torn);
}

static int gather(struct scan *sc, int *torn)
{
	size_t cap = ls_live_count() + 4096, n = 0, k;
	struct ls_live_entry *buf;
	unsigned i;

	buf = grab(sc, cap * sizeof(*buf));
	if (!buf)
		return -ENOMEM;
	for (i = 0; i < LS_LIVE_SHARDS; i++) {
		k = copy_shard(sc, i, buf + n, cap - n, torn);
		if (n + k > cap) {
			size_t ncap = (n + k) * 2;
			struct ls_live_entry *b = grab(sc, ncap * sizeof(*b));

			if (!b)
				return -ENOMEM;
			memcpy(b, buf, n * sizeof(*b));
			drop(sc, buf, cap * sizeof(*b));
			buf = b;
			cap = ncap;
			k = copy_shard(sc, i, buf + n, cap - n, torn);
		}
		n += k;
	}
	sc->blk = buf;
	sc->n = n;
	return 0;
}

/* LSD radix sort by address, 11 bits at a time over bits 4..47 (blocks
 * are 16-byte aligned below 2^48).  O(n), no recursion, no allocator. */
static int radix_sort(struct scan *sc, struct ls_live_entry *a, size_t n)
{
	struct ls_live_entry *tmp, *b;
	static size_t cnt[2048];
	unsigned shift;
	size_t i;

	if (n < 2)
		return 0;
	tmp = grab(sc, n * sizeof(*tmp));
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
	drop(sc, tmp, n * sizeof(*tmp));
	return 0;
}

static int sort_blocks(struct scan *sc)
{
	return radix_sort(sc, sc->blk, sc->n);
}

static struct gran *gran_slot(const struct scan *sc, uint64_t g)
{
	uint64_t i = (g * 0x9e3779b97f4a7c15ULL >> 20) & sc->gmask;

	while (sc->gran[i].key && sc->gran[i].key != g + 1)
		i = (i + 1) & sc->gmask;
	return &sc->gran[i];
}

static int index_blocks(struct scan *sc)
{
	uint64_t ngran = 0, cap = 1024, g, last = 0;
	size_t i;

	sc->addr = grab(sc, sc->n * 8);
	sc->st = grab(sc, sc->n);
	sc->heur = grab(sc, sc->n);
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
	sc->gran = grab(sc, cap * sizeof(*sc->gran));
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

/* --- 2. roots ------------------------------------------------------------ */

static int read_maps(struct scan *sc, char **text, size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	char *buf = grab(sc, cap);
	ssize_t k;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf)
		return -EIO;
	for (;;) {
		if (n == cap) {
			char *b = grab(sc, cap * 2);

			if (!b) {
				close(fd);
				return -ENOMEM;
			}
			memcpy(b, buf, n);
			drop(sc, buf, cap);
			buf = b;
			cap *= 2;
		}
		k = read(fd, buf + n, cap - n);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		n += (size_t)k;
	}
	close(fd);
	*text = buf;
	*len = n;
	return 0;
}

static uint64_t hex(const char **p)
{
	uint64_t v = 0;
	char c;

	for (; (c = **p); (*p)++) {
		if (c >= '0' && c <= '9')
			v = v << 4 | (uint64_t)(c - '0');
		else if (c >= 'a' && c <= 'f')
			v = v << 4 | (uint64_t)(c - 'a' + 10);
		else
			break;
	}
	return v;
}

/* "start-end perms offset dev inode   path" */
static int parse_maps(struct scan *sc)
{
	char *text;
	const char *p, *end, *nl;
	size_t len;
	int r = read_maps(sc, &text, &len);

	if (r)
		return r;
	if (sc->regions.p)	/* again, at the stop of a concurrent mark */
		drop(sc, sc->regions.p, sc->regions.cap * sc->regions.elem);
	memset(&sc->regions, 0, sizeof(sc->regions));
	sc->regions.elem = sizeof(struct region);
	for (p = text, end = text + len; p < end; p = nl + 1) {
		struct region g = { 0 };
		const char *q;
		int field;

		nl = memchr(p, '\n', (size_t)(end - p));
		if (!nl)
			break;
		q = p;
		g.start = hex(&q);
		q++;
		g.end = hex(&q);
		q++;
		if (q + 4 > nl)
			continue;
		g.readable = q[0] == 'r';
		g.writable = q[1] == 'w';
		g.exec = q[2] == 'x';
		g.shared = q[3] == 's';
		/* Skip offset, dev, inode; a path follows when the inode
		 * is not 0 or the name is a [bracket]. */
		for (field = 0; field < 4 && q < nl; field++) {
			while (q < nl && *q != ' ')
				q++;
			while (q < nl && *q == ' ')
				q++;
		}
		g.file = q < nl && *q == '/';
		g.stack = nl - q == 7 && !memcmp(q, "[stack]", 7);
		g.heap = nl - q == 6 && !memcmp(q, "[heap]", 6);
		r = vec_push(sc, &sc->regions, &g);
		if (r)
			return r;
	}
	return 0;
}

static const struct region *region_of(const struct scan *sc, uint64_t a)
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
static uint64_t readable_until(const struct scan *sc, uint64_t a)
{
	const struct region *g = region_of(sc, a), *last;

	if (!g || !g->readable)
		return a;
	last = (const struct region *)sc->regions.p + sc->regions.len;
	while (g + 1 < last && g[1].start == g->end && g[1].readable)
		g++;
	return g->end;
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
	if (vec_push(sc, &sc->stack, &v))
		sc->partial = 1;
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
		if (readable_until(sc, a) < a + len)
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
	const struct region *g = region_of(sc, a);

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
static void scan_words(struct scan *sc, uint64_t a, uint64_t b,
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

static void mark_from_block(struct scan *sc, uint64_t w, uint32_t definite)
{
	mark_word(sc, w, (int)definite);
}

static void mark_range(struct scan *sc, uint64_t a, uint64_t b, int definite)
{
	const uint64_t *w, *e;

	if (sc->safe) {
		a = (a + 7) & ~7ull;
		b &= ~7ull;
		if (b > a && cached(a, b - a))
			scan_cached(sc, a, b - a, mark_from_block,
				    (uint32_t)definite);
		else
			scan_words(sc, a, b, mark_from_block,
				   (uint32_t)definite);
		return;
	}
	w = (const uint64_t *)((a + 7) & ~7ull);
	e = (const uint64_t *)(b & ~7ull);
	for (; w < e; w++)
		if (*w >= sc->lo && *w < sc->hi)
			mark_word(sc, *w, definite);
}

static void on_fault(int sig)
{
	siglongjmp(fault_jmp, 1);
}

/* Scan [a, b) of a root region (mark_roots catches a fault). */
static void mark_root(struct scan *sc, uint64_t a, uint64_t b)
{
	struct span sp = { a, b };

	if (a >= b)
		return;
	sc->root_bytes += b - a;
	if (sc->record && vec_push(sc, &sc->rootp, &sp))
		sc->partial = 1;
	mark_range(sc, a, b, 1);
}

static int is_own(const struct scan *sc, uint64_t a, uint64_t *end)
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
static size_t first_block_from(const struct scan *sc, uint64_t a)
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

/* The bytes of the tracked blocks that start in [s, e). */
static uint64_t tracked_bytes(const struct scan *sc, uint64_t s, uint64_t e)
{
	uint64_t sum = 0;
	size_t i;

	for (i = first_block_from(sc, s); i < sc->n && sc->addr[i] < e; i++)
		sum += sc->blk[i].size;
	return sum;
}

#define HEAP_MAX_SIZE (64ull << 20)	/* glibc's arena heaps, 64-bit */
#define CHUNK_MMAPPED 2ull
#define CHUNK_NON_MAIN 4ull

/* glibc's request2size(): the chunk a request of size bytes gets. */
static uint64_t chunk_for(uint64_t size)
{
	uint64_t cs = (size + 8 + 15) & ~15ull;

	return cs < 32 ? 32 : cs;
}

static int chunk_in_use(struct scan *sc, uint64_t p, uint64_t size,
			uint64_t end);

/*
 * The allocator's memory around block i, in region [gs, ge), outside
 * the glibc heaps mark_region() found: not a root (its free chunks keep
 * stale pointers; its blocks are scanned when reached).  From glibc's
 * chunk header before the block: a chunk of its own mapping gives
 * exactly that mapping (kernels merge adjacent anonymous mappings, so
 * the region may hold a thread stack or a program's arena too); an
 * arena chunk the region from its 64 MiB-aligned heap start (a thread
 * arena's) or whole (the main arena's).  A header that is not glibc's
 * (jemalloc, tcmalloc...) gives the block alone: the rest of the
 * allocator's memory stays a root, which can hide a leak behind a stale
 * pointer but never makes one up.
 */
static void heap_range(struct scan *sc, size_t i, uint64_t gs,
		       uint64_t ge, uint64_t *xs, uint64_t *xe, int *arena)
{
	uint64_t a = sc->addr[i], size = sc->blk[i].size, hdr, cs, pre;

	*arena = 0;
	*xs = a;
	*xe = a + (size ? size : 1);
	if (!ls_heapmodel()->chunk_headers || a < gs + 16 || (a & 15) ||
	    peek(sc, a - 8, &hdr))
		return;
	cs = hdr & ~7ull;
	if (hdr & CHUNK_MMAPPED) {
		/* memalign's offset */
		if (peek(sc, a - 16, &pre))
			return;
		if ((cs & 4095) || pre > (1ull << 20) || a - 16 - pre < gs ||
		    a - 16 + cs > ge || a - 16 + cs < a + size)
			return;
		*xs = a - 16 - pre;
		*xe = a - 16 + cs;
		return;
	}
	if (!chunk_in_use(sc, a - 16, size, ge))
		return;
	*xs = gs;
	*xe = ge;
	*arena = hdr & CHUNK_NON_MAIN ? 2 : 1;	/* a thread's, the main one */
	if ((hdr & CHUNK_NON_MAIN) && (a & ~(HEAP_MAX_SIZE - 1)) > gs)
		*xs = a & ~(HEAP_MAX_SIZE - 1);
}

static void mark_piece(struct scan *sc, uint64_t s, uint64_t e);

/* --- glibc's heaps (glibcheap.h) ----------------------------------------- */

/* The words glibcheap.c asks for: through the window in the live
 * process; in the image in place, when the maps say they are there. */
static int gh_peek(void *ctx, uint64_t a, uint64_t *v)
{
	struct scan *sc = ctx;

	if (a & 7)
		return -1;
	if (sc->safe)
		return peek(sc, a, v);
	if (readable_until(sc, a) < a + 8)
		return -1;
	*v = *(const uint64_t *)(uintptr_t)a;
	return 0;
}

/*
 * Is the chunk at p, holding a block of size bytes, in use as glibc lays
 * it out: its size the one glibc gives such a request, the next chunk's
 * header (below end) saying its predecessor is in use?
 */
static int chunk_in_use(struct scan *sc, uint64_t p, uint64_t size,
			uint64_t end)
{
	uint64_t hdr, cs, nx;

	if (gh_peek(sc, p + 8, &hdr) || (hdr & CHUNK_MMAPPED))
		return 0;
	cs = hdr & ~7ull;
	return cs >= chunk_for(size) && cs < chunk_for(size) + 32 &&
	       p + cs + 16 <= end && !gh_peek(sc, p + cs + 8, &nx) && (nx & 1);
}

/* A walk astray at p resumes at the next tracked block's chunk. */
static uint64_t gh_resync(void *ctx, uint64_t p, uint64_t end)
{
	struct scan *sc = ctx;
	size_t i;

	for (i = first_block_from(sc, p + 17); i < sc->n && sc->addr[i] < end;
	     i++)
		if (chunk_in_use(sc, sc->addr[i] - 16, sc->blk[i].size, end))
			return sc->addr[i] - 16;
	return 0;
}

static uint64_t *fast_slot(const struct scan *sc, uint64_t chunk)
{
	uint64_t k = (chunk >> 4) * 0x9e3779b97f4a7c15ULL >> 20 & sc->fmask;

	while (sc->fast[k] && sc->fast[k] != chunk)
		k = (k + 1) & sc->fmask;
	return &sc->fast[k];
}

static void fast_add(void *ctx, uint64_t chunk)
{
	struct scan *sc = ctx;
	uint64_t *slot = fast_slot(sc, chunk);

	if (!*slot) {
		*slot = chunk;
		sc->nfast++;
	}
}

/* A walk asks in address order: a cursor into the sorted blocks. */
static int gh_tracked(void *ctx, uint64_t user)
{
	struct scan *sc = ctx;

	if (sc->wcur > 0 && sc->wcur <= sc->n && sc->addr[sc->wcur - 1] >= user)
		sc->wcur = first_block_from(sc, user);	/* went back */
	while (sc->wcur < sc->n && sc->addr[sc->wcur] < user)
		sc->wcur++;
	return sc->wcur < sc->n && sc->addr[sc->wcur] == user;
}

/* An in-use looking chunk that is not a tracked block: a root, unless
 * a fastbin holds it. */
static void gh_chunk(void *ctx, uint64_t user, uint64_t end)
{
	struct scan *sc = ctx;

	if (sc->fast && *fast_slot(sc, user - 16))
		return;
	sc->alloc_root += end - user;
	mark_piece(sc, user, end);
}

static const struct ls_gh_ops *gh_ops(struct scan *sc)
{
	static struct ls_gh_ops ops = {
		.peek = gh_peek, .resync = gh_resync, .tracked = gh_tracked,
		.chunk = gh_chunk,
	};

	ops.ctx = sc;
	return &ops;
}

#define MAX_FAST (1u << 20)	/* fastbin chunks noted; the rest are roots */

/* The chunks glibc's fastbins hold (they look in use to a walk). */
static int note_fastbins(struct scan *sc)
{
	uint64_t main = ls_glibcheap_main_arena();

	if (!main)
		return 0;
	sc->fmask = 4095;
	for (;;) {
		sc->fast = grab(sc, (sc->fmask + 1) * 8);
		if (!sc->fast)
			return -ENOMEM;
		sc->nfast = 0;
		/* at most half full: probes stay short */
		ls_gh_fastbins(gh_ops(sc), main, fast_add, (sc->fmask + 1) / 2);
		if (sc->nfast < (sc->fmask + 1) / 2 || sc->fmask + 1 >= 2 * MAX_FAST)
			return 0;
		drop(sc, sc->fast, (sc->fmask + 1) * 8);
		sc->fmask = sc->fmask * 2 + 1;
	}
}

/* The in-use chunks of glibc heap h that are not tracked blocks
 * (allocated before tracking began: `leakscope attach`, `reset`) are
 * roots: memory the program uses that is neither a tracked block nor
 * the agent's.  Its free chunks, cached ones included, are not. */
static void walk_heap(struct scan *sc, const struct ls_gh_heap *h)
{
	uint64_t roots = sc->alloc_root, used;

	sc->wcur = first_block_from(sc, h->first);
	sc->resyncs += ls_gh_walk(gh_ops(sc), h, ls_glibcheap_tcache_key());
	used = sc->alloc_root - roots + tracked_bytes(sc, h->start, h->end);
	if (h->end - h->start > used)
		sc->alloc_unscanned += h->end - h->start - used;
}

/*
 * Scan the piece [s, e) of a region, cutting out the agent's own ranges.
 * Own ranges are mappings of their own (ls_sys_map) or whole pages of
 * the agent's segments, so a cut at a range's start suffices.
 */
static void mark_piece(struct scan *sc, uint64_t s, uint64_t e)
{
	uint64_t next = e, own_end;
	size_t i;

	while (s < e) {
		if (is_own(sc, s, &own_end)) {
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

/* [s, e) of region g, outside glibc's heaps, less the allocator's
 * memory around its blocks (heap_range). */
static void mark_plain(struct scan *sc, const struct region *g, uint64_t s,
		       uint64_t e)
{
	uint64_t cur = s, xs, xe;
	struct ls_gh_heap h;
	int arena;
	size_t i;

	for (i = first_block_from(sc, s); i < sc->n &&
	     sc->addr[i] < e && cur < e; i++) {
		if (sc->addr[i] < cur)
			continue;
		heap_range(sc, i, g->start, g->end, &xs, &xe, &arena);
		if (xe > e)
			xe = e;
		if (xs > cur) {
			/* Another allocator's memory between its blocks
			 * (or a program's mapping the kernel merged). */
			if (!ls_heapmodel()->chunk_headers)
				sc->alloc_root += xs - cur;
			mark_piece(sc, cur, xs);
		}
		/* A main-arena heap that is not [heap] (glibc's mmap'd
		 * fallback, or the main arena not found): walked from the
		 * region's start. */
		if (arena == 1 && xs == g->start) {
			h = (struct ls_gh_heap){ xs, xe, xs, xe, 0 };
			walk_heap(sc, &h);
		} else if (xe > xs && xs >= cur) {
			/* A chunk's own mapping less its block, or a thread
			 * arena's memory that is no heap glibcheap.c knows:
			 * not scanned. */
			uint64_t t = tracked_bytes(sc, xs, xe);

			sc->alloc_unscanned += xe - xs > t ? xe - xs - t : 0;
		}
		if (xe > cur)
			cur = xe;
	}
	if (cur < e) {
		if (!ls_heapmodel()->chunk_headers && cur > s)
			sc->alloc_root += e - cur;
		mark_piece(sc, cur, e);
	}
}

/*
 * Region g from s: glibc's heaps in it (the main arena's [heap], and
 * thread arenas' heaps at every 64 MiB boundary whose heap_info makes
 * sense) are walked chunk by chunk; the rest is scanned as a root, less
 * the allocator's memory.  A region may hold several heaps and other
 * mappings the kernel merged with them.
 */
static void mark_region(struct scan *sc, const struct region *g, uint64_t s)
{
	struct ls_gh_heap h;
	uint64_t cur = s, a;

	if (!ls_heapmodel()->chunk_headers) {	/* not glibc's heaps */
		mark_plain(sc, g, s, g->end);
		return;
	}
	if (g->heap && s == g->start &&
	    ls_gh_main_heap(gh_ops(sc), g->start, g->end, &h)) {
		walk_heap(sc, &h);
		return;
	}
	for (a = (g->start + HEAP_MAX_SIZE - 1) & ~(HEAP_MAX_SIZE - 1);
	     a < g->end; a += HEAP_MAX_SIZE) {
		if (a < cur || !ls_gh_thread_heap(gh_ops(sc), a, g->end, &h))
			continue;
		mark_plain(sc, g, cur, h.start);
		walk_heap(sc, &h);
		cur = h.end;
	}
	if (cur < g->end)
		mark_plain(sc, g, cur, g->end);
}

/*
 * glibc's thread descriptor (struct pthread) sits at the top of every
 * stack glibc maps for a thread, under the thread's static TLS: its
 * first and third words (the TCB's tcb and self) are its own address.
 * The descriptor at most 16 KiB below the end of region g, or 0.
 */
static uint64_t thread_desc(struct scan *sc, const struct region *g)
{
	uint64_t pd, w0, w2;

	if (!prep.tid_off || g->file || g->end - g->start < (64u << 10))
		return 0;
	for (pd = (g->end - 64) & ~63ull; pd + (16u << 10) >= g->end; pd -= 64)
		if (!peek(sc, pd, &w0) && w0 == pd && !peek(sc, pd + 16, &w2) &&
		    w2 == pd)
			return pd;
	return 0;
}

/*
 * Where the roots of region g begin.  A stack from its thread's stack
 * pointer less the red zone (the exiting thread's at exit: exactly from
 * where its live frames begin, self_red 0).  The stack of a thread that
 * has ended (glibc keeps it mapped, in its stack cache or until a join;
 * the kernel cleared the descriptor's tid): only its descriptor, which
 * glibc reuses (its DTV, and through it the dynamic TLS blocks glibc
 * frees when the stack is reused).  Not its frames, not its static TLS:
 * what only an ended thread's __thread variable holds is lost, as
 * memcheck and LeakSanitizer both say.
 */
static uint64_t root_start(struct scan *sc, const struct region *g,
			   const struct lsnap_check_thread *th, uint32_t nth,
			   uint64_t self_sp, uint64_t self_red)
{
	uint64_t s = g->start, sp, red, pd, tid;
	size_t k;

	for (k = 0; k <= nth; k++) {
		sp = k < nth ? th[k].sp : self_sp;
		red = k < nth ? RED_ZONE : self_red;
		if (sp >= s && sp < g->end && sp - red > s)
			return sp - red;
	}
	pd = thread_desc(sc, g);
	if (pd && !peek(sc, pd + prep.tid_off, &tid) && (int32_t)tid <= 0)
		s = pd;
	return s;
}

/* A page that faults (a file mapping cut short) ends the region. */
static void mark_root_region(struct scan *sc, const struct region *g,
			     const struct lsnap_check_thread *th, uint32_t nth,
			     uint64_t self_sp, uint64_t self_red)
{
	if (!sc->safe && sigsetjmp(fault_jmp, 0))
		return;
	mark_region(sc, g, root_start(sc, g, th, nth, self_sp, self_red));
}

static void mark_roots(struct scan *sc, const struct lsnap_check_thread *th,
		       uint32_t nth, uint64_t self_sp, uint64_t self_red)
{
	const struct region *g = sc->regions.p;
	size_t i, k;

	for (i = 0; i < sc->regions.len; i++) {
		if (!g[i].readable || !g[i].writable ||
		    (g[i].shared && g[i].file))
			continue;
		mark_root_region(sc, &g[i], th, nth, self_sp, self_red);
	}
	for (k = 0; k < nth; k++)
		for (i = 0; i < th[k].nregs && i < LSNAP_CHECK_NREGS; i++)
			if (th[k].regs[i] >= sc->lo && th[k].regs[i] < sc->hi)
				mark_word(sc, th[k].regs[i], 1);
	/* At exit, the registers the caller of exit() held. */
	for (i = 0; i < at_exit.nregs; i++)
		if (at_exit.regs[i] >= sc->lo && at_exit.regs[i] < sc->hi)
			mark_word(sc, at_exit.regs[i], 1);
}

static void scan_block(struct scan *sc, uint32_t i,
		       void (*fn)(struct scan *, uint64_t, uint32_t), uint32_t arg)
{
	uint64_t a = sc->blk[i].addr, b = a + sc->blk[i].size, r;
	const uint64_t *w, *e;

	if (sc->safe) {		/* the reader skips what went away */
		sc->heap_bytes += b - a;
		scan_words(sc, a, b, fn, arg);
		return;
	}
	r = readable_until(sc, a);
	if (r < b)
		b = r;
	if (b <= a)
		return;
	sc->heap_bytes += b - a;
	w = (const uint64_t *)a;	/* blocks are 16-byte aligned */
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
#define BATCH_IOVS 1024		/* the kernel's IOV_MAX */
#define CACHE_PAGES 4096	/* 16 MiB */
#define PAGE_SZ 4096ull

static struct {
	uint64_t tag[CACHE_PAGES];	/* page address + 1; 0: empty */
	uint32_t serial[CACHE_PAGES];	/* the batch that loads it */
	uint8_t *mem;			/* CACHE_PAGES pages */
} cache;

static inline size_t cache_slot(uint64_t page)
{
	return (size_t)(page / PAGE_SZ) & (CACHE_PAGES - 1);
}

static void cache_empty(void)
{
	memset(cache.tag, 0, sizeof(cache.tag));
}

/* One read: the pages to load (local: their cache slots; remote: runs,
 * ascending as they come) and the ranges to scan once they are in. */
struct batch {
	struct iovec lv[BATCH_IOVS], rv[BATCH_IOVS];
	size_t nlv, nrv, n;
	uint64_t rend;		/* the last run's end */
	uint32_t serial;
	uint64_t a[BATCH_IOVS], len[BATCH_IOVS];
	uint32_t arg[BATCH_IOVS];
};

/*
 * Add [a, a + len) to the batch, with the pages of it the cache lacks.
 * 0, or -1 when the batch is full (nothing added; a range of more than
 * BATCH_IOVS pages never fits).
 */
static int batch_add(struct batch *b, uint64_t a, uint64_t len, uint32_t arg)
{
	uint64_t ps = a & ~(PAGE_SZ - 1), pe = (a + len + PAGE_SZ - 1) & ~(PAGE_SZ - 1);
	uint64_t p;
	size_t need = 0, k;

	if (b->n == BATCH_IOVS)
		return -1;
	for (p = ps; p < pe; p += PAGE_SZ) {
		k = cache_slot(p);
		if (cache.tag[k] == p + 1)
			continue;
		if (cache.serial[k] == b->serial)
			return -1;	/* this batch loads another page there */
		need++;
	}
	if (b->nlv + need > BATCH_IOVS || b->nrv + need > BATCH_IOVS)
		return -1;
	for (p = ps; p < pe; p += PAGE_SZ) {
		k = cache_slot(p);
		if (cache.tag[k] == p + 1)
			continue;
		cache.tag[k] = p + 1;
		cache.serial[k] = b->serial;
		b->lv[b->nlv].iov_base = cache.mem + k * PAGE_SZ;
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
		if (cache.tag[cache_slot(p)] != p + 1)
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
		memcpy(d, cache.mem + cache_slot(a) * PAGE_SZ +
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
		w = (const uint64_t *)(cache.mem + cache_slot(a) * PAGE_SZ +
				       (a & (PAGE_SZ - 1)));
		for (we = w + (pe - a) / 8; w < we; w++)
			if (*w >= sc->lo && *w < sc->hi)
				fn(sc, *w, arg);
	}
}

static struct batch batch_static = { .serial = 1 };	/* the control
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
		cache.tag[((uint8_t *)b->lv[k].iov_base - cache.mem) / PAGE_SZ] = 0;
}

/* The pages of [a, b) into the cache, as many as it holds, by batches;
 * for rescans whose ranges are known in advance. */
static void cache_load(struct scan *sc, uint64_t a, uint64_t e)
{
	struct batch *b = &batch_static;
	uint64_t len;

	for (; a < e; a += len) {
		len = e - a < 256 * PAGE_SZ ? e - a : 256 * PAGE_SZ;
		if (batch_add(b, a, len, 0)) {
			batch_load(sc, b);
			b->n = b->nlv = b->nrv = 0;
			if (!++b->serial)
				b->serial = 1;
			if (batch_add(b, a, len, 0))
				return;
		}
		b->n = 0;	/* pages only, no range to scan */
	}
}

/* After cache_load()s: read what they asked for. */
static void cache_flush(struct scan *sc)
{
	struct batch *b = &batch_static;

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
static void batch_scan(struct scan *sc, struct batch *b,
		       void (*fn)(struct scan *, uint64_t, uint32_t))
{
	size_t k;

	batch_load(sc, b);
	for (k = 0; k < b->n; k++) {
		sc->heap_bytes += b->len[k];
		if (cached(b->a[k], b->len[k]))
			scan_cached(sc, b->a[k], b->len[k], fn, b->arg[k]);
		else
			scan_words(sc, b->a[k], b->a[k] + b->len[k], fn,
				   b->arg[k]);
	}
	b->n = b->nlv = b->nrv = 0;
	if (!++b->serial)	/* 0 is every slot's at first */
		b->serial = 1;
}

/* A range too big for any batch, alone: scanned through the window. */
static void scan_alone(struct scan *sc, uint64_t a, uint64_t len,
		       void (*fn)(struct scan *, uint64_t, uint32_t),
		       uint32_t arg)
{
	sc->heap_bytes += len;
	scan_words(sc, a, a + len, fn, arg);
}


static int log_drain(struct scan *sc, int stopped);

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
			if (vec_push(sc, &sc->later, &i))
				sc->partial = 1;
			continue;
		}
		sc->heap_bytes += len;
		scan_cached(sc, sc->addr[i], len, fn, fn == mark_from_block ?
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
	struct batch *b = &batch_static;
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
			arg = fn == mark_from_block ?
			      sc->st[i] == ST_REACHABLE : head;
			if (sc->st[i] != ST_GONE &&	/* freed meanwhile */
			    batch_add(b, sc->addr[i], len, arg)) {
				if (b->n)	/* full: read it first */
					break;
				sc->finger = i;
				sc->pend[i / 64] &= ~(1ull << (i % 64));
				scan_alone(sc, sc->addr[i], len, fn, arg);
				i++;
				continue;
			}
			sc->pend[i / 64] &= ~(1ull << (i % 64));
			i++;
		}
		if (!b->n)
			break;
		sc->finger = i - 1;
		batch_scan(sc, b, fn);
		follow_cached(sc, fn, head);
		log_drain(sc, 0);
	}
	follow_cached(sc, fn, head);	/* what scan_alone() marked */
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
		pend = sc->pbits = grab(sc, (sc->n + 63) / 64 * 8 + 8);
	if (!pend) {	/* no room for the bitmap: one block at a time */
		while (sc->stack.len) {
			uint32_t i = ((uint32_t *)sc->stack.p)[--sc->stack.len];

			scan_alone(sc, sc->addr[i], sc->blk[i].size & ~7ull, fn,
				   fn == mark_from_block ?
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

static void mark_all(struct scan *sc)
{
	uint32_t *stk;

	if (sc->safe) {
		drain_safe(sc, mark_from_block, 0);
		return;
	}
	while (sc->stack.len) {
		uint32_t i;

		stk = sc->stack.p;
		i = stk[--sc->stack.len];
		scan_block(sc, i, mark_from_block,
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

static int cliques(struct scan *sc)
{
	size_t i;

	sc->leader = grab(sc, sc->n * sizeof(uint32_t) + 1);
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

			scan_block(sc, j, clique_word, (uint32_t)i);
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
 * lists them.  nb is as scan_new() left it at the stop: compacted and
 * sorted, and the log was off from then on.
 */
static int merge_new(struct scan *sc, struct ls_reach_result *res)
{
	size_t i, j = 0, k = 0, nb = sc->nnb, cap;
	struct ls_live_entry *blk;
	uint8_t *cat;

	cap = sc->n + nb;
	blk = grab(sc, cap * sizeof(*blk));
	cat = grab(sc, cap);
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
	res->held = grab(sc, cap * sizeof(*res->held));
	if (!res->held)
		return -ENOMEM;
	res->held_mask = cap - 1;
	return 0;
}

static int sum_up(struct scan *sc, struct ls_reach_result *res)
{
	static const uint8_t cat_of[] = {
		[ST_UNREACHED] = LSNAP_REACH_DEFINITE,
		[ST_POSSIBLE] = LSNAP_REACH_POSSIBLE,
		[ST_REACHABLE] = LSNAP_REACH_REACHABLE,
		[ST_INDIRECT] = LSNAP_REACH_INDIRECT,
	};
	uint32_t nsites = ls_site_count() + 1;
	size_t i, gone = 0;

	res->sites = grab(sc, nsites * sizeof(*res->sites));
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

/* --- a mostly-concurrent mark ------------------------------------------ */

static int take_inventory(struct scan *sc, int *torn);
static void note_own(struct scan *sc);
static uint64_t preclean(struct scan *sc);
static int overrun(struct scan *sc);
static int64_t list_written(struct scan *sc);
static int hopeless(struct scan *sc);

#define PRECLEAN_PASSES 8	/* at most; more while the dirty set shrinks */
#define STOP_NS_PER_PAGE 1000ull	/* the stop's work: docs/REACHABILITY.md,
					   "A bounded pause" */
#define PRECLEAN_ENOUGH 256	/* pages: few enough to leave to the pause */

/* Kernel ABI (linux/fs.h and linux/userfaultfd.h of 6.7+), for older
 * headers. */
#ifndef PAGEMAP_SCAN
struct page_region {
	uint64_t start, end, categories;
};
struct pm_scan_arg {
	uint64_t size, flags, start, end, walk_end, vec, vec_len, max_pages;
	uint64_t category_inverted, category_mask, category_anyof_mask;
	uint64_t return_mask;
};
#define PAGEMAP_SCAN _IOWR('f', 16, struct pm_scan_arg)
#define PAGE_IS_WPALLOWED (1 << 0)
#define PAGE_IS_WRITTEN (1 << 1)
#endif
#ifndef UFFD_FEATURE_WP_UNPOPULATED
#define UFFD_FEATURE_WP_UNPOPULATED (1 << 13)
#endif
#ifndef UFFD_FEATURE_WP_ASYNC
#define UFFD_FEATURE_WP_ASYNC (1 << 15)
#endif
#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif

#define LOG_RECORDS (2u << 20)	/* 64 MiB of address space, touched as used */

/*
 * A userfaultfd in asynchronous write-protect mode: the kernel resolves
 * the program's first write to each protected page by itself (no handler
 * thread, no stall) and clears the page's protection bit, which
 * PAGEMAP_SCAN reports as PAGE_IS_WRITTEN.  The soft-dirty bits would do
 * the same where the kernel has CONFIG_MEM_SOFT_DIRTY; this one works
 * on every 6.7+ kernel built with userfaultfd.  -ENOTSUP when missing.
 */
static int uffd_open(struct scan *sc)
{
	struct uffdio_api api = { .api = UFFD_API,
		.features = UFFD_FEATURE_WP_ASYNC | UFFD_FEATURE_WP_UNPOPULATED };
	int fd = (int)syscall(SYS_userfaultfd,
			      O_CLOEXEC | O_NONBLOCK | UFFD_USER_MODE_ONLY);

	if (fd < 0)
		return -ENOTSUP;
	if (ioctl(fd, UFFDIO_API, &api) ||
	    !(api.ioctls & (1ull << _UFFDIO_REGISTER))) {
		close(fd);
		return -ENOTSUP;
	}
	sc->uffd = fd;
	return 0;
}

/* Only the runtime's own memory whose words we can trust to stay put
 * until they are written is protected; the rest waits for the stop:
 * file-backed data (userfaultfd protects anonymous memory only), the
 * main stack and whatever sits above a guard page (a thread's stack:
 * its words below the stack pointer are stale, and which those are is
 * known only once the thread is stopped). */
static int protectable(const struct scan *sc, size_t i)
{
	const struct region *g = (const struct region *)sc->regions.p + i;
	uint64_t own_end;

	if (!g->readable || !g->writable || g->shared || g->file || g->stack)
		return 0;
	if (i > 0 && g[-1].end == g->start && !g[-1].readable && !g[-1].writable)
		return 0;
	return !(is_own(sc, g->start, &own_end) && own_end >= g->end);
}

#define PROTECT_STEP (16ull << 20)

/*
 * Register [start, end) for asynchronous write-protection and protect
 * it, 16 MiB at a time: each step walks its page tables under the mmap
 * lock, and the program's threads that map or fault wait for it (a GiB
 * at once held them 80 to 170 ms here).  0, or -1 with nothing left
 * registered.
 */
static int protect(struct scan *sc, uint64_t start, uint64_t end)
{
	struct uffdio_register reg = {
		.range = { .start = start, .len = end - start },
		.mode = UFFDIO_REGISTER_MODE_WP,
	};
	struct span sp = { start, end };
	uint64_t a;

	if (ioctl(sc->uffd, UFFDIO_REGISTER, &reg))
		return -1;
	for (a = start; a < end; a += PROTECT_STEP) {
		struct uffdio_writeprotect wp = {
			.range = { .start = a, .len = end - a },
			.mode = UFFDIO_WRITEPROTECT_MODE_WP,
		};

		if (wp.range.len > PROTECT_STEP)
			wp.range.len = PROTECT_STEP;
		if (ioctl(sc->uffd, UFFDIO_WRITEPROTECT, &wp))
			break;
	}
	if (a < end || vec_push(sc, &sc->regd, &sp)) {
		struct uffdio_range r = { start, end - start };

		ioctl(sc->uffd, UFFDIO_UNREGISTER, &r);
		return -1;
	}
	return 0;
}

/*
 * The test hook of docs/REACHABILITY.md: with LEAKSCOPE_CHECK_PHASE_FDS
 * "W,R" set in the program's environment, write the phase's byte to fd
 * W and wait (10 s at most) for one byte on fd R, so that a workload can
 * change its pointers at a known point of the mark.
 */
static void phase(char c)
{
	const char *v = getenv(LS_ENV_CHECK_PHASE_FDS);
	struct pollfd pf = { .events = POLLIN };
	char *end;
	long w, r;

	if (!v)
		return;
	w = strtol(v, &end, 10);
	if (*end != ',')
		return;
	r = strtol(end + 1, NULL, 10);
	pf.fd = (int)r;
	if (write((int)w, &c, 1) == 1 && poll(&pf, 1, 10000) == 1)
		(void)!read((int)r, &c, 1);
}

/* The start of a small /proc file, NUL-terminated: its length, or -1. */
static ssize_t read_proc(const char *path, char *buf, size_t cap)
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
static size_t other_threads(pid_t *tids, size_t cap)
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

/* The stack pointer of thread tid when it waits in a system call (from
 * /proc: "NR args... sp pc"), or 0 when it runs; *sig (if not NULL) a
 * hash of the whole line, which changes when the thread moves. */
static uint64_t blocked_sp_sig(pid_t tid, uint64_t *sig)
{
	char path[64], buf[256], *p;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	n = read_proc(path, buf, sizeof(buf));
	if (sig)
		*sig = n > 0 ? lsnap_fnv1a(0xcbf29ce484222325ULL, buf,
					   (uint64_t)n) : 0;
	if (n <= 0)
		return 0;
	if (buf[0] < '0' || buf[0] > '9')	/* "running" */
		return 0;
	/* The next-to-last field. */
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		buf[--n] = 0;
	p = strrchr(buf, ' ');
	if (!p)
		return 0;
	*p = 0;
	p = strrchr(buf, ' ');
	return p ? strtoull(p + 1, NULL, 16) : 0;
}

static uint64_t blocked_sp(pid_t tid)
{
	return blocked_sp_sig(tid, NULL);
}

/* The stack pointers of the threads that wait in a system call, and
 * ours; up to cap. */
static size_t blocked_sps(uint64_t *sps, size_t cap, uint64_t self_sp)
{
	pid_t tids[256];
	size_t n = 0, i, nt = other_threads(tids, 256);
	uint64_t sp;

	if (cap)
		sps[n++] = self_sp;
	for (i = 0; i < nt && n < cap; i++)
		if ((sp = blocked_sp(tids[i])))
			sps[n++] = sp;
	return n;
}

/*
 * The roots, while the program runs: protected regions whole (their
 * pieces recorded for the rescan of written pages), unprotected ones
 * too (the stop scans them again whole), stacks from the stack pointer
 * of a thread waiting in a system call; the stack of a thread that runs
 * (a region above a guard page holding no known stack pointer, the main
 * stack) waits for the stop.  What a thread's stack held here but no
 * longer holds at the stop is only ever taken as reachable.
 */
static void mark_roots_cm(struct scan *sc)
{
	const struct region *g = sc->regions.p;
	const struct span *p = sc->regd.p;
	volatile uint64_t here = 0;
	uint64_t sps[256], s;
	size_t nsp = blocked_sps(sps, 256, (uint64_t)&here), i, j = 0, k;
	int stack_like, known;

	for (i = 0; i < sc->regions.len; i++) {
		if (!g[i].readable || !g[i].writable ||
		    (g[i].shared && g[i].file))
			continue;
		while (j < sc->regd.len && p[j].end <= g[i].start)
			j++;
		s = g[i].start;
		known = 0;
		for (k = 0; k < nsp; k++)
			if (sps[k] >= s && sps[k] < g[i].end) {
				known = 1;
				if (sps[k] - RED_ZONE > s)
					s = sps[k] - RED_ZONE;
			}
		stack_like = g[i].stack || (i > 0 && g[i - 1].end == g[i].start &&
					    !g[i - 1].readable && !g[i - 1].writable);
		if (stack_like && !known)
			continue;
		sc->record = j < sc->regd.len && p[j].start == g[i].start;
		mark_region(sc, &g[i], s);
		sc->record = 0;
	}
}

/*
 * The change log's memory is the agent's for good: a thread stopped
 * inside ls_live_insert() may still write its record after the log is
 * stopped, so it is never unmapped, only emptied after each check
 * (MADV_DONTNEED: a late record lands on a fresh zero page).
 */
static struct ls_live_log_rec *log_buffer(void)
{
	static struct ls_live_log_rec *buf;

	if (!buf)
		buf = ls_sys_map(LOG_RECORDS * sizeof(*buf));
	return buf;
}

static void log_empty(void)
{
	struct ls_live_log_rec *buf = log_buffer();

	ls_live_log_stop();
	if (buf)
		madvise(buf, LOG_RECORDS * sizeof(*buf), MADV_DONTNEED);
}

/*
 * Precleaning passes while the dirty set shrinks: each pass rescans the
 * pages written during the one before, so while the program writes less
 * in a pass than the last one took to rescan, another pass leaves the
 * stop less to do.  Stop below PRECLEAN_ENOUGH pages, when a pass finds
 * not a quarter fewer than the last (a program that rewrites its whole
 * heap all the time dirties it again in every pass, each as long as the
 * mark), or after PRECLEAN_PASSES.
 */
static uint64_t precleaning(struct scan *sc)
{
	uint64_t pages = 0, last = UINT64_MAX;

	for (how.passes = 0; how.passes < PRECLEAN_PASSES;) {
		pages = preclean(sc);
		how.passes++;
		if (pages < PRECLEAN_ENOUGH || pages > last - last / 4)
			break;
		last = pages;
	}
	return pages;
}

int ls_reach_cm_begin(void)
{
	struct scan *sc = &sc_static;
	uint64_t t0 = ls_now_ns(CLOCK_MONOTONIC), pages;
	const struct region *g;
	size_t i;
	int r, torn = 0;

	drop_all(sc);
	sc->safe = 1;
	sc->self = getpid();
	sc->uffd = -1;
	sc->stack.elem = sc->later.elem = sizeof(uint32_t);
	sc->rootp.elem = sc->regd.elem = sizeof(struct span);
	sc->win = grab(sc, WIN_BYTES);
	cache.mem = grab(sc, CACHE_PAGES * PAGE_SZ);
	cache_empty();
	sc->log_cap = LOG_RECORDS;
	sc->log = log_buffer();
	if (!sc->win || !cache.mem || !sc->log) {
		r = -ENOMEM;
		goto fail;
	}
	r = uffd_open(sc);
	if (r) {
		how.fallback = LSNAP_FALLBACK_KERNEL;
		goto fail;
	}
	/* The log first: a block allocated from here on is "new", even if
	 * the gather sees it too. */
	ls_live_log_start(sc->log, sc->log_cap);
	sc->log_on = 1;
	r = take_inventory(sc, &torn);
	if (r)
		goto fail;
	log_drain(sc, 0);
	/* Protect, then read: a word read afterwards and never written
	 * again is the word at the stop. */
	g = sc->regions.p;
	for (i = 0; i < sc->regions.len; i++)
		if (protectable(sc, i))
			protect(sc, g[i].start, g[i].end);
	mark_roots_cm(sc);
	log_drain(sc, 0);
	if (hopeless(sc)) {
		r = -ETIME;
		goto fail;
	}
	phase('1');
	mark_all(sc);
	pages = precleaning(sc);
	/* The passes no longer shrink the dirty set: what the last one
	 * found predicts the stop, and over the budget the fork image is
	 * taken at the stop without this mark (unprotected now, while the
	 * program runs). */
	if (how.budget_ns && pages * STOP_NS_PER_PAGE > how.budget_ns) {
		how.dirty_pages = pages;
		how.predicted_ns = pages * STOP_NS_PER_PAGE;
		how.fallback = LSNAP_FALLBACK_BUDGET;
		r = -ETIME;
		goto fail;
	}
	phase('2');
	sc->scan_ns = ls_now_ns(CLOCK_MONOTONIC) - t0;
	return 0;
fail:
	if (!how.fallback)
		how.fallback = LSNAP_FALLBACK_ERROR;
	ls_reach_cm_abort();
	return r;
}

/* The old block at a, if any, is no longer: freed, or replaced. */
static void old_gone(struct scan *sc, uint64_t a)
{
	int start;
	int64_t i = lookup(sc, a, &start);	/* the granules: a few probes */

	if (i >= 0 && start)
		sc->st[i] = ST_GONE;
}

/* nb's index twice as big, or -ENOMEM. */
static int nb_grow_index(struct scan *sc)
{
	size_t cap = sc->nbmask ? (sc->nbmask + 1) * 2 : 4096, i, k;
	struct nb_slot *slot = grab(sc, cap * sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (i = 0; sc->nbslot && i <= sc->nbmask; i++) {
		uint64_t a = sc->nbslot[i].addr;

		if (!a)
			continue;
		k = (a >> 4) * 0x9e3779b97f4a7c15ULL >> 20 & (cap - 1);
		while (slot[k].addr)
			k = (k + 1) & (cap - 1);
		slot[k] = sc->nbslot[i];
	}
	if (sc->nbslot)
		drop(sc, sc->nbslot, (sc->nbmask + 1) * sizeof(*slot));
	sc->nbslot = slot;
	sc->nbmask = cap - 1;
	return 0;
}

/*
 * One change: the old block at its address is gone; a block allocated
 * (and still live) goes to nb, one freed keeps its slot in nb with
 * address 0 (malloc gives addresses again).  0 or -ENOMEM.
 */
static int apply_rec(struct scan *sc, uint32_t op, const struct ls_live_entry *e)
{
	uint64_t a = e->addr;
	size_t k;

	old_gone(sc, a);
	if ((sc->nnb + 1) * 2 > sc->nbmask + 1 && nb_grow_index(sc))
		return -ENOMEM;
	k = (a >> 4) * 0x9e3779b97f4a7c15ULL >> 20 & sc->nbmask;
	while (sc->nbslot[k].addr && sc->nbslot[k].addr != a)
		k = (k + 1) & sc->nbmask;
	if (!sc->nbslot[k].addr) {
		if (op != LS_LIVE_LOG_INSERT)
			return 0;	/* an old block's end */
		if (sc->nnb == sc->nbcap) {
			size_t cap = sc->nbcap ? sc->nbcap * 2 : 4096;
			struct ls_live_entry *nb = grab(sc, cap * sizeof(*nb));
			uint8_t *done = grab(sc, cap);

			if (!nb || !done) {
				drop(sc, nb, cap * sizeof(*nb));
				return -ENOMEM;
			}
			if (sc->nnb) {
				memcpy(nb, sc->nb, sc->nnb * sizeof(*nb));
				memcpy(done, sc->nbdone, sc->nnb);
			}
			drop(sc, sc->nb, sc->nbcap * sizeof(*nb));
			drop(sc, sc->nbdone, sc->nbcap);
			sc->nb = nb;
			sc->nbdone = done;
			sc->nbcap = cap;
		}
		sc->nbslot[k].addr = a;
		sc->nbslot[k].idx = sc->nnb++;
	}
	sc->nb[sc->nbslot[k].idx] = *e;
	sc->nbdone[sc->nbslot[k].idx] = 0;	/* a new block there */
	if (op != LS_LIVE_LOG_INSERT)
		sc->nb[sc->nbslot[k].idx].addr = 0;
	return 0;
}

/*
 * Apply the change log's records from the last one read on, and give
 * their slots back to the writers, so that the ring never fills however
 * long the mark runs.  While the program runs, up to the first record
 * still being written; at the stop (threads stopped), all of them, a
 * record half written being skipped (the report says the tables were
 * caught mid-update).  0, -EOVERFLOW when some record was lost (the ring
 * was full, or a reset emptied the tables), -ENOMEM.
 */
static int log_drain(struct scan *sc, int stopped)
{
	uint64_t next = ls_live_log_count(), i = sc->log_done;
	int r = 0;

	if (!sc->log_on)
		return 0;
	for (; i < next && !r; i++) {
		struct ls_live_log_rec *rec = &sc->log[i & (sc->log_cap - 1)];
		uint32_t op = __atomic_load_n(&rec->op, __ATOMIC_ACQUIRE);

		if (!op && !stopped)
			break;	/* being written: next time */
		if (!op)
			sc->torn = 1;
		else
			r = apply_rec(sc, op, &rec->e);
		__atomic_store_n(&rec->op, 0, __ATOMIC_RELAXED);
	}
	sc->log_done = i;
	ls_live_log_release(i);
	if (!r && ls_live_log_lost())
		r = -EOVERFLOW;
	if (r)
		sc->log_bad = r;
	return r;
}

/* The first of n ascending spans ending after a (n when none does). */
static size_t span_after(const struct span *p, size_t n, uint64_t a)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = (lo + hi) / 2;

		if (p[mid].end <= a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo;
}

/* The recorded root pieces within [a, b), scanned again. */
static void rescan_roots(struct scan *sc, uint64_t a, uint64_t b)
{
	const struct span *p = sc->rootp.p;
	size_t lo = span_after(p, sc->rootp.len, a);

	for (; lo < sc->rootp.len && p[lo].start < b; lo++)
		mark_range(sc, p[lo].start > a ? p[lo].start : a,
			   p[lo].end < b ? p[lo].end : b, 1);
}

/* The marked blocks' words within [a, b), scanned again. */
static void rescan_blocks(struct scan *sc, uint64_t a, uint64_t b)
{
	size_t i = first_block_from(sc, a);
	uint64_t s, e;

	if (i > 0 && sc->addr[i - 1] + sc->blk[i - 1].size > a)
		i--;
	for (; i < sc->n && sc->addr[i] < b; i++) {
		if (sc->st[i] != ST_REACHABLE && sc->st[i] != ST_POSSIBLE)
			continue;
		s = sc->addr[i] > a ? sc->addr[i] : a;
		e = sc->addr[i] + sc->blk[i].size;
		if (e > b)
			e = b;
		sc->heap_bytes += e > s ? e - s : 0;
		mark_range(sc, s, e, sc->st[i] == ST_REACHABLE);
	}
}

/*
 * The mark's last blocks, at the stop, in place: no thread of the
 * program runs, a block still live is mapped, and scan_block() clips it
 * to the readable regions of the maps read at the stop.  A chain the
 * program relinked during the mark (an interpreter's collector moving
 * its list from one generation to the next) is then followed at memory
 * speed, not a system call per block (67 ms of a pause on the python
 * bench).  A block in a file mapping (a read past the file's end would
 * raise SIGBUS) is read through the kernel.
 */
static void mark_all_stopped(struct scan *sc)
{
	unsigned n = 0;

	while (sc->stack.len && ((++n & 1023) || !overrun(sc))) {
		uint32_t i = ((uint32_t *)sc->stack.p)[--sc->stack.len];
		const struct region *g = region_of(sc, sc->addr[i]);

		if (sc->st[i] == ST_GONE)
			continue;
		sc->safe = g && !g->file ? 0 : 1;
		scan_block(sc, i, mark_from_block, sc->st[i] == ST_REACHABLE);
		sc->safe = 1;
	}
}

/*
 * The roots and marked blocks of [a, b) scanned again, at the stop.  No
 * thread of the program runs, so nothing unmaps memory: a range the
 * maps (read at the stop) say is readable is read in place, as the fork
 * method reads its image, without a system call per page (half the
 * pause's rescan on the python bench); any other range through the
 * kernel.
 */
static void rescan_in_place(struct scan *sc, uint64_t a, uint64_t b)
{
	if (readable_until(sc, a) < b) {
		rescan_roots(sc, a, b);
		rescan_blocks(sc, a, b);
		return;
	}
	sc->safe = 0;
	rescan_roots(sc, a, b);
	rescan_blocks(sc, a, b);
	sc->safe = 1;
}

/* The stop's work is over its budget: abandon it for the fork image. */
static int overrun(struct scan *sc)
{
	if (sc->deadline && !sc->overrun &&
	    ls_now_ns(CLOCK_MONOTONIC) > sc->deadline)
		sc->overrun = 1;
	return sc->overrun;
}

/*
 * Every page of the protected ranges written since it was protected (or
 * no longer protected: its mapping was replaced) into sc->dirty, in
 * address order: struct span, the low bit of start set when the page
 * is not protectable any more.  Returns the pages, or -errno when the
 * kernel cannot say (then nothing is known and the caller falls back).
 */
static int64_t list_written(struct scan *sc)
{
	static struct page_region vec[512];
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	int64_t pages = 0;
	size_t i;
	long k, n;

	if (fd < 0)
		return -errno;
	sc->dirty.elem = sizeof(struct span);
	sc->dirty.len = 0;
	for (i = 0; i < sc->regd.len; i++) {
		const struct span *p = (const struct span *)sc->regd.p + i;
		struct pm_scan_arg a = {
			.size = sizeof(a), .start = p->start, .end = p->end,
			.vec = (uint64_t)(uintptr_t)vec, .vec_len = 512,
			/* written, or not protectable any more */
			.category_inverted = PAGE_IS_WPALLOWED,
			.category_anyof_mask = PAGE_IS_WRITTEN | PAGE_IS_WPALLOWED,
			.return_mask = PAGE_IS_WRITTEN | PAGE_IS_WPALLOWED,
		};

		while (a.start < p->end) {
			n = ioctl(fd, PAGEMAP_SCAN, &a);
			if (n < 0) {
				n = -errno;
				close(fd);
				return n;
			}
			for (k = 0; k < n; k++) {
				/* the categories come back uninverted */
				struct span sp = { vec[k].start |
					!(vec[k].categories & PAGE_IS_WPALLOWED),
					vec[k].end };

				pages += (int64_t)((vec[k].end - vec[k].start) /
						   PAGE_SZ);
				if (vec_push(sc, &sc->dirty, &sp)) {
					close(fd);
					return -ENOMEM;
				}
			}
			if (a.walk_end <= a.start)
				break;
			a.start = a.walk_end;
		}
	}
	close(fd);
	return pages;
}

/*
 * The written pages list_written() found have their roots and their
 * marked blocks' words scanned again; a page no longer protectable is a
 * new mapping, whose words are roots.  Stops early past the deadline.
 */
static void rescan_written(struct scan *sc)
{
	const struct span *d = sc->dirty.p;
	size_t k;

	for (k = 0; k < sc->dirty.len && !overrun(sc); k++) {
		uint64_t a = d[k].start & ~1ull;

		rescan_in_place(sc, a, d[k].end);
		if (d[k].start & 1)
			mark_piece(sc, a, d[k].end);
	}
}

/* Does [a, b) lie in the protected ranges, with no page of it written
 * since its last read (sc->dirty, sorted)? */
static int still_clean(const struct scan *sc, uint64_t a, uint64_t b)
{
	const struct span *p = sc->regd.p, *d = sc->dirty.p;
	size_t i = span_after(p, sc->regd.len, a);

	if (i == sc->regd.len || a < p[i].start || b > p[i].end)
		return 0;
	i = span_after(d, sc->dirty.len, a);
	return i == sc->dirty.len || (d[i].start & ~1ull) >= b;
}

/*
 * The blocks allocated during the mark and still live are allocated
 * black (reachable), but what they hold is followed.  While the program
 * runs (precleaning, stopped 0) those not yet read are read; at the stop
 * those not yet read, and those read before whose pages were written
 * since (or lie outside the protected ranges), in batches of page runs;
 * then nb is left compacted and sorted.
 */
static int scan_new(struct scan *sc, int stopped)
{
	struct batch *b = &batch_static;
	const struct region *g;
	size_t i, n = 0, k = 0;

	for (i = 0; i < sc->nnb; i++) {
		uint64_t a = sc->nb[i].addr, len = sc->nb[i].size & ~7ull;

		if (!a || (sc->nbdone[i] &&
			   (!stopped || still_clean(sc, a, a + len))))
			continue;
		sc->nbdone[i] = 1;
		if (stopped && (++k & 1023) == 0 && overrun(sc))
			return 0;
		/* At the stop, a live block is mapped: read in place,
		 * as mark_all_stopped() reads (not a file mapping). */
		g = stopped ? region_of(sc, a) : NULL;
		if (g && !g->file && readable_until(sc, a) >= a + len) {
			sc->safe = 0;
			sc->heap_bytes += len;
			scan_words(sc, a, a + len, mark_from_block, 1);
			sc->safe = 1;
			continue;
		}
		if (!batch_add(b, a, len, 1))
			continue;
		if (stopped && overrun(sc))
			return 0;
		batch_scan(sc, b, mark_from_block);
		if (batch_add(b, a, len, 1))
			scan_alone(sc, a, len, mark_from_block, 1);
	}
	batch_scan(sc, b, mark_from_block);
	if (!stopped)
		return 0;
	for (i = 0; i < sc->nnb; i++)
		if (sc->nb[i].addr)
			sc->nb[n++] = sc->nb[i];
	sc->nnb = n;
	return radix_sort(sc, sc->nb, n) ? -ENOMEM : 0;
}

#ifndef PM_SCAN_WP_MATCHING
#define PM_SCAN_WP_MATCHING (1 << 0)
#endif

/*
 * Precleaning, as concurrent collectors do it: the pages written since
 * they were protected are protected again, in the same PAGEMAP_SCAN that
 * lists them, and their roots and marked blocks read again while the
 * program runs; the pause then rescans only what is written after.  A
 * busy program writes much of its heap during a mark of a second or two
 * (an interpreter's reference counts): rescanning it all in the pause
 * took 7 to 12 ms on the python bench.  The pages read here are read
 * after their protection went back on, so the argument of "Why this is
 * exact" holds for them as for the mark's first reads.  Returns the
 * pages found written, or 0 when the kernel cannot say (the pause then
 * rescans everything written, as without precleaning).
 */
static uint64_t preclean(struct scan *sc)
{
	static struct page_region vec[512];
	uint64_t pages = 0;
	int fd = open("/proc/self/pagemap", O_RDONLY | O_CLOEXEC);
	size_t i;
	long k, n;

	if (fd < 0)
		return 0;
	cache_empty();	/* it holds these pages as they were before */
	sc->dirty.elem = sizeof(struct span);
	sc->dirty.len = 0;
	for (i = 0; i < sc->regd.len; i++) {
		const struct span *p = (const struct span *)sc->regd.p + i;
		struct pm_scan_arg a = {
			.size = sizeof(a), .flags = PM_SCAN_WP_MATCHING,
			.start = p->start, .end = p->end,
			.vec = (uint64_t)(uintptr_t)vec, .vec_len = 512,
			/* written, and protectable again */
			.category_mask = PAGE_IS_WRITTEN | PAGE_IS_WPALLOWED,
			.return_mask = PAGE_IS_WRITTEN,
		};

		while (a.start < p->end) {
			n = ioctl(fd, PAGEMAP_SCAN, &a);
			if (n < 0)
				goto out;
			for (k = 0; k < n; k++)
				cache_load(sc, vec[k].start, vec[k].end);
			cache_flush(sc);
			for (k = 0; k < n; k++) {
				struct span sp = { vec[k].start, vec[k].end };

				pages += (vec[k].end - vec[k].start) / 4096;
				rescan_roots(sc, vec[k].start, vec[k].end);
				rescan_blocks(sc, vec[k].start, vec[k].end);
				/* Not listed: every new block is read again. */
				if (vec_push(sc, &sc->dirty, &sp) && sc->nnb)
					memset(sc->nbdone, 0, sc->nnb);
			}
			if (a.walk_end <= a.start)
				break;
			a.start = a.walk_end;
		}
	}
out:
	close(fd);
	/* The blocks allocated since the last pass, and those read before
	 * whose pages this pass protected again: read now, after. */
	log_drain(sc, 0);
	if (scan_new(sc, 0))
		sc->partial = 1;
	mark_all(sc);
	return pages;
}

/* The pieces of the current maps the protection did not cover: stacks
 * from their thread's stack pointer (an ended thread's: its descriptor,
 * root_start()), file-backed data, mappings made during the mark.
 * Scanned whole, as the fork method scans. */
static void scan_unprotected(struct scan *sc, const struct lsnap_check_thread *th,
			     uint32_t nth, uint64_t self_sp)
{
	const struct region *g = sc->regions.p;
	const struct span *p = sc->regd.p;
	size_t i, j = 0;

	for (i = 0; i < sc->regions.len; i++) {
		struct region piece = g[i];

		if (!g[i].readable || !g[i].writable ||
		    (g[i].shared && g[i].file))
			continue;
		while (piece.start < g[i].end) {
			while (j < sc->regd.len && p[j].end <= piece.start)
				j++;
			if (j < sc->regd.len && p[j].start <= piece.start) {
				piece.start = p[j].end;		/* covered */
				continue;
			}
			piece.end = j < sc->regd.len && p[j].start < g[i].end ?
				    p[j].start : g[i].end;
			mark_region(sc, &piece, root_start(sc, &piece, th, nth,
							   self_sp, RED_ZONE));
			piece.start = piece.end;
		}
	}
}

/*
 * A stack the protection covered (a thread's stack without a guard page
 * below it, which the mark could not tell from other memory): its words
 * from the stopped thread's stack pointer up are scanned again whole.
 * The mark read it from wherever the stack pointer was then (or all of
 * it), and the written-page rescan covers only what the mark read.
 */
static void scan_protected_stacks(struct scan *sc,
				  const struct lsnap_check_thread *th,
				  uint32_t nth)
{
	const struct span *p = sc->regd.p;
	uint64_t sp, s;
	size_t i, k;

	for (k = 0; k < nth; k++) {
		const struct region *g;

		sp = th[k].sp;
		for (i = 0; i < sc->regd.len; i++)
			if (sp >= p[i].start && sp < p[i].end)
				break;
		g = i < sc->regd.len ? region_of(sc, sp) : NULL;
		if (!g)
			continue;
		s = sp - RED_ZONE > g->start ? sp - RED_ZONE : g->start;
		mark_region(sc, g, s);
	}
}

/*
 * What the stop's work costs, at most, as measured here (docs/
 * REACHABILITY.md, "A bounded pause"): a written page rescanned in
 * place (STOP_NS_PER_PAGE, above), a change-log record applied, a page
 * of the blocks allocated during the mark and each of those blocks,
 * read in place.
 */
#define STOP_NS_PER_RECORD 300ull
#define STOP_NS_PER_NEW_PAGE 1000ull
#define STOP_NS_PER_NEW_BLOCK 1000ull

/* The stop's work from here on: the written pages, the change log's
 * records not yet applied, the blocks allocated during the mark that
 * scan_new() reads (sc->dirty is the stop's); the rest (stacks,
 * registers, new mappings, what the rescans reach) is bounded by the
 * deadline.  Counted only until it passes budget (0: none): past it,
 * it is "over", however far. */
static uint64_t predict_stop(const struct scan *sc, uint64_t pages,
			     uint64_t budget)
{
	uint64_t ns = pages * STOP_NS_PER_PAGE +
		      (ls_live_log_count() - sc->log_done) * STOP_NS_PER_RECORD;
	size_t i;

	/* The new blocks one by one, as long as the budget may hold. */
	for (i = 0; i < sc->nnb && (!budget || ns <= budget); i++)
		if (sc->nb[i].addr && (!sc->nbdone[i] ||
		    !still_clean(sc, sc->nb[i].addr, sc->nb[i].addr +
				 (sc->nb[i].size & ~7ull))))
			ns += STOP_NS_PER_NEW_BLOCK + ((sc->nb[i].size +
			      PAGE_SZ - 1) / PAGE_SZ) * STOP_NS_PER_NEW_PAGE;
	return ns;
}

/*
 * Before the mark: a program that wrote a quarter of the protected pages
 * while the roots were read, enough for a stop four times the budget,
 * keeps its whole heap dirty; its concurrent stop cannot be short
 * however many passes run, and marking a large heap so written takes
 * minutes.  Then the fork image is taken at once (the fallback says the
 * budget, with the stop the written pages predict so far).
 */
static int hopeless(struct scan *sc)
{
	const struct span *p = sc->regd.p;
	uint64_t protected_pages = 0;
	int64_t pages;
	size_t i;

	if (!how.budget_ns)
		return 0;
	for (i = 0; i < sc->regd.len; i++)
		protected_pages += (p[i].end - p[i].start) / PAGE_SZ;
	pages = list_written(sc);
	if (pages <= 0 || (uint64_t)pages < protected_pages / 4 ||
	    (uint64_t)pages * STOP_NS_PER_PAGE <= 4 * how.budget_ns)
		return 0;
	how.dirty_pages = (uint64_t)pages;
	how.predicted_ns = (uint64_t)pages * STOP_NS_PER_PAGE;
	how.stop_work_ns = 0;
	how.fallback = LSNAP_FALLBACK_BUDGET;
	return 1;
}

int ls_reach_cm_pause(const struct lsnap_check_thread *th, uint32_t nth)
{
	struct scan *sc = &sc_static;
	uint64_t t0 = ls_now_ns(CLOCK_MONOTONIC);
	volatile uint64_t here = 0;
	int64_t pages;
	size_t i, k;
	int r;

	cache_empty();		/* from here on, read what is there now */
	/* First what the stop would cost: the fork image, if cheaper by
	 * the budget, needs none of the work below. */
	pages = list_written(sc);
	if (pages < 0) {
		how.fallback = LSNAP_FALLBACK_ERROR;
		return (int)pages;
	}
	how.dirty_pages = (uint64_t)pages;
	how.predicted_ns = ls_now_ns(CLOCK_MONOTONIC) - t0;
	how.predicted_ns += predict_stop(sc, (uint64_t)pages,
					 !how.budget_ns ? 0 :
					 how.budget_ns > how.predicted_ns ?
					 how.budget_ns - how.predicted_ns : 1);
	if (how.budget_ns && how.predicted_ns > how.budget_ns &&
	    !sc->log_bad && !ls_live_log_lost()) {
		how.fallback = LSNAP_FALLBACK_BUDGET;
		return -ETIME;
	}
	sc->deadline = how.budget_ns ? t0 + how.budget_ns : 0;
	r = log_drain(sc, 1);
	ls_live_log_stop();
	sc->log_on = 0;
	if (!r)
		r = sc->log_bad;	/* a record lost (a reset), no memory */
	if (r) {
		how.fallback = r == -EOVERFLOW ? LSNAP_FALLBACK_LOG :
			       LSNAP_FALLBACK_ERROR;
		return r;
	}
	r = parse_maps(sc);
	if (r) {
		how.fallback = LSNAP_FALLBACK_ERROR;
		return r;
	}
	note_own(sc);	/* the mappings made since */
	rescan_written(sc);
	if (!overrun(sc))
		scan_unprotected(sc, th, nth, (uint64_t)&here);
	if (!overrun(sc))
		scan_protected_stacks(sc, th, nth);
	for (k = 0; k < nth; k++)
		for (i = 0; i < th[k].nregs && i < LSNAP_CHECK_NREGS; i++)
			if (th[k].regs[i] >= sc->lo && th[k].regs[i] < sc->hi)
				mark_word(sc, th[k].regs[i], 1);
	r = overrun(sc) ? 0 : scan_new(sc, 1);
	if (r) {
		how.fallback = LSNAP_FALLBACK_ERROR;
		return r;
	}
	if (!overrun(sc))
		mark_all_stopped(sc);
	/* Past the deadline even after the last step: over budget too. */
	overrun(sc);
	how.stop_work_ns = ls_now_ns(CLOCK_MONOTONIC) - t0;
	if (sc->overrun) {
		how.fallback = LSNAP_FALLBACK_OVERRUN;
		return -ETIME;
	}
	sc->nth = nth;
	sc->scan_ns += how.stop_work_ns;
	return 0;
}

#define UNPROTECT_STEP (16ull << 20)

/*
 * Lift the protection and close the userfaultfd.  Closing alone would
 * clear a whole GiB's page tables under the mmap lock at once (50 ms
 * here), stalling every thread of the program that faults or maps
 * meanwhile; unregistering 16 MiB at a time bounds each hold to a
 * fraction of a millisecond.
 */
static void unprotect(struct scan *sc)
{
	const struct span *p = sc->regd.p;
	size_t i;
	if (sc->uffd <= 0)
		return;
	for (i = 0; i < sc->regd.len; i++) {
		uint64_t a;

		for (a = p[i].start; a < p[i].end; a += UNPROTECT_STEP) {
			struct uffdio_range r = { a, p[i].end - a };

			if (r.len > UNPROTECT_STEP)
				r.len = UNPROTECT_STEP;
			/* Fails where the mapping went away: nothing to do. */
			ioctl(sc->uffd, UFFDIO_UNREGISTER, &r);
		}
	}
	close(sc->uffd);
	sc->uffd = -1;
}

void ls_reach_cm_abort(void)
{
	struct scan *sc = &sc_static;

	log_empty();
	unprotect(sc);
	drop_all(sc);
}

int ls_reach_cm_finish(int fd, int with_blocks)
{
	static struct ls_reach_result res;
	struct scan *sc = &sc_static;
	uint64_t t0 = ls_now_ns(CLOCK_MONOTONIC);
	int r;

	unprotect(sc);		/* the program's writes are free again */
	memset(&res, 0, sizeof(res));
	res.mallinfo = prep.mallinfo;
	res.pid = prep.pid;
	res.ppid = prep.ppid;
	res.live = 1;
	r = cliques(sc);
	if (!r)
		r = sum_up(sc, &res);
	res.totals.scan_ns = sc->scan_ns + ls_now_ns(CLOCK_MONOTONIC) - t0;
	res.totals.root_bytes = sc->root_bytes;
	res.totals.heap_bytes = sc->heap_bytes;
	res.totals.mem_bytes = sc->peak;
	res.totals.nthreads = sc->nth;
	res.torn = sc->torn;
	how.allocator = ls_heapmodel()->id;
	how.alloc_root_bytes = sc->alloc_root;
	how.alloc_unscanned_bytes = sc->alloc_unscanned;
	res.how = how;
	if (!r) {
		res.totals.flags = LSNAP_REACH_CONCURRENT |
				   (res.torn ? LSNAP_REACH_TORN : 0) |
				   (sc->partial ? LSNAP_REACH_PARTIAL : 0);
		ls_snapwrite_lock();
		r = ls_snapwrite_reach(fd, LSNAP_REASON_REQUEST, with_blocks,
				       &res);
		ls_snapwrite_unlock();
	}
	log_empty();
	drop_all(sc);
	return r;
}

/* --- the child ------------------------------------------------------------ */

static void note_own(struct scan *sc)
{
	unsigned i;

	sc->nown = ls_sys_own_copy(sc->own_start, sc->own_len,
				   LS_SYS_OWN_SLOTS);
	for (i = 0; i < prep.nseg; i++) {
		sc->own_start[sc->nown] = prep.seg_start[i];
		sc->own_len[sc->nown++] = prep.seg_end[i] - prep.seg_start[i];
	}
	/* The allocator's own state is no memory of the program's either. */
	if (ls_glibcheap_main_arena()) {
		sc->own_start[sc->nown] = ls_glibcheap_main_arena();
		sc->own_len[sc->nown++] = ls_glibcheap_arena_size();
	}
}

/* The blocks, sorted and indexed, the maps, the agent's own memory. */
static int take_inventory(struct scan *sc, int *torn)
{
	int r = gather(sc, torn);

	if (!r)
		r = sort_blocks(sc);
	if (!r)
		r = index_blocks(sc);
	if (!r)
		r = parse_maps(sc);
	if (!r)		/* after parse_maps: our mappings so far are noted */
		note_own(sc);
	if (!r)		/* reads the heaps as parse_maps found them */
		r = note_fastbins(sc);
	return r;
}

static int run_scan(struct scan *sc, const struct lsnap_check_thread *th,
		    uint32_t nth, uint64_t self_sp, uint64_t self_red,
		    struct ls_reach_result *res)
{
	uint64_t t0 = ls_now_ns(CLOCK_MONOTONIC);
	int r;

	sc->stack.elem = sizeof(uint32_t);
	r = take_inventory(sc, &res->torn);
	if (r)
		return r;
	mark_roots(sc, th, nth, self_sp, self_red);
	mark_all(sc);
	r = cliques(sc);
	if (!r)
		r = sum_up(sc, res);
	res->totals.scan_ns = ls_now_ns(CLOCK_MONOTONIC) - t0;
	res->totals.root_bytes = sc->root_bytes;
	res->totals.heap_bytes = sc->heap_bytes;
	res->totals.mem_bytes = sc->peak;
	res->totals.nthreads = nth;
	how.allocator = ls_heapmodel()->id;
	how.alloc_root_bytes = sc->alloc_root;
	how.alloc_unscanned_bytes = sc->alloc_unscanned;
	res->how = how;
	return r;
}

static __attribute__((noinline, noreturn))
void child_main(int fd, const struct lsnap_check_thread *th, uint32_t nth,
		int with_blocks, enum lsnap_reason reason, uint32_t flags)
{
	static struct ls_reach_result res;
	struct sigaction sa = { .sa_handler = on_fault, .sa_flags = SA_NODEFER };
	volatile uint64_t here = 0;
	uint64_t self_sp, self_red;
	sigset_t faults;
	int r;

	/* Die with the caller; take the faults the scan may meet (a
	 * file mapping cut short, an entry caught mid-update). */
	/* A concurrent mark that fell back leaves its state: the image's
	 * copy of those mappings is simply not used. */
	memset(&sc_static, 0, sizeof(sc_static));
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	sigaction(SIGSEGV, &sa, NULL);
	sigaction(SIGBUS, &sa, NULL);
	sigemptyset(&faults);
	sigaddset(&faults, SIGSEGV);
	sigaddset(&faults, SIGBUS);
	sigprocmask(SIG_UNBLOCK, &faults, NULL);
	res.mallinfo = prep.mallinfo;
	res.pid = prep.pid;
	res.ppid = prep.ppid;
	/* At exit, this stack from where the program's live frames begin,
	 * else from the agent's exit path up (above us on the same stack,
	 * within its 8 MiB at most). */
	self_sp = (uint64_t)&here;
	self_red = RED_ZONE;
	if (reason == LSNAP_REASON_EXIT && at_exit.live > self_sp &&
	    at_exit.live - self_sp < (8ull << 20)) {
		self_sp = at_exit.live;
		self_red = 0;
	} else if (reason == LSNAP_REASON_EXIT && at_exit.frame > self_sp &&
		   at_exit.frame - self_sp < (8ull << 20))
		self_sp = at_exit.frame;
	if (reason != LSNAP_REASON_EXIT)
		at_exit.nregs = 0;
	r = run_scan(&sc_static, th, nth, self_sp, self_red, &res);
	if (!r) {
		res.totals.flags = flags | (res.torn ? LSNAP_REACH_TORN : 0) |
				   (sc_static.partial ? LSNAP_REACH_PARTIAL : 0);
		r = ls_snapwrite_reach(fd, reason, with_blocks, &res);
	}
	syscall(SYS_exit_group, r ? 1 : 0);
	__builtin_unreachable();
}

/*
 * The image holds a copy of every descriptor of the program: a peer
 * would not see a socket or pipe close while the scan runs.  Keep only
 * the output and the gate.
 */
static void keep_only(int a, int b)
{
	int lo = a < b ? a : b, hi = a < b ? b : a;

	if (lo > 0)
		syscall(SYS_close_range, 0u, (unsigned)lo - 1, 0u);
	if (hi > lo + 1)
		syscall(SYS_close_range, (unsigned)lo + 1, (unsigned)hi - 1, 0u);
	syscall(SYS_close_range, (unsigned)hi + 1, ~0u, 0u);
}

pid_t ls_reach_spawn(int fd, const struct lsnap_check_thread *th, uint32_t n,
		     int with_blocks, enum lsnap_reason reason, uint32_t flags,
		     const int *gate)
{
	long pid;

	/* The caller's callee-saved registers into this frame, which the
	 * child scans (its stack pointer is below it). */
	__builtin_unwind_init();
	/* No exit signal: the program gets no SIGCHLD and its wait() calls
	 * do not see this child; ls_reach_wait() uses __WALL. */
	pid = syscall(SYS_clone, 0UL, 0UL, NULL, NULL, 0UL);
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		char c;

		keep_only(fd, gate ? gate[0] : fd);
		/* The parent's reply goes out first; then the pipe closes.
		 * A 'w' on it: the threads' stack pointers are stale, scan
		 * their stacks whole. */
		if (gate) {
			ssize_t k;

			while ((k = read(gate[0], &c, 1)) < 0 && errno == EINTR)
				;
			if (k == 1 && c == 'w' && reason == LSNAP_REASON_EXIT)
				n = 0;
			close(gate[0]);
		}
		child_main(fd, th, n, with_blocks, reason, flags);
	}
	return (pid_t)pid;
}

int ls_reach_wait(pid_t child)
{
	int st = 0;
	pid_t r;

	do
		r = waitpid(child, &st, __WALL);
	while (r < 0 && errno == EINTR);
	if (r < 0)
		return errno == ECHILD ? 0 : -errno;	/* SA_NOCLDWAIT reaped it */
	return WIFEXITED(st) && WEXITSTATUS(st) == 0 ? 0 : -EIO;
}

/* --- the parent ------------------------------------------------------------ */

static int own_segments(struct dl_phdr_info *info, size_t size, void *arg)
{
	uint64_t self = (uint64_t)(uintptr_t)&ls_reach_prepare;
	int i, mine = 0;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t s = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && self >= s && self < s + ph->p_memsz)
			mine = 1;
	}
	if (!mine)
		return 0;
	prep.nseg = 0;
	for (i = 0; i < info->dlpi_phnum && prep.nseg < 8; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t s = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_W))
			continue;
		prep.seg_start[prep.nseg] = s & ~4095ull;
		prep.seg_end[prep.nseg++] = (s + ph->p_memsz + 4095) & ~4095ull;
	}
	return 1;
}

/*
 * glibc's thread descriptor, checked on the calling thread: the offset
 * of the tid in struct pthread (2.26 to 2.38 on x86-64; with another
 * glibc ended threads' stacks are scanned whole).
 */
static void learn_threads(void)
{
	const char *self = (const char *)pthread_self();
	int32_t tid;

	memcpy(&tid, self + 0x2d0, sizeof(tid));
	prep.tid_off = tid == ls_gettid() ? 0x2d0 : 0;
}

void ls_reach_set_method(int fork_method, uint64_t budget_ns)
{
	how.asked = !!fork_method;
	how.budget_ns = fork_method ? 0 : budget_ns;
}

int ls_reach_prepare(void)
{
	/* The fork method unless the caller says otherwise (at exit). */
	memset(&how, 0, sizeof(how));
	how.asked = 1;
	if (ls_agent.sample_rate)
		return -ENOTSUP;
	ls_modules_refresh();
	prep.pid = getpid();
	prep.ppid = getppid();
	dl_iterate_phdr(own_segments, NULL);
	ls_figures_mallinfo(&prep.mallinfo);
	learn_threads();
	return prep.nseg ? 0 : -ENOENT;
}


/* Threads of this process, from /proc/self/status; 0 if unknown. */
static unsigned count_threads(void)
{
	char buf[4096], *p;

	if (read_proc("/proc/self/status", buf, sizeof(buf)) <= 0)
		return 0;
	p = strstr(buf, "\nThreads:");
	return p ? (unsigned)strtoul(p + 9, NULL, 10) : 0;
}


void ls_reach_note_exit_call(uint64_t cfa, const uint64_t *regs)
{
	pid_t pid = getpid(), old = __atomic_load_n(&at_exit.call_claim,
						    __ATOMIC_ACQUIRE);

	if (old == pid || !__atomic_compare_exchange_n(&at_exit.call_claim,
			&old, pid, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE))
		return;
	at_exit.call_nregs = regs ? LS_REACH_EXIT_REGS : 0;
	if (regs)
		memcpy(at_exit.call_regs, regs, sizeof(at_exit.call_regs));
	at_exit.call_cfa = cfa;
	at_exit.call_tid = ls_gettid();
	__atomic_store_n(&at_exit.call_pid, pid, __ATOMIC_RELEASE);
}

/* libc's exit(): [*lo, *hi], its end included (the return address of
 * its last call, which never returns, is one past its last byte). */
static int libc_exit_range(uint64_t *lo, uint64_t *hi)
{
	const ElfW(Sym) *sym = NULL;
	Dl_info info;

	*lo = (uint64_t)(uintptr_t)ls_real.libc_exit;
	if (!*lo)
		return -ENOENT;
	*hi = *lo + 64;
	if (dladdr1((void *)(uintptr_t)*lo, &info, (void **)&sym,
		    RTLD_DL_SYMENT) && sym && sym->st_size)
		*hi = *lo + sym->st_size;
	return 0;
}

/*
 * The stack pointer of the caller of the outermost libc exit() on this
 * stack, or 0: the return address into that caller, found by unwinding,
 * looked for in the stack from frame up (read through the kernel: a
 * miss ends at the top of the stack, never in a fault).
 */
static uint64_t exit_caller_sp(uint64_t frame)
{
	uint64_t pcs[128], lo, hi, ret, buf[512], a;
	int n = ls_unwind_capture_own(pcs, 128, 0), i, k = -1;
	struct scan sc = { .self = getpid() };
	size_t got, j;

	if (libc_exit_range(&lo, &hi))
		return 0;
	for (i = 0; i < n; i++)
		if (pcs[i] >= lo && pcs[i] <= hi)
			k = i;
	if (k < 0 || k + 1 >= n)
		return 0;
	ret = pcs[k + 1];
	for (a = frame & ~7ull; a - frame < (8ull << 20); a += got) {
		got = read_safe(&sc, a, buf, sizeof(buf)) & ~7ul;
		if (!got)
			return 0;
		for (j = 0; j < got / 8; j++)
			if (buf[j] == ret)
				return a + j * 8 + 8;
	}
	return 0;
}

void ls_reach_note_exit_frame(const void *frame)
{
	uint64_t f = (uint64_t)(uintptr_t)frame, b = exit_caller_sp(f);
	int call = __atomic_load_n(&at_exit.call_pid, __ATOMIC_ACQUIRE) ==
		   getpid() && at_exit.call_tid == ls_gettid() &&
		   at_exit.call_cfa > f && at_exit.call_cfa - f < (8ull << 20);

	at_exit.frame = f;
	at_exit.live = b;
	at_exit.nregs = 0;
	if (call && at_exit.call_cfa >= b) {
		at_exit.live = at_exit.call_cfa;
		memcpy(at_exit.regs, at_exit.call_regs, sizeof(at_exit.regs));
		at_exit.nregs = at_exit.call_nregs;
	}
}

/* The six argument registers of thread tid's system call (rdi, rsi,
 * rdx, r10, r8, r9, whatever the call takes), from /proc, into regs:
 * how many. */
static uint32_t syscall_regs(pid_t tid, uint64_t *regs)
{
	char path[64], buf[256], *p = buf, *e;
	uint32_t n = 0;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	if (read_proc(path, buf, sizeof(buf)) <= 0)
		return 0;
	strtoull(p, &e, 10);	/* the call's number */
	for (p = e; n < 6; p = e) {
		regs[n] = strtoull(p, &e, 16);
		if (e == p)
			break;
		n++;
	}
	return n == 6 ? n : 0;
}

/* The other threads waiting in a system call, with their stack pointers,
 * the argument registers of their calls (the kernel shows no others)
 * and a signature of where each waits. */
static uint32_t exit_threads(void)
{
	pid_t tids[EXIT_THREADS];
	size_t nt = other_threads(tids, EXIT_THREADS), i;
	uint32_t n = 0;
	uint64_t sp, regs[6];

	for (i = 0; i < nt; i++)
		if ((sp = blocked_sp_sig(tids[i], &at_exit.sig[n]))) {
			memset(&at_exit.th[n], 0, sizeof(at_exit.th[n]));
			at_exit.th[n].tid = (uint32_t)tids[i];
			at_exit.th[n].nregs = syscall_regs(tids[i], regs);
			memcpy(at_exit.th[n].regs, regs, sizeof(regs));
			at_exit.th[n++].sp = sp;
		}
	return n;
}

/* Did one of them leave its system call meanwhile? */
static int exit_threads_moved(uint32_t n)
{
	uint64_t sig;
	uint32_t i;

	for (i = 0; i < n; i++)
		if (blocked_sp_sig((pid_t)at_exit.th[i].tid, &sig) !=
		    at_exit.th[i].sp || sig != at_exit.sig[i])
			return 1;
	return 0;
}

int ls_reach_at_exit(int fd, int with_blocks, unsigned agent_threads)
{
	uint32_t flags = LSNAP_REACH_AT_EXIT, n = 0;
	struct ls_exitstop es;
	int gate[2] = { -1, -1 };
	pid_t child;
	int r = ls_reach_prepare();

	if (r)
		return r;
	/*
	 * The other threads are stopped by a tracer child (exitstop.h)
	 * while the image is taken: each stack is scanned from its real
	 * stack pointer, with every register.  When ptrace is refused
	 * (another tracer, Yama, a process that is not dumpable) they run
	 * on in the parent, and the image holds them as they were, without
	 * their registers: the stack of one waiting in a system call is
	 * scanned from its stack pointer (/proc's syscall file), with the
	 * six argument registers of its call, unless it left the call
	 * before the image was taken (the child is told through the gate,
	 * then scans every stack whole).
	 */
	if (count_threads() != 1 + agent_threads) {
		int k = ls_exitstop_stop(&es, at_exit.th, EXIT_THREADS);

		if (k >= 0) {
			child = ls_reach_spawn(fd, at_exit.th, (uint32_t)k,
					       with_blocks, LSNAP_REASON_EXIT,
					       flags, NULL);
			ls_exitstop_release(&es);
			return child < 0 ? child : ls_reach_wait(child);
		}
		flags |= LSNAP_REACH_NO_REGS;
		if (!pipe2(gate, O_CLOEXEC))
			n = exit_threads();
	}
	child = ls_reach_spawn(fd, at_exit.th, n, with_blocks,
			       LSNAP_REASON_EXIT, flags, n ? gate : NULL);
	if (gate[0] >= 0) {
		close(gate[0]);
		if (child > 0 && exit_threads_moved(n))
			(void)!write(gate[1], "w", 1);
		close(gate[1]);
	}
	if (child < 0)
		return child;
	return ls_reach_wait(child);
}
