/*
 * postmortem.c - post-mortem files into snapshots.
 *
 * The parts in use are read with pread() into private memory under the
 * header's sequence counter: a live process may be updating the file, a
 * dead one may have left it mid-update.  Never mapped: its owner could
 * truncate it under us (SIGBUS).  Every offset and count is checked
 * against the file size before it is used, and what a load reads and
 * builds is capped (postmortem.h): the file is sparse, its apparent size
 * says nothing about what is in it.
 */
#include <errno.h>
#include <stddef.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../common/lspm.h"
#include "../common/runtime.h"
#include "postmortem.h"
#include "redact.h"
#include "container.h"
#include "procinfo.h"

/* The file's header and, read from it, the parts in use. */
struct pm {
	int fd;
	size_t size;		/* apparent */
	uint64_t stored;	/* bytes the file system holds for it */
	const struct lspm_header *h;
	struct lspm_header hdr;
	const struct lspm_module *modules;	/* [nmodules] */
	const struct lspm_site *sites;		/* [nsites] */
	const struct lspm_site_stats *stats;	/* [nsites], version 3;
						   [wide_used], version 4 */
	const struct lspm_site_brief *brief;	/* [nsites], version 4 */
	const struct lspm_tail *tails;		/* [nsites], version 4 */
	const uint32_t *rows;			/* [nsites], version >= 2 */
	const uint64_t *frames;			/* [frames_used] */
	const int64_t *hist;			/* [nrows][hist_len] */
	uint64_t nrows;
};

int ls_postmortem_path(pid_t pid, char *buf, size_t cap)
{
	return ls_proc_runtime_file(pid, LS_SUFFIX_PM, buf, cap);
}

static void pm_free_parts(struct pm *pm)
{
	free((void *)pm->modules);
	free((void *)pm->sites);
	free((void *)pm->stats);
	free((void *)pm->brief);
	free((void *)pm->tails);
	free((void *)pm->rows);
	free((void *)pm->frames);
	free((void *)pm->hist);
	pm->modules = NULL;
	pm->sites = NULL;
	pm->stats = NULL;
	pm->brief = NULL;
	pm->tails = NULL;
	pm->rows = NULL;
	pm->frames = NULL;
	pm->hist = NULL;
}

/* len bytes at off, into fresh memory: NULL with errno set. */
static void *read_part(int fd, uint64_t off, uint64_t len)
{
	unsigned char *p = malloc(len + 1);
	uint64_t got = 0;
	ssize_t n;

	while (p && got < len) {
		n = pread(fd, p + got, len - got, (off_t)(off + got));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0) {	/* truncated under us */
			free(p);
			errno = n ? errno : EINVAL;
			return NULL;
		}
		got += (uint64_t)n;
	}
	return p;
}

static int region_ok(const struct pm *pm, uint64_t off, uint64_t count,
		     uint64_t el)
{
	return off <= pm->size && count <= (pm->size - off) / (el ? el : 1);
}

/* The regions hold 64-bit words read in place: the agent page-aligns
 * them, a file that does not is not its. */
static int regions_aligned(const struct lspm_header *h)
{
	return !((h->modules_off | h->sites_off | h->frames_off | h->hist_off |
		  (h->version >= 2 ? h->rows_off : 0) |
		  (h->version >= 3 ? h->stats_off : 0) |
		  (h->version >= 4 ? h->wide_off | h->tails_off : 0)) & 7);
}

