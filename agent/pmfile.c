/*
 * pmfile.c - the post-mortem file and the growth sampler.
 */
#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "state.h"
#include "modules.h"
#include "pmfile.h"
#include "sample.h"
#include "stats.h"
#include "site.h"
#include "figures.h"
#include "sys.h"
#include "thread.h"

#define MODULES_CAP 1024u
#define SITES_CAP (256u << 10)
#define FRAMES_CAP (4u << 20)

/*
 * The file has its full size from the start (sparse: no page of it exists
 * until written), but only what is in use is mapped: the header, and each
 * region as a mapping of its own at its offset, grown with mremap as
 * sites, frames and history rows come.  Every mapped byte has its block
 * allocated in the file first (fallocate): a store into a hole of a full
 * file system would kill the program with SIGBUS.  A region that cannot
 * grow (an exhausted RLIMIT_AS, a full file system) keeps what it has;
 * what the file could not hold is counted in its header's `dropped`.
 */
enum { R_MODULES, R_SITES, R_FRAMES, R_ROWS, R_HIST, R_STATS, R_WIDE,
       R_TAILS, R_COUNT };

#define REGION_FIRST (16u << 10)	/* mapped at open, per region */
#define REGION_STEP (64u << 10)		/* at least this much more */

static struct region {
	char *base;
	uint64_t off, len, cap;		/* len: mapped bytes */
} reg[R_COUNT];

static struct lspm_header *hdr;
static pid_t owner;
static int pm_fd = -1;		/* the file, kept to allocate its regions */
static int pm_dir = -1;		/* its directory, for unlinkat and renameat */
static char pm_name[32];	/* PID.pm; empty once removed */
static uint32_t period = 1000;
static uint32_t modules_gen_seen;
static int exit_sampled;	/* the last sample is the exit's */

/* Per-site deltas still in threads' pending caches, for one sample. */
static struct {
	int64_t *live_b, *live_k, *alloc_b, *alloc_k;
	uint32_t cap;
} scratch;

static uint64_t page_up(uint64_t n)
{
	return (n + 4095) & ~4095ull;
}

/*
 * The file's blocks of [off, off + len) allocated; 0, or -1 when the file
 * system has no room (ENOSPC, EDQUOT).  Where it cannot allocate ahead
 * (EOPNOTSUPP) a zero byte written into each page of the range, never
 * written before, does the same.  errno is left as it was.
 */
static int reserve(uint64_t off, uint64_t len)
{
	int e = errno, r = 0;
	uint64_t o;

	if (fallocate(pm_fd, 0, (off_t)off, (off_t)len)) {
		r = errno == EOPNOTSUPP ? 0 : -1;
		for (o = off; !r && o < off + len; o += 4096)
			if (pwrite(pm_fd, "", 1, (off_t)o) != 1)
				r = -1;
	}
	errno = e;
	return r;
}

/* The region's first `bytes` are mapped (grown if need be), their blocks
 * allocated; 0 when they cannot be: past its capacity, no room in the
 * file system, or refused by the kernel. */
static int region_fit(int i, uint64_t bytes)
{
	struct region *r = &reg[i];
	uint64_t len;
	long p;
	int e;

	if (bytes <= r->len)
		return 1;
	if (bytes > r->cap)
		return 0;
	len = page_up(bytes > r->len + REGION_STEP ? bytes : r->len + REGION_STEP);
	if (len > r->cap)
		len = r->cap;
	if (reserve(r->off + r->len, len - r->len)) {
		len = page_up(bytes);	/* the step is more than needed */
		if (reserve(r->off + r->len, len - r->len))
			return 0;
	}
	e = errno;
	p = syscall(SYS_mremap, r->base, r->len, len, MREMAP_MAYMOVE);
	errno = e;
	if (p == -1)
		return 0;
	r->base = (char *)p;
	r->len = len;
	return 1;
}

static inline void *at(int i)
{
	return reg[i].base;
}

/* Map the header and the first bytes of every region, their blocks
 * allocated; 0, -ENOSPC or -ENOMEM. */
