/*
 * t-lib-postmortem.c - post-mortem files (common/lspm.h) read back:
 * version 4 (brief stats slots, history rows only for sites whose bytes
 * changed, stacks ending as an earlier site's), version 2 (history rows only for sites that held memory) and
 * version 1 (a row per site), and the inconsistent files the reader must
 * refuse.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../../common/lspm.h"
#include "../../lib/postmortem.h"
#include "tap.h"

#define HIST_LEN 4
#define TICKS 6			/* ring holds ticks 2..5: slots 2, 3, 0, 1 */
#define SITES 3
#define SITES_CAP 8

struct layout {
	unsigned char *buf;
	size_t size;
	struct lspm_header *h;
};

/*
 * Three sites.  Version 2: site 0 has row 1, site 1 none, site 2 row 0;
 * row 0 holds 10, 20, 30, 40 and row 1 holds 1, 2, 3, 4 in slots 0-3.
 * Version 1: rows by site id, site i holding 100 * i + slot.
 */
static void build(struct layout *l, uint32_t version)
{
	uint64_t off = LSPM_HEADER_SIZE;
	struct lspm_site *sites;
	uint64_t *frames;
	int64_t *hist;
	uint32_t *rows, i, k;

	l->size = off + sizeof(struct lspm_module) +
		  SITES_CAP * sizeof(struct lspm_site) + 16 * 8 +
		  SITES_CAP * 4 + SITES_CAP * HIST_LEN * 8 +
		  SITES_CAP * sizeof(struct lspm_site_brief) +
		  2 * sizeof(struct lspm_site_stats) +
		  SITES_CAP * sizeof(struct lspm_tail);
	l->buf = calloc(1, l->size);
	l->h = (struct lspm_header *)(void *)l->buf;
	memcpy(l->h->magic, LSPM_MAGIC, sizeof(LSPM_MAGIC));
	l->h->version = version;
	l->h->header_size = LSPM_HEADER_SIZE;
	l->h->pid = 4242;
	l->h->period_ms = 1000;
	l->h->hist_len = HIST_LEN;
	l->h->ticks = TICKS;
	l->h->nsites = SITES;
	l->h->sites_cap = SITES_CAP;
	l->h->modules_cap = 1;
	l->h->frames_used = SITES;
	l->h->frames_cap = 16;
	l->h->modules_off = off;
	off += sizeof(struct lspm_module);
	l->h->sites_off = off;
	off += SITES_CAP * sizeof(struct lspm_site);
	l->h->frames_off = off;
	off += 16 * 8;
	l->h->rows_off = off;
	l->h->rows_cap = SITES_CAP;
	off += SITES_CAP * 4;
	l->h->hist_off = off;
	off += SITES_CAP * HIST_LEN * 8;
	l->h->stats_off = off;
	off += SITES_CAP * sizeof(struct lspm_site_brief);
	l->h->wide_off = off;
	l->h->wide_cap = 2;
	off += 2 * sizeof(struct lspm_site_stats);
	l->h->tails_off = off;
	memcpy(l->h->cmdline, "prog", 5);
	l->h->cmdline_len = 5;
	sites = (struct lspm_site *)(void *)(l->buf + l->h->sites_off);
	frames = (uint64_t *)(void *)(l->buf + l->h->frames_off);
	hist = (int64_t *)(void *)(l->buf + l->h->hist_off);
	rows = (uint32_t *)(void *)(l->buf + l->h->rows_off);
	for (i = 0; i < SITES; i++) {
		sites[i].id = i;
		sites[i].nframes = 1;
		sites[i].frames_idx = i;
		sites[i].live_bytes = 7 * (i + 1);
		frames[i] = 0x400000 + i;
	}
	if (version == 1) {
		for (i = 0; i < SITES; i++)
			for (k = 0; k < HIST_LEN; k++)
				hist[i * HIST_LEN + k] = 100 * i + k;
		return;
	}
	l->h->rows_used = 2;
	rows[0] = 2;
	rows[2] = 1;
	for (k = 0; k < HIST_LEN; k++) {
		hist[k] = 10 * (k + 1);
		hist[HIST_LEN + k] = k + 1;
	}
}

static int load(const struct layout *l, struct ls_snapshot *s, char *err,
		size_t errlen)
{
	char path[] = "/tmp/t-lib-postmortem-XXXXXX";
	int fd = mkstemp(path), r;

	if (fd < 0 || write(fd, l->buf, l->size) != (ssize_t)l->size)
		return -EIO;
	close(fd);
	r = ls_postmortem_load(path, s, err, errlen);
	unlink(path);
	return r;
}

