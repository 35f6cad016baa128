/*
 * pmfile.c - the post-mortem file and the growth sampler.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
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

static struct lspm_header *hdr;
static size_t map_len;
static pid_t owner;
static char path[4200];
static uint32_t period = 1000;
static uint32_t modules_gen_seen;

/* Per-site deltas still in threads' pending caches, for one sample. */
static struct {
	int64_t *live_b, *live_k, *alloc_b, *alloc_k;
	uint32_t cap;
} scratch;

static inline void *at(uint64_t off)
{
	return (char *)hdr + off;
}

int ls_pm_open(const char *dir, uint32_t period_ms, uint32_t hist_len)
{
	uint64_t off = LSPM_HEADER_SIZE;
	int fd, n;

	period = period_ms;
	n = snprintf(path, sizeof(path), "%s/%d.pm", dir, (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(path))
		return -ENAMETOOLONG;
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	map_len = off + MODULES_CAP * sizeof(struct lspm_module) +
		  SITES_CAP * sizeof(struct lspm_site) + FRAMES_CAP * 8ull +
		  SITES_CAP * 4ull + (uint64_t)SITES_CAP * hist_len * 8 +
		  SITES_CAP * (uint64_t)sizeof(struct lspm_site_stats);
	if (ftruncate(fd, (off_t)map_len)) {
		n = -errno;
		goto fail;
	}
	hdr = (void *)syscall(SYS_mmap, NULL, map_len, PROT_READ | PROT_WRITE,
			      MAP_SHARED, fd, 0);
	if (hdr == MAP_FAILED) {
		hdr = NULL;
		n = -ENOMEM;
		goto fail;
	}
	close(fd);
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
	hdr->modules_off = off;
	off += MODULES_CAP * sizeof(struct lspm_module);
	hdr->sites_off = off;
	off += SITES_CAP * sizeof(struct lspm_site);
	hdr->frames_off = off;
	off += FRAMES_CAP * 8ull;
	hdr->rows_off = off;
	hdr->rows_cap = SITES_CAP;
	off += SITES_CAP * 4ull;
	hdr->hist_off = off;
	off += (uint64_t)SITES_CAP * hist_len * 8;
	hdr->stats_off = off;
	n = ls_agent.cmdline_len < LSPM_CMDLINE_MAX ? (int)ls_agent.cmdline_len
						   : LSPM_CMDLINE_MAX;
	memcpy(hdr->cmdline, ls_agent.cmdline, (size_t)n);
	hdr->cmdline_len = (uint32_t)n;
	owner = getpid();
	return 0;
fail:
	close(fd);
	unlink(path);
	return n;
}

static void copy_modules(void)
{
	unsigned i, n = ls_modules_refresh();
	uint32_t gen = ls_modules_gen();

	if (gen == modules_gen_seen && hdr->nmodules == n)
		return;
	for (i = 0; i < n && i < hdr->modules_cap; i++) {
		const struct ls_module_rec *m = ls_modules_get(i);
		struct lspm_module *d = (struct lspm_module *)at(hdr->modules_off) + i;
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

/* Sites created since the last sample: record and frames, once. */
static void copy_new_sites(uint32_t n)
{
	struct lspm_site *d = at(hdr->sites_off);
	uint64_t *frames = at(hdr->frames_off);
	uint32_t id;

	for (id = hdr->nsites; id < n && id < hdr->sites_cap; id++) {
		struct ls_site_rec *s = ls_site_get(id);

		if (!s || hdr->frames_used + s->nframes > hdr->frames_cap)
			break;
		d[id].id = id;
		d[id].kind = s->kind;
		d[id].gen = s->gen;
		d[id].nframes = s->nframes;
		d[id].frames_idx = hdr->frames_used;
		memcpy(frames + hdr->frames_used, s->frames, s->nframes * 8ull);
		hdr->frames_used += s->nframes;
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
	scratch.alloc_b[id] += (int64_t)p->alloc_bytes;
	scratch.alloc_k[id] += (int64_t)p->alloc_blocks;
	ls_stats_add_pending(ls_stats_shared(), p);
}

/* Peak, temporaries and histograms of every site (a sampled site keeps
 * its last figures if the sums could not grow). */
static void sample_stats(void)
{
	struct lspm_site_stats *d = at(hdr->stats_off);
	uint64_t h[2 * LS_HIST_BUCKETS];
	struct lsnap_site_stats r;
	int64_t sum_b = 0, sum_k = 0;
	uint32_t id;

	_Static_assert(sizeof(h) == sizeof(d->size_hist) * 2, "histograms");
	for (id = 0; id < hdr->nsites; id++) {
		struct ls_site_rec *s = ls_site_get(id);

		if (!s)
			continue;
		if (ls_stats_site(ls_stats_shared(), s, &r, h) ||
		    d[id].s.nbuckets) {
			d[id].s = r;
			memcpy(d[id].size_hist, h, sizeof(h));
		}
		sum_b += r.peak_bytes;
		sum_k += r.peak_blocks;
	}
	hdr->peak.peak_mono_ns = __atomic_load_n(&ls_peak.peak_mono,
						 __ATOMIC_RELAXED);
	hdr->peak.sites_bytes = sum_b;
	hdr->peak.sites_blocks = sum_k;
}

/*
 * A site gets a history row the first time it holds memory at a sample:
 * before that its samples were all 0, which an untouched (sparse, zero)
 * row says as well.  Most sites of a big program never hold anything at a
 * sample (a Python run: 19k sites, 8k holding memory at its end), and a
 * row costs hist_len * 8 bytes of shared memory.
 */
static void sample_sites(uint64_t slot, struct lsnap_totals *t)
{
	struct lspm_site *d = at(hdr->sites_off);
	uint32_t *rows = at(hdr->rows_off);
	int64_t *hist = at(hdr->hist_off);
	uint32_t id, row;

	for (id = 0; id < hdr->nsites; id++) {
		struct ls_site_rec *s = ls_site_get(id);
		int64_t lb, lk;

		if (!s)
			continue;
		lb = ls_sample_unscale(__atomic_load_n(&s->live_bytes, __ATOMIC_RELAXED) +
			     scratch.live_b[id]);
		lk = ls_sample_unscale(__atomic_load_n(&s->live_blocks, __ATOMIC_RELAXED) +
			     scratch.live_k[id]);
		d[id].live_bytes = lb;
		d[id].live_blocks = lk;
		d[id].allocated_bytes = (uint64_t)ls_sample_unscale((int64_t)
			__atomic_load_n(&s->alloc_bytes, __ATOMIC_RELAXED) +
			scratch.alloc_b[id]);
		d[id].allocated_blocks = (uint64_t)ls_sample_unscale((int64_t)
			__atomic_load_n(&s->alloc_blocks, __ATOMIC_RELAXED) +
			scratch.alloc_k[id]);
		row = rows[id];
		if (!row && lb && hdr->rows_used < hdr->rows_cap)
			rows[id] = row = ++hdr->rows_used;
		if (row)
			hist[(uint64_t)(row - 1) * hdr->hist_len + slot] = lb;
		if (!lsnap_kind_live(s->kind))
			continue;	/* apart, as in snapshots */
		t->live_bytes += (uint64_t)(lb > 0 ? lb : 0);
		t->live_blocks += (uint64_t)(lk > 0 ? lk : 0);
		t->allocated_bytes += d[id].allocated_bytes;
		t->allocated_blocks += d[id].allocated_blocks;
	}
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

void ls_pm_tick(void)
{
	struct lsnap_totals t = { 0 };
	uint32_t n;
	uint64_t slot;

	if (!hdr || owner != getpid())
		return;
	n = ls_site_count();
	if (scratch_fit(n + 1024))
		return;
	/* Under the snapshot lock, grown ahead by ls_snapwrite_prepare();
	 * short of memory, the stats of sites beyond what it holds come from
	 * their flushed counters only. */
	ls_stats_fit(ls_stats_shared(), n + 1024);
	ls_thread_peak_settle();
	__atomic_store_n(&hdr->seq, hdr->seq + 1, __ATOMIC_RELEASE);
	copy_modules();
	copy_new_sites(n);
	ls_thread_each_pending(add_pending, NULL);
	slot = hdr->ticks % hdr->hist_len;
	sample_sites(slot, &t);
	sample_stats();
	sample_process(&t);
	hdr->last_mono_ns = ls_now_ns(CLOCK_MONOTONIC);
	hdr->last_wall_ns = ls_now_ns(CLOCK_REALTIME);
	if (!hdr->ticks)
		hdr->first_mono_ns = hdr->last_mono_ns;
	hdr->ticks++;
	__atomic_store_n(&hdr->seq, hdr->seq + 1, __ATOMIC_RELEASE);
}

void ls_pm_restart(void)
{
	if (!hdr || owner != getpid())
		return;
	__atomic_store_n(&hdr->seq, hdr->seq + 1, __ATOMIC_RELEASE);
	memset(at(hdr->hist_off), 0,
	       (uint64_t)hdr->rows_used * hdr->hist_len * 8);
	hdr->ticks = 0;
	__atomic_store_n(&hdr->seq, hdr->seq + 1, __ATOMIC_RELEASE);
}

void ls_pm_close(int keep)
{
	if (!hdr || owner != getpid())
		return;
	hdr->exited = 1;
	if (!keep && path[0])
		unlink(path);
}

void ls_pm_forget_child(void)
{
	if (hdr)
		syscall(SYS_munmap, hdr, map_len);
	hdr = NULL;
	owner = 0;
	scratch.cap = 0;	/* the child's copy stays mapped: never reused */
}

const struct lspm_header *ls_pm_header(void)
{
	return owner == getpid() ? hdr : NULL;
}

const int64_t *ls_pm_history(uint32_t site)
{
	uint32_t row;

	if (!hdr || owner != getpid() || site >= hdr->nsites)
		return NULL;
	row = ((const uint32_t *)at(hdr->rows_off))[site];
	if (!row)
		return NULL;	/* never held memory at a sample */
	return (const int64_t *)at(hdr->hist_off) +
	       (uint64_t)(row - 1) * hdr->hist_len;
}

uint32_t ls_pm_period_ms(void)
{
	return period;
}

int ls_pm_move(const char *dir, uid_t uid, gid_t gid)
{
	char to[sizeof(path)];
	int n;

	if (!hdr || owner != getpid())
		return -ENOENT;
	n = snprintf(to, sizeof(to), "%s/%d.pm", dir, (int)getpid());
	if (n < 0 || (size_t)n >= sizeof(to))
		return -ENAMETOOLONG;
	/* The mapping stays: only the name and the owner change.  Across
	 * file systems the file cannot follow, and the new user could not
	 * remove it at exit: it goes now (no post-mortem file after the
	 * switch; the mapping keeps serving the samples). */
	if (rename(path, to)) {
		n = -errno;
		if (n == -EXDEV && !unlink(path))
			path[0] = 0;
		return n;
	}
	if (chown(to, uid, gid)) {
		n = -errno;
		rename(to, path);
		return n;
	}
	memcpy(path, to, sizeof(to));
	return 0;
}