static int map_regions(int fd)
{
	long p;
	int i;

	if (reserve(0, LSPM_HEADER_SIZE))
		return -ENOSPC;
	for (i = 0; i < R_COUNT; i++)
		if (reserve(reg[i].off, reg[i].cap < REGION_FIRST ? reg[i].cap :
			    REGION_FIRST))
			return -ENOSPC;
	p = syscall(SYS_mmap, NULL, LSPM_HEADER_SIZE, PROT_READ | PROT_WRITE,
		    MAP_SHARED, fd, 0);
	if (p == -1)
		return -ENOMEM;
	hdr = (struct lspm_header *)p;
	for (i = 0; i < R_COUNT; i++) {
		reg[i].len = reg[i].cap < REGION_FIRST ? reg[i].cap : REGION_FIRST;
		p = syscall(SYS_mmap, NULL, reg[i].len, PROT_READ | PROT_WRITE,
			    MAP_SHARED, fd, (off_t)reg[i].off);
		if (p == -1)
			return -ENOMEM;
		reg[i].base = (char *)p;
	}
	return 0;
}

static void unmap_regions(void)
{
	int i;

	for (i = 0; i < R_COUNT; i++)
		if (reg[i].base)
			syscall(SYS_munmap, reg[i].base, reg[i].len);
	if (hdr)
		syscall(SYS_munmap, hdr, LSPM_HEADER_SIZE);
	memset(reg, 0, sizeof(reg));
	hdr = NULL;
}

/* The regions' offsets and capacities, page-aligned; the file's size. */
static uint64_t lay_out(uint32_t hist_len)
{
	const uint64_t cap[R_COUNT] = {
		[R_MODULES] = MODULES_CAP * sizeof(struct lspm_module),
		[R_SITES] = SITES_CAP * sizeof(struct lspm_site),
		[R_FRAMES] = FRAMES_CAP * 8ull,
		[R_ROWS] = SITES_CAP * 4ull,
		[R_HIST] = (uint64_t)SITES_CAP * hist_len * 8,
		[R_STATS] = SITES_CAP * (uint64_t)sizeof(struct lspm_site_brief),
		[R_WIDE] = SITES_CAP * (uint64_t)sizeof(struct lspm_site_stats),
		[R_TAILS] = SITES_CAP * (uint64_t)sizeof(struct lspm_tail),
	};
	uint64_t off = LSPM_HEADER_SIZE;
	int i;

	for (i = 0; i < R_COUNT; i++) {
		reg[i].off = off;
		reg[i].cap = cap[i];
		reg[i].len = 0;
		reg[i].base = NULL;
		off = page_up(off + cap[i]);
	}
	return off;
}

/* Is name in dir the post-mortem file of a live agent, one of another
 * PID namespace with our pid there (it holds a lock on it for life)? */
static int file_in_use(int dir, const char *name)
{
	int fd = openat(dir, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK |
			O_CLOEXEC), busy;

	if (fd < 0)
		return 0;
	busy = flock(fd, LOCK_EX | LOCK_NB) && errno == EWOULDBLOCK;
	close(fd);
	return busy;
}

/* The file, created new in dir (a stale one of a dead process of this
 * pid goes first); its fd or -errno, pm_dir and pm_name set. */
static int create_file(const char *dir)
{
	int fd, tries;

	snprintf(pm_name, sizeof(pm_name), "%d" LS_SUFFIX_PM, (int)getpid());
	pm_dir = ls_sys_fd_high(open(dir, O_PATH | O_DIRECTORY | O_NOFOLLOW |
				     O_CLOEXEC));
	if (pm_dir < 0)
		return -errno;
	for (tries = 0; tries < 2; tries++) {
		fd = openat(pm_dir, pm_name, O_RDWR | O_CREAT | O_EXCL |
			    O_NOFOLLOW | O_CLOEXEC, 0600);
		if (fd >= 0 || errno != EEXIST)
			break;
		if (file_in_use(pm_dir, pm_name)) {
			errno = EBUSY;
			break;
		}
		unlinkat(pm_dir, pm_name, 0);
	}
	/* Locked for the process's life: no agent takes it over. */
	if (fd >= 0)
		flock(fd, LOCK_EX | LOCK_NB);
	if (fd < 0) {
		fd = -errno;
		close(pm_dir);
		pm_dir = -1;
		pm_name[0] = 0;
		return fd;
	}
	return ls_sys_fd_high(fd);
}

