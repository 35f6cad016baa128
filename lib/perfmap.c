/*
 * perfmap.c - a runtime's perf map (/tmp/perf-PID.map) read safely and
 * looked up by address.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "perfmap.h"
#include "snapshot.h"
#include "util.h"

struct jit_ent {
	uint64_t lo, hi;
	size_t name;		/* offset in text */
};

struct ls_perfmap {
	char *text;		/* a map: the file, lines cut at their '\n';
				 * a jitdump: the names, each NUL-ended */
	size_t text_len, text_cap;	/* a jitdump's */
	struct jit_ent *v;
	size_t n, cap;
	int beam;
};

#define NAME(m, e) ((m)->text + (e)->name)

/* The whole file at fd, at most LS_PERFMAP_MAX_BYTES, NUL-terminated. */
static char *read_capped(int fd, size_t size)
{
	char *buf = malloc(size + 1);
	size_t got = 0;

	if (!buf)
		return NULL;
	while (got < size) {
		ssize_t r = read(fd, buf + got, size - got);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		got += (size_t)r;
	}
	buf[got] = 0;
	return buf;
}

static int hex(const char **p, uint64_t *v)
{
	char *end;

	errno = 0;
	*v = strtoull(*p, &end, 16);
	if (end == *p || errno || (*end != ' ' && *end != '\t'))
		return -1;
	*p = end + 1;
	return 0;
}

/* Parse one line (NUL-terminated, no '\n') into m; skip it if bad. */
static int add_line(struct ls_perfmap *m, char *line)
{
	const char *p = line;
	uint64_t lo, size;

	if (hex(&p, &lo) || hex(&p, &size) || !size || lo + size < lo || !*p)
		return 0;
	if (*p == '$') {	/* the BEAM's mark of its own names */
		m->beam = 1;
		p++;
	}
	if (LS_GROW(m->v, m->n + 1, m->cap))
		return -ENOMEM;
	m->v[m->n++] = (struct jit_ent){ lo, lo + size, (size_t)(p - m->text) };
	return 0;
}

static int cmp_ent(const void *a, const void *b)
{
	const struct jit_ent *x = a, *y = b;

	return x->lo < y->lo ? -1 : x->lo > y->lo;
}

static int parse(struct ls_perfmap *m)
{
	char *line = m->text, *nl;

	for (; *line; line = nl + 1) {
		nl = strchr(line, '\n');
		if (!nl)
			break;	/* a last line still being written */
		*nl = 0;
		if (add_line(m, line))
			return -ENOMEM;
	}
	return 0;
}

/* path opened without following a link, if it is a regular file owned by
 * uid a or b of at most max bytes: the fd, its size in *size; else -1,
 * errno set. */
static int open_owned(const char *path, uid_t a, uid_t b, uint64_t max,
		      size_t *size)
{
	struct stat st;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	int err = 0;

	if (fd < 0)
		return -1;
	if (fstat(fd, &st))
		err = errno;
	else if (!S_ISREG(st.st_mode) || (st.st_uid != a && st.st_uid != b))
		err = EPERM;
	else if ((uint64_t)st.st_size > max)
		err = EFBIG;
	if (err) {
		close(fd);
		errno = err;
		return -1;
	}
	*size = (size_t)st.st_size;
	return fd;
}

/* A map read, or NULL with errno set; m is freed on error. */
static struct ls_perfmap *done(struct ls_perfmap *m, int fd, int err)
{
	close(fd);
	if (err) {
		ls_perfmap_free(m);
		errno = err;
		return NULL;
	}
	if (m->n)
		qsort(m->v, m->n, sizeof(*m->v), cmp_ent);
	return m;
}

struct ls_perfmap *ls_perfmap_load(const char *path, uid_t a, uid_t b)
{
	struct ls_perfmap *m;
	size_t size;
	int fd = open_owned(path, a, b, LS_PERFMAP_MAX_BYTES, &size);

