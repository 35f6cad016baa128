/*
 * capture.h - capture the calling thread's stack from inside a hook.
 *
 * The frames returned start at the program: every frame inside the agent
 * itself is dropped, so pcs[0] is the return address in the function that
 * called malloc (or strdup's return address into libc, and so on).
 *
 * Safe inside allocation hooks.  ls_capture_init() is not: it runs once at
 * the agent's start.
 */
#ifndef LEAKSCOPE_AGENT_STACK_H
#define LEAKSCOPE_AGENT_STACK_H

#include <stdint.h>
#include "site.h"
#include "unwind.h"

int ls_capture_init(void);

#define LS_CAPTURE_SLACK 16	/* agent frames above the program's */

/* Frames a capture for max program frames asks the unwinder for when it
 * starts in the agent: the agent's own frames come first. */
static inline int ls_capture_want(int max)
{
	return max + LS_CAPTURE_SLACK > LS_DEPTH_MAX + LS_CAPTURE_SLACK ?
	       LS_DEPTH_MAX + LS_CAPTURE_SLACK : max + LS_CAPTURE_SLACK;
}

/*
 * The same from a program frame (a hook's LS_UNWIND_HERE()): that frame's
 * pc is the first, so no agent frame comes before the program's, and the
 * slack would only be walked, recorded for the memo and re-read on every
 * hit to be cut off afterwards (16 frames of python3's deep stacks).
 */
static inline int ls_capture_want_from(int max)
{
	return max > LS_DEPTH_MAX ? LS_DEPTH_MAX : max;
}

/* 1 when ls_capture_memo() is just ls_unwind_memo_get() (the own unwinder,
 * no cross-check): the hooks then call that directly. */
extern int ls_capture_memo_direct;

/*
 * Capture up to max program frames into pcs, for a site of this kind,
 * from the program frame *st when st is not NULL and st->sp not 0
 * (LS_UNWIND_HERE() in the hook), else from here.  When the unwinder's
 * memo knows the walk (the same stack words as when a site was remembered
 * for it), *site is that site and nothing is captured (returns 0); else
 * *site is NULL and the frames are in pcs, the agent's own dropped.  The
 * caller interns them and hands the site to ls_capture_remember() before
 * its next capture.
 */
int ls_capture_site(uint64_t *pcs, int max, uint32_t kind,
			  const struct ls_unwind_start *st,
			  struct ls_site_rec **site);
void ls_capture_remember(struct ls_site_rec *site);
/* The site ls_capture_site(pcs, max, kind, st, ...) would give from
 * the memo alone, without capturing; NULL if it would capture. */
struct ls_site_rec *ls_capture_memo(const struct ls_unwind_start *st, int max,
			      uint32_t kind);
/* Called after a dlclose(): forget cached unwind rules. */
void ls_capture_invalidate(void);
/* In a fork child (see ls_unwind_atfork_child). */
void ls_capture_atfork_child(void);
/* Which unwinder is in use: enum lsnap_unwinder. */
uint32_t ls_capture_unwinder(void);
/* With LEAKSCOPE_UNWIND=check: captures where the two unwinders
 * disagreed. */
uint64_t ls_capture_mismatches(void);
/* With LEAKSCOPE_UNWIND=check: write the first few of those captures
 * not written yet to stderr, frame by frame, each pc with its module and
 * offset: the agent's stack, libunwind's, and the agent's walk without
 * the memo.  Not in hooks (formats with snprintf); after a module
 * refresh, so that the modules are known. */
void ls_capture_report_mismatches(void);

#endif