int ls_pm_open(const char *dir, uint32_t period_ms, uint32_t hist_len)
{
	uint64_t size = lay_out(hist_len);
	int fd, n;

	period = period_ms;
	fd = create_file(dir);
	if (fd < 0)
		return fd;
	if (ftruncate(fd, (off_t)size)) {
		n = -errno;
		goto fail;
	}
	pm_fd = fd;
	n = map_regions(fd);
	if (n)
		goto fail;
	memcpy(hdr->magic, LSPM_MAGIC, sizeof(LSPM_MAGIC));
	hdr->version = LSPM_VERSION;
	hdr->header_size = LSPM_HEADER_SIZE;
	hdr->pid = (uint32_t)getpid();
	hdr->ppid = (uint32_t)getppid();
	hdr->start_mono_ns = ls_agent.start_mono;
	hdr->start_wall_ns = ls_now_ns(CLOCK_REALTIME);
	hdr->period_ms = period_ms;
	hdr->hist_len = hist_len;
	hdr->mode = ls_sample_rate ? LSNAP_MODE_SAMPLED : LSNAP_MODE_FULL;
	hdr->max_depth = (uint32_t)ls_agent.depth;
	hdr->sample_rate = ls_sample_rate;
	hdr->modules_cap = MODULES_CAP;
	hdr->sites_cap = SITES_CAP;
	hdr->frames_cap = FRAMES_CAP;
	hdr->rows_cap = SITES_CAP;
	hdr->modules_off = reg[R_MODULES].off;
	hdr->sites_off = reg[R_SITES].off;
	hdr->frames_off = reg[R_FRAMES].off;
	hdr->rows_off = reg[R_ROWS].off;
	hdr->hist_off = reg[R_HIST].off;
	hdr->stats_off = reg[R_STATS].off;
	hdr->wide_off = reg[R_WIDE].off;
	hdr->wide_cap = SITES_CAP;
	hdr->tails_off = reg[R_TAILS].off;
	n = ls_agent.cmdline_len < LSPM_CMDLINE_MAX ? (int)ls_agent.cmdline_len
						   : LSPM_CMDLINE_MAX;
	memcpy(hdr->cmdline, ls_agent.cmdline, (size_t)n);
	hdr->cmdline_len = (uint32_t)n;
	owner = getpid();
	return 0;
fail:
	unmap_regions();
	close(fd);
	pm_fd = -1;
	unlinkat(pm_dir, pm_name, 0);
	close(pm_dir);
	pm_dir = -1;
	pm_name[0] = 0;
	return n;
}

static void copy_modules(void)
{
	unsigned i, n = ls_modules_refresh();
	uint32_t gen = ls_modules_gen();

	if (gen == modules_gen_seen && hdr->nmodules == n)
		return;
	if (n > hdr->modules_cap)
		n = hdr->modules_cap;
	if (!region_fit(R_MODULES, n * (uint64_t)sizeof(struct lspm_module)))
		n = (unsigned)(reg[R_MODULES].len / sizeof(struct lspm_module));
	for (i = 0; i < n; i++) {
		const struct ls_module_rec *m = ls_modules_get(i);
		struct lspm_module *d = (struct lspm_module *)at(R_MODULES) + i;
		uint32_t len = m->m.path_len < LSPM_PATH_MAX ? m->m.path_len
							      : LSPM_PATH_MAX;

		d->m = m->m;
		d->m.path_len = len;
		memcpy(d->path, m->path, len);
	}
	hdr->nmodules = i;
	hdr->module_gen = gen;
	modules_gen_seen = gen;
}

/* How many of n sites the site, row and stats regions can hold. */
static uint32_t sites_fit(uint32_t n)
{
	static const struct { int r; uint64_t size; } per[] = {
		{ R_SITES, sizeof(struct lspm_site) },
		{ R_ROWS, 4 },
		{ R_STATS, sizeof(struct lspm_site_brief) },
		{ R_TAILS, sizeof(struct lspm_tail) },
	};
	unsigned i;

	if (n > hdr->sites_cap)
		n = hdr->sites_cap;
	for (i = 0; i < sizeof(per) / sizeof(per[0]); i++)
		if (!region_fit(per[i].r, n * per[i].size) &&
		    reg[per[i].r].len / per[i].size < n)
			n = (uint32_t)(reg[per[i].r].len / per[i].size);
	return n;
}

/* How many outer frames s shares with p (its last ones), and from which
 * of p's frames on. */