	if (fd < 0)
		return NULL;
	if (!(m = calloc(1, sizeof(*m))) || !(m->text = read_capped(fd, size)))
		return done(m, fd, ENOMEM);
	return done(m, fd, parse(m) ? ENOMEM : 0);
}

/* --- jitdump ------------------------------------------------------------- */

/* The format of perf's jitdump specification (tools/perf/Documentation/
 * jitdump-specification.txt): a header, then records, each a 16-byte
 * header (id, total size, timestamp) and a body.  Only JIT_CODE_LOAD
 * names code; moves, debug and unwinding records are skipped. */
#define LS_JITDUMP_MAGIC 0x4A695444u	/* "JiTD", in the writer's order */
#define LS_JITDUMP_HEADER 40u
#define LS_JITDUMP_CODE_LOAD 0u
#define LS_JITDUMP_LOAD_FIXED 40u	/* pid, tid, vma, addr, size, index */

/* A window of the file, refilled by pread: records are read by offset,
 * their code bytes skipped. */
struct jd_rd {
	int fd;
	uint64_t size;		/* the file's, when opened */
	uint64_t at;		/* file offset of buf[0] */
	size_t len;		/* bytes in buf */
	uint8_t buf[1 << 16];
};

/* [off, off + n) of the file (n <= sizeof(buf)), or NULL when the file
 * ends first (a record still being written). */
static const uint8_t *jd_get(struct jd_rd *r, uint64_t off, size_t n)
{
	ssize_t k;

	if (off >= r->at && off + n <= r->at + r->len)
		return r->buf + (off - r->at);
	if (off > r->size || n > r->size - off)
		return NULL;
	r->at = off;
	r->len = 0;
	while (r->len < sizeof(r->buf) && off + r->len < r->size) {
		k = pread(r->fd, r->buf + r->len, sizeof(r->buf) - r->len,
			  (off_t)(off + r->len));
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		r->len += (size_t)k;
	}
	return n <= r->len ? r->buf : NULL;
}

static uint32_t jd_u32(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, 4);
	return v;
}

static uint64_t jd_u64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

/* One JIT_CODE_LOAD record's body at off (len bytes): its code range and
 * name added to m; a record that does not parse is skipped. */
static int jd_load(struct ls_perfmap *m, struct jd_rd *r, uint64_t off,
		   uint32_t len)
{
	const uint8_t *p = jd_get(r, off, LS_JITDUMP_LOAD_FIXED);
	uint64_t lo, size, room;
	const char *name;
	size_t nlen;

	if (!p || len < LS_JITDUMP_LOAD_FIXED + 1)
		return 0;
	lo = jd_u64(p + 16);
	size = jd_u64(p + 24);
	room = len - LS_JITDUMP_LOAD_FIXED;
	if (!size || lo + size < lo || size >= room)
		return 0;	/* the name and the code must fit */
	room -= size;
	if (room > LSNAP_JIT_NAME_MAX + 1)
		room = LSNAP_JIT_NAME_MAX + 1;
	name = (const char *)jd_get(r, off + LS_JITDUMP_LOAD_FIXED, room);
	if (!name || !(nlen = strnlen(name, room)) || nlen == room)
		return 0;	/* no name, or not NUL-ended in bounds */
	if (m->n >= LS_JITDUMP_MAX_CODES ||
	    m->text_len + nlen + 1 > LS_PERFMAP_MAX_BYTES)
		return 0;
	if (LS_GROW(m->text, m->text_len + nlen + 1, m->text_cap) ||
	    LS_GROW(m->v, m->n + 1, m->cap))
		return -ENOMEM;
	memcpy(m->text + m->text_len, name, nlen + 1);
	m->v[m->n++] = (struct jit_ent){ lo, lo + size, m->text_len };
	m->text_len += nlen + 1;
	return 0;
}

