/*
 * snapshot.c - the snapshot reader.
 *
 * The input comes from another process, possibly a dying or hostile one,
 * through a file, a pipe or a socket, so every length is checked against
 * the format's bounds before anything is allocated or copied, and every
 * failure becomes one line of explanation rather than a crash.  The rules
 * are written up in docs/SNAPSHOT-FORMAT.md.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "redact.h"
#include "snapshot.h"
#include "util.h"
#include "util.h"

#define RD_BUF (64u << 10)

static _Atomic uint64_t budget, budget_used;

void ls_snapshot_set_budget(uint64_t bytes)
{
	budget = bytes;
}

uint64_t ls_snapshot_budget(uint64_t *in_use)
{
	if (in_use)
		*in_use = budget_used;
	return budget;
}

int ls_snapshot_charge(struct ls_snapshot *snap, uint64_t bytes)
{
	uint64_t max = budget, used = budget_used;

	if (!max)
		return 0;
	do {
		if (bytes > max || used > max - bytes)
			return -ENOBUFS;
	} while (!atomic_compare_exchange_weak(&budget_used, &used,
					       used + bytes));
	snap->charged += bytes;
	return 0;
}

/*
 * A buffered reader.  On a pipe or socket it never reads past the END
 * record, so that whatever follows a snapshot on the stream stays there
 * for the caller: "allowed" counts the bytes known to belong to the
 * snapshot that have not been read from fd yet.
 */
struct reader {
	int fd;
	int bounded;
	uint64_t deadline_ns;	/* CLOCK_MONOTONIC; 0 = none */
	uint64_t allowed;
	uint64_t total, max;	/* bytes of records so far, their cap (0: none) */
	size_t pos, len;
	unsigned char buf[RD_BUF];
};

/* A site's growth history, attached to its site once all are read. */
struct pending_hist {
	uint32_t site, n;
	int64_t *v;
};

struct parse {
	struct reader *rd;
	struct ls_snapshot *snap;
	uint32_t nrec;		/* records accepted so far, END excluded */
	uint32_t version;	/* the file header's */
	uint64_t fnv;		/* version 1's hash so far */
	struct lsnap_hash hash;	/* version 2's */
	unsigned char *payload;
	size_t payload_cap;
	int seen_header, seen_command, seen_totals, seen_peak, seen_mallinfo;
	int seen_attach, seen_reach, seen_dropped, seen_agent_memory;
	int seen_namespaces;
	int seen_loader, seen_module_walk;
	int seen_reach_heur, seen_reach_how;
	int seen_history, seen_unwind, seen_notes;
	struct lsnap_reach_site *rsites;	/* attached after END */
	size_t nrsites, cap_rsites;
	size_t cap_held;		/* of snap->reach_held */
	uint8_t *cats;		/* LSNAP_REACH_BLOCKS, in BLOCKS order */
	size_t ncats, cap_cats;
	int sites_sorted;
	size_t cap_calls, cap_modules, cap_sites, cap_blocks;
	struct pending_hist *hist;
	size_t nhist, cap_hist;
	char *err;
	size_t errlen;
};