static uint32_t shared_tail(const struct ls_site_rec *s,
			    const struct ls_site_rec *p, uint32_t *skip)
{
	uint32_t n = 0;

	while (n < s->nframes && n < p->nframes &&
	       s->frames[s->nframes - 1 - n] == p->frames[p->nframes - 1 - n])
		n++;
	*skip = p->nframes - n;
	return n;
}

/* Sites created since the last sample: record and frames, once, the
 * frames a site shares with the site before it as a tail (lspm.h).
 * Sites the file cannot hold wait for a later sample (counted as
 * dropped). */
static void copy_new_sites(uint32_t n)
{
	struct lspm_site *d;
	struct lspm_tail *tails;
	const struct ls_site_rec *p;
	uint64_t *frames;
	uint32_t id, own, skip = 0;

	n = sites_fit(n);
	d = at(R_SITES);
	tails = at(R_TAILS);
	for (id = hdr->nsites; id < n; id++) {
		struct ls_site_rec *s = ls_site_get(id);

		if (!s)
			break;
		p = id ? ls_site_get(id - 1) : NULL;
		own = s->nframes - (p ? shared_tail(s, p, &skip) : 0);
		if (hdr->frames_used + own > hdr->frames_cap ||
		    !region_fit(R_FRAMES, (hdr->frames_used + own) * 8))
			break;
		frames = at(R_FRAMES);
		d[id].id = id;
		d[id].kind = s->kind;
		d[id].gen = s->gen;
		d[id].nframes = s->nframes;
		d[id].frames_idx = hdr->frames_used;
		if (own < s->nframes)
			tails[id] = (struct lspm_tail){ .site = id, .skip = skip };
		memcpy(frames + hdr->frames_used, s->frames, own * 8ull);
		hdr->frames_used += own;
	}
	hdr->nsites = id;
}

static int scratch_fit(uint32_t n)
{
	uint32_t cap = scratch.cap ? scratch.cap : 1024;
	int64_t *p;

	if (n <= scratch.cap)
		goto zero;
	while (cap < n)
		cap *= 2;
	p = ls_sys_map(cap * 4ull * sizeof(int64_t));
	if (!p)
		return -ENOMEM;
	if (scratch.cap)
		ls_sys_unmap(scratch.live_b, scratch.cap * 4ull * sizeof(int64_t));
	scratch.live_b = p;
	scratch.live_k = p + cap;
	scratch.alloc_b = p + 2 * (size_t)cap;
	scratch.alloc_k = p + 3 * (size_t)cap;
	scratch.cap = cap;
zero:
	memset(scratch.live_b, 0, scratch.cap * 4ull * sizeof(int64_t));
	return 0;
}

static void add_pending(const struct ls_pending *p, void *arg)
{
	uint32_t id = p->site->id;

	if (id >= scratch.cap)
		return;
	scratch.live_b[id] += p->live_bytes;
	scratch.live_k[id] += p->live_blocks;
	scratch.alloc_b[id] += (int64_t)ls_pending_alloc_bytes(p);
	scratch.alloc_k[id] += (int64_t)ls_pending_alloc_blocks(p);
}

/* The same, for a sample that takes the sites' stats too. */
static void add_pending_stats(const struct ls_pending *p, void *arg)
{
	if (p->site->id >= scratch.cap)
		return;
	add_pending(p, arg);
	ls_stats_add_pending(ls_stats_shared(), p);
}

/*
 * r and its histograms h in a brief slot b (its wide and since kept);
 * 0 when they do not fit one: more buckets than pairs, or a count past
 * the pair's bits.
 */
static int brief_pack(const struct lsnap_site_stats *r, const uint64_t *h,
		      struct lspm_site_brief *b)
{
	unsigned i, n = 0;

	memset(b->pair, 0, sizeof(b->pair));
	for (i = 0; i < 2 * LS_HIST_BUCKETS; i++) {
		if (!h[i])
			continue;
		if (n == LSPM_BRIEF_PAIRS || h[i] > LSPM_PAIR_COUNT)
			return 0;
		b->pair[n++] = h[i] | (i >= LS_HIST_BUCKETS ? LSPM_PAIR_LIFE : 0) |
			       (uint64_t)(i % LS_HIST_BUCKETS) <<
			       LSPM_PAIR_BUCKET_SHIFT;
	}
	b->peak_bytes = r->peak_bytes;
	b->peak_blocks = r->peak_blocks;
	b->temp_bytes = r->temp_bytes;
	b->temp_blocks = r->temp_blocks;
	return 1;
}

