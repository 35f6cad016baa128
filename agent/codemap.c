/*
 * codemap.c - the process's executable mappings, for the unwinder's
 * frame-pointer walk through JIT code.  See codemap.h.
 *
 * The table is published with a sequence count: odd while a reading of
 * /proc/self/maps rewrites it, so a lookup that meets a rewrite, or
 * whose copy of a range changed under it, answers "not code" (its walk
 * ends one frame early) rather than wait in a hook.
 */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
#include "codemap.h"
#include "sys.h"

struct cm_range {
	uint64_t lo, hi;
};

static struct cm_range cm_tab[LS_CODEMAP_MAX];
static uint32_t cm_n;
static uint32_t cm_seq;		/* odd while the table is rewritten */
static uint32_t cm_gen = 1;	/* bumped by ls_codemap_changed() */
static uint32_t cm_read_gen;	/* the cm_gen the table was read at */
static int cm_busy;		/* a reading runs */

/* Per thread (initial-exec TLS), the range of the last hit: a walk's
 * return addresses fall in one or two mappings (the JIT's, the runtime's
 * text), so most lookups end here.  Valid while cm_gen is gen. */
static __thread struct {
	uint64_t lo, hi;
	uint32_t gen;
} cm_last;

void ls_codemap_changed(void)
{
	__atomic_add_fetch(&cm_gen, 1, __ATOMIC_RELEASE);
}

/* The hexadecimal number at *p, which moves past it. */
static uint64_t cm_hex(const char **p, const char *end)
{
	uint64_t v = 0;
	unsigned d;

	for (; *p < end; (*p)++) {
		d = (unsigned)(**p - '0') <= 9 ? (unsigned)(**p - '0') :
		    (unsigned)(**p - 'a') <= 5 ? (unsigned)(**p - 'a' + 10) : 16;
		if (d == 16)
			break;
		v = v << 4 | d;
	}
	return v;
}

/* One line of the maps file, [p, end) without its '\n': "lo-hi perms ...".
 * An executable one is appended to the table while there is room. */
static void cm_line(const char *p, const char *end)
{
	uint64_t lo = cm_hex(&p, end), hi;

	if (p >= end || *p++ != '-')
		return;
	hi = cm_hex(&p, end);
	if (end - p < 4 || p[0] != ' ' || p[3] != 'x' || hi <= lo ||
	    cm_n == LS_CODEMAP_MAX)
		return;
	__atomic_store_n(&cm_tab[cm_n].lo, lo, __ATOMIC_RELAXED);
	__atomic_store_n(&cm_tab[cm_n].hi, hi, __ATOMIC_RELAXED);
	__atomic_store_n(&cm_n, cm_n + 1, __ATOMIC_RELAXED);
}

/* Read /proc/self/maps into the table (the file lists mappings in address
 * order, so the table comes out sorted).  The caller holds cm_busy. */
static void cm_read(uint32_t gen)
{
	char buf[1024];
	size_t have = 0;
	const char *nl, *p;
	long k;
	/* Bare system calls: open() and read() are cancellation points,
	 * and this may run in an allocation hook. */
	int fd = (int)syscall(SYS_openat, AT_FDCWD, "/proc/self/maps",
			      O_RDONLY | O_CLOEXEC);

	__atomic_add_fetch(&cm_seq, 1, __ATOMIC_ACQ_REL);
	__atomic_store_n(&cm_n, 0, __ATOMIC_RELAXED);
	while (fd >= 0 &&
	       ((k = syscall(SYS_read, fd, buf + have, sizeof(buf) - have)) > 0 ||
		(k < 0 && errno == EINTR))) {
		have += k > 0 ? (size_t)k : 0;
		p = buf;
		while ((nl = memchr(p, '\n', (size_t)(buf + have - p)))) {
			cm_line(p, nl);
			p = nl + 1;
		}
		have -= (size_t)(p - buf);
		memmove(buf, p, have);
		if (have == sizeof(buf))
			have = 0;	/* a line longer than buf: its range
					 * was read, the path is dropped */
	}
	if (fd >= 0)
		syscall(SYS_close, fd);
	cm_read_gen = gen;
	__atomic_add_fetch(&cm_seq, 1, __ATOMIC_RELEASE);
}

/* Look addr up in the table: 1 code (its range in *lo, *hi), 0 not, -1
 * the table was changing. */
static int cm_find(uint64_t addr, uint64_t *rlo, uint64_t *rhi)
{
	uint32_t seq = __atomic_load_n(&cm_seq, __ATOMIC_ACQUIRE);
	uint32_t lo = 0, hi, mid;
	int found;

	if (seq & 1)
		return -1;
	hi = __atomic_load_n(&cm_n, __ATOMIC_RELAXED);
	if (hi > LS_CODEMAP_MAX)
		return -1;
	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (__atomic_load_n(&cm_tab[mid].lo, __ATOMIC_RELAXED) <= addr)
			lo = mid + 1;
		else
			hi = mid;
	}
	found = 0;
	if (lo) {
		*rlo = __atomic_load_n(&cm_tab[lo - 1].lo, __ATOMIC_RELAXED);
		*rhi = __atomic_load_n(&cm_tab[lo - 1].hi, __ATOMIC_RELAXED);
		found = addr < *rhi;
	}
	__atomic_thread_fence(__ATOMIC_ACQUIRE);
	return __atomic_load_n(&cm_seq, __ATOMIC_RELAXED) == seq ? found : -1;
}

int ls_codemap_has(uint64_t addr)
{
	uint32_t gen = __atomic_load_n(&cm_gen, __ATOMIC_ACQUIRE);
	uint64_t lo = 0, hi = 0;
	int saved, r;

	if (addr - cm_last.lo < cm_last.hi - cm_last.lo && cm_last.gen == gen)
		return 1;
	r = cm_find(addr, &lo, &hi);
	if (r == 0 && gen != __atomic_load_n(&cm_read_gen, __ATOMIC_RELAXED)) {
		if (__atomic_exchange_n(&cm_busy, 1, __ATOMIC_ACQUIRE))
			return 0;	/* another thread reads it now */
		saved = errno;
		cm_read(gen);
		__atomic_store_n(&cm_busy, 0, __ATOMIC_RELEASE);
		errno = saved;
		r = cm_find(addr, &lo, &hi);
	}
	if (r > 0) {	/* the range before gen: a signal handler's lookup
			 * between these stores finds gen stale, or the
			 * range whole */
		cm_last.gen = gen - 1;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		cm_last.lo = lo;
		cm_last.hi = hi;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
		cm_last.gen = gen;
	}
	return r > 0;
}

void ls_codemap_atfork_child(void)
{
	if (cm_seq & 1) {	/* cut short: empty, read at the next miss */
		cm_n = 0;
		cm_read_gen = 0;
		cm_seq++;
	}
	cm_busy = 0;
}