static int check_header(const struct pm *pm, char *err, size_t errlen)
{
	const struct lspm_header *h = pm->h;
	uint64_t rows;

	if (pm->size < sizeof(*h) || memcmp(h->magic, LSPM_MAGIC, sizeof(LSPM_MAGIC)))
		return snprintf(err, errlen, "not a leakscope post-mortem file"), -EINVAL;
	if (h->version < 1 || h->version > LSPM_VERSION)
		return snprintf(err, errlen, "post-mortem file version %u is not "
				"supported", h->version), -EINVAL;
	/* Version 1 has a history row per site, by id, and no rows table. */
	rows = h->version == 1 ? h->sites_cap : h->rows_cap;
	if (!regions_aligned(h) || (h->version >= 2 &&
	     (h->rows_cap < h->rows_used ||
	      !region_ok(pm, h->rows_off, h->sites_cap, 4))) ||
	    !region_ok(pm, h->hist_off, rows * h->hist_len, 8) ||
	    !h->hist_len || h->hist_len > 65536 || h->nsites > h->sites_cap ||
	    h->nmodules > h->modules_cap || h->frames_used > h->frames_cap ||
	    h->cmdline_len > LSPM_CMDLINE_MAX || h->ncalls > LSPM_NCALLS ||
	    !region_ok(pm, h->modules_off, h->modules_cap, sizeof(struct lspm_module)) ||
	    !region_ok(pm, h->sites_off, h->sites_cap, sizeof(struct lspm_site)) ||
	    !region_ok(pm, h->frames_off, h->frames_cap, 8) ||
	    (h->version == 3 && !region_ok(pm, h->stats_off, h->sites_cap,
					   sizeof(struct lspm_site_stats))) ||
	    (h->version >= 4 && (h->wide_used > h->wide_cap ||
	      !region_ok(pm, h->stats_off, h->sites_cap,
			 sizeof(struct lspm_site_brief)) ||
	      !region_ok(pm, h->wide_off, h->wide_cap,
			 sizeof(struct lspm_site_stats)) ||
	      !region_ok(pm, h->tails_off, h->sites_cap,
			 sizeof(struct lspm_tail)))))
		return snprintf(err, errlen, "corrupt post-mortem file: bad header"),
		       -EINVAL;
	return 0;
}

static char **split_cmdline(const char *buf, size_t len, size_t *argc)
{
	size_t n = 0, i, k = 0;
	char **argv;

	for (i = 0; i < len; i++)
		n += !buf[i];
	if (len && buf[len - 1])
		n++;
	argv = calloc(n + 1, sizeof(*argv));
	for (i = 0; argv && i < len; k++) {
		size_t l = strnlen(buf + i, len - i);

		argv[k] = strndup(buf + i, l);
		i += l + 1;
	}
	*argc = argv ? k : 0;
	if (argv)
		ls_argv_redact(argv, *argc);	/* nothing prints a secret */
	return argv;
}

static int copy_modules(const struct pm *pm, struct ls_snapshot *s)
{
	const struct lspm_module *m = pm->modules;
	size_t i;

	s->modules = calloc(pm->h->nmodules + 1, sizeof(*s->modules));
	if (!s->modules)
		return -ENOMEM;
	for (i = 0; i < pm->h->nmodules; i++) {
		struct ls_module *d = &s->modules[i];
		uint32_t len = m[i].m.path_len;

		if (len > LSPM_PATH_MAX || m[i].m.build_id_len > LSNAP_BUILD_ID_MAX)
			return -EINVAL;
		d->bias = m[i].m.bias;
		d->lo = m[i].m.lo;
		d->hi = m[i].m.hi;
		d->gen_from = m[i].m.gen_from;
		d->gen_to = m[i].m.gen_to;
		d->build_id_len = m[i].m.build_id_len;
		memcpy(d->build_id, m[i].m.build_id, d->build_id_len);
		d->path = strndup(m[i].path, len);
		if (!d->path)
			return -ENOMEM;
		s->nmodules++;
	}
	return 0;
}

/* A site's stats and histograms as the file holds them, before they go
 * into the snapshot (ls_snapshot_set_hist packs the histograms). */
struct pm_stats {
	struct ls_site_stats s;
	uint64_t size[LSNAP_HIST_BUCKETS], life[LSNAP_HIST_BUCKETS];
	unsigned n;
};

/* Version 3: the site's peak, temporaries and histograms (all zero for a
 * site never sampled). */