/*
 * Version 4 on top of version 2's rows: site 1 (no row) has held its 14
 * bytes since sample 4, so of ticks 2..5 it shows 0, 0, 14, 14.  Site 0's
 * stats in its brief slot: size bucket 5 x 9, lifetime bucket 0 x 2, a
 * count of 2^58 - 1 in lifetime bucket 31; site 1's in wide slot 1.
 * Stacks: site 0 0x400000 0x500001 0x500002, all in the frames region;
 * site 1 0x400001 and site 0's from its second frame on; site 2 0x400002
 * and site 1's from its third.
 */
static void build_v4(struct layout *l)
{
	static const uint64_t region[] = { 0x400000, 0x500001, 0x500002,
					   0x400001, 0x400002 };
	struct lspm_site_brief *b;
	struct lspm_site_stats *w;
	struct lspm_site *sites;
	struct lspm_tail *t;

	build(l, 4);
	sites = (struct lspm_site *)(void *)(l->buf + l->h->sites_off);
	t = (struct lspm_tail *)(void *)(l->buf + l->h->tails_off);
	memcpy(l->buf + l->h->frames_off, region, sizeof(region));
	l->h->frames_used = 5;
	sites[0].nframes = 3;
	sites[0].frames_idx = 0;
	sites[1].nframes = 3;
	sites[1].frames_idx = 3;
	t[1] = (struct lspm_tail){ .site = 1, .skip = 1 };
	sites[2].nframes = 2;
	sites[2].frames_idx = 4;
	t[2] = (struct lspm_tail){ .site = 2, .skip = 2 };
	b = (struct lspm_site_brief *)(void *)(l->buf + l->h->stats_off);
	w = (struct lspm_site_stats *)(void *)(l->buf + l->h->wide_off);
	b[0].peak_bytes = 100;
	b[0].peak_blocks = 3;
	b[0].temp_bytes = 55;
	b[0].temp_blocks = 5;
	b[0].pair[0] = 9 | 5ull << LSPM_PAIR_BUCKET_SHIFT;
	b[0].pair[1] = 2 | LSPM_PAIR_LIFE;
	b[0].pair[2] = LSPM_PAIR_COUNT | LSPM_PAIR_LIFE |
		       31ull << LSPM_PAIR_BUCKET_SHIFT;
	b[0].since = 3;		/* not read: site 0 has a row */
	b[1].since = 4;
	b[1].wide = 1;
	b[1].peak_bytes = 999;	/* not read: the wide slot has them */
	w[0].s.nbuckets = LSNAP_HIST_BUCKETS;
	w[0].s.peak_bytes = 14;
	w[0].size_hist[7] = 77;
	w[0].life_hist[30] = 1;
	l->h->wide_used = 1;
}

static int stack_is(const struct ls_site *s, uint32_t n, uint64_t a,
		    uint64_t b, uint64_t c)
{
	return s->nframes == n && s->frames[0] == a && s->frames[1] == b &&
	       (n < 3 || s->frames[2] == c);
}

static int history_is(const struct ls_site *s, int64_t a, int64_t b,
		      int64_t c, int64_t d)
{
	return s->nhistory == 4 && s->history && s->history[0] == a &&
	       s->history[1] == b && s->history[2] == c && s->history[3] == d;
}

static void test_v2(void)
{
	struct layout l;
	struct ls_snapshot s;
	char err[256] = "";

	build(&l, 2);
	ok(load(&l, &s, err, sizeof(err)) == 0, "version 2 loads (%s)", err);
	ok(s.nsites == SITES && s.postmortem, "three sites, post-mortem");
	ok(history_is(&s.sites[0], 3, 4, 1, 2),
	   "site 0: its row (1), oldest sample first");
	ok(history_is(&s.sites[1], 0, 0, 0, 0),
	   "site 1: no row, so samples of 0");
	ok(history_is(&s.sites[2], 30, 40, 10, 20), "site 2: row 0");
	ok(s.sites[2].live_bytes == 21 && s.sites[2].frames[0] == 0x400002,
	   "site records and frames as written");
	ls_snapshot_release(&s);
	free(l.buf);
}