/* Room for one more wide slot. */
static int wide_fit(void)
{
	return hdr->wide_used < hdr->wide_cap &&
	       region_fit(R_WIDE, (hdr->wide_used + 1ull) *
			  sizeof(struct lspm_site_stats));
}

/*
 * Site id's stats into its slot: the brief one while they fit, else a
 * wide one, kept from then on.  A slot is written only when its contents
 * change: most sites' stats stop changing soon, and a page never written
 * takes no memory.  With no room for a wide slot the brief one keeps its
 * last figures.
 */
static void put_stats(uint32_t id, const struct lsnap_site_stats *r,
		      const uint64_t *h)
{
	struct lspm_site_brief *d = (struct lspm_site_brief *)at(R_STATS) + id;
	struct lspm_site_brief b = *d;
	struct lspm_site_stats *w;

	if (!b.wide && !brief_pack(r, h, &b)) {
		if (!wide_fit())
			return;
		b.wide = ++hdr->wide_used;
	}
	if (b.wide) {
		w = (struct lspm_site_stats *)at(R_WIDE) + (b.wide - 1);
		w->s = *r;
		memcpy(w->size_hist, h, sizeof(w->size_hist) + sizeof(w->life_hist));
	}
	if (memcmp(&b, d, sizeof(b)))
		*d = b;
}

/* Peak, temporaries and histograms of every site (a sampled site keeps
 * its last figures if the sums could not grow). */
static void sample_stats(void)
{
	const struct lspm_site_stats *w = at(R_WIDE);
	uint64_t h[2 * LS_HIST_BUCKETS];
	struct lsnap_site_stats r;
	int64_t sum_b = 0, sum_k = 0;
	uint32_t id;

	_Static_assert(sizeof(h) == sizeof(w->size_hist) * 2, "histograms");
	for (id = 0; id < hdr->nsites; id++) {
		struct ls_site_rec *s = ls_site_get(id);

		if (!s)
			continue;
		ls_stats_site(ls_stats_shared(), s, &r, h);
		put_stats(id, &r, h);
		sum_b += r.peak_bytes;
		sum_k += r.peak_blocks;
	}
	hdr->peak.peak_mono_ns = __atomic_load_n(&ls_peak.peak_mono,
						 __ATOMIC_RELAXED);
	hdr->peak.sites_bytes = sum_b;
	hdr->peak.sites_blocks = sum_k;
}

/* Room for one more history row. */
static int row_fit(void)
{
	return hdr->rows_used < hdr->rows_cap &&
	       region_fit(R_HIST, (hdr->rows_used + 1ull) * hdr->hist_len * 8);
}

/*
 * Sample t of site id's history: lb, its live bytes now, old, what its
 * record in the file says (the last sample's).  A site gets a history row
 * only when its live bytes change after it first held memory: until then
 * its history is 0 before `since` and its record's live bytes from it on
 * (lspm_hist_sample()), which the row takes over.  Most sites never get
 * one (python-hold: 8.6k of 8.7k holding memory at a sample held the
 * same bytes at every sample), and a row costs hist_len * 8 bytes of
 * shared memory.
 */
static void put_sample(uint32_t id, uint64_t t, int64_t old, int64_t lb)
{
	struct lspm_site_brief *b = (struct lspm_site_brief *)at(R_STATS) + id;
	uint32_t *rows = at(R_ROWS), len = hdr->hist_len;
	int64_t *ring;
	uint64_t k;

	if (!rows[id]) {
		if (lb == old)
			return;
		if (!old && t < UINT32_MAX) {	/* its first bytes */
			b->since = (uint32_t)t;
			return;
		}
		if (!row_fit())
			return;
		rows[id] = ++hdr->rows_used;
		ring = (int64_t *)at(R_HIST) + (uint64_t)(rows[id] - 1) * len;
		for (k = t >= len ? t - len + 1 : 0; k < t; k++)
			ring[k % len] = lspm_hist_sample(NULL, len, k, b->since,
							 old);
	}
	ring = (int64_t *)at(R_HIST) + (uint64_t)(rows[id] - 1) * len;
	ring[t % len] = lb;
}