static void copy_stats(const struct lspm_site_stats *r, struct pm_stats *d)
{
	d->n = r->s.nbuckets <= LSNAP_HIST_BUCKETS ? r->s.nbuckets : 0;
	d->s.peak_bytes = r->s.peak_bytes;
	d->s.peak_blocks = r->s.peak_blocks;
	d->s.temp_bytes = r->s.temp_bytes;
	d->s.temp_blocks = r->s.temp_blocks;
	memcpy(d->size, r->size_hist, d->n * 8);
	memcpy(d->life, r->life_hist, d->n * 8);
}

/* Version 4: a brief slot's stats (its histograms' buckets from its
 * pairs, the rest 0). */
static void copy_brief(const struct lspm_site_brief *b, struct pm_stats *d)
{
	unsigned i;

	d->s.peak_bytes = b->peak_bytes;
	d->s.peak_blocks = b->peak_blocks;
	d->s.temp_bytes = b->temp_bytes;
	d->s.temp_blocks = b->temp_blocks;
	d->n = LSNAP_HIST_BUCKETS;
	for (i = 0; i < LSPM_BRIEF_PAIRS; i++) {
		uint64_t p = b->pair[i];
		unsigned k = (unsigned)(p >> LSPM_PAIR_BUCKET_SHIFT);

		_Static_assert(LSNAP_HIST_BUCKETS == 1 << (64 -
			       LSPM_PAIR_BUCKET_SHIFT), "a pair's bucket bits");
		if (p & LSPM_PAIR_LIFE)
			d->life[k] = p & LSPM_PAIR_COUNT;
		else
			d->size[k] = p & LSPM_PAIR_COUNT;
	}
}

/* Site d's stats by the file's version, into the snapshot; -EINVAL for a
 * wide slot past those handed out. */
static int copy_site_stats(const struct pm *pm, uint32_t id,
			   struct ls_snapshot *s, struct ls_site *d)
{
	const struct lspm_site_brief *b;
	struct pm_stats st;

	memset(&st, 0, sizeof(st));
	if (pm->h->version < 3)
		return 0;
	if (pm->h->version == 3) {
		copy_stats(pm->stats + id, &st);
	} else {
		b = pm->brief + id;
		if (!b->wide)
			copy_brief(b, &st);
		else if (b->wide <= pm->h->wide_used)
			copy_stats(pm->stats + (b->wide - 1), &st);
		else
			return -EINVAL;
	}
	d->stats = st.s;
	return ls_snapshot_set_hist(s, d, st.size, st.life, st.n);
}

/*
 * Site id's stack into d->frames: its frames in the region, then in
 * version 4 the tail it shares with an earlier site, from that site's
 * stack as built (sites[j], j < id).  -EINVAL when they are not in the
 * file or the tail is not the earlier site's.
 */
static int copy_frames(const struct pm *pm, uint32_t id,
		       const struct ls_site *sites, struct ls_site *d)
{
	const struct lspm_site *r = pm->sites + id;
	const struct lspm_tail *t = pm->tails ? pm->tails + id : NULL;
	const struct ls_site *from = NULL;
	uint64_t own = r->nframes, used = pm->h->frames_used;

	if (r->nframes > LSNAP_MAX_FRAMES)
		return -EINVAL;
	if (t && t->site) {
		if (t->site > id)
			return -EINVAL;
		from = &sites[t->site - 1];
		if (t->skip > from->nframes ||
		    from->nframes - t->skip > r->nframes)
			return -EINVAL;
		own = r->nframes - (from->nframes - t->skip);
	}
	if (r->frames_idx > used || own > used - r->frames_idx)
		return -EINVAL;
	d->frames = malloc((r->nframes + 1) * 8);
	if (!d->frames)
		return -ENOMEM;
	memcpy(d->frames, pm->frames + r->frames_idx, own * 8);
	if (from)
		memcpy(d->frames + own, from->frames + t->skip,
		       (r->nframes - own) * 8);
	return 0;
}