static void test_v4(void)
{
	struct layout l;
	struct ls_snapshot s;
	const struct ls_site_stats *a, *b;
	uint64_t size[LSNAP_HIST_BUCKETS], life[LSNAP_HIST_BUCKETS];
	char err[256] = "";
	unsigned k, nz = 0;

	build_v4(&l);
	ok(load(&l, &s, err, sizeof(err)) == 0, "version 4 loads (%s)", err);
	ok(s.nsites == SITES && s.has_peak, "three sites, with peaks");
	ok(history_is(&s.sites[0], 3, 4, 1, 2), "site 0: its row");
	ok(history_is(&s.sites[1], 0, 0, 14, 14),
	   "site 1: no row, 0 before its `since`, its live bytes from it on");
	ok(history_is(&s.sites[2], 30, 40, 10, 20), "site 2: row 0");
	ok(stack_is(&s.sites[0], 3, 0x400000, 0x500001, 0x500002) &&
	   stack_is(&s.sites[1], 3, 0x400001, 0x500001, 0x500002) &&
	   stack_is(&s.sites[2], 2, 0x400002, 0x500002, 0),
	   "stacks: their own frames, then the tail of an earlier site's");
	a = &s.sites[0].stats;
	ok(a->peak_bytes == 100 && a->peak_blocks == 3 && a->temp_bytes == 55 &&
	   a->temp_blocks == 5, "site 0: peak and temporaries from its brief slot");
	ls_site_hist(&s, &s.sites[0], size, life);
	for (k = 0; k < LSNAP_HIST_BUCKETS; k++)
		nz += !!size[k] + !!life[k];
	ok(nz == 3 && size[5] == 9 && life[0] == 2 &&
	   life[31] == LSPM_PAIR_COUNT,
	   "site 0: its three buckets from the pairs, the rest 0");
	b = &s.sites[1].stats;
	ls_site_hist(&s, &s.sites[1], size, life);
	ok(b->peak_bytes == 14 && size[7] == 77 && life[30] == 1,
	   "site 1: its stats from its wide slot");
	ls_snapshot_release(&s);
	free(l.buf);
}

/* The memory budget (serve's --memory-budget): a load charges what it
 * reads and builds, is refused with -ENOBUFS past it, gives it back. */
static void test_budget(void)
{
	struct layout l;
	struct ls_snapshot s;
	char err[256] = "";
	uint64_t used = 1, charged;
	int r;

	build(&l, 2);
	ls_snapshot_set_budget(1ull << 30);
	r = load(&l, &s, err, sizeof(err));
	ls_snapshot_budget(&used);
	charged = s.charged;
	ok(r == 0 && charged > 0 && used == charged,
	   "loaded: %llu bytes charged, %llu in use (%s)",
	   (unsigned long long)charged, (unsigned long long)used, err);
	ls_snapshot_release(&s);
	ls_snapshot_budget(&used);
	ok(used == 0, "released: given back (%llu)", (unsigned long long)used);
	ls_snapshot_set_budget(charged - 1);
	r = load(&l, &s, err, sizeof(err));
	ls_snapshot_budget(&used);
	ok(r == -ENOBUFS && strstr(err, "memory budget") && used == 0,
	   "a budget one byte short: refused, nothing held (%d, %s)", r, err);
	ls_snapshot_set_budget(0);
	free(l.buf);
}

/* What the agent could not record, or its file could not hold, is said. */
static void test_dropped(void)
{
	struct layout l;
	struct ls_snapshot s;
	char err[256] = "";
	int r;

	build(&l, 2);
	l.h->dropped = 1234;
	r = load(&l, &s, err, sizeof(err));
	ok(r == 0 && s.dropped == 1234,
	   "the header's dropped events reach the snapshot (%d, %llu)", r,
	   (unsigned long long)s.dropped);
	ls_snapshot_release(&s);
	l.h->dropped = 0;
	ok(load(&l, &s, err, sizeof(err)) == 0 && s.dropped == 0,
	   "none dropped: 0 (files written before the field read so)");
	ls_snapshot_release(&s);
	free(l.buf);
}

static void test_v1(void)
{
	struct layout l;
	struct ls_snapshot s;
	char err[256] = "";

	build(&l, 1);
	ok(load(&l, &s, err, sizeof(err)) == 0, "version 1 still loads (%s)",
	   err);
	ok(s.nsites == SITES && history_is(&s.sites[2], 202, 203, 200, 201),
	   "version 1: the row is the site id");
	ls_snapshot_release(&s);
	free(l.buf);
}

static void refused(struct layout *l, const char *what, const char *want)
{
	struct ls_snapshot s;
	char err[256] = "";
	int r = load(l, &s, err, sizeof(err));

	ok(r == -EINVAL && strstr(err, want), "%s: refused (%d, \"%s\")", what,
	   r, err);
	if (!r)
		ls_snapshot_release(&s);
	free(l->buf);
}

