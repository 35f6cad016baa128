/*
 * capture.c - stack capture.
 *
 * The agent's own CFI unwinder (unwind.c) by default: it caches one
 * compact rule per return address, which is what keeps full tracking
 * cheap (docs/UNWINDING.md has the measurements against libunwind).
 * LEAKSCOPE_UNWIND=libunwind selects Debian's libunwind instead, and
 * LEAKSCOPE_UNWIND=check runs both on every capture and counts the stacks
 * where they disagree (ls_capture_mismatches), writing the first few to
 * stderr at the next snapshot, for testing, and
 * LEAKSCOPE_UNWIND=none records empty stacks, to measure what tracking
 * costs apart from stacks.
 *
 * libunwind is loaded with dlopen() RTLD_LOCAL (libunwind-load.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../common/contract.h"
#include "../common/lsnap.h"
#include "libunwind-load.h"
#include "modules.h"
#include "site.h"
#include "capture.h"
#include "state.h"
#include "sys.h"
#include "unwind.h"

#define SLACK LS_CAPTURE_SLACK	/* capture.h */

enum method { OWN, LIBUNWIND, CHECK, NONE };

static enum method method = OWN;
int ls_capture_memo_direct = 1;	/* see capture.h */
static ls_unw_backtrace_fn unw_backtrace_fn;
static uint64_t self_lo, self_hi;
static uint64_t mismatches;

int ls_capture_init(void)
{
	const char *m = ls_state_getenv(LS_ENV_UNWIND);

	ls_modules_self_range(&self_lo, &self_hi);
	if (m && !strcmp(m, "libunwind"))
		method = LIBUNWIND;
	else if (m && !strcmp(m, "check"))
		method = CHECK;
	else if (m && !strcmp(m, "none"))
		method = NONE;	/* no stacks: what tracking costs without them */
	else if (m && *m && strcmp(m, "own"))
		ls_state_note("%s='%s' is not libunwind, check or none: the "
			      "agent's own unwinder is used", LS_ENV_UNWIND, m);
	if (method == LIBUNWIND || method == CHECK)
		unw_backtrace_fn = ls_libunwind_load(NULL);
	if ((method == LIBUNWIND || method == CHECK) && !unw_backtrace_fn) {
		ls_state_note("%s='%s': libunwind cannot be loaded: the agent's "
			      "own unwinder is used", LS_ENV_UNWIND, m);
		method = OWN;
	}
	ls_capture_memo_direct = method == OWN;
	return ls_unwind_init();
}

static inline int in_agent(uint64_t pc)
{
	return pc >= self_lo && pc < self_hi;
}

/* Drop the agent's own frames from the front of raw[0..n) into pcs. */
static int cut_agent(const uint64_t *raw, int n, uint64_t *pcs, int max)
{
	int skip = 0, i;

	if (n > 0 && !in_agent(raw[0])) {	/* from a program frame */
		n = n < max ? n : max;
		memcpy(pcs, raw, (size_t)n * sizeof(*pcs));
		return n;
	}
	while (skip < n && in_agent(raw[skip]))
		skip++;
	for (i = 0; skip + i < n && i < max; i++)
		pcs[i] = raw[skip + i];
	return i;
}

static int capture_libunwind(uint64_t *raw, int want)
{
	void *buf[LS_DEPTH_MAX + SLACK];
	int n = unw_backtrace_fn(buf, want), i;

	for (i = 0; i < n; i++)
		raw[i] = (uint64_t)(uintptr_t)buf[i];
	return n;
}

/* The unwinders without the memo: libunwind, or no stacks at all. */
static int capture_plain(uint64_t *pcs, int max)
{
	uint64_t raw[LS_DEPTH_MAX + SLACK];
	int n;

	if (method == NONE)
		return 0;
	n = method == LIBUNWIND ?
	    capture_libunwind(raw, ls_capture_want(max)) :
	    ls_unwind_capture(raw, ls_capture_want(max), 0);
	return cut_agent(raw, n, pcs, max);
}