struct ls_perfmap *ls_perfmap_jitdump_fd(int fd, uint64_t size)
{
	struct ls_perfmap *m = calloc(1, sizeof(*m));
	struct jd_rd *r = malloc(sizeof(*r));
	const uint8_t *h;
	uint64_t off;
	uint32_t len;
	int err = 0;

	if (!m || !r) {
		err = ENOMEM;
		goto out;
	}
	*r = (struct jd_rd){ .fd = fd, .size = size };
	h = jd_get(r, 0, LS_JITDUMP_HEADER);
	if (!h || jd_u32(h) != LS_JITDUMP_MAGIC || jd_u32(h + 4) != 1 ||
	    jd_u32(h + 8) < LS_JITDUMP_HEADER || jd_u32(h + 8) > size) {
		err = EINVAL;	/* not a jitdump of this byte order */
		goto out;
	}
	for (off = jd_u32(h + 8); (h = jd_get(r, off, 16)); off += len) {
		len = jd_u32(h + 4);
		if (len < 16 || len > size - off)
			break;	/* the last record, still being written */
		if (jd_u32(h) == LS_JITDUMP_CODE_LOAD &&
		    jd_load(m, r, off + 16, len - 16)) {
			err = ENOMEM;
			goto out;
		}
	}
	if (m->n)
		qsort(m->v, m->n, sizeof(*m->v), cmp_ent);
out:
	free(r);
	if (err) {
		ls_perfmap_free(m);
		errno = err;
		return NULL;
	}
	return m;
}

struct ls_perfmap *ls_perfmap_load_jitdump(const char *path, uid_t a, uid_t b)
{
	struct ls_perfmap *m;
	size_t size;
	int fd = open_owned(path, a, b, LS_JITDUMP_MAX_BYTES, &size), err;

	if (fd < 0)
		return NULL;
	m = ls_perfmap_jitdump_fd(fd, size);
	err = errno;
	close(fd);
	errno = err;
	return m;
}

struct ls_perfmap *ls_perfmap_load_pid(pid_t pid)
{
	struct ls_perfmap *m;
	char path[64];
	struct stat st;
	uid_t owner = getuid();

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (!stat(path, &st))
		owner = st.st_uid;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	m = ls_perfmap_load(path, owner, getuid());
	if (m || errno != ENOENT)
		return m;
	snprintf(path, sizeof(path), "/tmp/jit-%d.dump", (int)pid);
	return ls_perfmap_load_jitdump(path, owner, getuid());
}

/* The index of the entry holding addr, or -1.  Code is never nested: the
 * last entry starting at or below addr is the only one that can hold it. */
static long find_idx(const struct ls_perfmap *m, uint64_t addr)
{
	size_t lo = 0, hi = m ? m->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo && addr < m->v[lo - 1].hi ? (long)lo - 1 : -1;
}

const char *ls_perfmap_find(const struct ls_perfmap *m, uint64_t addr,
			    uint64_t *start, uint64_t *size)
{
	long i = find_idx(m, addr);

	if (i < 0)
		return NULL;
	*start = m->v[i].lo;
	*size = m->v[i].hi - m->v[i].lo;
	return NAME(m, &m->v[i]);
}

/* --- kept in the snapshot ------------------------------------------------ */

static int in_module(const struct ls_snapshot *snap, uint64_t addr)
{
	size_t i;

	for (i = 0; i < snap->nmodules; i++)
		if (addr >= snap->modules[i].lo && addr < snap->modules[i].hi)
			return 1;
	return 0;
}