static void test_bad(void)
{
	struct layout l;

	build(&l, 2);
	l.h->rows_used = SITES_CAP + 1;
	refused(&l, "more rows used than there are", "corrupt");
	build(&l, 2);
	((uint32_t *)(void *)(l.buf + l.h->rows_off))[1] = SITES_CAP + 1;
	refused(&l, "a site's row past the rows", "");
	build(&l, 2);
	l.h->rows_cap = 1u << 30;
	refused(&l, "rows past the end of the file", "corrupt");
	build(&l, 2);
	l.h->version = 5;
	refused(&l, "version 5", "version 5 is not supported");
	build_v4(&l);
	((struct lspm_site_brief *)(void *)(l.buf + l.h->stats_off))[2].wide = 2;
	refused(&l, "a wide slot past those handed out", "");
	build_v4(&l);
	l.h->wide_used = 3;
	refused(&l, "more wide slots used than there are", "corrupt");
	build_v4(&l);
	l.h->wide_off = l.size - 8;
	refused(&l, "wide slots past the end of the file", "corrupt");
	build_v4(&l);
	((struct lspm_tail *)(void *)(l.buf + l.h->tails_off))[1].site = 2;
	refused(&l, "a stack ending as its own", "corrupt");
	build_v4(&l);
	((struct lspm_tail *)(void *)(l.buf + l.h->tails_off))[2].skip = 4;
	refused(&l, "a tail from past the earlier stack's end", "corrupt");
	build_v4(&l);
	((struct lspm_site *)(void *)(l.buf + l.h->sites_off))[2].nframes = 7;
	refused(&l, "own frames past the frames in use", "corrupt");
	build(&l, 1);
	l.h->hist_off = l.size;
	refused(&l, "version 1 history past the end", "corrupt");
}

/*
 * A sparse file (what another user can make in a second) whose header
 * claims every site and a long history: 8 GB apparent, 64 KB stored.
 * Loading it once cost its apparent size in memory; now it is refused
 * after reading the header, for what it stores.
 */
static void test_sparse(void)
{
	char path[] = "/tmp/t-lib-postmortem-XXXXXX", err[256] = "";
	int fd = mkstemp(path), r;
	struct ls_snapshot s;
	struct layout l;
	uint64_t off = LSPM_HEADER_SIZE;

	build(&l, 2);
	l.h->sites_cap = l.h->rows_cap = l.h->nsites = l.h->rows_used = 1u << 18;
	l.h->hist_len = l.h->ticks = 4096;
	l.h->modules_off = off;
	l.h->sites_off = off += sizeof(struct lspm_module);
	l.h->frames_off = off += (uint64_t)l.h->sites_cap * sizeof(struct lspm_site);
	l.h->rows_off = off += 16 * 8;
	l.h->hist_off = off += (uint64_t)l.h->sites_cap * 4;
	off += (uint64_t)l.h->rows_cap * l.h->hist_len * 8;
	r = fd >= 0 && write(fd, l.buf, LSPM_HEADER_SIZE) == LSPM_HEADER_SIZE &&
	    !ftruncate(fd, (off_t)off) ? 0 : -EIO;
	close(fd);
	ok(r == 0, "a sparse file of %llu GB", (unsigned long long)(off >> 30));
	r = ls_postmortem_load(path, &s, err, sizeof(err));
	ok(r == -EFBIG && strstr(err, "too large"), "refused for what it stores "
	   "(%d, \"%s\")", r, err);
	unlink(path);
	free(l.buf);
}

/* A FIFO: opening it must not wait for a writer, reading it is refused. */
static void test_fifo(void)
{
	char dir[] = "/tmp/t-lib-postmortem-XXXXXX", path[64], err[256] = "";
	struct ls_snapshot s;
	int r;

	if (!mkdtemp(dir))
		return;
	snprintf(path, sizeof(path), "%s/1.pm", dir);
	ok(!mkfifo(path, 0600), "a FIFO");
	r = ls_postmortem_load(path, &s, err, sizeof(err));
	ok(r == -EINVAL && strstr(err, "not a post-mortem file"),
	   "a FIFO is refused at once (%d, \"%s\")", r, err);
	unlink(path);
	rmdir(dir);
}

int main(void)
{
	test_v2();
	test_v4();
	test_dropped();
	test_v1();
	test_bad();
	test_sparse();
	test_fifo();
	test_budget();
	return tap_done();
}