/*
 * The first MISMATCH_KEPT captures where the two unwinders disagreed,
 * kept whole for ls_capture_report_mismatches(): the agent's stack, the
 * memo's or walked, libunwind's, and a third walk by the agent's own
 * unwinder without the memo (which of the first two it agrees with
 * tells a memo fault from a walk fault).  A slot is claimed once,
 * filled by the claiming thread, then marked ready.
 */
#define MISMATCH_KEPT 4

struct mismatch {
	int ready, reported;
	int from_memo;
	pid_t tid;
	int n[3];		/* agent, libunwind, agent without memo */
	uint64_t pcs[3][LS_DEPTH_MAX];
};

static struct mismatch kept[MISMATCH_KEPT];
static unsigned kept_claimed;

static void keep_mismatch(const uint64_t *pcs, int n, const uint64_t *other,
			  int b, int from_memo, int max)
{
	uint64_t raw[LS_DEPTH_MAX + SLACK];
	struct mismatch *m;
	unsigned i;
	int c;

	if (__atomic_load_n(&kept_claimed, __ATOMIC_RELAXED) >= MISMATCH_KEPT)
		return;
	i = __atomic_fetch_add(&kept_claimed, 1, __ATOMIC_RELAXED);
	if (i >= MISMATCH_KEPT)
		return;
	m = &kept[i];
	c = ls_unwind_capture_own(raw, ls_capture_want(max), 0);
	m->from_memo = from_memo;
	m->tid = ls_gettid();
	m->n[0] = n;
	memcpy(m->pcs[0], pcs, (size_t)n * sizeof(*pcs));
	m->n[1] = b;
	memcpy(m->pcs[1], other, (size_t)b * sizeof(*other));
	m->n[2] = cut_agent(raw, c, m->pcs[2], max);
	__atomic_store_n(&m->ready, 1, __ATOMIC_RELEASE);
}

/* LEAKSCOPE_UNWIND=check: count pcs[0..n) as a mismatch unless a fresh
 * libunwind capture gives the same program frames (libunwind starts in
 * this function: cut_agent() aligns both on the program's frames). */
static void check_frames(const uint64_t *pcs, int n, int max, int from_memo)
{
	uint64_t other[LS_DEPTH_MAX + SLACK], mine[LS_DEPTH_MAX];
	int b = capture_libunwind(other, ls_capture_want(max));
	int a = cut_agent(other, b, mine, max);

	if (a == n && !memcmp(mine, pcs, (size_t)n * sizeof(*pcs)))
		return;
	__atomic_add_fetch(&mismatches, 1, __ATOMIC_RELAXED);
	keep_mismatch(pcs, n, mine, a, from_memo, max);
}

/* "0x7f...  libc.so.6+0x2a3f" for pc, or blanks past the stack's end. */
static void describe_pc(char *buf, size_t len, const uint64_t *pcs, int n,
			int i)
{
	unsigned k, count = ls_modules_count();
	const struct ls_module_rec *r;
	const char *base;

	if (i >= n) {
		snprintf(buf, len, "%-44s", "-");
		return;
	}
	for (k = 0; k < count; k++) {
		r = ls_modules_get(k);
		if (pcs[i] >= r->m.lo && pcs[i] < r->m.hi &&
		    r->m.gen_to == LSNAP_GEN_LOADED)
			break;
	}
	if (k == count) {
		snprintf(buf, len, "%#-18llx %-25s", (unsigned long long)pcs[i],
			 "(no module)");
		return;
	}
	base = strrchr(r->path, '/') ? strrchr(r->path, '/') + 1 : r->path;
	snprintf(buf, len, "%#-18llx %s+%#llx", (unsigned long long)pcs[i],
		 base, (unsigned long long)(pcs[i] - r->m.bias));
}

static void say(const char *line, int len)
{
	ssize_t w = write(STDERR_FILENO, line, (size_t)len);

	(void)w;
}

#define REPORT_ROWS 64		/* frames shown per stack */