static int copy_site(const struct pm *pm, uint32_t id, struct ls_snapshot *s,
		     uint64_t nhist)
{
	struct ls_site *sites = s->sites, *d = &sites[id];
	const struct lspm_header *h = pm->h;
	const struct lspm_site *r = pm->sites + id;
	uint64_t row = id + 1, k, first = h->ticks - nhist;	/* 1 + row */
	const int64_t *ring = NULL;
	uint64_t since = 0;
	int64_t live = 0;
	int e;

	/* Version 2: a row only for sites that held memory at a sample;
	 * the others' samples were all 0.  Version 4: a row only for sites
	 * whose live bytes changed after they first held memory; the others
	 * held their live bytes from `since` on. */
	if (h->version >= 2) {
		row = pm->rows[id];
		if (row > h->rows_cap)
			return -EINVAL;
	}
	if (row && row <= pm->nrows)	/* else taken after our header */
		ring = pm->hist + (row - 1) * h->hist_len;
	if (!row && h->version >= 4) {
		since = pm->brief[id].since;
		live = r->live_bytes;
	}

	d->id = id;
	d->kind = r->kind;
	d->gen = r->gen;
	d->nframes = r->nframes;
	d->live_bytes = r->live_bytes;
	d->live_blocks = r->live_blocks;
	d->allocated_bytes = r->allocated_bytes;
	d->allocated_blocks = r->allocated_blocks;
	e = copy_frames(pm, id, sites, d);
	if (e)
		return e;
	d->history = malloc((nhist + 1) * 8);
	if (!d->history)
		return -ENOMEM;
	e = copy_site_stats(pm, id, s, d);
	if (e)
		return e;
	for (k = 0; k < nhist; k++)
		d->history[k] = lspm_hist_sample(ring, h->hist_len, first + k,
						 since, live);
	d->nhistory = (uint32_t)nhist;
	return 0;
}

static void fill_header(const struct lspm_header *h, struct ls_snapshot *s)
{
	size_t i;

	s->hdr.pid = h->pid;
	s->hdr.ppid = h->ppid;
	s->hdr.wall_ns = h->last_wall_ns;
	s->hdr.mono_ns = h->last_mono_ns;
	s->hdr.start_mono_ns = h->start_mono_ns;
	s->hdr.sample_rate = h->sample_rate;
	s->hdr.mode = h->mode;
	s->hdr.reason = LSNAP_REASON_REQUEST;
	s->hdr.source = LSNAP_SOURCE_AGENT;
	s->hdr.max_depth = h->max_depth;
	s->hdr.nthreads = h->nthreads;
	s->hdr.module_gen = h->module_gen;
	s->has_totals = s->has_mallinfo = s->has_history = 1;
	s->totals = h->totals;
	s->mallinfo = h->mallinfo;
	s->has_peak = h->version >= 3;
	s->peak = h->peak;
	s->dropped = h->dropped;
	s->history = (struct lsnap_history){
		.period_ms = h->period_ms, .hist_len = h->hist_len,
		.ticks = h->ticks, .first_mono_ns = h->first_mono_ns,
		.last_mono_ns = h->last_mono_ns,
	};
	s->postmortem = 1;
	s->exited = h->exited != 0;
	s->ncalls = h->ncalls;
	s->calls = calloc(h->ncalls + 1, sizeof(*s->calls));
	for (i = 0; s->calls && i < h->ncalls; i++) {
		memcpy(s->calls[i].name, h->calls[i].name, LSNAP_CALL_NAME);
		s->calls[i].count = h->calls[i].count;
	}
	s->argv = split_cmdline(h->cmdline, h->cmdline_len, &s->argc);
}

/* One pass over a (possibly changing) mapping. */
static int copy_all(const struct pm *pm, struct ls_snapshot *s)
{
	const struct lspm_header *h = pm->h;
	uint64_t nhist = h->ticks < h->hist_len ? h->ticks : h->hist_len;
	uint32_t id, n = h->nsites;
	int r;

	fill_header(h, s);
	if (!s->calls || !s->argv)
		return -ENOMEM;
	r = copy_modules(pm, s);
	if (r)
		return r;
	s->sites = calloc(n + 1, sizeof(*s->sites));
	if (!s->sites)
		return -ENOMEM;
	for (id = 0; id < n; id++) {
		s->nsites = id + 1;	/* release() frees what was copied */
		r = copy_site(pm, id, s, nhist);
		if (r)
			return r;
	}
	return ls_snapshot_check_figures(s, NULL, 0);
}

