/*
 * postmortem.c - post-mortem files into snapshots.
 *
 * The file is mapped read-only and copied out under the header's sequence
 * counter: a live process may be updating it, a dead one may have left it
 * mid-update.  Every offset and count is checked against the file size
 * before it is used.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../common/lspm.h"
#include "../common/runtime.h"
#include "postmortem.h"
#include "procinfo.h"

struct pm {
	const unsigned char *base;
	size_t size;
	const struct lspm_header *h;
};

int ls_postmortem_path(pid_t pid, char *buf, size_t cap)
{
	return ls_proc_runtime_file(pid, LS_SUFFIX_PM, buf, cap);
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
		  (h->version >= 3 ? h->stats_off : 0)) & 7);
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
	    (h->version >= 3 && !region_ok(pm, h->stats_off, h->sites_cap,
					   sizeof(struct lspm_site_stats))))
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
	return argv;
}

static int copy_modules(const struct pm *pm, struct ls_snapshot *s)
{
	const struct lspm_module *m = (const void *)(pm->base + pm->h->modules_off);
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

/* Version 3: the site's peak, temporaries and histograms (all zero for a
 * site never sampled). */
static void copy_stats(const struct lspm_site_stats *r, struct ls_site_stats *d)
{
	unsigned n = r->s.nbuckets <= LSNAP_HIST_BUCKETS ? r->s.nbuckets : 0;

	d->peak_bytes = r->s.peak_bytes;
	d->peak_blocks = r->s.peak_blocks;
	d->temp_bytes = r->s.temp_bytes;
	d->temp_blocks = r->s.temp_blocks;
	memcpy(d->size_hist, r->size_hist, n * 8);
	memcpy(d->life_hist, r->life_hist, n * 8);
}

static int copy_site(const struct pm *pm, uint32_t id, struct ls_site *d,
		     uint64_t nhist)
{
	const struct lspm_header *h = pm->h;
	const struct lspm_site *r = (const struct lspm_site *)(pm->base + h->sites_off) + id;
	const uint64_t *frames = (const void *)(pm->base + h->frames_off);
	uint64_t row = id + 1, k, first = h->ticks - nhist;	/* 1 + row */
	const int64_t *ring = NULL;

	/* Version 2: a row only for sites that held memory at a sample;
	 * the others' samples were all 0. */
	if (h->version >= 2) {
		row = ((const uint32_t *)(pm->base + h->rows_off))[id];
		if (row > h->rows_cap)
			return -EINVAL;
	}
	if (row)
		ring = (const int64_t *)(pm->base + h->hist_off) +
		       (row - 1) * h->hist_len;

	if (r->nframes > LSNAP_MAX_FRAMES || r->frames_idx > h->frames_used ||
	    r->nframes > h->frames_used - r->frames_idx)
		return -EINVAL;
	d->id = id;
	d->kind = r->kind;
	d->gen = r->gen;
	d->nframes = r->nframes;
	d->live_bytes = r->live_bytes;
	d->live_blocks = r->live_blocks;
	d->allocated_bytes = r->allocated_bytes;
	d->allocated_blocks = r->allocated_blocks;
	d->frames = malloc((r->nframes + 1) * 8);
	d->history = malloc((nhist + 1) * 8);
	if (!d->frames || !d->history)
		return -ENOMEM;
	memcpy(d->frames, frames + r->frames_idx, r->nframes * 8ull);
	if (h->version >= 3)
		copy_stats((const struct lspm_site_stats *)
			   (pm->base + h->stats_off) + id, &d->stats);
	for (k = 0; k < nhist; k++)
		d->history[k] = ring ? ring[(first + k) % h->hist_len] : 0;
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
		r = copy_site(pm, id, &s->sites[id], nhist);
		if (r)
			return r;
	}
	return ls_snapshot_check_figures(s, NULL, 0);
}

int ls_postmortem_load(const char *path, struct ls_snapshot *snap, char *err,
		       size_t errlen)
{
	struct pm pm = { 0 };
	struct stat st;
	int fd, r, tries;
	uint64_t seq;

	memset(snap, 0, sizeof(*snap));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
		return r;
	}
	if (fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		close(fd);
		snprintf(err, errlen, "'%s' is not a post-mortem file", path);
		return -EINVAL;
	}
	pm.size = (size_t)st.st_size;
	pm.base = pm.size ? mmap(NULL, pm.size, PROT_READ, MAP_SHARED, fd, 0) : MAP_FAILED;
	close(fd);
	if (pm.base == MAP_FAILED) {
		snprintf(err, errlen, "'%s' is not a post-mortem file", path);
		return -EINVAL;
	}
	pm.h = (const void *)pm.base;
	r = check_header(&pm, err, errlen);
	if (r) {
		munmap((void *)pm.base, pm.size);
		return r;	/* err says what is wrong with the header */
	}
	/* An odd or moving sequence: the sampler is writing.  Retry for a
	 * while; a dead process's odd sequence never settles. */
	for (tries = 0; !r; tries++) {
		seq = __atomic_load_n(&pm.h->seq, __ATOMIC_ACQUIRE);
		r = copy_all(&pm, snap);
		if (r)
			break;
		if (seq == __atomic_load_n(&pm.h->seq, __ATOMIC_ACQUIRE) &&
		    (!(seq & 1) || tries >= 50)) {
			snap->torn = (int)(seq & 1);
			break;
		}
		ls_snapshot_release(snap);
		usleep(2000);
	}
	if (r == -EINVAL)
		snprintf(err, errlen, "corrupt post-mortem file '%s'", path);
	else if (r == -ENOMEM)
		snprintf(err, errlen, "out of memory reading '%s'", path);
	munmap((void *)pm.base, pm.size);
	if (r)
		ls_snapshot_release(snap);
	return r;
}