static int fail(struct parse *p, int ret, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

static int fail(struct parse *p, int ret, const char *fmt, ...)
{
	va_list ap;

	if (p->err && p->errlen) {
		va_start(ap, fmt);
		vsnprintf(p->err, p->errlen, fmt, ap);
		va_end(ap);
	}
	return ret;
}

/* strerror() starts with a capital; our messages are lowercase. */
static const char *errstr(int e, char *buf, size_t len)
{
	snprintf(buf, len, "%s", strerror(e));
	buf[0] = (char)tolower((unsigned char)buf[0]);
	return buf;
}

static ssize_t fill_from_fd(struct reader *r, void *dst, size_t want)
{
	ssize_t n;

	if (r->bounded && want > r->allowed)
		want = (size_t)r->allowed;
	if (want == 0)
		return 0;
	if (r->deadline_ns && (n = ls_wait_readable(r->fd, r->deadline_ns)))
		return n;
	do
		n = read(r->fd, dst, want);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -errno;
	if (r->bounded)
		r->allowed -= (uint64_t)n;
	return n;
}

/*
 * Copy up to n bytes into dst.  Returns the number copied, less than n
 * only at end of input, or a negative errno.
 */
static ssize_t rd_read(struct reader *r, void *dst, size_t n)
{
	unsigned char *d = dst;
	size_t done = 0;
	ssize_t got;

	while (done < n) {
		if (r->pos < r->len) {
			size_t k = r->len - r->pos;

			if (k > n - done)
				k = n - done;
			memcpy(d + done, r->buf + r->pos, k);
			r->pos += k;
			done += k;
			continue;
		}
		if (n - done >= RD_BUF) {
			/* Large payloads bypass the buffer. */
			got = fill_from_fd(r, d + done, n - done);
			if (got > 0)
				done += (size_t)got;
		} else {
			got = fill_from_fd(r, r->buf, RD_BUF);
			r->pos = 0;
			r->len = got > 0 ? (size_t)got : 0;
		}
		if (got < 0)
			return got;
		if (got == 0)
			break;
	}
	return (ssize_t)done;
}

static const char *tag_name(uint32_t tag)
{
	switch (tag) {
	case LSNAP_HEADER: return "header";
	case LSNAP_COMMAND: return "command";
	case LSNAP_CALLS: return "calls";
	case LSNAP_TOTALS: return "totals";
	case LSNAP_MALLINFO: return "mallinfo";
	case LSNAP_MODULE: return "module";
	case LSNAP_SITE: return "site";
	case LSNAP_BLOCKS: return "blocks";
	case LSNAP_HISTORY: return "history";
	case LSNAP_SITE_HISTORY: return "site history";
	case LSNAP_UNWIND: return "unwind";
	case LSNAP_ATTACH: return "attach";
	case LSNAP_NAMESPACES: return "namespaces";
	case LSNAP_LOADER: return "loader lock";
	case LSNAP_MODULE_WALK: return "module walk";
	case LSNAP_REACH: return "reachability";
	case LSNAP_REACH_SITE: return "site reachability";
	case LSNAP_REACH_HEUR: return "heuristics";
	case LSNAP_REACH_HELD: return "held reachability";
	case LSNAP_REACH_HOW: return "check method";
	case LSNAP_REACH_BLOCKS: return "block reachability";
	case LSNAP_NOTES: return "notes";
	case LSNAP_PEAK: return "peak";
	case LSNAP_SITE_STATS: return "site stats";
	case LSNAP_DROPPED: return "dropped";
	case LSNAP_AGENT_MEMORY: return "agent memory";
	case LSNAP_JIT: return "jit";
	case LSNAP_END: return "end";
	}
	return "unknown type";
}

/* Grow *arr (elements of size el) so that it holds at least need. */
static int bad_len(struct parse *p, uint32_t tag, uint32_t len, size_t want)
{
	return fail(p, -EINVAL,
		    "corrupt snapshot: record %u (%s) has length %u, expected %zu",
		    p->nrec + 1, tag_name(tag), len, want);
}

static int once(struct parse *p, int *seen, uint32_t tag)
{
	if (*seen)
		return fail(p, -EINVAL,
			    "corrupt snapshot: record %u is a second %s record",
			    p->nrec + 1, tag_name(tag));
	*seen = 1;
	return 0;
}

static int parse_header(struct parse *p, uint32_t len)
{
	struct lsnap_header *h = &p->snap->hdr;
	int ret = once(p, &p->seen_header, LSNAP_HEADER);

	if (ret)
		return ret;
	if (len != sizeof(*h))
		return bad_len(p, LSNAP_HEADER, len, sizeof(*h));
	memcpy(h, p->payload, sizeof(*h));
	if (h->mode > LSNAP_MODE_SAMPLED)
		return fail(p, -EINVAL, "corrupt snapshot: unknown mode %u",
			    h->mode);
	if (h->reason > LSNAP_REASON_REQUEST)
		return fail(p, -EINVAL, "corrupt snapshot: unknown reason %u",
			    h->reason);
	return 0;
}

/* NUL-separated argv; a last argument without its NUL is kept. */
static int parse_command(struct parse *p, uint32_t len)
{
	struct ls_snapshot *s = p->snap;
	const char *c = (const char *)p->payload, *end = c + len;
	size_t n = 0, i;
	int ret = once(p, &p->seen_command, LSNAP_COMMAND);

	if (ret)
		return ret;
	for (i = 0; i < len; i++)
		if (c[i] == 0 || i + 1 == len)
			n++;
	s->argv = calloc(n + 1, sizeof(*s->argv));
	if (!s->argv)
		return -ENOMEM;
	for (i = 0; i < n; i++) {
		size_t k = strnlen(c, (size_t)(end - c));

		s->argv[i] = strndup(c, k);
		if (!s->argv[i])
			return -ENOMEM;
		s->argc++;
		c += k + 1;
	}
	ls_argv_redact(s->argv, s->argc);	/* nothing prints a secret */
	return 0;
}

static int parse_calls(struct parse *p, uint32_t len)
{
	struct ls_snapshot *s = p->snap;
	const struct lsnap_call *c = (const void *)p->payload;
	size_t i, n = len / sizeof(*c);
	int ret;

	if (len % sizeof(*c))
		return bad_len(p, LSNAP_CALLS, len,
			       (n + 1) * sizeof(*c));
	ret = ls_grow(&s->calls, &p->cap_calls, s->ncalls + n, sizeof(*s->calls));
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		struct ls_call_count *o = &s->calls[s->ncalls++];
		struct lsnap_call in;

		memcpy(&in, &c[i], sizeof(in));
		memcpy(o->name, in.name, LSNAP_CALL_NAME);
		o->name[LSNAP_CALL_NAME] = 0;
		o->count = in.count;
	}
	return 0;
}

static int parse_fixed(struct parse *p, uint32_t tag, uint32_t len,
		       int *seen, int *has, void *dst, size_t size)
{
	int ret = once(p, seen, tag);

	if (ret)
		return ret;
	if (len != size)
		return bad_len(p, tag, len, size);
	memcpy(dst, p->payload, size);
	*has = 1;
	return 0;
}

/* The agent's notes: text lines, each ending with '\n', no NUL. */
static int parse_notes(struct parse *p, uint32_t len)
{
	int ret = once(p, &p->seen_notes, LSNAP_NOTES);

	if (ret)
		return ret;
	if (!len || len > LSNAP_NOTES_MAX || p->payload[len - 1] != '\n' ||
	    memchr(p->payload, 0, len))
		return fail(p, -EINVAL, "corrupt snapshot: record %u (notes) "
			    "is not lines of text of at most %u bytes",
			    p->nrec + 1, LSNAP_NOTES_MAX);
	p->snap->notes = strndup((const char *)p->payload, len);
	return p->snap->notes ? 0 : -ENOMEM;
}

/* A piece of JIT code and its name (docs/SNAPSHOT-FORMAT.md, JIT). */
static int parse_jit(struct parse *p, uint32_t len)
{
	struct ls_snapshot *s = p->snap;
	struct lsnap_jit j;
	const char *name = (const char *)p->payload + sizeof(j);
	struct ls_jit_code *c;

	if (len < sizeof(j))
		return bad_len(p, LSNAP_JIT, len, sizeof(j));
	memcpy(&j, p->payload, sizeof(j));
	if (len != sizeof(j) + j.name_len)
		return bad_len(p, LSNAP_JIT, len, sizeof(j) + j.name_len);
	if (!j.size || !j.name_len || j.name_len > LSNAP_JIT_NAME_MAX ||
	    j.lo + j.size < j.lo || memchr(name, 0, j.name_len))
		return fail(p, -EINVAL, "corrupt snapshot: record %u (jit) "
			    "has an empty or wrapping range or a bad name",
			    p->nrec + 1);
	if (LS_GROW(s->jit, s->njit + 1, s->jit_cap))
		return -ENOMEM;
	c = &s->jit[s->njit];
	c->name = strndup(name, j.name_len);
	if (!c->name)
		return -ENOMEM;
	c->lo = j.lo;
	c->hi = j.lo + j.size;
	c->beam = !!(j.flags & LSNAP_JIT_F_BEAM);
	s->njit++;
	return 0;
}