/*
 * What one load of the header's parts reads (*read) and builds, in
 * bytes; -EFBIG over the caps.  A sparse file's holes read as zeros: what
 * is read must be stored in the file (its blocks), or the apparent size
 * would let a 100 KB file cost gigabytes.
 */
static int pm_budget(const struct pm *pm, uint64_t *read, uint64_t *built)
{
	const struct lspm_header *h = pm->h;
	uint64_t nhist = h->ticks < h->hist_len ? h->ticks : h->hist_len;
	uint64_t nrows = h->version == 1 ? h->nsites : h->rows_used;
	uint64_t n = h->nsites;

	*read = h->nmodules * (uint64_t)sizeof(struct lspm_module) +
		n * sizeof(struct lspm_site) + h->frames_used * 8 +
		(h->version >= 2 ? n * 4 : 0) +
		(h->version == 3 ? n * sizeof(struct lspm_site_stats) : 0) +
		(h->version >= 4 ? n * (sizeof(struct lspm_site_brief) +
					sizeof(struct lspm_tail)) +
		 h->wide_used * (uint64_t)sizeof(struct lspm_site_stats) : 0) +
		nrows * h->hist_len * 8;
	*built = *read + n * (sizeof(struct ls_site) + nhist * 8);
	if (*read > LS_POSTMORTEM_READ_MAX || *built > LS_POSTMORTEM_BUILD_MAX ||
	    *read > pm->stored + LS_POSTMORTEM_SPARSE_SLACK ||
	    *built > (pm->stored + LS_POSTMORTEM_SPARSE_SLACK) *
		    LS_POSTMORTEM_BUILD_RATIO)
		return -EFBIG;
	return 0;
}

/* The header's parts in use, into private memory. */
static int pm_read_parts(struct pm *pm)
{
	const struct lspm_header *h = pm->h;
	uint64_t n = h->nsites;

	pm->nrows = h->version == 1 ? h->nsites : h->rows_used;
	if (h->version >= 2 && pm->nrows > h->rows_cap)
		return -EINVAL;
	if (!region_ok(pm, h->hist_off, pm->nrows * h->hist_len, 8))
		return -EINVAL;
	pm->modules = read_part(pm->fd, h->modules_off,
				h->nmodules * (uint64_t)sizeof(*pm->modules));
	pm->sites = read_part(pm->fd, h->sites_off, n * sizeof(*pm->sites));
	pm->frames = read_part(pm->fd, h->frames_off, h->frames_used * 8);
	pm->rows = h->version < 2 ? malloc(1) :
		   read_part(pm->fd, h->rows_off, n * 4);
	pm->tails = h->version < 4 ? NULL :
		    read_part(pm->fd, h->tails_off, n * sizeof(*pm->tails));
	if (h->version >= 4) {
		pm->brief = read_part(pm->fd, h->stats_off, n * sizeof(*pm->brief));
		pm->stats = read_part(pm->fd, h->wide_off, h->wide_used *
				      (uint64_t)sizeof(*pm->stats));
	} else {
		pm->brief = malloc(1);
		pm->stats = h->version < 3 ? malloc(1) :
			    read_part(pm->fd, h->stats_off, n * sizeof(*pm->stats));
	}
	pm->hist = read_part(pm->fd, h->hist_off, pm->nrows * h->hist_len * 8);
	if (!pm->modules || !pm->sites || !pm->frames || !pm->rows ||
	    !pm->stats || !pm->brief || !pm->hist ||
	    (h->version >= 4 && !pm->tails))
		return errno == ENOMEM ? -ENOMEM : -EINVAL;
	return 0;
}