static void report_mismatch(unsigned i, const struct mismatch *m)
{
	char line[512], col[3][128];
	int r, k, rows = 0, len;

	len = snprintf(line, sizeof(line), "leakscope: agent in pid %d: "
		       "unwind check: mismatch %u (thread %d, agent's stack %s, "
		       "%d frames; libunwind %d; agent without memo %d); "
		       "'*' marks rows that differ\n", (int)getpid(), i + 1,
		       (int)m->tid, m->from_memo ? "from the memo" : "walked",
		       m->n[0], m->n[1], m->n[2]);
	say(line, len);
	for (k = 0; k < 3; k++)
		rows = m->n[k] > rows ? m->n[k] : rows;
	for (r = 0; r < rows && r < REPORT_ROWS; r++) {
		for (k = 0; k < 3; k++)
			describe_pc(col[k], sizeof(col[k]), m->pcs[k], m->n[k], r);
		len = snprintf(line, sizeof(line), "  %c#%-3d agent %-44s  "
			       "libunwind %-44s  no-memo %s\n",
			       r >= m->n[0] || r >= m->n[1] ||
			       m->pcs[0][r] != m->pcs[1][r] ? '*' : ' ', r,
			       col[0], col[1], col[2]);
		say(line, len < (int)sizeof(line) ? len : (int)sizeof(line) - 1);
	}
}

void ls_capture_report_mismatches(void)
{
	unsigned i;

	for (i = 0; i < MISMATCH_KEPT; i++)
		if (__atomic_load_n(&kept[i].ready, __ATOMIC_ACQUIRE) &&
		    !kept[i].reported) {
			kept[i].reported = 1;
			report_mismatch(i, &kept[i]);
		}
}

__attribute__((noinline))
int ls_capture_site(uint64_t *pcs, int max, uint32_t kind,
			  const struct ls_unwind_start *st,
			  struct ls_site_rec **site)
{
	uint64_t raw[LS_DEPTH_MAX + SLACK];
	int from = st && st->sp, want, n;
	struct ls_site_rec *memo;
	void *val;

	*site = NULL;
	if (method != OWN && method != CHECK)
		return capture_plain(pcs, max);
	want = from ? ls_capture_want_from(max) : ls_capture_want(max);
	n = ls_unwind_capture_memo_from(st, raw, want, 0, kind,
					st ? st->pc : 0, &val);
	memo = val;
	if (memo) {
		*site = memo;
		if (method == CHECK)
			check_frames(memo->frames, (int)memo->nframes, max, 1);
		return 0;
	}
	/* Asked without slack, the walk began in the agent after all (st
	 * not above this frame, or a hook called from the agent): walk
	 * again with it.  That walk also drops the pending one, which the
	 * memo must not keep for frames it did not give. */
	if (from && n > 0 && in_agent(raw[0]))
		n = capture_plain(pcs, max);
	else
		n = cut_agent(raw, n, pcs, max);
	if (method == CHECK)
		check_frames(pcs, n, max, 0);
	return n;
}

struct ls_site_rec *ls_capture_memo(const struct ls_unwind_start *st, int max,
			      uint32_t kind)
{
	struct ls_site_rec *s;

	if (method != OWN && method != CHECK)
		return NULL;
	s = ls_unwind_memo_get(st, ls_capture_want_from(max), kind);
	if (s && method == CHECK)
		check_frames(s->frames, (int)s->nframes, max, 1);
	return s;
}

void ls_capture_remember(struct ls_site_rec *site)
{
	if (method == OWN || method == CHECK)
		ls_unwind_memo_put(site);
}

void ls_capture_invalidate(void)
{
	ls_unwind_invalidate();
}

void ls_capture_atfork_child(void)
{
	ls_unwind_atfork_child();
}

uint32_t ls_capture_unwinder(void)
{
	return method == OWN ? LSNAP_UNWINDER_CFI :
	       method == LIBUNWIND ? LSNAP_UNWINDER_LIBUNWIND :
	       method == CHECK ? LSNAP_UNWINDER_CHECK : LSNAP_UNWINDER_NONE;
}

uint64_t ls_capture_mismatches(void)
{
	return __atomic_load_n(&mismatches, __ATOMIC_RELAXED);
}