static int check_module(struct parse *p, const struct lsnap_module *m,
			uint32_t len)
{
	unsigned rec = p->nrec + 1;

	if (m->path_len > LSNAP_MAX_PATH)
		return fail(p, -EINVAL, "corrupt snapshot: record %u (module) "
			    "has a path of %u bytes, more than %u", rec,
			    m->path_len, LSNAP_MAX_PATH);
	if (len != sizeof(*m) + m->path_len)
		return bad_len(p, LSNAP_MODULE, len, sizeof(*m) + m->path_len);
	if (m->build_id_len > LSNAP_BUILD_ID_MAX)
		return fail(p, -EINVAL, "corrupt snapshot: record %u (module) "
			    "has a build id of %u bytes, more than %u", rec,
			    m->build_id_len, LSNAP_BUILD_ID_MAX);
	if (memchr(p->payload + sizeof(*m), 0, m->path_len))
		return fail(p, -EINVAL, "corrupt snapshot: record %u (module) "
			    "has a NUL byte in its path", rec);
	if (m->lo > m->hi || m->gen_from > m->gen_to)
		return fail(p, -EINVAL, "corrupt snapshot: record %u (module) "
			    "has an inverted address or generation range", rec);
	return 0;
}

static int parse_module(struct parse *p, uint32_t len)
{
	struct ls_snapshot *s = p->snap;
	struct lsnap_module m;
	struct ls_module *o;
	int ret;

	if (len < sizeof(m))
		return bad_len(p, LSNAP_MODULE, len, sizeof(m));
	memcpy(&m, p->payload, sizeof(m));
	ret = check_module(p, &m, len);
	if (!ret)
		ret = ls_grow(&s->modules, &p->cap_modules, s->nmodules + 1,
			   sizeof(*s->modules));
	if (ret)
		return ret;
	o = &s->modules[s->nmodules];
	memset(o, 0, sizeof(*o));
	o->path = strndup((const char *)p->payload + sizeof(m), m.path_len);
	if (!o->path)
		return -ENOMEM;
	o->bias = m.bias;
	o->lo = m.lo;
	o->hi = m.hi;
	o->gen_from = m.gen_from;
	o->gen_to = m.gen_to;
	o->build_id_len = m.build_id_len;
	memcpy(o->build_id, m.build_id, m.build_id_len);
	s->nmodules++;
	return 0;
}

static int check_site(struct parse *p, const struct lsnap_site *r,
		      uint32_t len)
{
	if (r->nframes > LSNAP_MAX_FRAMES)
		return fail(p, -EINVAL, "corrupt snapshot: record %u (site) "
			    "has %u frames, more than %u", p->nrec + 1,
			    r->nframes, LSNAP_MAX_FRAMES);
	if (len != sizeof(*r) + (size_t)r->nframes * sizeof(uint64_t))
		return bad_len(p, LSNAP_SITE, len, sizeof(*r) +
			       (size_t)r->nframes * sizeof(uint64_t));
	/* The tracer's kinds (2-4) never come in a file. */
	if (r->kind > LSNAP_KIND_MMAP && r->kind != LSNAP_KIND_ALLOCATOR &&
	    r->kind != LSNAP_KIND_RESERVED)
		return fail(p, -EINVAL, "corrupt snapshot: record %u (site) "
			    "has unknown kind %u", p->nrec + 1, r->kind);
	return 0;
}

/* Room for n <= LSNAP_MAX_FRAMES words in the snapshot's frame chunks,
 * which never move; NULL without memory. */
#define CHUNK_WORDS (128 * 1024)
_Static_assert(CHUNK_WORDS > LSNAP_MAX_FRAMES + 1, "a stack fits a chunk");
static uint64_t *chunk_words(struct ls_snapshot *s, size_t n)
{
	uint64_t *c;

	if (!s->frame_chunks || s->chunk_cap - s->chunk_used < n) {
		c = malloc(CHUNK_WORDS * sizeof(*c));
		if (!c)
			return NULL;
		c[0] = (uint64_t)(uintptr_t)s->frame_chunks;
		s->frame_chunks = c;
		s->chunk_used = 1;
		s->chunk_cap = CHUNK_WORDS;
	}
	c = s->frame_chunks + s->chunk_used;
	s->chunk_used += n;
	return c;
}

static int parse_site(struct parse *p, uint32_t len)
{
	struct ls_snapshot *s = p->snap;
	struct lsnap_site r;
	struct ls_site *o;
	int ret;

	if (len < sizeof(r))
		return bad_len(p, LSNAP_SITE, len, sizeof(r));
	memcpy(&r, p->payload, sizeof(r));
	ret = check_site(p, &r, len);
	if (!ret)
		ret = ls_grow(&s->sites, &p->cap_sites, s->nsites + 1,
			   sizeof(*s->sites));
	if (ret)
		return ret;
	o = &s->sites[s->nsites];
	memset(o, 0, sizeof(*o));
	if (r.nframes) {
		o->frames = chunk_words(s, r.nframes);
		if (!o->frames)
			return -ENOMEM;
		memcpy(o->frames, p->payload + sizeof(r),
		       r.nframes * sizeof(uint64_t));
	}
	if (s->nsites && s->sites[s->nsites - 1].id >= r.id)
		p->sites_sorted = 0;
	o->id = r.id;
	o->kind = r.kind;
	o->gen = r.gen;
	o->nframes = r.nframes;
	o->live_bytes = r.live_bytes;
	o->live_blocks = r.live_blocks;
	o->allocated_bytes = r.allocated_bytes;
	o->allocated_blocks = r.allocated_blocks;
	s->nsites++;
	return 0;
}