/* The header's sequence counter as the file holds it now. */
static uint64_t pm_seq(const struct pm *pm)
{
	uint64_t seq = 1;	/* odd: unreadable counts as mid-update */

	if (pread(pm->fd, &seq, sizeof(seq), offsetof(struct lspm_header, seq)) !=
	    (ssize_t)sizeof(seq))
		return 1;
	return seq;
}

/* Bytes of the stacks built beyond the frames read: the tails that
 * version 4 sites share with earlier ones (each stack is checked against
 * LSNAP_MAX_FRAMES as it is built; one past it counts as that). */
static uint64_t pm_tail_bytes(const struct pm *pm)
{
	uint64_t n = 0;
	uint32_t id;

	for (id = 0; pm->tails && id < pm->h->nsites; id++)
		n += pm->sites[id].nframes < LSNAP_MAX_FRAMES ?
		     pm->sites[id].nframes : LSNAP_MAX_FRAMES;
	return n > pm->h->frames_used ? (n - pm->h->frames_used) * 8 : 0;
}

static int budget_taken(char *err, size_t errlen)
{
	snprintf(err, errlen, "the memory budget (%llu MiB) is taken by the "
		 "replies in progress: try again",
		 (unsigned long long)(ls_snapshot_budget(NULL) >> 20));
	return -ENOBUFS;
}

/* One consistent copy: header, parts, snapshot. */
static int pm_load_once(struct pm *pm, struct ls_snapshot *snap, uint64_t *seq,
			char *err, size_t errlen)
{
	uint64_t read, built;
	int r;

	if (pread(pm->fd, &pm->hdr, sizeof(pm->hdr), 0) != (ssize_t)sizeof(pm->hdr))
		return snprintf(err, errlen, "not a leakscope post-mortem file"),
		       -EINVAL;
	pm->h = &pm->hdr;
	*seq = pm->hdr.seq;
	r = check_header(pm, err, errlen);
	if (r)
		return r;
	if (pm_budget(pm, &read, &built))
		return snprintf(err, errlen, "post-mortem file too large: its "
				"header asks for %llu bytes read (it stores %llu) "
				"and more built (lib/postmortem.h's caps)",
				(unsigned long long)read,
				(unsigned long long)pm->stored), -EFBIG;
	/* What it reads and builds, held until the snapshot is released. */
	if (ls_snapshot_charge(snap, built))
		return budget_taken(err, errlen);
	r = pm_read_parts(pm);
	if (!r) {
		/* The shared tails, now that the sites say how long. */
		uint64_t tails = pm_tail_bytes(pm);

		if (built + tails > LS_POSTMORTEM_BUILD_MAX ||
		    built + tails > (pm->stored + LS_POSTMORTEM_SPARSE_SLACK) *
				    LS_POSTMORTEM_BUILD_RATIO) {
			snprintf(err, errlen, "post-mortem file too large: its "
				 "stacks need %llu bytes built (lib/postmortem.h's "
				 "caps)", (unsigned long long)(built + tails));
			r = -EFBIG;
		} else if (ls_snapshot_charge(snap, tails))
			r = budget_taken(err, errlen);
	}
	if (!r)
		r = copy_all(pm, snap);
	pm_free_parts(pm);
	return r;
}

/* Load from fd, an open regular file. */
static int pm_load_fd(int fd, const char *path, struct ls_snapshot *snap,
		      char *err, size_t errlen)
{
	struct pm pm = { .fd = fd };
	struct stat st;
	int r = 0, tries;
	uint64_t seq = 0;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		snprintf(err, errlen, "'%s' is not a post-mortem file", path);
		return -EINVAL;
	}
	pm.size = (size_t)st.st_size;
	pm.stored = (uint64_t)st.st_blocks * 512;
	err[0] = 0;
	/* An odd or moving sequence: the sampler is writing.  Retry for a
	 * while; a dead process's odd sequence never settles. */
	for (tries = 0; !r; tries++) {
		r = pm_load_once(&pm, snap, &seq, err, errlen);
		if (r)
			break;
		if (seq == pm_seq(&pm) && (!(seq & 1) || tries >= 50)) {
			snap->torn = (int)(seq & 1);
			break;
		}
		ls_snapshot_release(snap);
		memset(snap, 0, sizeof(*snap));
		usleep(2000);
	}
	if (r == -EINVAL && !err[0])
		snprintf(err, errlen, "corrupt post-mortem file '%s'", path);
	else if (r == -ENOMEM)
		snprintf(err, errlen, "out of memory reading '%s'", path);
	if (r)
		ls_snapshot_release(snap);
	return r;
}

