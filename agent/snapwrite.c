/*
 * snapwrite.c - snapshot serialization.
 *
 * Per-site live figures are recomputed from the live tables, not taken
 * from the counters: that makes them exactly agree with the block list of
 * the same snapshot, and lets the threads' counters be batched.
 */
#include <errno.h>
#include <stddef.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>
#include "state.h"
#include "arena.h"
#include "dllock.h"
#include "live.h"
#include "mmaps.h"
#include "modules.h"
#include "pmfile.h"
#include "sample.h"
#include "site.h"
#include "snapwrite.h"
#include "stats.h"
#include "figures.h"
#include "capture.h"
#include "sys.h"
#include "thread.h"

#define WBUF (64u << 10)

/*
 * The bytes are hashed where they are, in buf, as it fills (put_end) or
 * goes out (flush_out): one pass over whole words, rather than one call
 * per field.  buf is flushed only when full, so every piece but the
 * last is a multiple of 8 bytes long.
 */
struct writer {
	int fd;
	int err;
	int is_socket;
	uint64_t blocked_ns;	/* spent waiting in send() so far */
	int hashed_all;		/* put_end() took the hash: no more */
	uint32_t nrecords;
	uint32_t nblock_recs;	/* BLOCKS records written */
	struct lsnap_hash hash;
	size_t hashed;		/* bytes of buf already hashed */
	size_t len;
	unsigned char buf[WBUF];
};

/* Per-site sums for one snapshot. */
struct sums {
	uint32_t nsites;
	uint64_t unsummed;	/* blocks of sites beyond nsites (memory ran
				   out): reported with the dropped events */
	int64_t *live_bytes, *live_blocks;
	uint64_t *alloc_bytes, *alloc_blocks;
	struct ls_stats_sums *stats;	/* ls_stats_shared() */
	int64_t peak_sum_bytes, peak_sum_blocks;
};

static ls_lock_t snap_lock = LS_LOCK_INIT;
static struct writer w_static;

/* The bytes of buf not hashed yet, unless the hash is taken. */
static void hash_buf(struct writer *w)
{
	if (!w->hashed_all)
		lsnap_hash_add(&w->hash, w->buf + w->hashed, w->len - w->hashed);
	w->hashed = w->len;
}

uint64_t ls_snapwrite_send_budget_ns;