static int parse_blocks(struct parse *p, uint32_t len)
{
	struct ls_snapshot *s = p->snap;
	size_t i, n = len / sizeof(struct lsnap_block);
	int ret;

	if (len % sizeof(struct lsnap_block))
		return bad_len(p, LSNAP_BLOCKS, len,
			       (n + 1) * sizeof(struct lsnap_block));
	ret = ls_grow(&s->blocks, &p->cap_blocks, s->nblocks + n,
		   sizeof(*s->blocks));
	if (ret)
		return ret;
	for (i = 0; i < n; i++) {
		struct lsnap_block b;
		struct ls_block *o = &s->blocks[s->nblocks++];

		memcpy(&b, p->payload + i * sizeof(b), sizeof(b));
		o->addr = b.addr;
		o->size = b.size;
		o->birth_ns = b.birth_ns;
		o->site = b.site;
		o->tid = b.tid;
	}
	s->has_blocks = 1;
	return 0;
}

static int parse_site_history(struct parse *p, uint32_t len)
{
	struct lsnap_site_history h;
	struct pending_hist *o;
	int ret;

	if (len < sizeof(h))
		return bad_len(p, LSNAP_SITE_HISTORY, len, sizeof(h));
	memcpy(&h, p->payload, sizeof(h));
	if (len != sizeof(h) + (uint64_t)h.n * sizeof(int64_t))
		return bad_len(p, LSNAP_SITE_HISTORY, len,
			       sizeof(h) + (size_t)h.n * sizeof(int64_t));
	if (p->snap->has_history && h.n > p->snap->history.hist_len)
		return fail(p, -EINVAL, "corrupt snapshot: record %u (site "
			    "history) has %u samples, more than the %u kept",
			    p->nrec + 1, h.n, p->snap->history.hist_len);
	ret = ls_grow(&p->hist, &p->cap_hist, p->nhist + 1, sizeof(*p->hist));
	if (ret)
		return ret;
	o = &p->hist[p->nhist];
	o->site = h.site;
	o->n = h.n;
	o->v = malloc((h.n ? h.n : 1) * sizeof(int64_t));
	if (!o->v)
		return -ENOMEM;
	memcpy(o->v, p->payload + sizeof(h), h.n * sizeof(int64_t));
	p->nhist++;
	return 0;
}

/* A site's stats follow its LSNAP_SITE record. */
static int parse_site_stats(struct parse *p, uint32_t len)
{
	struct ls_snapshot *s = p->snap;
	struct lsnap_site_stats r;
	struct ls_site *site;
	const unsigned char *h;
	uint64_t size[LSNAP_HIST_BUCKETS], life[LSNAP_HIST_BUCKETS];

	if (len < sizeof(r))
		return bad_len(p, LSNAP_SITE_STATS, len, sizeof(r));
	memcpy(&r, p->payload, sizeof(r));
	if (r.nbuckets > LSNAP_HIST_BUCKETS)
		return fail(p, -EINVAL, "corrupt snapshot: record %u (site "
			    "stats) has %u buckets, more than %u", p->nrec + 1,
			    r.nbuckets, LSNAP_HIST_BUCKETS);
	if (len != sizeof(r) + 16ull * r.nbuckets)
		return bad_len(p, LSNAP_SITE_STATS, len,
			       sizeof(r) + 16 * (size_t)r.nbuckets);
	if (!s->nsites || s->sites[s->nsites - 1].id != r.site)
		return fail(p, -EINVAL, "corrupt snapshot: record %u (site "
			    "stats) does not follow site %u", p->nrec + 1,
			    r.site);
	site = &s->sites[s->nsites - 1];
	site->stats.peak_bytes = r.peak_bytes;
	site->stats.peak_blocks = r.peak_blocks;
	site->stats.temp_bytes = r.temp_bytes;
	site->stats.temp_blocks = r.temp_blocks;
	h = p->payload + sizeof(r);
	memcpy(size, h, 8 * (size_t)r.nbuckets);
	memcpy(life, h + 8 * (size_t)r.nbuckets, 8 * (size_t)r.nbuckets);
	return ls_snapshot_set_hist(s, site, size, life, r.nbuckets);
}

/* A fixed-size record of tag, appended to the array *arr of *n (room
 * for *cap) elements of size bytes. */
static int append_fixed(struct parse *p, uint32_t tag, uint32_t len,
			size_t size, void *arr, size_t *n, size_t *cap)
{
	int ret;

	if (len != size)
		return bad_len(p, tag, len, size);
	ret = ls_grow(arr, cap, *n + 1, size);
	if (ret)
		return ret;
	memcpy((char *)*(void **)arr + (*n)++ * size, p->payload, len);
	return 0;
}

static int parse_reach_site(struct parse *p, uint32_t len)
{
	return append_fixed(p, LSNAP_REACH_SITE, len,
			    sizeof(struct lsnap_reach_site), &p->rsites,
			    &p->nrsites, &p->cap_rsites);
}

static int parse_reach_held(struct parse *p, uint32_t len)
{
	return append_fixed(p, LSNAP_REACH_HELD, len,
			    sizeof(struct lsnap_reach_held),
			    &p->snap->reach_held, &p->snap->nreach_held,
			    &p->cap_held);
}

static int parse_reach_blocks(struct parse *p, uint32_t len)
{
	uint32_t i;
	int ret;

	for (i = 0; i < len; i++)
		if (p->payload[i] >= LSNAP_REACH_KINDS &&
		    p->payload[i] != LSNAP_REACH_NONE)
			return fail(p, -EINVAL, "corrupt snapshot: record %u "
				    "(block reachability) has unknown "
				    "category %u", p->nrec + 1, p->payload[i]);
	ret = ls_grow(&p->cats, &p->cap_cats, p->ncats + len + 1, 1);
	if (ret)
		return ret;
	memcpy(p->cats + p->ncats, p->payload, len);
	p->ncats += len;
	return 0;
}