/* The entries of m that hold a frame of snap, each once, as indexes. */
static int used_entries(const struct ls_perfmap *m,
			const struct ls_snapshot *snap, size_t **idx,
			size_t *n)
{
	size_t i, j, k, cap = 0;

	*idx = NULL;
	*n = 0;
	for (i = 0; i < snap->nsites; i++)
		for (j = 0; j < snap->sites[i].nframes; j++) {
			uint64_t a = snap->sites[i].frames[j];
			long e = a && !in_module(snap, a) ?
				 find_idx(m, a - 1) : -1;

			if (e < 0)
				continue;
			for (k = 0; k < *n && (*idx)[k] != (size_t)e; k++)
				;
			if (k < *n)
				continue;
			if (LS_GROW(*idx, *n + 1, cap))
				return -ENOMEM;
			(*idx)[(*n)++] = (size_t)e;
		}
	return 0;
}

static void put(uint8_t **p, const void *src, size_t len)
{
	memcpy(*p, src, len);
	*p += len;
}

int ls_perfmap_keep(const struct ls_perfmap *m, const struct ls_snapshot *snap,
		    const uint8_t *in, size_t len, uint8_t **out,
		    size_t *outlen)
{
	struct lsnap_rec_hdr rh;
	struct lsnap_end end;
	struct lsnap_hash h;
	uint32_t version;
	size_t *idx, n, i, body, extra = 0;
	uint8_t *p;
	int ret;

	*out = NULL;
	if (len < 16 + 2 * sizeof(rh) + sizeof(end))
		return -EINVAL;
	body = len - sizeof(rh) - sizeof(end);
	memcpy(&rh, in + body, sizeof(rh));
	memcpy(&end, in + body + sizeof(rh), sizeof(end));
	memcpy(&version, in + 8, sizeof(version));
	if (rh.tag != LSNAP_END || rh.len != sizeof(end))
		return -EINVAL;
	if ((ret = used_entries(m, snap, &idx, &n)) || !n) {
		free(idx);
		return ret;
	}
	for (i = 0; i < n; i++)
		extra += sizeof(rh) + sizeof(struct lsnap_jit) +
			 strnlen(NAME(m, &m->v[idx[i]]), LSNAP_JIT_NAME_MAX);
	p = *out = malloc(len + extra);
	if (!p) {
		free(idx);
		return -ENOMEM;
	}
	put(&p, in, body);
	for (i = 0; i < n; i++) {
		const struct jit_ent *e = &m->v[idx[i]];
		struct lsnap_jit j = {
			.lo = e->lo,
			.size = e->hi - e->lo > UINT32_MAX ? UINT32_MAX :
				(uint32_t)(e->hi - e->lo),
			.flags = m->beam ? LSNAP_JIT_F_BEAM : 0,
			.name_len = (uint16_t)strnlen(NAME(m, e),
						      LSNAP_JIT_NAME_MAX),
		};

		rh = (struct lsnap_rec_hdr){ LSNAP_JIT,
					     (uint32_t)(sizeof(j) + j.name_len) };
		put(&p, &rh, sizeof(rh));
		put(&p, &j, sizeof(j));
		put(&p, NAME(m, e), j.name_len);
	}
	end.nrecords += (uint32_t)n;
	if (version == 1) {
		end.hash = lsnap_fnv1a(LSNAP_FNV_INIT, *out,
				       (uint64_t)(p - *out));
	} else {
		lsnap_hash_init(&h);
		lsnap_hash_add(&h, *out, (uint64_t)(p - *out));
		end.hash = lsnap_hash_end(&h);
	}
	rh = (struct lsnap_rec_hdr){ LSNAP_END, sizeof(end) };
	put(&p, &rh, sizeof(rh));
	put(&p, &end, sizeof(end));
	*outlen = (size_t)(p - *out);
	free(idx);
	return 0;
}

const char *ls_perfmap_runtime(const struct ls_perfmap *m)
{
	return m && m->beam ? "beam jit" : "jit";
}

size_t ls_perfmap_count(const struct ls_perfmap *m)
{
	return m ? m->n : 0;
}

void ls_perfmap_free(struct ls_perfmap *m)
{
	if (!m)
		return;
	free(m->text);
	free(m->v);
	free(m);
}
