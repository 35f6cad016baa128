/*
 * capture.c - stack capture.
 *
 * The agent's own CFI unwinder (unwind.c) by default: it caches one
 * compact rule per return address, which is what keeps full tracking
 * cheap (docs/UNWINDING.md has the measurements against libunwind).
 * LEAKSCOPE_UNWIND=libunwind selects Debian's libunwind instead, and
 * LEAKSCOPE_UNWIND=check runs both on every capture and counts the stacks
 * where they disagree (ls_capture_mismatches), for testing, and
 * LEAKSCOPE_UNWIND=none records empty stacks, to measure what tracking
 * costs apart from stacks.
 *
 * libunwind is loaded with dlopen() RTLD_LOCAL (libunwind-load.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
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

/* LEAKSCOPE_UNWIND=check: count pcs[0..n) as a mismatch unless a fresh
 * libunwind capture gives the same program frames (libunwind starts in
 * this function: cut_agent() aligns both on the program's frames). */
static void check_frames(const uint64_t *pcs, int n, int max)
{
	uint64_t other[LS_DEPTH_MAX + SLACK], mine[LS_DEPTH_MAX];
	int b = capture_libunwind(other, ls_capture_want(max));
	int a = cut_agent(other, b, mine, max);

	if (a != n || memcmp(mine, pcs, (size_t)n * sizeof(*pcs)))
		__atomic_add_fetch(&mismatches, 1, __ATOMIC_RELAXED);
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
			check_frames(memo->frames, (int)memo->nframes, max);
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
		check_frames(pcs, n, max);
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
		check_frames(s->frames, (int)s->nframes, max);
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