static int flush_out(struct writer *w)
{
	size_t off = 0;

	hash_buf(w);
	while (!w->err && off < w->len) {
		uint64_t t0 = w->is_socket ? ls_now_ns(CLOCK_MONOTONIC) : 0;
		ssize_t n = w->is_socket ?
			send(w->fd, w->buf + off, w->len - off, MSG_NOSIGNAL) :
			write(w->fd, w->buf + off, w->len - off);

		/* A reader too slow for the budget loses the snapshot: the
		 * control thread is not its to hold. */
		if (w->is_socket) {
			w->blocked_ns += ls_now_ns(CLOCK_MONOTONIC) - t0;
			if (ls_snapwrite_send_budget_ns &&
			    w->blocked_ns > ls_snapwrite_send_budget_ns) {
				w->err = -ETIMEDOUT;
				break;
			}
		}
		if (n < 0 && errno == ENOTSOCK && w->is_socket) {
			w->is_socket = 0;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			w->err = n < 0 ? -errno : -EIO;
		else
			off += (size_t)n;
	}
	w->len = 0;
	w->hashed = 0;
	return w->err;
}

/* The bytes that do not fit in buf before it goes out. */
static void __attribute__((noinline))
put_slow(struct writer *w, const void *p, size_t len)
{
	const unsigned char *c = p;

	while (len && !w->err) {
		size_t room = WBUF - w->len, k = len < room ? len : room;

		memcpy(w->buf + w->len, c, k);
		w->len += k;
		c += k;
		len -= k;
		if (w->len == WBUF)
			flush_out(w);
	}
}

/* Inline: most pieces are a struct of constant size, copied in a few
 * moves rather than a call to memcpy (960k pieces at an exit). */
static inline void put(struct writer *w, const void *p, size_t len)
{
	if (len < WBUF - w->len) {
		memcpy(w->buf + w->len, p, len);
		w->len += len;
	} else {
		put_slow(w, p, len);
	}
}

static void record(struct writer *w, uint32_t tag, uint32_t len)
{
	struct lsnap_rec_hdr h = { .tag = tag, .len = len };

	put(w, &h, sizeof(h));
	w->nrecords++;
}

static void put_header(struct writer *w, enum lsnap_reason reason,
		       const struct ls_reach_result *res)
{
	struct lsnap_header h = {
		/* A check's child writes for the process it is an image of. */
		.pid = res ? (uint32_t)res->pid : (uint32_t)getpid(),
		.ppid = res ? (uint32_t)res->ppid : (uint32_t)getppid(),
		.wall_ns = ls_now_ns(CLOCK_REALTIME),
		.mono_ns = ls_now_ns(CLOCK_MONOTONIC),
		.start_mono_ns = ls_agent.start_mono,
		.sample_rate = ls_agent.sample_rate,
		.mode = ls_agent.sample_rate ? LSNAP_MODE_SAMPLED : LSNAP_MODE_FULL,
		.reason = reason,
		.source = LSNAP_SOURCE_AGENT,
		.max_depth = (uint32_t)ls_agent.depth,
		.nthreads = ls_thread_seen(),
		.module_gen = ls_modules_gen(),
	};
	struct lsnap_file_hdr f = { .magic = LSNAP_MAGIC, .version = LSNAP_VERSION };

	put(w, &f, sizeof(f));
	record(w, LSNAP_HEADER, sizeof(h));
	put(w, &h, sizeof(h));
	if (ls_agent.cmdline_len) {
		record(w, LSNAP_COMMAND, (uint32_t)ls_agent.cmdline_len);
		put(w, ls_agent.cmdline, ls_agent.cmdline_len);
	}
}

static void put_calls(struct writer *w)
{
	struct lsnap_call c[LS_FN_COUNT];

	ls_figures_calls(c);
	record(w, LSNAP_CALLS, sizeof(c));
	put(w, c, sizeof(c));
}

static void put_mallinfo(struct writer *w, const struct ls_reach_result *res)
{
	struct lsnap_mallinfo m;

	if (res)
		m = res->mallinfo;
	else
		ls_figures_mallinfo(&m);
	record(w, LSNAP_MALLINFO, sizeof(m));
	put(w, &m, sizeof(m));
}

static void put_unwind(struct writer *w)
{
	struct lsnap_unwind u = { .unwinder = ls_capture_unwinder() };
	uint64_t walks, hits;

	ls_unwind_counts(&walks, &hits);
	u.walks = walks;
	u.memo_hits = hits;
	u.check_mismatches = ls_capture_mismatches();
	if (u.check_mismatches)
		ls_capture_report_mismatches();
	record(w, LSNAP_UNWIND, sizeof(u));
	put(w, &u, sizeof(u));
}

static void put_attach(struct writer *w)
{
	struct lsnap_attach a = {
		.wall_ns = ls_agent.attach_wall_ns,
		.mono_ns = ls_agent.start_mono,
	};

	if (!a.wall_ns)
		return;
	record(w, LSNAP_ATTACH, sizeof(a));
	put(w, &a, sizeof(a));
}

/* Which PID and mount namespaces the pid and paths of this snapshot are
 * in, for a reader outside them (docs/CONTAINERS.md). */
static void put_namespaces(struct writer *w)
{
	struct lsnap_namespaces n = { 0 };
	struct stat st;

	if (!stat("/proc/self/ns/pid", &st))
		n.pid_ns = st.st_ino;
	if (!stat("/proc/self/ns/mnt", &st))
		n.mnt_ns = st.st_ino;
	if (!n.pid_ns && !n.mnt_ns)
		return;
	record(w, LSNAP_NAMESPACES, sizeof(n));
	put(w, &n, sizeof(n));
}

static void put_dropped(struct writer *w, const struct sums *s)
{
	struct lsnap_dropped d = {
		.events = __atomic_load_n(&ls_agent_dropped, __ATOMIC_RELAXED) +
			  s->unsummed,
	};

	record(w, LSNAP_DROPPED, sizeof(d));
	put(w, &d, sizeof(d));
}

/* The agent's own memory (a syscall per 256 KiB of its mappings). */
static void put_agent_memory(struct writer *w)
{
	struct lsnap_agent_memory m = {
		.live_mapped = ls_live_mapped(),
		.live_resident = ls_live_resident(),
		.live_entries = ls_live_count(),
		.arena_mapped = ls_arena_mapped(),
		.postmortem_resident = ls_pm_resident(),
		.thread_records = ls_thread_records(),
	};
	size_t mapped;

	_Static_assert(sizeof(m) == 64, "AGENT_MEMORY is 64 bytes");
	m.resident = ls_sys_own_resident(&mapped) + m.postmortem_resident;
	m.mapped = mapped;
	if (ls_pm_header())
		m.mapped += ls_pm_mapped();
	record(w, LSNAP_AGENT_MEMORY, sizeof(m));
	put(w, &m, sizeof(m));
}

/* What the agent could not do as asked (state.h), when anything. */
static void put_notes(struct writer *w)
{
	size_t len;
	const char *n = ls_state_notes(&len);

	if (!len)
		return;
	record(w, LSNAP_NOTES, (uint32_t)len);
	put(w, n, len);
}

static void put_modules(struct writer *w, const struct ls_reach_result *res)
{
	/* A frozen image must not refresh (no lock, no allocator); a
	 * concurrent check writes from the live process, as a snapshot. */
	unsigned i, n = res && !res->live ? ls_modules_count() :
					    ls_modules_refresh();

	for (i = 0; i < n; i++) {
		const struct ls_module_rec *m = ls_modules_get(i);

		record(w, LSNAP_MODULE, sizeof(m->m) + m->m.path_len);
		put(w, &m->m, sizeof(m->m));
		put(w, m->path, m->m.path_len);
	}
}

/*
 * Who held the loader's lock when a walk for this snapshot was refused:
 * the check's walks (a check's flag), else the module table's refresh,
 * whose MODULE records are then an earlier walk's (MODULE_WALK says
 * when).  Nothing when every walk was done.
 */
static void put_loader(struct writer *w, const struct ls_reach_result *res)
{
	uint64_t walk_ns;
	uint32_t refused;
	pid_t mod = ls_modules_stale(&walk_ns, &refused);
	struct lsnap_module_walk mw = { .walk_mono_ns = walk_ns,
					.refused = refused };
	struct lsnap_loader l = { 0 };
	int check = res && (res->totals.flags & LSNAP_REACH_LOADER_HELD);

	if (!check && !mod)
		return;
	l.tid = check ? (uint32_t)ls_dllock_missed() : 0;
	if (!l.tid)
		l.tid = (uint32_t)mod;
	record(w, LSNAP_LOADER, sizeof(l));
	put(w, &l, sizeof(l));
	if (!mod)
		return;
	record(w, LSNAP_MODULE_WALK, sizeof(mw));
	put(w, &mw, sizeof(mw));
}

/*
 * Working memory kept from one snapshot to the next (never unmapped), and
 * grown ahead by ls_snapwrite_prepare(): an exit snapshot must not need
 * memory the program may have used up.
 */
struct keep {
	void *p;
	size_t bytes;
};
static struct keep keep_sums, keep_scratch;

/* k holds at least want bytes, if the memory can be had; else it keeps
 * what it had.  0, or -ENOMEM with k unchanged. */
static int keep_grow(struct keep *k, size_t want)
{
	void *p;

	if (k->bytes >= want)
		return 0;
	want += want / 2;
	p = ls_sys_map(want);
	if (!p)
		return -ENOMEM;
	ls_sys_unmap(k->p, k->bytes);
	k->p = p;
	k->bytes = want;
	return 0;
}

#define SUMS_BYTES(n) ((size_t)(n) * 4 * sizeof(uint64_t))

static int sums_init(struct sums *s)
{
	/* Room for sites created while the snapshot runs; blocks of sites
	 * beyond it are left for the next snapshot. */
	uint32_t n = ls_site_count() + 1024;

	if (keep_grow(&keep_sums, SUMS_BYTES(n)))
		n = (uint32_t)(keep_sums.bytes / SUMS_BYTES(1));
	if (!n)
		return -ENOMEM;
	memset(keep_sums.p, 0, SUMS_BYTES(n));
	s->nsites = n;
	s->live_bytes = keep_sums.p;
	s->live_blocks = s->live_bytes + n;
	s->alloc_bytes = (uint64_t *)(s->live_blocks + n);
	s->alloc_blocks = s->alloc_bytes + n;
	/* Short of memory, the stats of sites whose pending entries it
	 * has no room for come from their flushed counters only. */
	s->stats = ls_stats_shared();
	ls_stats_fit(s->stats);
	return 0;
}

void ls_snapwrite_prepare(void)
{
	keep_grow(&keep_sums, SUMS_BYTES(ls_site_count() + 1024));
	ls_stats_fit(ls_stats_shared());
	keep_grow(&keep_scratch, (ls_live_max_shard() + 1024) *
		  sizeof(struct ls_live_entry));
}

/* Entries: account each in the sums (in counter units: estimates in
 * sampled mode, except mappings, which are always recorded), optionally
 * emit them as blocks. */
static void put_entries(struct writer *w, struct sums *s,
			const struct ls_live_entry *e, size_t n, int with_blocks,
			int exact)
{
	int64_t b, k;
	size_t i;

	if (with_blocks && n) {
		record(w, LSNAP_BLOCKS, (uint32_t)(n * sizeof(struct lsnap_block)));
		w->nblock_recs++;
	}
	for (i = 0; i < n; i++) {
		if (e[i].site < s->nsites) {
			if (exact) {
				b = (int64_t)e[i].size * ls_sample_scale();
				k = ls_sample_scale();
			} else {
				ls_sample_est(e[i].size, &b, &k);
			}
			s->live_bytes[e[i].site] += b;
			s->live_blocks[e[i].site] += k;
		} else {
			s->unsummed++;
		}
		if (with_blocks) {
			struct lsnap_block blk = {
				.addr = e[i].addr, .size = e[i].size,
				.birth_ns = ls_live_birth_ns(e[i].birth,
							     ls_agent.start_mono),
				.site = e[i].site,
				.tid = e[i].tid,
			};

			put(w, &blk, sizeof(blk));
		}
	}
}

/*
 * Copy a table (one shard or the mmap ranges) with copy(), growing the
 * scratch buffer until it fits.  Blocks records are limited in size, so
 * emit in slices.
 */
struct visit {
	struct writer *w;
	struct sums *s;
	int with_blocks, exact;
};

static void visit_one(const struct ls_live_entry *e, void *arg)
{
	struct visit *v = arg;

	put_entries(v->w, v->s, e, 1, v->with_blocks, v->exact);
}

/* No memory to copy the table into: emit its entries one by one under
 * its lock (a shard), or count them as dropped (the mappings). */
static int walk_in_place(struct writer *w, struct sums *s, int with_blocks,
			 size_t (*copy)(unsigned, struct ls_live_entry *, size_t),
			 unsigned idx, int exact, size_t n)
{
	struct visit v = { w, s, with_blocks, exact };

	if (copy == ls_live_copy_shard)
		ls_live_visit_shard(idx, visit_one, &v);
	else
		__atomic_add_fetch(&ls_agent_dropped, n, __ATOMIC_RELAXED);
	return 0;
}

static int walk_one(struct writer *w, struct sums *s, int with_blocks,
		    size_t (*copy)(unsigned, struct ls_live_entry *, size_t),
		    unsigned idx, int exact)
{
	const size_t slice = LSNAP_MAX_RECORD / sizeof(struct lsnap_block);
	size_t n, off, cap;

	for (;;) {
		cap = keep_scratch.bytes / sizeof(struct ls_live_entry);
		n = copy(idx, keep_scratch.p, cap);
		if (n <= cap)
			break;
		if (keep_grow(&keep_scratch, (n + 64) *
			      sizeof(struct ls_live_entry)))
			return walk_in_place(w, s, with_blocks, copy, idx,
					     exact, n);
	}
	for (off = 0; off < n; off += slice)
		put_entries(w, s, (struct ls_live_entry *)keep_scratch.p + off,
			    n - off < slice ? n - off : slice, with_blocks, exact);
	return 0;
}

static size_t copy_mmaps(unsigned idx, struct ls_live_entry *buf, size_t cap)
{
	return ls_mmaps_copy(buf, cap);
}

static int frozen_torn;
static size_t mmaps_seen;	/* by copy_mmaps_counted(), for the categories */

/* A concurrent check writes from the live process: the mappings' table
 * under its lock, and the count the walk wrote. */
static size_t copy_mmaps_counted(unsigned idx, struct ls_live_entry *buf,
				 size_t cap)
{
	return mmaps_seen = ls_mmaps_copy(buf, cap);
}

static size_t copy_mmaps_frozen(unsigned idx, struct ls_live_entry *buf,
				size_t cap)
{
	return ls_mmaps_copy_frozen(buf, cap, &frozen_torn);
}

/* The categories, one byte per block in BLOCKS order: the heap blocks'
 * then LSNAP_REACH_NONE for each mapping. */
static void put_reach_blocks(struct writer *w, const struct ls_reach_result *res,
			     size_t nmaps)
{
	const uint8_t none = LSNAP_REACH_NONE;
	size_t left = res->nblocks + nmaps, off = 0, k;

	while (left) {
		k = left < LSNAP_MAX_RECORD ? left : LSNAP_MAX_RECORD;
		record(w, LSNAP_REACH_BLOCKS, (uint32_t)k);
		left -= k;
		for (; k; k--, off++)
			put(w, off < res->nblocks ? &res->cat[off] : &none, 1);
	}
}

/* The heap blocks of res (sorted, categorized) and the mappings, read
 * without locks. */
static int walk_frozen(struct writer *w, struct sums *s, int with_blocks,
		       const struct ls_reach_result *res)
{
	const size_t slice = LSNAP_MAX_RECORD / sizeof(struct lsnap_block);
	size_t off, n;
	int ret;

	for (off = 0; off < res->nblocks; off += slice)
		put_entries(w, s, res->blocks + off,
			    res->nblocks - off < slice ? res->nblocks - off : slice,
			    with_blocks, 0);
	if (res->live) {
		ret = walk_one(w, s, with_blocks, copy_mmaps_counted, 0, 1);
		n = mmaps_seen;
	} else {
		ret = walk_one(w, s, with_blocks, copy_mmaps_frozen, 0, 1);
		n = ls_mmaps_copy_frozen(NULL, 0, &frozen_torn);
	}
	if (!ret && with_blocks)
		put_reach_blocks(w, res, n);
	return ret;
}

static void put_reach(struct writer *w, const struct ls_reach_result *res)
{
	uint32_t id;

	for (id = 0; id < res->nsites; id++) {
		const struct lsnap_reach_site *r = &res->sites[id];
		unsigned k;
		uint64_t any = 0;

		for (k = 0; k < LSNAP_REACH_KINDS; k++)
			any |= r->blocks[k];
		if (!any)
			continue;
		record(w, LSNAP_REACH_SITE, sizeof(*r));
		put(w, r, sizeof(*r));
	}
	for (id = 0; res->held && id <= res->held_mask; id++)
		if (res->held[id].blocks) {
			record(w, LSNAP_REACH_HELD, sizeof(res->held[id]));
			put(w, &res->held[id], sizeof(res->held[id]));
		}
	record(w, LSNAP_REACH_HEUR, sizeof(res->heur));
	put(w, &res->heur, sizeof(res->heur));
	record(w, LSNAP_REACH_HOW, sizeof(res->how));
	put(w, &res->how, sizeof(res->how));
	record(w, LSNAP_REACH, sizeof(res->totals));
	put(w, &res->totals, sizeof(res->totals));
}

static int walk_live(struct writer *w, struct sums *s, int with_blocks)
{
	unsigned i;
	int ret = 0;

	for (i = 0; i < LS_LIVE_SHARDS && !ret; i++)
		ret = walk_one(w, s, with_blocks, ls_live_copy_shard, i, 0);
	if (!ret)
		ret = walk_one(w, s, with_blocks, copy_mmaps, 0, 1);
	/* A block list was asked for: say it is empty rather than leave the
	 * reader to think there is none (`olds` would refuse). */
	if (!ret && with_blocks && !w->nblock_recs)
		record(w, LSNAP_BLOCKS, 0);
	return ret;
}

static void add_pending(const struct ls_pending *p, void *arg)
{
	struct sums *s = arg;

	uint32_t id = p->site->id;

	if (id >= s->nsites)
		return;
	s->alloc_bytes[id] += ls_pending_alloc_bytes(p);
	s->alloc_blocks[id] += ls_pending_alloc_blocks(p);
	ls_stats_add_pending(s->stats, p);
}

/* The site's LSNAP_SITE_STATS, when it has anything to say. */
static void put_stats(struct writer *w, struct sums *s,
		      const struct ls_site_rec *site)
{
	uint64_t h[2 * LS_HIST_BUCKETS];
	struct lsnap_site_stats r;
	int any = ls_stats_site(s->stats, site, &r, h);

	s->peak_sum_bytes += r.peak_bytes;
	s->peak_sum_blocks += r.peak_blocks;
	if (!any)
		return;
	/* Without the empty buckets past the last used one (most sites see
	 * a few sizes and short lives): readers take them as 0, and each
	 * bucket's range does not depend on nbuckets (version 2). */
	while (r.nbuckets && !h[r.nbuckets - 1] &&
	       !h[LS_HIST_BUCKETS + r.nbuckets - 1])
		r.nbuckets--;
	record(w, LSNAP_SITE_STATS, sizeof(r) + 16 * r.nbuckets);
	put(w, &r, sizeof(r));
	put(w, h, 8 * r.nbuckets);
	put(w, h + LS_HIST_BUCKETS, 8 * r.nbuckets);
}

static void put_peak(struct writer *w, const struct sums *s)
{
	struct lsnap_peak p = {
		.peak_mono_ns = __atomic_load_n(&ls_peak.peak_mono,
						__ATOMIC_RELAXED),
		.sites_bytes = s->peak_sum_bytes,
		.sites_blocks = s->peak_sum_blocks,
	};

	record(w, LSNAP_PEAK, sizeof(p));
	put(w, &p, sizeof(p));
}

static void put_sites(struct writer *w, struct sums *s, struct lsnap_totals *t)
{
	uint32_t id, n = ls_site_count();

	ls_thread_each_pending(add_pending, s);
	for (id = 0; id < n && id < s->nsites; id++) {
		struct ls_site_rec *site = ls_site_get(id);
		struct lsnap_site r;

		if (!site)
			continue;
		r.id = id;
		r.kind = site->kind;
		r.gen = site->gen;
		r.nframes = site->nframes;
		r.live_bytes = ls_sample_unscale(s->live_bytes[id]);
		r.live_blocks = ls_sample_unscale(s->live_blocks[id]);
		r.allocated_bytes = (uint64_t)ls_sample_unscale((int64_t)(s->alloc_bytes[id] +
			__atomic_load_n(&site->alloc_bytes, __ATOMIC_RELAXED)));
		r.allocated_blocks = (uint64_t)ls_sample_unscale((int64_t)(s->alloc_blocks[id] +
			__atomic_load_n(&site->alloc_blocks, __ATOMIC_RELAXED)));
		/* Allocator chunks and reservations are apart: the
		 * reader sums their sites (lsnap_kind_live). */
		if (lsnap_kind_live(r.kind)) {
			t->live_bytes += (uint64_t)r.live_bytes;
			t->live_blocks += (uint64_t)r.live_blocks;
			t->allocated_bytes += r.allocated_bytes;
			t->allocated_blocks += r.allocated_blocks;
		}
		record(w, LSNAP_SITE, sizeof(r) + r.nframes * sizeof(uint64_t));
		put(w, &r, sizeof(r));
		put(w, site->frames, r.nframes * sizeof(uint64_t));
		put_stats(w, s, site);
	}
}

static void put_totals(struct writer *w, struct lsnap_totals *t)
{
	ls_figures_peak(t);
	record(w, LSNAP_TOTALS, sizeof(*t));
	put(w, t, sizeof(*t));
}

/* Samples first .. first + n - 1 of a ring of len, oldest first: at
 * most two pieces. */
static void put_ring(struct writer *w, const int64_t *ring, uint64_t len,
		     uint64_t first, uint64_t n)
{
	uint64_t at = first % len, k = n < len - at ? n : len - at;

	put(w, ring + at, k * 8);
	put(w, ring, (n - k) * 8);
}

/* Site id's live bytes as its SITE record says them. */
static int64_t site_live_bytes(const struct sums *s, uint32_t id)
{
	return id < s->nsites && ls_site_get(id) ?
	       ls_sample_unscale(s->live_bytes[id]) : 0;
}

/*
 * The growth history of every site that ever held memory.  With last,
 * one sample more, after the post-mortem file's: the live bytes of this
 * snapshot, which is what the file's last sample at exit would have
 * taken (agent.c takes none when the file goes unread: writing every new
 * site, its frames and a history row into a file about to be unlinked
 * was most of the exit's cost on a program of 100k stacks).
 */
static void put_history(struct writer *w, const struct sums *s, int last)
{
	const struct lspm_header *h = ls_pm_header();
	struct lsnap_history hh;
	uint64_t n, first, k, ticks, now = ls_now_ns(CLOCK_MONOTONIC);
	uint32_t id, nsites;

	if (!h || !(h->ticks || last))
		return;
	ticks = h->ticks + !!last;
	n = ticks < h->hist_len ? ticks : h->hist_len;
	first = ticks - n;
	hh = (struct lsnap_history){
		.period_ms = h->period_ms, .hist_len = h->hist_len,
		.ticks = ticks,
		.first_mono_ns = h->ticks ? h->first_mono_ns : now,
		.last_mono_ns = last ? now : h->last_mono_ns,
	};
	record(w, LSNAP_HISTORY, sizeof(hh));
	put(w, &hh, sizeof(hh));
	nsites = last ? ls_site_count() : h->nsites;
	for (id = 0; id < nsites; id++) {
		struct ls_pm_hist ph;
		int any = ls_pm_history(h, id, &ph);
		int64_t final = last ? site_live_bytes(s, id) : 0, v;
		struct lsnap_site_history sh = { .site = id, .n = (uint32_t)n };
		uint64_t old = n - !!last;	/* samples from the file */

		for (k = 0; any && k < old &&
		     !lspm_hist_sample(ph.ring, h->hist_len, first + k, ph.since,
				       ph.live); k++)
			;
		if (!final && (!any || k == old))
			continue;	/* never held anything at a sample */
		record(w, LSNAP_SITE_HISTORY, sizeof(sh) + n * 8);
		put(w, &sh, sizeof(sh));
		if (ph.ring) {
			put_ring(w, ph.ring, h->hist_len, first, old);
		} else {
			for (k = 0; k < old; k++) {
				v = lspm_hist_sample(NULL, h->hist_len, first + k,
						     ph.since, ph.live);
				put(w, &v, 8);
			}
		}
		if (last)
			put(w, &final, 8);
	}
}

static void put_end(struct writer *w)
{
	struct lsnap_end e = { .nrecords = w->nrecords };
	struct lsnap_rec_hdr h = { .tag = LSNAP_END, .len = sizeof(e) };

	/* The hash is taken before the END record's own bytes. */
	hash_buf(w);
	w->hashed_all = 1;
	e.hash = lsnap_hash_end(&w->hash);
	put(w, &h, sizeof(h));
	put(w, &e, sizeof(e));
}

static int write_snapshot(int fd, enum lsnap_reason reason, int with_blocks,
			  const struct ls_reach_result *res)
{
	struct writer *w = &w_static;
	struct lsnap_totals totals = { 0 };
	struct sums sums = { 0 };
	int ret;

	memset(w, 0, offsetof(struct writer, buf));
	w->fd = fd;
	w->is_socket = 1;
	lsnap_hash_init(&w->hash);
	ret = sums_init(&sums);
	if (ret)
		goto out;
	ls_thread_peak_settle();
	put_header(w, reason, res);
	put_calls(w);
	put_mallinfo(w, res);
	put_unwind(w);
	put_attach(w);
	put_namespaces(w);
	put_notes(w);
	put_modules(w, res);
	put_loader(w, res);
	ret = res ? walk_frozen(w, &sums, with_blocks, res) :
		    walk_live(w, &sums, with_blocks);
	if (ret)
		goto out;
	put_dropped(w, &sums);
	if (!res)	/* a frozen image's tables are the clone's */
		put_agent_memory(w);
	put_sites(w, &sums, &totals);
	if (res)
		put_reach(w, res);
	/* The exit's last sample is this snapshot's, unless the file took
	 * one (kept: agent.c). */
	put_history(w, &sums, reason == LSNAP_REASON_EXIT &&
			      !ls_pm_exit_sampled());
	put_totals(w, &totals);
	put_peak(w, &sums);
	put_end(w);
	ret = flush_out(w);
out:
	return ret ? ret : w->err;
}

int ls_snapwrite(int fd, enum lsnap_reason reason, int with_blocks)
{
	int ret;

	ls_snapwrite_lock();
	ret = write_snapshot(fd, reason, with_blocks, NULL);
	ls_snapwrite_unlock();
	return ret;
}

int ls_snapwrite_reach(int fd, enum lsnap_reason reason, int with_blocks,
		       const struct ls_reach_result *res)
{
	return write_snapshot(fd, reason, with_blocks, res);
}

void ls_snapwrite_lock(void)
{
	ls_lock(&snap_lock);
}

void ls_snapwrite_unlock(void)
{
	ls_unlock(&snap_lock);
}

void ls_snapwrite_reset_child(void)
{
	ls_lock_reset(&snap_lock);
}
