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
	const char *name;	/* into text */
};

struct ls_perfmap {
	char *text;		/* the file, lines cut at their '\n' */
	struct jit_ent *v;
	size_t n, cap;
	int beam;
};

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
	m->v[m->n++] = (struct jit_ent){ lo, lo + size, p };
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
	qsort(m->v, m->n, sizeof(*m->v), cmp_ent);
	return 0;
}

struct ls_perfmap *ls_perfmap_load(const char *path, uid_t a, uid_t b)
{
	struct ls_perfmap *m = NULL;
	struct stat st;
	int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
	int err = 0;

	if (fd < 0)
		return NULL;
	if (fstat(fd, &st))
		err = errno;
	else if (!S_ISREG(st.st_mode) || (st.st_uid != a && st.st_uid != b))
		err = EPERM;
	else if ((uint64_t)st.st_size > LS_PERFMAP_MAX_BYTES)
		err = EFBIG;
	else if (!(m = calloc(1, sizeof(*m))) ||
		 !(m->text = read_capped(fd, (size_t)st.st_size)) || parse(m))
		err = ENOMEM;
	close(fd);
	if (err) {
		ls_perfmap_free(m);
		errno = err;
		return NULL;
	}
	return m;
}

struct ls_perfmap *ls_perfmap_load_pid(pid_t pid)
{
	char path[64];
	struct stat st;
	uid_t owner = getuid();

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (!stat(path, &st))
		owner = st.st_uid;
	snprintf(path, sizeof(path), "/tmp/perf-%d.map", (int)pid);
	return ls_perfmap_load(path, owner, getuid());
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
	return m->v[i].name;
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
			 strnlen(m->v[idx[i]].name, LSNAP_JIT_NAME_MAX);
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
			.name_len = (uint16_t)strnlen(e->name,
						      LSNAP_JIT_NAME_MAX),
		};

		rh = (struct lsnap_rec_hdr){ LSNAP_JIT,
					     (uint32_t)(sizeof(j) + j.name_len) };
		put(&p, &rh, sizeof(rh));
		put(&p, &j, sizeof(j));
		put(&p, e->name, j.name_len);
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
