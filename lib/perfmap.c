/*
 * perfmap.c - a runtime's perf map (/tmp/perf-PID.map) read safely and
 * looked up by address.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "perfmap.h"
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

const char *ls_perfmap_find(const struct ls_perfmap *m, uint64_t addr,
			    uint64_t *offset)
{
	size_t lo = 0, hi = m ? m->n : 0;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (m->v[mid].lo <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	/* Code is never nested: the last entry starting at or below addr
	 * is the only one that can hold it. */
	if (!lo || addr >= m->v[lo - 1].hi)
		return NULL;
	*offset = addr - m->v[lo - 1].lo;
	return m->v[lo - 1].name;
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