static int dispatch(struct parse *p, uint32_t tag, uint32_t len)
{
	struct ls_snapshot *s = p->snap;

	switch (tag) {
	case LSNAP_HEADER:
		return parse_header(p, len);
	case LSNAP_COMMAND:
		return parse_command(p, len);
	case LSNAP_CALLS:
		return parse_calls(p, len);
	case LSNAP_TOTALS:
		return parse_fixed(p, tag, len, &p->seen_totals,
				   &s->has_totals, &s->totals,
				   sizeof(s->totals));
	case LSNAP_MALLINFO:
		return parse_fixed(p, tag, len, &p->seen_mallinfo,
				   &s->has_mallinfo, &s->mallinfo,
				   sizeof(s->mallinfo));
	case LSNAP_MODULE:
		return parse_module(p, len);
	case LSNAP_SITE:
		return parse_site(p, len);
	case LSNAP_BLOCKS:
		return parse_blocks(p, len);
	case LSNAP_HISTORY:
		return parse_fixed(p, tag, len, &p->seen_history,
				   &s->has_history, &s->history,
				   sizeof(s->history));
	case LSNAP_SITE_HISTORY:
		return parse_site_history(p, len);
	case LSNAP_UNWIND:
		return parse_fixed(p, tag, len, &p->seen_unwind,
				   &s->has_unwind, &s->unwind,
				   sizeof(s->unwind));
	case LSNAP_ATTACH:
		return parse_fixed(p, tag, len, &p->seen_attach,
				   &s->has_attach, &s->attach,
				   sizeof(s->attach));
	case LSNAP_LOADER:
		return parse_fixed(p, tag, len, &p->seen_loader,
				   &s->has_loader, &s->loader,
				   sizeof(s->loader));
	case LSNAP_MODULE_WALK:
		return parse_fixed(p, tag, len, &p->seen_module_walk,
				   &s->has_module_walk, &s->module_walk,
				   sizeof(s->module_walk));
	case LSNAP_NAMESPACES:
		return parse_fixed(p, tag, len, &p->seen_namespaces,
				   &s->has_namespaces, &s->namespaces,
				   sizeof(s->namespaces));
	case LSNAP_REACH:
		return parse_fixed(p, tag, len, &p->seen_reach,
				   &s->has_reach, &s->reach, sizeof(s->reach));
	case LSNAP_REACH_HEUR:
		return parse_fixed(p, tag, len, &p->seen_reach_heur,
				   &s->has_reach_heur, &s->reach_heur,
				   sizeof(s->reach_heur));
	case LSNAP_REACH_HOW:
		return parse_fixed(p, tag, len, &p->seen_reach_how,
				   &s->has_reach_how, &s->reach_how,
				   sizeof(s->reach_how));
	case LSNAP_REACH_SITE:
		return parse_reach_site(p, len);
	case LSNAP_REACH_BLOCKS:
		return parse_reach_blocks(p, len);
	case LSNAP_REACH_HELD:
		return parse_reach_held(p, len);
	case LSNAP_NOTES:
		return parse_notes(p, len);
	case LSNAP_PEAK:
		return parse_fixed(p, tag, len, &p->seen_peak, &s->has_peak,
				   &s->peak, sizeof(s->peak));
	case LSNAP_SITE_STATS:
		return parse_site_stats(p, len);
	case LSNAP_AGENT_MEMORY:
		return parse_fixed(p, tag, len, &p->seen_agent_memory,
				   &s->has_agent_memory, &s->agent_memory,
				   sizeof(s->agent_memory));
	case LSNAP_JIT:
		return parse_jit(p, len);
	case LSNAP_DROPPED: {
		struct lsnap_dropped d;
		int ret = parse_fixed(p, tag, len, &p->seen_dropped,
				      &s->has_dropped, &d, sizeof(d));

		s->dropped = d.events;
		return ret;
	}
	}
	return 0;	/* a later version's record: skipped */
}

static int read_error(struct parse *p, ssize_t n)
{
	char eb[128];

	return fail(p, (int)n, "cannot read snapshot: %s",
		    errstr((int)-n, eb, sizeof(eb)));
}

static int truncated(struct parse *p)
{
	return fail(p, -EINVAL,
		    "snapshot ends before its END record (truncated?)");
}

/* The END record's hash, by the snapshot's version. */
static void hash_add(struct parse *p, const void *buf, size_t len)
{
	if (p->version == 1)
		p->fnv = lsnap_fnv1a(p->fnv, buf, len);
	else
		lsnap_hash_add(&p->hash, buf, len);
}

static uint64_t hash_end(const struct parse *p)
{
	return p->version == 1 ? p->fnv : lsnap_hash_end(&p->hash);
}

static int read_file_hdr(struct parse *p)
{
	struct lsnap_file_hdr fh;
	ssize_t n = rd_read(p->rd, &fh, sizeof(fh));
	size_t cmp;

	if (n < 0)
		return read_error(p, n);
	cmp = (size_t)n < sizeof(fh.magic) ? (size_t)n : sizeof(fh.magic);
	if (n == 0 || memcmp(fh.magic, LSNAP_MAGIC, cmp))
		return fail(p, -EINVAL, "not a leakscope snapshot");
	if ((size_t)n < sizeof(fh))
		return truncated(p);
	if (fh.version < LSNAP_VERSION_MIN || fh.version > LSNAP_VERSION)
		return fail(p, -EINVAL, "unsupported snapshot version %u "
			    "(this leakscope reads versions %u to %u)",
			    fh.version, LSNAP_VERSION_MIN, LSNAP_VERSION);
	p->version = fh.version;
	p->fnv = LSNAP_FNV_INIT;
	lsnap_hash_init(&p->hash);
	hash_add(p, &fh, sizeof(fh));
	return 0;
}

/* Site ids must be unique for ls_snapshot_site() to be meaningful. */
static int cmp_u32(const void *a, const void *b)
{
	uint32_t x = *(const uint32_t *)a, y = *(const uint32_t *)b;

	return x < y ? -1 : x > y;
}

