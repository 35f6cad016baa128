/*
 * figures.h - the process-wide figures that both the snapshot writer
 * (snapwrite.h) and the growth sampler (pmfile.h) record: call counts,
 * mallinfo2() and the peak of live bytes.  Kept apart from both so that
 * neither depends on the other for them.
 *
 * Not for allocation hooks: runs on the control thread or at exit, with
 * the recursion guard held (mallinfo2() takes the allocator's locks).
 */
#ifndef LEAKSCOPE_AGENT_FIGURES_H
#define LEAKSCOPE_AGENT_FIGURES_H

#include <stdint.h>
#include "../common/lsnap.h"

/* Call counts, LS_FN_COUNT entries, named as ls_fn_names. */
void ls_figures_calls(struct lsnap_call *out);

/*
 * glibc's mallinfo2(), or the figures it gave last time when counting
 * again would hold the allocator's locks too much.  mallinfo2() counts
 * every free chunk of every arena under that arena's lock: a million
 * chunks scattered in a fast bin take ~150 ms, and every thread whose
 * allocation needs the lock waits as long.  Once a count has taken
 * LS_MALLINFO_SLOW_NS or more of CPU time, the next is not taken before
 * LS_MALLINFO_DUTY times that duration has passed (the lock held at most
 * 1/LS_MALLINFO_DUTY of the time by the agent's counts, whoever asks:
 * the growth sample, a snapshot, a check); meanwhile the last figures
 * are returned.  A count under that takes no part: a heap that is quick
 * to count is counted every time.  Any thread but the hooks'.
 */
#define LS_MALLINFO_SLOW_NS 1000000ull	/* 1 ms */
#define LS_MALLINFO_DUTY 1000
void ls_figures_mallinfo(struct lsnap_mallinfo *m);
/* Look up mallinfo2 (glibc 2.33 on; mallinfo before).  At the agent's
 * start, outside hooks: dlsym may allocate.  The first count does it when
 * nobody did. */
void ls_figures_init(void);
/* How long the last count took (CPU), and how many calls were answered
 * without counting (tests/unit/t-agent-figures.c). */
void ls_figures_mallinfo_ration(uint64_t *last_ns, uint64_t *skipped);
/* Fork child handler. */
void ls_figures_reset_child(void);
/* Fill t's peak from the threads' counters; t->live_bytes must already
 * be summed (the peak is never reported below it). */
void ls_figures_peak(struct lsnap_totals *t);

#endif
