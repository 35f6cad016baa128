/*
 * reachcm.c - the mostly-concurrent mark (docs/REACHABILITY.md): the
 * scan of reach.c run in the live process while the program runs, its
 * writes tracked by a userfaultfd in asynchronous write-protect mode,
 * finished with the threads stopped, or given up for the fork image.
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
#include "dllock.h"
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

/* --- a mostly-concurrent mark ------------------------------------------ */

static uint64_t preclean(struct scan *sc);
static int overrun(struct scan *sc);
static int64_t list_written(struct scan *sc, uint64_t limit);
static int hopeless(struct scan *sc);
static int ls_scan_log_drain(struct scan *sc, int stopped);

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

/* The pages of shared memory among the roots: no protection covers
 * them, so the stop scans them again whole (scan_unprotected). */
static uint64_t shared_pages(const struct scan *sc)
{
	const struct region *g = sc->regions.p;
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < sc->regions.len; i++)
		if (g[i].shared && ls_scan_root_region(&g[i]))
			n += (g[i].end - g[i].start) / PAGE_SZ;
	return n;
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
	return !(ls_scan_is_own(sc, g->start, &own_end) && own_end >= g->end);
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
	if (a < end || ls_scan_vec_push(sc, &sc->regd, &sp)) {
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

/*
 * The roots, while the program runs: protected regions whole (their
 * pieces recorded for the rescan of written pages), unprotected ones
 * too (the stop scans them again whole), stacks from the stack pointer
 * of a thread waiting in a system call (less its red zone,
 * ls_scan_red_zone()); the stack of a thread that runs
 * (a region above a guard page holding no known stack pointer, the main
 * stack) waits for the stop.  What a thread's stack held here but no
 * longer holds at the stop is only ever taken as reachable.
 */
static void mark_roots_cm(struct scan *sc)
{
	const struct region *g = sc->regions.p;
	const struct span *p = sc->regd.p;
	volatile uint64_t here = 0;
	uint64_t sps[256], reds[256], s;
	size_t nsp = ls_scan_blocked_sps(sps, reds, 256, (uint64_t)&here), i,
	       j = 0, k;
	int stack_like, known;

	for (i = 0; i < sc->regions.len; i++) {
		if (!ls_scan_root_region(&g[i]))
			continue;
		while (j < sc->regd.len && p[j].end <= g[i].start)
			j++;
		s = g[i].start;
		known = 0;
		for (k = 0; k < nsp; k++)
			if (sps[k] >= s && sps[k] < g[i].end) {
				known = 1;
				if (sps[k] - reds[k] > s)
					s = sps[k] - reds[k];
			}
		stack_like = g[i].stack || (i > 0 && g[i - 1].end == g[i].start &&
					    !g[i - 1].readable && !g[i - 1].writable);
		if (stack_like && !known)
			continue;
		sc->record = j < sc->regd.len && p[j].start == g[i].start;
		ls_scan_mark_region(sc, &g[i], s);
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

	for (ls_scan_how.passes = 0; ls_scan_how.passes < PRECLEAN_PASSES;) {
		pages = preclean(sc);
		ls_scan_how.passes++;
		if (pages < PRECLEAN_ENOUGH || pages > last - last / 4)
			break;
		last = pages;
	}
	return pages;
}

int ls_reach_cm_begin(void)
{
	struct scan *sc = &ls_scan_child;
	uint64_t t0 = ls_now_ns(CLOCK_MONOTONIC), pages;
	const struct region *g;
	size_t i;
	int r, torn = 0;

	ls_scan_drop_all(sc);
	sc->safe = 1;
	sc->self = getpid();
	sc->uffd = -1;
	sc->stack.elem = sc->later.elem = sizeof(uint32_t);
	sc->rootp.elem = sc->regd.elem = sizeof(struct span);
	sc->win = ls_scan_grab(sc, WIN_BYTES);
	ls_scan_cache.mem = ls_scan_grab(sc, CACHE_PAGES * PAGE_SZ);
	ls_scan_cache_empty();
	sc->log_cap = LOG_RECORDS;
	sc->log = log_buffer();
	if (!sc->win || !ls_scan_cache.mem || !sc->log) {
		r = -ENOMEM;
		goto fail;
	}
	r = uffd_open(sc);
	if (r) {
		ls_scan_how.fallback = LSNAP_FALLBACK_KERNEL;
		goto fail;
	}
	/* The log first: a block allocated from here on is "new", even if
	 * the gather sees it too. */
	ls_live_log_start(sc->log, sc->log_cap);
	sc->log_on = 1;
	sc->drain = ls_scan_log_drain;
	r = ls_scan_take_inventory(sc, &torn);
	if (r)
		goto fail;
	ls_scan_log_drain(sc, 0);
	/* Protect, then read: a word read afterwards and never written
	 * again is the word at the stop. */
	g = sc->regions.p;
	for (i = 0; i < sc->regions.len; i++)
		if (protectable(sc, i))
			protect(sc, g[i].start, g[i].end);
	mark_roots_cm(sc);
	ls_scan_log_drain(sc, 0);
	if (hopeless(sc)) {
		r = -ETIME;
		goto fail;
	}
	phase('1');
	ls_scan_mark_all(sc);
	pages = precleaning(sc);
	/* The passes no longer shrink the dirty set: what the last one
	 * found, with the shared memory the stop scans again whole,
	 * predicts the stop, and over the budget the fork image is taken at
	 * the stop without this mark (unprotected now, while the program
	 * runs). */
	if (ls_scan_how.budget_ns && (pages + shared_pages(sc)) *
	    STOP_NS_PER_PAGE > ls_scan_how.budget_ns) {
		ls_scan_how.dirty_pages = pages;
		ls_scan_how.predicted_ns = (pages + shared_pages(sc)) *
					   STOP_NS_PER_PAGE;
		ls_scan_how.fallback = LSNAP_FALLBACK_BUDGET;
		r = -ETIME;
		goto fail;
	}
	phase('2');
	sc->scan_ns = ls_now_ns(CLOCK_MONOTONIC) - t0;
	return 0;
fail:
	if (!ls_scan_how.fallback)
		ls_scan_how.fallback = LSNAP_FALLBACK_ERROR;
	ls_reach_cm_abort();
	return r;
}

/* The old block at a, if any, is no longer: freed, or replaced. */
static void old_gone(struct scan *sc, uint64_t a)
{
	int start;
	int64_t i = ls_scan_lookup(sc, a, &start);	/* the granules: a few probes */

	if (i >= 0 && start)
		sc->st[i] = ST_GONE;
}

/* nb's index twice as big, or -ENOMEM. */
static int nb_grow_index(struct scan *sc)
{
	size_t cap = sc->nbmask ? (sc->nbmask + 1) * 2 : 4096, i, k;
	struct nb_slot *slot = ls_scan_grab(sc, cap * sizeof(*slot));

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
		ls_scan_drop(sc, sc->nbslot, (sc->nbmask + 1) * sizeof(*slot));
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
			struct ls_live_entry *nb = ls_scan_grab(sc, cap * sizeof(*nb));
			uint8_t *done = ls_scan_grab(sc, cap);

			if (!nb || !done) {
				ls_scan_drop(sc, nb, cap * sizeof(*nb));
				return -ENOMEM;
			}
			if (sc->nnb) {
				memcpy(nb, sc->nb, sc->nnb * sizeof(*nb));
				memcpy(done, sc->nbdone, sc->nnb);
			}
			ls_scan_drop(sc, sc->nb, sc->nbcap * sizeof(*nb));
			ls_scan_drop(sc, sc->nbdone, sc->nbcap);
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
static int ls_scan_log_drain(struct scan *sc, int stopped)
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
		ls_scan_mark_range(sc, p[lo].start > a ? p[lo].start : a,
			   p[lo].end < b ? p[lo].end : b, 1);
}

/* The marked blocks' words within [a, b), scanned again. */
static void rescan_blocks(struct scan *sc, uint64_t a, uint64_t b)
{
	size_t i = ls_scan_first_block_from(sc, a);
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
		ls_scan_mark_range(sc, s, e, sc->st[i] == ST_REACHABLE);
	}
}

/*
 * The mark's last blocks, at the stop, in place: no thread of the
 * program runs, a block still live is mapped, and ls_scan_scan_block() clips it
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
		const struct region *g = ls_scan_region_of(sc, sc->addr[i]);

		if (sc->st[i] == ST_GONE)
			continue;
		sc->safe = g && !g->file ? 0 : 1;
		ls_scan_scan_block(sc, i, ls_scan_mark_from_block, sc->st[i] == ST_REACHABLE);
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
	if (ls_scan_readable_until(sc, a) < b) {
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
 * With a limit (0: none) the listing ends once it holds that many pages:
 * a caller that only asks "at least so many?" pays for no more.
 */
static int64_t list_written(struct scan *sc, uint64_t limit)
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
			if (limit && (uint64_t)pages >= limit)
				break;
			a.max_pages = limit ? limit - (uint64_t)pages : 0;
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
				if (ls_scan_vec_push(sc, &sc->dirty, &sp)) {
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
			ls_scan_mark_piece(sc, a, d[k].end);
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
static int ls_scan_scan_new(struct scan *sc, int stopped)
{
	struct batch *b = &ls_scan_batch;
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
		g = stopped ? ls_scan_region_of(sc, a) : NULL;
		if (g && !g->file && ls_scan_readable_until(sc, a) >= a + len) {
			sc->safe = 0;
			sc->heap_bytes += len;
			ls_scan_scan_words(sc, a, a + len, ls_scan_mark_from_block, 1);
			sc->safe = 1;
			continue;
		}
		if (!ls_scan_batch_add(b, a, len, 1))
			continue;
		if (stopped && overrun(sc))
			return 0;
		ls_scan_batch_scan(sc, b, ls_scan_mark_from_block);
		if (ls_scan_batch_add(b, a, len, 1))
			ls_scan_scan_alone(sc, a, len, ls_scan_mark_from_block, 1);
	}
	ls_scan_batch_scan(sc, b, ls_scan_mark_from_block);
	if (!stopped)
		return 0;
	for (i = 0; i < sc->nnb; i++)
		if (sc->nb[i].addr)
			sc->nb[n++] = sc->nb[i];
	sc->nnb = n;
	return ls_scan_radix_sort(sc, sc->nb, n) ? -ENOMEM : 0;
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
	ls_scan_cache_empty();	/* it holds these pages as they were before */
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
				ls_scan_cache_load(sc, vec[k].start, vec[k].end);
			ls_scan_cache_flush(sc);
			for (k = 0; k < n; k++) {
				struct span sp = { vec[k].start, vec[k].end };

				pages += (vec[k].end - vec[k].start) / 4096;
				rescan_roots(sc, vec[k].start, vec[k].end);
				rescan_blocks(sc, vec[k].start, vec[k].end);
				/* Not listed: every new block is read again. */
				if (ls_scan_vec_push(sc, &sc->dirty, &sp) && sc->nnb)
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
	ls_scan_log_drain(sc, 0);
	if (ls_scan_scan_new(sc, 0))
		sc->partial = 1;
	ls_scan_mark_all(sc);
	return pages;
}

/* The pieces of the current maps the protection did not cover: stacks
 * from their thread's stack pointer (an ended thread's: its descriptor,
 * ls_scan_root_start()), file-backed data, mappings made during the mark.
 * Scanned whole, as the fork method scans. */
static void scan_unprotected(struct scan *sc, const struct lsnap_check_thread *th,
			     uint32_t nth, uint64_t self_sp)
{
	const struct region *g = sc->regions.p;
	const struct span *p = sc->regd.p;
	size_t i, j = 0;

	for (i = 0; i < sc->regions.len; i++) {
		struct region piece = g[i];

		if (!ls_scan_root_region(&g[i]))
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
			ls_scan_mark_region(sc, &piece, ls_scan_root_start(sc, &piece, th, nth,
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
		g = i < sc->regd.len ? ls_scan_region_of(sc, sp) : NULL;
		if (!g)
			continue;
		s = sp - ls_scan_red_zone(&th[k]);
		ls_scan_mark_region(sc, g, s > g->start ? s : g->start);
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
 * ls_scan_scan_new() reads (sc->dirty is the stop's); the rest (stacks,
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
	uint64_t protected_pages = 0, limit;
	int64_t pages;
	size_t i;

	if (!ls_scan_how.budget_ns)
		return 0;
	for (i = 0; i < sc->regd.len; i++)
		protected_pages += (p[i].end - p[i].start) / PAGE_SZ;
	/* Enough pages to be hopeless by both counts: no need for more. */
	limit = 4 * ls_scan_how.budget_ns / STOP_NS_PER_PAGE + 1;
	if (limit < (protected_pages + 3) / 4)
		limit = (protected_pages + 3) / 4;
	pages = list_written(sc, limit);
	if (pages <= 0 || (uint64_t)pages < protected_pages / 4 ||
	    (uint64_t)pages * STOP_NS_PER_PAGE <= 4 * ls_scan_how.budget_ns)
		return 0;
	ls_scan_how.dirty_pages = (uint64_t)pages;
	ls_scan_how.predicted_ns = (uint64_t)pages * STOP_NS_PER_PAGE;
	ls_scan_how.stop_work_ns = 0;
	ls_scan_how.fallback = LSNAP_FALLBACK_BUDGET;
	return 1;
}

int ls_reach_cm_pause(const struct lsnap_check_thread *th, uint32_t nth)
{
	struct scan *sc = &ls_scan_child;
	uint64_t t0 = ls_now_ns(CLOCK_MONOTONIC), limit;
	volatile uint64_t here = 0;
	int64_t pages;
	size_t i, k;
	int r;

	ls_scan_cache_empty();		/* from here on, read what is there now */
	/* First what the stop would cost: the fork image, if cheaper by
	 * the budget, needs none of the work below.  The written pages are
	 * listed only up to the budget's worth: one more is over it, and
	 * the fork image then needs no list (the log's loss or a failure
	 * falls back by itself whatever the count). */
	limit = 0;
	if (ls_scan_how.budget_ns && !sc->log_bad && !ls_live_log_lost())
		limit = ls_scan_how.budget_ns / STOP_NS_PER_PAGE + 1;
	pages = list_written(sc, limit);
	if (pages < 0) {
		ls_scan_how.fallback = LSNAP_FALLBACK_ERROR;
		return (int)pages;
	}
	ls_scan_how.dirty_pages = (uint64_t)pages;
	ls_scan_how.predicted_ns = ls_now_ns(CLOCK_MONOTONIC) - t0;
	ls_scan_how.predicted_ns += predict_stop(sc, (uint64_t)pages +
						 shared_pages(sc),
					 !ls_scan_how.budget_ns ? 0 :
					 ls_scan_how.budget_ns > ls_scan_how.predicted_ns ?
					 ls_scan_how.budget_ns - ls_scan_how.predicted_ns : 1);
	if (ls_scan_how.budget_ns && ls_scan_how.predicted_ns > ls_scan_how.budget_ns &&
	    !sc->log_bad && !ls_live_log_lost()) {
		ls_scan_how.fallback = LSNAP_FALLBACK_BUDGET;
		return -ETIME;
	}
	sc->deadline = ls_scan_how.budget_ns ? t0 + ls_scan_how.budget_ns : 0;
	r = ls_scan_log_drain(sc, 1);
	ls_live_log_stop();
	sc->log_on = 0;
	if (!r)
		r = sc->log_bad;	/* a record lost (a reset), no memory */
	if (r) {
		ls_scan_how.fallback = r == -EOVERFLOW ? LSNAP_FALLBACK_LOG :
			       LSNAP_FALLBACK_ERROR;
		return r;
	}
	r = ls_scan_parse_maps(sc);
	if (!r) {
		ls_scan_note_own(sc);	/* the mappings made since */
		r = ls_scan_note_alloc_maps(sc, 1);	/* the allocator's */
	}
	if (r) {
		ls_scan_how.fallback = LSNAP_FALLBACK_ERROR;
		return r;
	}
	rescan_written(sc);
	if (!overrun(sc))
		scan_unprotected(sc, th, nth, (uint64_t)&here);
	if (!overrun(sc))
		scan_protected_stacks(sc, th, nth);
	for (k = 0; k < nth; k++)
		for (i = 0; i < th[k].nregs && i < LSNAP_CHECK_NREGS; i++)
			if (th[k].regs[i] >= sc->lo && th[k].regs[i] < sc->hi)
				ls_scan_mark_word(sc, th[k].regs[i], 1);
	r = overrun(sc) ? 0 : ls_scan_scan_new(sc, 1);
	if (r) {
		ls_scan_how.fallback = LSNAP_FALLBACK_ERROR;
		return r;
	}
	if (!overrun(sc))
		mark_all_stopped(sc);
	/* Past the deadline even after the last step: over budget too. */
	overrun(sc);
	ls_scan_how.stop_work_ns = ls_now_ns(CLOCK_MONOTONIC) - t0;
	if (sc->overrun) {
		ls_scan_how.fallback = LSNAP_FALLBACK_OVERRUN;
		return -ETIME;
	}
	sc->nth = nth;
	sc->scan_ns += ls_scan_how.stop_work_ns;
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
	struct scan *sc = &ls_scan_child;

	log_empty();
	unprotect(sc);
	ls_scan_drop_all(sc);
}

int ls_reach_cm_finish(int fd, int with_blocks)
{
	static struct ls_reach_result res;
	struct scan *sc = &ls_scan_child;
	uint64_t t0 = ls_now_ns(CLOCK_MONOTONIC);
	int r;

	unprotect(sc);		/* the program's writes are free again */
	memset(&res, 0, sizeof(res));
	res.mallinfo = ls_scan_prep.mallinfo;
	res.pid = ls_scan_prep.pid;
	res.ppid = ls_scan_prep.ppid;
	res.live = 1;
	r = ls_scan_cliques(sc);
	if (!r)
		r = ls_scan_sum_up(sc, &res);
	res.totals.scan_ns = sc->scan_ns + ls_now_ns(CLOCK_MONOTONIC) - t0;
	res.totals.root_bytes = sc->root_bytes;
	res.totals.heap_bytes = sc->heap_bytes;
	res.totals.mem_bytes = sc->peak;
	res.totals.nthreads = sc->nth;
	res.torn = sc->torn;
	ls_scan_how.allocator = ls_heapmodel()->id;
	ls_scan_how.alloc_root_bytes = sc->alloc_root;
	ls_scan_how.alloc_unscanned_bytes = sc->alloc_unscanned;
	res.how = ls_scan_how;
	if (!r) {
		res.totals.flags = LSNAP_REACH_CONCURRENT |
				   (res.torn ? LSNAP_REACH_TORN : 0) |
				   (sc->partial ? LSNAP_REACH_PARTIAL : 0) |
				   (ls_dllock_missed() ?
				    LSNAP_REACH_LOADER_HELD : 0);
		ls_snapwrite_lock();
		r = ls_snapwrite_reach(fd, LSNAP_REASON_REQUEST, with_blocks,
				       &res);
		ls_snapwrite_unlock();
	}
	log_empty();
	ls_scan_drop_all(sc);
	return r;
}