static int check_site_ids(struct parse *p)
{
	const struct ls_snapshot *s = p->snap;
	uint32_t *ids;
	size_t i;
	int ret = 0;

	if (p->sites_sorted || s->nsites < 2)
		return 0;
	ids = malloc(s->nsites * sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	for (i = 0; i < s->nsites; i++)
		ids[i] = s->sites[i].id;
	qsort(ids, s->nsites, sizeof(*ids), cmp_u32);
	for (i = 1; i < s->nsites && !ret; i++)
		if (ids[i] == ids[i - 1])
			ret = fail(p, -EINVAL, "corrupt snapshot: site id %u "
				   "appears twice", ids[i]);
	free(ids);
	return ret;
}

/*
 * Give each site its history.  A history may come before or after its
 * site; one for a site the snapshot does not list (created while it was
 * written) is dropped.
 */
static int attach_histories(struct parse *p)
{
	size_t i;

	for (i = 0; i < p->nhist; i++) {
		struct pending_hist *h = &p->hist[i];
		struct ls_site *site = (struct ls_site *)
			ls_snapshot_site(p->snap, h->site);

		if (!site)
			continue;
		if (site->history)
			return fail(p, -EINVAL, "corrupt snapshot: site %u has "
				    "two histories", h->site);
		site->history = h->v;
		site->nhistory = h->n;
		h->v = NULL;
	}
	return 0;
}

/* Per-site figures to their sites, categories to the blocks. */
static int attach_reach(struct parse *p)
{
	struct ls_snapshot *s = p->snap;
	size_t i;
	int k;

	for (i = 0; i < s->nblocks; i++)
		s->blocks[i].reach = LSNAP_REACH_NONE;
	if (p->ncats && p->ncats != s->nblocks)
		return fail(p, -EINVAL, "corrupt snapshot: %zu block "
			    "categories for %zu blocks", p->ncats, s->nblocks);
	for (i = 0; i < p->ncats; i++)
		s->blocks[i].reach = p->cats[i];
	if (p->nrsites) {
		s->site_reach = calloc(p->nrsites, sizeof(*s->site_reach));
		if (!s->site_reach)
			return -ENOMEM;
	}
	for (i = 0; i < p->nrsites; i++) {
		const struct lsnap_reach_site *r = &p->rsites[i];
		struct ls_site *site = (struct ls_site *)
			ls_snapshot_site(s, r->site);
		struct ls_reach_figs *f = &s->site_reach[i];

		if (!site)
			continue;	/* created after the image was taken */
		for (k = 0; k < LSNAP_REACH_KINDS; k++) {
			f->bytes[k] = r->bytes[k];
			f->blocks[k] = r->blocks[k];
		}
		f->indirect_bytes = r->indirect_bytes;
		f->indirect_blocks = r->indirect_blocks;
		site->reach = f;
	}
	return 0;
}

/* *sum += |v|, 0 while it stays within LS_FIGURES_MAX. */
static int figure_add(uint64_t *sum, int64_t v)
{
	uint64_t m = v < 0 ? -(uint64_t)v : (uint64_t)v;

	if (m > LS_FIGURES_MAX || *sum + m > LS_FIGURES_MAX)
		return -1;
	*sum += m;
	return 0;
}

/* The same for an unsigned figure. */
static int ufigure_add(uint64_t *sum, uint64_t v)
{
	return v > LS_FIGURES_MAX ? -1 : figure_add(sum, (int64_t)v);
}

static int site_figures_ok(const struct ls_site *s, uint64_t *sum)
{
	const struct ls_site_stats *st = &s->stats;
	const struct ls_reach_figs *r = ls_site_reach(s);
	int bad = figure_add(&sum[0], s->live_bytes) ||
		  figure_add(&sum[1], s->live_blocks) ||
		  ufigure_add(&sum[2], s->allocated_bytes) ||
		  ufigure_add(&sum[3], s->allocated_blocks) ||
		  figure_add(&sum[4], st->peak_bytes) ||
		  figure_add(&sum[5], st->peak_blocks) ||
		  ufigure_add(&sum[6], st->temp_bytes) ||
		  ufigure_add(&sum[7], st->temp_blocks) ||
		  ufigure_add(&sum[8], r->indirect_bytes) ||
		  ufigure_add(&sum[9], r->indirect_blocks);
	int k;

	for (k = 0; !bad && k < LSNAP_REACH_KINDS; k++)
		bad = ufigure_add(&sum[10 + 2 * k], r->bytes[k]) ||
		      ufigure_add(&sum[11 + 2 * k], r->blocks[k]);
	return !bad;
}

int ls_snapshot_check_figures(const struct ls_snapshot *snap, char *err,
			      size_t errlen)
{
	uint64_t sum[10 + 2 * LSNAP_REACH_KINDS] = { 0 }, bytes = 0;
	size_t i;

	for (i = 0; i < snap->nsites; i++)
		if (!site_figures_ok(&snap->sites[i], sum)) {
			snprintf(err, errlen, "corrupt snapshot: site %u's "
				 "figures add up to more than 2^60",
				 snap->sites[i].id);
			return -EINVAL;
		}
	for (i = 0; i < snap->nblocks; i++)
		if (ufigure_add(&bytes, snap->blocks[i].size)) {
			snprintf(err, errlen, "corrupt snapshot: the blocks' "
				 "sizes add up to more than 2^60");
			return -EINVAL;
		}
	return 0;
}

/* Give back an array's room beyond its n elements of size el (up to
 * half of it, grown by doubling); it stays as it is if realloc fails. */
static void trim_array(void *arr, size_t *cap, size_t n, size_t el)
{
	void **a = arr, *q;

	if (!n || *cap <= n)
		return;
	q = realloc(*a, n * el);
	if (!q)
		return;
	*a = q;
	*cap = n;
}

/* The snapshot is whole: its arrays to their sizes. */
static void trim(struct parse *p)
{
	struct ls_snapshot *s = p->snap;

	trim_array(&s->sites, &p->cap_sites, s->nsites, sizeof(*s->sites));
	trim_array(&s->blocks, &p->cap_blocks, s->nblocks, sizeof(*s->blocks));
	trim_array(&s->hist_counts, &s->cap_hist_counts, s->nhist_counts,
		   sizeof(*s->hist_counts));
}

static int read_end(struct parse *p, uint32_t len)
{
	struct lsnap_end e;
	ssize_t n;
	int ret;

	if (len != sizeof(e))
		return bad_len(p, LSNAP_END, len, sizeof(e));
	n = rd_read(p->rd, &e, sizeof(e));
	if (n < 0)
		return read_error(p, n);
	if ((size_t)n < sizeof(e))
		return truncated(p);
	if (e.pad)
		return fail(p, -EINVAL, "corrupt snapshot: the END record's "
			    "reserved field is not zero");
	if (e.nrecords != p->nrec)
		return fail(p, -EINVAL, "corrupt snapshot: the END record "
			    "counts %u records, the snapshot has %u",
			    e.nrecords, p->nrec);
	if (e.hash != hash_end(p))
		return fail(p, -EINVAL, "corrupt snapshot: checksum mismatch "
			    "(damaged or altered)");
	trim(p);
	ret = check_site_ids(p);
	if (!ret)
		ret = attach_histories(p);
	if (!ret)
		ret = attach_reach(p);
	return ret ? ret : ls_snapshot_check_figures(p->snap, p->err,
						     p->errlen);
}

static int read_payload(struct parse *p, uint32_t tag, uint32_t len)
{
	ssize_t n;
	int ret;

	ret = ls_grow(&p->payload, &p->payload_cap, len ? len : 1, 1);
	if (ret)
		return ret;
	n = rd_read(p->rd, p->payload, len);
	if (n < 0)
		return read_error(p, n);
	if ((size_t)n < len)
		return fail(p, -EINVAL, "corrupt snapshot: record %u (%s) is "
			    "truncated", p->nrec + 1, tag_name(tag));
	hash_add(p, p->payload, len);
	return 0;
}

/* One record; returns 1 after the END record, 0 to go on, or -errno. */
static int read_record(struct parse *p)
{
	struct lsnap_rec_hdr h;
	ssize_t n = rd_read(p->rd, &h, sizeof(h));
	int ret;

	if (n < 0)
		return read_error(p, n);
	if ((size_t)n < sizeof(h))
		return truncated(p);
	if (!p->seen_header && h.tag != LSNAP_HEADER)
		return fail(p, -EINVAL, "corrupt snapshot: the first record "
			    "is not the header (found: %s)", tag_name(h.tag));
	if (h.len > LSNAP_MAX_RECORD)
		return fail(p, -EINVAL, "corrupt snapshot: record %u (%s) "
			    "claims %u bytes, more than the %u allowed",
			    p->nrec + 1, tag_name(h.tag), h.len,
			    LSNAP_MAX_RECORD);
	p->rd->total += sizeof(h) + h.len;
	if (p->rd->max && p->rd->total > p->rd->max)
		return fail(p, -EFBIG, "snapshot larger than the %llu bytes "
			    "this reader accepts", (unsigned long long)p->rd->max);
	if (ls_snapshot_charge(p->snap, sizeof(h) + h.len))
		return fail(p, -ENOBUFS, "the memory budget (%llu MiB) is "
			    "taken by the replies in progress: try again",
			    (unsigned long long)(ls_snapshot_budget(NULL) >> 20));
	/* This payload, and the next record's header unless this is END. */
	p->rd->allowed += h.len + (h.tag == LSNAP_END ? 0 : sizeof(h));
	if (h.tag == LSNAP_END) {
		ret = read_end(p, h.len);
		return ret ? ret : 1;
	}
	hash_add(p, &h, sizeof(h));
	ret = read_payload(p, h.tag, h.len);
	if (!ret)
		ret = dispatch(p, h.tag, h.len);
	if (!ret)
		p->nrec++;
	return ret;
}

static int parse_all(struct parse *p)
{
	int ret = read_file_hdr(p);

	while (!ret)
		ret = read_record(p);
	if (ret == -ENOMEM)
		fail(p, ret, "cannot read snapshot: out of memory");
	return ret < 0 ? ret : 0;
}

int ls_snapshot_read_fd(int fd, struct ls_snapshot *snap, char *err,
			size_t errlen)
{
	return ls_snapshot_read_fd_capped(fd, 0, 0, snap, err, errlen);
}

int ls_snapshot_read_fd_capped(int fd, uint64_t deadline_ns, uint64_t max,
			       struct ls_snapshot *snap, char *err,
			       size_t errlen)
{
	struct parse p = { .snap = snap, .err = err, .errlen = errlen,
			   .sites_sorted = 1 };
	struct stat st;
	int ret;

	memset(snap, 0, sizeof(*snap));
	if (err && errlen)
		err[0] = 0;
	p.rd = calloc(1, sizeof(*p.rd));
	if (!p.rd)
		return fail(&p, -ENOMEM, "cannot read snapshot: out of memory");
	p.rd->fd = fd;
	p.rd->deadline_ns = deadline_ns;
	p.rd->max = max;
	p.rd->bounded = fstat(fd, &st) || !S_ISREG(st.st_mode);
	p.rd->allowed = sizeof(struct lsnap_file_hdr) +
		sizeof(struct lsnap_rec_hdr);
	ret = parse_all(&p);
	if (ret)
		ls_snapshot_release(snap);
	while (p.nhist--)
		free(p.hist[p.nhist].v);
	free(p.hist);
	free(p.rsites);
	free(p.cats);
	free(p.payload);
	free(p.rd);
	return ret;
}

int ls_snapshot_load(const char *path, struct ls_snapshot *snap, char *err,
		     size_t errlen)
{
	char why[256], eb[128];
	int fd, ret;

	memset(snap, 0, sizeof(*snap));
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		ret = -errno;
		if (err && errlen)
			snprintf(err, errlen, "cannot open '%s': %s", path,
				 errstr(-ret, eb, sizeof(eb)));
		return ret;
	}
	ret = ls_snapshot_read_fd(fd, snap, why, sizeof(why));
	if (ret && err && errlen)
		snprintf(err, errlen, "'%s': %s", path, why);
	close(fd);
	return ret;
}