static void sample_sites(uint32_t n, uint64_t tick, struct lsnap_totals *t)
{
	struct lspm_site *d = at(R_SITES);
	uint32_t id;
	uint64_t missing = 0;

	for (id = 0; id < n; id++) {
		struct ls_site_rec *s = ls_site_get(id);
		int64_t lb, lk;

		if (!s)
			continue;
		lb = ls_sample_unscale(__atomic_load_n(&s->live_bytes, __ATOMIC_RELAXED) +
			     scratch.live_b[id]);
		lk = ls_sample_unscale(__atomic_load_n(&s->live_blocks, __ATOMIC_RELAXED) +
			     scratch.live_k[id]);
		if (id >= hdr->nsites) {	/* not in the file */
			missing += (uint64_t)(lk > 0 ? lk : 0);
			continue;
		}
		put_sample(id, tick, d[id].live_bytes, lb);
		d[id].live_bytes = lb;
		d[id].live_blocks = lk;
		d[id].allocated_bytes = (uint64_t)ls_sample_unscale((int64_t)
			__atomic_load_n(&s->alloc_bytes, __ATOMIC_RELAXED) +
			scratch.alloc_b[id]);
		d[id].allocated_blocks = (uint64_t)ls_sample_unscale((int64_t)
			__atomic_load_n(&s->alloc_blocks, __ATOMIC_RELAXED) +
			scratch.alloc_k[id]);
		if (!lsnap_kind_live(s->kind))
			continue;	/* apart, as in snapshots */
		t->live_bytes += (uint64_t)(lb > 0 ? lb : 0);
		t->live_blocks += (uint64_t)(lk > 0 ? lk : 0);
		t->allocated_bytes += d[id].allocated_bytes;
		t->allocated_blocks += d[id].allocated_blocks;
	}
	hdr->dropped = __atomic_load_n(&ls_agent_dropped, __ATOMIC_RELAXED) +
		       missing;
}

static void sample_process(struct lsnap_totals *t)
{
	_Static_assert(LS_FN_COUNT <= LSPM_NCALLS, "post-mortem call slots");
	ls_figures_calls(hdr->calls);
	hdr->ncalls = LS_FN_COUNT;
	ls_figures_peak(t);
	hdr->totals = *t;
	ls_figures_mallinfo(&hdr->mallinfo);
	hdr->nthreads = ls_thread_seen();
}

/* One more in the header's seq word.  The header is packed and starts
 * the mapping, so the word is an aligned uint64_t (LS_PACKED_WORD). */
static void seq_bump(void)
{
	uint64_t *seq = LS_PACKED_WORD(uint64_t, hdr, seq);

	__atomic_store_n(seq, *seq + 1, __ATOMIC_RELEASE);
}

/* A sample; full: with the modules, the sites' stats and the process's
 * figures, else the sites and their history only. */
static void tick(int full)
{
	struct lsnap_totals t = { 0 };
	uint32_t n;

	if (!hdr || owner != getpid())
		return;
	n = ls_site_count();
	if (scratch_fit(n + 1024))
		return;
	/* Under the snapshot lock, grown ahead by ls_snapwrite_prepare();
	 * short of memory, the stats of sites whose pending entries it has
	 * no room for come from their flushed counters only. */
	if (full)
		ls_stats_fit(ls_stats_shared());
	ls_thread_peak_settle();
	seq_bump();
	if (full)
		copy_modules();
	copy_new_sites(n);
	ls_thread_each_pending(full ? add_pending_stats : add_pending, NULL);
	sample_sites(n, hdr->ticks, &t);
	if (full) {
		sample_stats();
		sample_process(&t);
	}
	hdr->last_mono_ns = ls_now_ns(CLOCK_MONOTONIC);
	hdr->last_wall_ns = ls_now_ns(CLOCK_REALTIME);
	if (!hdr->ticks)
		hdr->first_mono_ns = hdr->last_mono_ns;
	hdr->ticks++;
	seq_bump();
}

void ls_pm_tick(void)
{
	tick(1);
}

void ls_pm_tick_exit(void)
{
	tick(1);
	exit_sampled = 1;
}

int ls_pm_exit_sampled(void)
{
	return exit_sampled;
}

