/*
 * reachroots.c - the scan's roots (docs/REACHABILITY.md, "Roots" and "At
 * exit"): the mappings of /proc/self/maps, and of each the part scanned:
 * the agent's own memory and the allocator's (reachheap.c) cut out, a
 * stack from its thread's stack pointer, an ended thread's descriptor
 * only; and the stopped threads' registers.  The regions' lookups and
 * the scan of a root's piece are reach.c's (the mark reads them too).
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
#include "reachint.h"
#include "site.h"
#include "snapwrite.h"
#include "sys.h"
#include "unwind.h"

/* --- 2. roots ------------------------------------------------------------ */

static int read_maps(struct scan *sc, char **text, size_t *len)
{
	size_t cap = 1 << 20, n = 0;
	char *buf = ls_scan_grab(sc, cap);
	ssize_t k;
	int fd = open("/proc/self/maps", O_RDONLY | O_CLOEXEC);

	if (fd < 0 || !buf)
		return -EIO;
	for (;;) {
		if (n == cap) {
			char *b = ls_scan_grab(sc, cap * 2);

			if (!b) {
				close(fd);
				return -ENOMEM;
			}
			memcpy(b, buf, n);
			ls_scan_drop(sc, buf, cap);
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

/* Whether [q, nl) begins with prefix. */
static int starts(const char *q, const char *nl, const char *prefix)
{
	size_t n = strlen(prefix);

	return (size_t)(nl - q) >= n && !memcmp(q, prefix, n);
}

/* "start-end perms offset dev inode   path" */
int ls_scan_parse_maps(struct scan *sc)
{
	char *text;
	const char *p, *end, *nl;
	size_t len;
	int r = read_maps(sc, &text, &len);

	if (r)
		return r;
	if (sc->regions.p)	/* again, at the stop of a concurrent mark */
		ls_scan_drop(sc, sc->regions.p, sc->regions.cap * sc->regions.elem);
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
		g.shmem = g.shared && (starts(q, nl, "/SYSV") ||
				       starts(q, nl, "/dev/zero ") ||
				       starts(q, nl, "/memfd:") ||
				       starts(q, nl, "/dev/shm/"));
		g.stack = nl - q == 7 && !memcmp(q, "[stack]", 7);
		g.heap = nl - q == 6 && !memcmp(q, "[heap]", 6);
		r = ls_scan_vec_push(sc, &sc->regions, &g);
		if (r)
			return r;
	}
	return 0;
}

/* [s, e) of region g, outside glibc's heaps, less the allocator's
 * memory around its blocks (ls_scan_heap_range). */
static void mark_plain(struct scan *sc, const struct region *g, uint64_t s,
		       uint64_t e)
{
	uint64_t cur = s, xs, xe;
	struct ls_gh_heap h;
	int arena;
	size_t i;

	for (i = ls_scan_first_block_from(sc, s); i < sc->n &&
	     sc->addr[i] < e && cur < e; i++) {
		if (sc->addr[i] < cur)
			continue;
		ls_scan_heap_range(sc, i, g->start, g->end, &xs, &xe, &arena);
		if (xe > e)
			xe = e;
		if (xs > cur) {
			/* Another allocator's memory between its blocks
			 * (or a program's mapping the kernel merged). */
			if (!ls_heapmodel()->chunk_headers)
				sc->alloc_root += xs - cur;
			ls_scan_mark_piece(sc, cur, xs);
		}
		/* A main-arena heap that is not [heap] (glibc's mmap'd
		 * fallback, or the main arena not found): walked from the
		 * region's start. */
		if (arena == 1 && xs == g->start) {
			h = (struct ls_gh_heap){ xs, xe, xs, xe, 0 };
			ls_scan_walk_heap(sc, &h);
		} else if (xe > xs && xs >= cur) {
			/* A chunk's own mapping less its block, or a thread
			 * arena's memory that is no heap glibcheap.c knows:
			 * not scanned. */
			uint64_t t = ls_scan_tracked_bytes(sc, xs, xe);

			sc->alloc_unscanned += xe - xs > t ? xe - xs - t : 0;
		}
		if (xe > cur)
			cur = xe;
	}
	if (cur < e) {
		if (!ls_heapmodel()->chunk_headers && cur > s)
			sc->alloc_root += e - cur;
		ls_scan_mark_piece(sc, cur, e);
	}
}

/*
 * [s, g->end) under another allocator's model: what lies in the
 * allocator's own mappings (sc->amap) is its free memory, its state and
 * tracked blocks (scanned once reached): not scanned; the rest as
 * mark_plain() scans it.
 */
static void mark_other(struct scan *sc, const struct region *g, uint64_t s)
{
	const struct span *a = sc->amap.p;
	uint64_t cur = s, as, ae, t;
	size_t i;

	for (i = ls_scan_amap_from(sc, s); i < sc->amap.len &&
	     a[i].start < g->end; i++) {
		as = a[i].start > cur ? a[i].start : cur;
		ae = a[i].end < g->end ? a[i].end : g->end;
		if (as > cur)
			mark_plain(sc, g, cur, as);
		t = ls_scan_tracked_bytes(sc, as, ae);
		sc->alloc_unscanned += ae - as > t ? ae - as - t : 0;
		cur = ae;
	}
	if (cur < g->end)
		mark_plain(sc, g, cur, g->end);
}

/*
 * An ended thread's descriptor (struct pthread) still holds the pointer
 * its start routine was given and the one it returned: stale words, not
 * roots, where valgrind and LeakSanitizer call what only they hold lost
 * (an ended thread's argument it did not free, the result a join took).
 * Their offsets in glibc's x86-64 layout (result, the scheduling
 * parameters, start routine, argument, in that order), measured on
 * glibc 2.36; only where the tid's offset is the one learn_threads()
 * checked.
 */
#define PD_RESULT 0x628u
#define PD_ARG 0x640u

static uint64_t thread_desc(struct scan *sc, const struct region *g);

/* Is pd, the descriptor in region g (thread_desc(), 0: none), an ended
 * thread's, lying where g's roots begin (s)? */
static int ended_desc(struct scan *sc, const struct region *g, uint64_t pd,
		      uint64_t s)
{
	uint64_t tid;

	return ls_scan_prep.tid_off == 0x2d0 && pd && pd == s &&
	       s + PD_ARG + 8 <= g->end &&
	       !ls_scan_peek(sc, s + ls_scan_prep.tid_off, &tid) && (int32_t)tid <= 0;
}

/*
 * glibc's descriptor pd of a live thread (thread_desc(), 0: none; one
 * scanned, at or above s) points to the thread's DTV, the
 * dynamic TLS vector (a block glibc allocates for the thread and grows
 * when a dlopen needs it), 16 bytes in, past the vector's length entry:
 * taken for a pointer to its start, so that the dynamic TLS blocks the
 * DTV points to, and what their __thread variables hold, are reachable,
 * as LeakSanitizer has them (it takes every dynamic TLS block for a
 * root).  memcheck calls the DTV possibly lost (only a stale register
 * or dead word then keeps the blocks it leads to reachable).
 */
static void mark_dtv(struct scan *sc, uint64_t pd, uint64_t s)
{
	uint64_t tid, dtv;
	int64_t i;
	int start;

	if (!pd || pd < s || ls_scan_peek(sc, pd + ls_scan_prep.tid_off, &tid) ||
	    (int32_t)tid <= 0 || ls_scan_peek(sc, pd + 8, &dtv))
		return;
	i = ls_scan_lookup(sc, dtv, &start);
	if (i >= 0 && dtv == sc->blk[i].addr + 16)
		ls_scan_mark_word(sc, sc->blk[i].addr, 1);
}

/*
 * Region g from s: glibc's heaps in it (the main arena's [heap], and
 * thread arenas' heaps at every 64 MiB boundary whose heap_info makes
 * sense) are walked chunk by chunk; the rest is scanned as a root, less
 * the allocator's memory.  A region may hold several heaps and other
 * mappings the kernel merged with them.
 */
void ls_scan_mark_region(struct scan *sc, const struct region *g, uint64_t s)
{
	struct ls_gh_heap h;
	/* The descriptor, found once for both uses, and only where the
	 * roots begin above the region's start, as both ask. */
	uint64_t cur, a, pd = s > g->start ? thread_desc(sc, g) : 0;

	mark_dtv(sc, pd, s);
	if (ended_desc(sc, g, pd, s)) {
		mark_plain(sc, g, s, s + PD_RESULT);
		mark_plain(sc, g, s + PD_RESULT + 8, s + PD_ARG);
		s += PD_ARG + 8;
	}
	cur = s;
	if (!ls_heapmodel()->chunk_headers) {	/* not glibc's heaps */
		mark_other(sc, g, s);
		return;
	}
	if (g->heap && s == g->start &&
	    ls_gh_main_heap(ls_scan_gh_ops(sc), g->start, g->end, &h)) {
		ls_scan_walk_heap(sc, &h);
		return;
	}
	for (a = (g->start + HEAP_MAX_SIZE - 1) & ~(HEAP_MAX_SIZE - 1);
	     a < g->end; a += HEAP_MAX_SIZE) {
		if (a < cur || !ls_gh_thread_heap(ls_scan_gh_ops(sc), a, g->end, &h))
			continue;
		mark_plain(sc, g, cur, h.start);
		ls_scan_walk_heap(sc, &h);
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

	if (!ls_scan_prep.tid_off || g->file || g->end - g->start < (64u << 10))
		return 0;
	for (pd = (g->end - 64) & ~63ull; pd + (16u << 10) >= g->end; pd -= 64)
		if (!ls_scan_peek(sc, pd, &w0) && w0 == pd && !ls_scan_peek(sc, pd + 16, &w2) &&
		    w2 == pd)
			return pd;
	return 0;
}

/*
 * Where the roots of region g begin.  A stack from its thread's stack
 * pointer less the red zone (none below a thread waiting in a system
 * call of the C library, ls_scan_red_zone(); the exiting thread's at
 * exit: exactly from where its live frames begin, self_red 0; the
 * context a signal handler that called exit() on an alternate stack
 * interrupted: from its stack pointer, no red zone: that context never
 * resumes, and what lies below its stack pointer is the words of frames
 * that returned, the agent's own malloc hooks' among them).  The stack
 * of a thread that has ended (glibc keeps it mapped, in its stack cache
 * or until a join; the kernel cleared the descriptor's tid): only its
 * descriptor, which glibc reuses (its DTV, and through it the dynamic
 * TLS blocks glibc frees when the stack is reused).  Not its frames,
 * not its static TLS: what only an ended thread's __thread variable
 * holds is lost, as memcheck and LeakSanitizer both say.
 */
uint64_t ls_scan_root_start(struct scan *sc, const struct region *g,
			   const struct lsnap_check_thread *th, uint32_t nth,
			   uint64_t self_sp, uint64_t self_red)
{
	uint64_t s = g->start, sp, red, pd, tid, low = 0;
	size_t k;

	/* The lowest, when the kernel merged two stacks into one region. */
	for (k = 0; k <= nth + 1; k++) {
		sp = k < nth ? th[k].sp : k == nth ? self_sp : ls_scan_exit.intr_sp;
		if (sp < s || sp >= g->end)
			continue;
		red = k < nth ? ls_scan_red_zone(&th[k]) : k == nth ? self_red : 0;
		if (sp - red > s && (!low || sp - red < low))
			low = sp - red;
	}
	if (low)
		return low;
	pd = thread_desc(sc, g);
	if (pd && !ls_scan_peek(sc, pd + ls_scan_prep.tid_off, &tid) && (int32_t)tid <= 0)
		s = pd;
	return s;
}

/* A page that faults (a file mapping cut short) ends the region. */
static void mark_root_region(struct scan *sc, const struct region *g,
			     const struct lsnap_check_thread *th, uint32_t nth,
			     uint64_t self_sp, uint64_t self_red)
{
	uint64_t s, lo = ls_scan_exit.fp_lo, hi = ls_scan_exit.fp_hi;
	struct region piece = *g;

	if (!sc->safe && sigsetjmp(ls_scan_fault_jmp, 0))
		return;
	s = ls_scan_root_start(sc, g, th, nth, self_sp, self_red);
	/* An alternate stack the program mapped: less a signal frame's
	 * saved vector registers (cut_block_stack()). */
	if (lo > s && lo < g->end && hi <= g->end) {
		piece.end = lo;
		ls_scan_mark_region(sc, &piece, s);
		piece.start = hi;
		piece.end = g->end;
		if (hi < g->end)
			ls_scan_mark_region(sc, &piece, hi);
		return;
	}
	ls_scan_mark_region(sc, g, s);
}

static void mark_piece_guarded(struct scan *sc, uint64_t s, uint64_t e)
{
	if (!sc->safe && sigsetjmp(ls_scan_fault_jmp, 0))
		return;
	ls_scan_mark_piece(sc, s, e);
}

/*
 * A stack pointer sp in a tracked block (a stack the program allocated
 * with malloc): the block is live from sp less red up, a root now and,
 * once reached, its contents from there only; below lie the words of
 * frames that have returned (docs/REACHABILITY.md, "Stacks the program
 * allocated").  The lowest cut of a block counts.
 */
static void cut_block_stack(struct scan *sc, uint64_t sp, uint64_t red)
{
	uint64_t a, e, cut;
	uint32_t k;
	int start;
	int64_t i = sp ? ls_scan_lookup(sc, sp, &start) : -1;

	if (i < 0)
		return;
	a = sc->blk[i].addr;
	e = a + sc->blk[i].size;
	cut = sp - a > red ? (sp - red) & ~7ull : a;
	/* A signal frame's saved vector registers, at the top of the
	 * alternate stack: memcheck scans no register but the general
	 * ones. */
	if (ls_scan_exit.fp_lo > cut && ls_scan_exit.fp_lo < e &&
	    ls_scan_exit.fp_hi == e)
		e = ls_scan_exit.fp_lo;
	for (k = 0; k < sc->ncut && sc->cut_blk[k] != (uint32_t)i; k++)
		;
	if (k == sc->ncut) {
		if (k == SCAN_CUTS)
			return;		/* never: two calls */
		sc->ncut++;
		sc->cut_blk[k] = (uint32_t)i;
		sc->cut_at[k] = cut;
		sc->cut_end[k] = e;
	} else if (cut < sc->cut_at[k]) {
		sc->cut_at[k] = cut;
	}
	mark_piece_guarded(sc, cut, e);
}

/*
 * exit() called off the thread's own stack (the one glibc or the kernel
 * gave it) after the program switched away from it with swapcontext()
 * or setcontext() (to a makecontext coroutine's stack, usually): where
 * the own stack's live frames begin, or 0 when in doubt.  The context
 * left there is suspended or abandoned (the exit point, live, is not on
 * that stack), so its live frames begin at the switch's stack pointer,
 * or lower at the stack pointer swapcontext() saved in the program's
 * ucontext, no red zone (docs/REACHABILITY.md, "Stacks the program
 * allocated").  The own stack is the region of the scan's maps around
 * the thread's top (the hook's co_top: main's __libc_stack_end, another
 * thread's descriptor).  No record, a record off that region, the exit
 * point on it, or a saved stack pointer elsewhere: 0, and the stack is
 * scanned whole.
 */
uint64_t ls_scan_switched_sp(const struct scan *sc)
{
	const struct reach_at_exit *e = &ls_scan_exit;
	const struct region *g;
	uint64_t sp = e->co_sp;

	if (!sp || !(g = ls_scan_region_of(sc, e->co_top)) ||
	    sp < g->start || sp >= g->end ||
	    (e->co_live >= g->start && e->co_live < g->end))
		return 0;
	if (e->co_rsp) {
		if (e->co_rsp < g->start || e->co_rsp >= g->end)
			return 0;
		if (e->co_rsp < sp)
			sp = e->co_rsp;
	}
	return sp & ~7ull;
}

void ls_scan_mark_roots(struct scan *sc, const struct lsnap_check_thread *th,
		       uint32_t nth, uint64_t self_sp, uint64_t self_red)
{
	const struct region *g = sc->regions.p;
	size_t i, k;

	/* At exit: a signal's interrupted context, else the own stack a
	 * coroutine switch left. */
	if (!ls_scan_exit.intr_sp)
		ls_scan_exit.intr_sp = ls_scan_switched_sp(sc);

	/* The exiting thread's only: another thread's stack in a block is
	 * scanned whole once reached, as memcheck and LeakSanitizer both
	 * scan it (docs/REACHABILITY.md, "Stacks the program allocated"). */
	cut_block_stack(sc, self_sp, self_red);
	cut_block_stack(sc, ls_scan_exit.intr_sp, 0);
	for (i = 0; i < sc->regions.len; i++) {
		if (!ls_scan_root_region(&g[i]))
			continue;
		mark_root_region(sc, &g[i], th, nth, self_sp, self_red);
	}
	for (k = 0; k < nth; k++)
		for (i = 0; i < th[k].nregs && i < LSNAP_CHECK_NREGS; i++)
			if (th[k].regs[i] >= sc->lo && th[k].regs[i] < sc->hi)
				ls_scan_mark_word(sc, th[k].regs[i], 1);
	/* At exit, the registers the caller of exit() held. */
	for (i = 0; i < ls_scan_exit.nregs; i++)
		if (ls_scan_exit.regs[i] >= sc->lo && ls_scan_exit.regs[i] < sc->hi)
			ls_scan_mark_word(sc, ls_scan_exit.regs[i], 1);
}
