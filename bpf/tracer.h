/*
 * tracer.h - the user side of `leakscope trace` (bpf/trace.c): load the
 * BPF programs of trace.bpf.c, attach them, and hand each ring-buffer
 * record to a callback.  What records mean: bpf/trace.h.
 *
 * Never prints (libbpf's own messages go to stderr only when verbose is
 * set) and never exits: errors come back as -errno with a one-line reason
 * in err.  Not thread-safe: one tracer per thread.
 */
#ifndef LEAKSCOPE_BPF_TRACER_H
#define LEAKSCOPE_BPF_TRACER_H

#include <stddef.h>
#include <stdint.h>
#include <linux/types.h>
#include "trace.h"

/* What to trace: trace-kinds.h's LS_TRACE_EVENT rows, from 0. */
enum ls_tracer_what {
#define LS_TRACE_EVENT(id, name, help) LS_TRACE_##id,
#include "trace-kinds.h"
#undef LS_TRACE_EVENT
};

struct ls_tracer_opts {
	int pid;		/* 0: every process (LS_TRACE_KERNEL only) */
	enum ls_tracer_what what;
	const char *obj;	/* LS_TRACE_ALLOC: file holding the allocator */
	const char *prefix;	/* prepended to each function name, or NULL */
	enum ls_trace_stack stack_mode;
	uint32_t stack_bytes;	/* <= LS_TRACE_MAX_STACK */
	uint64_t min_size, max_size;	/* max 0: no limit */
	uint64_t sample_rate;	/* mean bytes between samples; 0: all */
	int percpu;		/* LS_TRACE_KERNEL: percpu allocations too */
	int combined;		/* LS_TRACE_ALLOC with LS_STACK_FP: heap
				   blocks counted per stack in the kernel,
				   read with ls_tracer_combined_each() */
	int verbose;		/* let libbpf print */
	size_t ringbuf_bytes;	/* power of two; 0: 64 MiB */
};

/* Called for each record; a nonzero return stops ls_tracer_poll(). */
typedef int (*ls_tracer_cb)(void *arg, const struct ls_trace_event *e,
			    size_t len);

struct ls_tracer;

/*
 * Can this machine and this process trace at all?  Checks privileges,
 * BTF, tracefs (mounted here when missing and we are root) and, for
 * what, uprobes.  0, or -errno with the reason in err.
 */
int ls_tracer_check(enum ls_tracer_what what, char *err, size_t errlen);

/*
 * Load and attach.  For LS_TRACE_ALLOC, every function of the family
 * found in obj is probed once (aliases at one address once); -ENOENT
 * when obj has no malloc and free.  Returns 0 and *out, or -errno.
 */
int ls_tracer_start(const struct ls_tracer_opts *o, ls_tracer_cb cb,
		    void *arg, struct ls_tracer **out, char *err,
		    size_t errlen);

/* Deliver records until none is left or timeout_ms passed (-1: wait).
 * Returns records delivered, or -errno (-EINTR when a signal came). */
int ls_tracer_poll(struct ls_tracer *t, int timeout_ms);

/* Counters of the kernel side, summed over CPUs: stats[LS_STAT_*]. */
void ls_tracer_stats(struct ls_tracer *t, uint64_t stats[LS_STAT_COUNT]);

/*
 * Call cb for each stack the kernel counts heap blocks under (opts
 * combined): its return addresses (innermost first) and totals.  0, or
 * the first nonzero cb return.
 */
int ls_tracer_combined_each(struct ls_tracer *t,
			    int (*cb)(void *arg, const uint64_t *ips,
				      uint32_t n,
				      const struct ls_trace_comb *c),
			    void *arg);


/* Detach and free; accepts NULL. */
void ls_tracer_stop(struct ls_tracer *t);

#endif