void ls_pm_restart(void)
{
	struct lspm_site_brief *b;
	const uint32_t *rows;
	uint32_t id;

	if (!hdr || owner != getpid())
		return;
	seq_bump();
	memset(at(R_HIST), 0,
	       (uint64_t)hdr->rows_used * hdr->hist_len * 8);
	/* A site without a row holds from the reset on what it held. */
	b = at(R_STATS);
	rows = at(R_ROWS);
	for (id = 0; id < hdr->nsites; id++)
		if (!rows[id] && b[id].since)
			b[id].since = 0;
	hdr->ticks = 0;
	seq_bump();
}

void ls_pm_close(int keep)
{
	if (!hdr || owner != getpid())
		return;
	hdr->exited = 1;
	if (!keep && pm_name[0])
		unlinkat(pm_dir, pm_name, 0);
}

void ls_pm_forget_child(void)
{
	unmap_regions();
	if (pm_fd >= 0)		/* the parent's */
		close(pm_fd);
	if (pm_dir >= 0)
		close(pm_dir);
	pm_fd = pm_dir = -1;
	pm_name[0] = 0;
	owner = 0;
	exit_sampled = 0;
	scratch.cap = 0;	/* the child's copy stays mapped: never reused */
}

const struct lspm_header *ls_pm_header(void)
{
	return owner == getpid() ? hdr : NULL;
}

int ls_pm_history(const struct lspm_header *h, uint32_t site,
		  struct ls_pm_hist *o)
{
	uint32_t row;

	memset(o, 0, sizeof(*o));
	if (!h || h != hdr || site >= hdr->nsites)
		return 0;
	row = ((const uint32_t *)at(R_ROWS))[site];
	if (row)
		o->ring = (const int64_t *)at(R_HIST) +
			  (uint64_t)(row - 1) * hdr->hist_len;
	o->since = ((const struct lspm_site_brief *)at(R_STATS))[site].since;
	o->live = ((const struct lspm_site *)at(R_SITES))[site].live_bytes;
	return o->ring || o->live;
}

/* The header and the mapped part of each region. */
static size_t pm_bytes(int resident)
{
	size_t n;
	int i;

	if (!ls_pm_header())
		return 0;
	n = resident ? ls_sys_resident(hdr, LSPM_HEADER_SIZE) : LSPM_HEADER_SIZE;
	for (i = 0; i < R_COUNT; i++)
		if (reg[i].base)
			n += resident ? ls_sys_resident(reg[i].base, reg[i].len) :
			     reg[i].len;
	return n;
}

size_t ls_pm_mapped(void)
{
	return pm_bytes(0);
}

size_t ls_pm_resident(void)
{
	return pm_bytes(1);
}

uint32_t ls_pm_period_ms(void)
{
	return period;
}

/* renameat2(RENAME_NOREPLACE), plain renameat where the file system
 * cannot say (EINVAL) or the kernel is older than 3.15 (ENOSYS); 0 or
 * -errno. */
static int rename_new(int from, const char *name, int to)
{
	if (!renameat2(from, name, to, name, RENAME_NOREPLACE))
		return 0;
	if ((errno == EINVAL || errno == ENOSYS) &&
	    !renameat(from, name, to, name))
		return 0;
	return -errno;
}

int ls_pm_move(int dfd, uid_t uid, gid_t gid)
{
	struct stat st;
	int n, nd;

	if (!hdr || owner != getpid() || !pm_name[0] || fstat(pm_fd, &st))
		return -ENOENT;
	nd = ls_sys_fd_high(fcntl(dfd, F_DUPFD_CLOEXEC, 0));
	if (nd < 0)
		return -errno;
	/* The mapping stays: only the name and the owner change, the owner
	 * through the fd, the name through both directories' fds (a name
	 * the new user planted there goes, never followed).  Across file
	 * systems the file cannot follow, and the new user could not remove
	 * it at exit: it goes now (no post-mortem file after the switch;
	 * the mapping keeps serving the samples). */
	if (fchown(pm_fd, uid, gid)) {
		n = -errno;
		goto out;
	}
	n = rename_new(pm_dir, pm_name, nd);
	if (n == -EEXIST) {
		unlinkat(nd, pm_name, 0);
		n = rename_new(pm_dir, pm_name, nd);
	}
	if (n == -EXDEV && !unlinkat(pm_dir, pm_name, 0))
		pm_name[0] = 0;
	if (n) {
		(void)!fchown(pm_fd, st.st_uid, st.st_gid);
		goto out;
	}
	close(pm_dir);
	pm_dir = nd;
	return 0;
out:
	close(nd);
	return n;
}