int ls_postmortem_load(const char *path, struct ls_snapshot *snap, char *err,
		       size_t errlen)
{
	int fd, r;

	memset(snap, 0, sizeof(*snap));
	/* O_NONBLOCK: a FIFO must not hold the open; fstat refuses it. */
	fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
		return r;
	}
	r = pm_load_fd(fd, path, snap, err, errlen);
	close(fd);
	return r;
}

int ls_postmortem_load_at(int dirfd, const char *name, uid_t uid,
			  const char *path, struct ls_snapshot *snap, char *err,
			  size_t errlen)
{
	struct stat st;
	int fd, r;

	memset(snap, 0, sizeof(*snap));
	fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		r = errno == ELOOP ? -EPERM : -errno;
		snprintf(err, errlen, "cannot open '%s': %s", path, strerror(-r));
		return r;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode) || st.st_uid != uid) {
		snprintf(err, errlen, "'%s' is not a regular file of uid %u: not "
			 "reading it", path, (unsigned)uid);
		close(fd);
		return -EPERM;
	}
	r = pm_load_fd(fd, path, snap, err, errlen);
	close(fd);
	return r;
}

int ls_postmortem_load_pid(pid_t pid, struct ls_snapshot *snap, char *err,
			   size_t errlen)
{
	return ls_postmortem_load_in(pid, 0, snap, err, errlen);
}

/* The post-mortem file of snap came from the container of beside (of
 * inner there, else of beside itself): its modules are that container's
 * files, and beside's own pid is ours of it. */
static void note_container(pid_t beside, pid_t inner, struct ls_snapshot *snap)
{
	struct ls_container c;

	if (ls_container_of(beside, &c) || !ls_container_is(&c))
		return;
	ls_container_describe(&c);
	if (inner)
		c.nspid = inner;
	else if (snap->hdr.pid == (uint32_t)c.nspid)
		snap->hdr.pid = (uint32_t)beside;
	snap->container = c;
	snap->has_container = 1;
}

int ls_postmortem_load_in(pid_t beside, pid_t inner, struct ls_snapshot *snap,
			  char *err, size_t errlen)
{
	char path[4200], who[64];
	uid_t uid;
	int dfd, r;

	memset(snap, 0, sizeof(*snap));
	if (inner)
		snprintf(who, sizeof(who), "pid %d beside pid %d", (int)inner,
			 (int)beside);
	else
		snprintf(who, sizeof(who), "pid %d", (int)beside);
	dfd = ls_proc_runtime_open_in(beside, inner, LS_SUFFIX_PM, &uid, path,
				      sizeof(path));
	if (dfd == -ENOENT)
		snprintf(err, errlen, "no post-mortem file for %s ('%s')", who,
			 path);
	else if (dfd == -EPERM)
		snprintf(err, errlen, "no post-mortem file for %s: its "
			 "runtime dir ('%s') is not a directory of uid %u that "
			 "only it can write, and no fallback of it has one",
			 who, path, (unsigned)uid);
	else if (dfd == -EACCES)
		snprintf(err, errlen, "%s: not allowed to look into its "
			 "namespaces and files", who);
	else if (dfd < 0)
		snprintf(err, errlen, "post-mortem path too long");
	if (dfd < 0)
		return dfd;
	r = ls_postmortem_load_at(dfd, strrchr(path, '/') + 1, uid, path, snap,
				  err, errlen);
	close(dfd);
	if (!r)
		note_container(beside, inner, snap);
	return r;
}
