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

#include "../common/lsnap.h"

/* Call counts, LS_FN_COUNT entries, named as ls_fn_names. */
void ls_figures_calls(struct lsnap_call *out);
void ls_figures_mallinfo(struct lsnap_mallinfo *m);
/* Fill t's peak from the threads' counters; t->live_bytes must already
 * be summed (the peak is never reported below it). */
void ls_figures_peak(struct lsnap_totals *t);

#endif