void ls_snapshot_release(struct ls_snapshot *snap)
{
	size_t i;

	if (!snap)
		return;
	if (snap->charged)
		atomic_fetch_sub(&budget_used, snap->charged);
	for (i = 0; i < snap->argc; i++)
		free(snap->argv[i]);
	free(snap->argv);
	free(snap->calls);
	for (i = 0; i < snap->nmodules; i++) {
		free(snap->modules[i].path);
		free(snap->modules[i].file);
	}
	free(snap->modules);
	for (i = 0; i < snap->njit; i++)
		free(snap->jit[i].name);
	free(snap->jit);
	for (i = 0; i < snap->nsites; i++) {
		if (!snap->frame_chunks)
			free(snap->sites[i].frames);
		free(snap->sites[i].history);
	}
	while (snap->frame_chunks) {
		uint64_t *next = (uint64_t *)(uintptr_t)snap->frame_chunks[0];

		free(snap->frame_chunks);
		snap->frame_chunks = next;
	}
	free(snap->sites);
	free(snap->hist_counts);
	free(snap->site_reach);
	free(snap->blocks);
	free(snap->notes);
	free(snap->reach_held);
	memset(snap, 0, sizeof(*snap));
}

const struct ls_site *ls_snapshot_site(const struct ls_snapshot *snap,
				       uint32_t id)
{
	size_t lo = 0, hi = snap->nsites, i;

	/* Ids are unique (checked on reading), so a hit is the answer even
	 * when the sites are not in order; a miss falls back to a scan. */
	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (snap->sites[mid].id == id)
			return &snap->sites[mid];
		if (snap->sites[mid].id < id)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (i = 0; i < snap->nsites; i++)
		if (snap->sites[i].id == id)
			return &snap->sites[i];
	return NULL;
}

