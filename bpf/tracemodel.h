/*
 * tracemodel.h - the eBPF tracer's records (bpf/trace.h) folded into the
 * snapshot model (snapshot.h): outstanding blocks and mappings by stack,
 * brk growth and page faults by stack, kernel allocations by kernel stack.
 *
 * User stacks are unwound here from the copies the records carry
 * (stackcopy.h); kernel stacks arrive as return addresses and are kept
 * against the pseudo-module LS_KERNEL_MODULE, which the symbolizer
 * resolves through /proc/kallsyms.
 *
 * Not thread-safe.  Never prints.
 */
#ifndef LEAKSCOPE_TRACEMODEL_H
#define LEAKSCOPE_TRACEMODEL_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "../lib/snapshot.h"
#include "../lib/stackcopy.h"
#include "../lib/symbolize.h"
#include "trace.h"


struct ls_tmodel_opts {
	int pid;		/* the process traced; 0: system-wide */
	uint64_t sample_rate;	/* as the tracer was told; 0: full */
	int max_frames;		/* <= LSNAP_MAX_FRAMES */
	int keep_calls;		/* count calls per function (LS_TFN_*) */
};

struct ls_tmodel;

/* sc (may be NULL: kernel records only) must outlive the model. */
int ls_tmodel_new(const struct ls_tmodel_opts *o, struct ls_stackcopy *sc,
		  struct ls_tmodel **out);
void ls_tmodel_free(struct ls_tmodel *m);

/* Fold one record of len bytes in.  0, or -ENOMEM. */
int ls_tmodel_event(struct ls_tmodel *m, const struct ls_trace_event *e,
		    size_t len);

/*
 * The state now as a snapshot (a deep copy: *snap is the caller's, to
 * release with ls_snapshot_release()).  now_ns: CLOCK_MONOTONIC, for
 * ages.  argv: the command traced, or NULL.  0 or -ENOMEM.
 */
int ls_tmodel_snapshot(const struct ls_tmodel *m, uint64_t now_ns,
		       char *const *argv, struct ls_snapshot *snap);

/*
 * Per-stack totals the kernel keeps (--combined-only): forget the last
 * ones with ls_tmodel_combined_reset(), then give each stack's.  0 or
 * -ENOMEM.
 */
void ls_tmodel_combined_reset(struct ls_tmodel *m);
int ls_tmodel_combined(struct ls_tmodel *m, const uint64_t *ips, uint32_t n,
		       const struct ls_trace_comb *c);

/* Records whose block was unknown (allocated before the trace, or lost)
 * and records that could not be unwound at all. */
void ls_tmodel_counts(const struct ls_tmodel *m, uint64_t *unknown_frees,
		      uint64_t *no_stack);

/* "malloc", "free", ..., "kmalloc", "kmem_cache", "page", "percpu":
 * enum ls_trace_fn's names. */
const char *ls_trace_fn_name(unsigned fn);

#endif