_Static_assert(LSNAP_HIST_BUCKETS <= 32, "a bucket mask is 32 bits");

void ls_site_hist(const struct ls_snapshot *snap, const struct ls_site *s,
		  uint64_t *size, uint64_t *life)
{
	const uint64_t *c = s->size_mask | s->life_mask ?
		snap->hist_counts + s->hist_at : NULL;
	unsigned b;

	for (b = 0; b < LSNAP_HIST_BUCKETS; b++)
		size[b] = s->size_mask >> b & 1 ? *c++ : 0;
	for (b = 0; b < LSNAP_HIST_BUCKETS; b++)
		life[b] = s->life_mask >> b & 1 ? *c++ : 0;
}

/* The nonzero values of v[0..n) to out, their bits to the mask
 * returned; *k counts them.  Most of a site's buckets are 0: four at a
 * time are passed over with one test. */
static uint32_t pack_hist(const uint64_t *v, unsigned n, uint64_t *out,
			  size_t *k)
{
	uint32_t mask = 0;
	unsigned b = 0, e;

	while (b < n) {
		e = n - b < 4 ? n : b + 4;
		if (e == b + 4 && !(v[b] | v[b + 1] | v[b + 2] | v[b + 3])) {
			b = e;
			continue;
		}
		for (; b < e; b++)
			if (v[b]) {
				out[(*k)++] = v[b];
				mask |= 1u << b;
			}
	}
	return mask;
}

int ls_snapshot_set_hist(struct ls_snapshot *snap, struct ls_site *s,
			 const uint64_t *size, const uint64_t *life,
			 unsigned n)
{
	size_t at = snap->nhist_counts;
	int ret;

	if (n > LSNAP_HIST_BUCKETS)
		n = LSNAP_HIST_BUCKETS;
	/* Room for every bucket; what stays unused is taken by the next. */
	if (at + 2 * n > UINT32_MAX)
		return -EFBIG;
	ret = ls_grow(&snap->hist_counts, &snap->cap_hist_counts, at + 2 * n,
		      sizeof(*snap->hist_counts));
	if (ret)
		return ret;
	s->hist_at = (uint32_t)at;
	s->size_mask = pack_hist(size, n, snap->hist_counts,
				 &snap->nhist_counts);
	s->life_mask = pack_hist(life, n, snap->hist_counts,
				 &snap->nhist_counts);
	return 0;
}

const struct ls_reach_figs *ls_site_reach(const struct ls_site *s)
{
	static const struct ls_reach_figs none;

	return s->reach ? s->reach : &none;
}

uint64_t ls_block_age_ns(const struct ls_snapshot *snap,
			 const struct ls_block *b)
{
	return snap->hdr.mono_ns > b->birth_ns ?
		snap->hdr.mono_ns - b->birth_ns : 0;
}

uint64_t ls_module_walk_age_ns(const struct ls_snapshot *snap)
{
	uint64_t at = snap->module_walk.walk_mono_ns;

	return snap->hdr.mono_ns > at ? snap->hdr.mono_ns - at : 0;
}

uint64_t ls_snapshot_apart_bytes(const struct ls_snapshot *snap,
				 uint32_t kind)
{
	uint64_t sum = 0;
	size_t i;

	for (i = 0; i < snap->nsites; i++)
		if (snap->sites[i].kind == kind && snap->sites[i].live_bytes > 0)
			sum += (uint64_t)snap->sites[i].live_bytes;
	return sum;
}

const char *ls_site_kind_name(uint32_t kind)
{
	static const char *const names[] = { "heap", "mmap", "brk", "fault",
					      "kernel", "allocator",
					      "reserved" };

	return kind <= LSNAP_KIND_MAX ? names[kind] : "unknown";
}
