/*
 * trace.h - what the kernel side (trace.bpf.c) and the user side (trace.c)
 * of `leakscope trace` share: the event record of the ring buffer and the
 * numbering of the traced functions.  Fixed-width types only, so both
 * compilers lay the structs out alike.
 */
#ifndef LEAKSCOPE_BPF_TRACE_H
#define LEAKSCOPE_BPF_TRACE_H

#include "../common/interpose.h"

/* Bytes of user stack one event can carry (copied from the interrupted
 * sp upwards, page by page) and return addresses one event can carry
 * when the kernel walks the stack itself. */
#define LS_TRACE_MAX_STACK 16384
#define LS_TRACE_MAX_IPS 127
#define LS_TRACE_PAGE 4096

/* Sampling gaps: a table of exponential variates the user side fills
 * before loading; the kernel picks one at random per sample. */
#define LS_TRACE_GAPS 1024

/* Allocator calls in flight per thread that the nesting check tracks
 * (malloc -> mmap, realloc -> malloc, ...). */
#define LS_TRACE_NEST 4

/* The records' kinds: trace-kinds.h's LS_TRACE_RECORD rows, from 1. */
enum ls_trace_type {
	LS_TEV_NONE_ = 0,
#define LS_TRACE_RECORD(id, name, meaning) LS_TEV_##id,
#include "trace-kinds.h"
#undef LS_TRACE_RECORD
	LS_TEV_KINDS
};

/* The user-space functions, uprobe entry programs per function, one
 * uretprobe program for all. */
enum ls_trace_fn {
#define LS_INTERPOSE(sym, NAME, field, ret, params, attr, kind, real, got, export) \
	LS_IP_COUNTED_##kind(LS_TFN_##NAME,)
#include "../common/interpose.def"
	LS_TFN_COUNT,
	/* kernel allocators (LS_TEV_KALLOC's fn) */
	LS_KFN_KMALLOC = LS_TFN_COUNT,
	LS_KFN_CACHE,
	LS_KFN_PAGE,
	LS_KFN_PERCPU,
	LS_KFN_END,
};

/* How the kernel side records stacks (the `stack_mode` setting). */
enum ls_trace_stack {
	LS_STACK_COPY = 0,	/* copy the stack: user space unwinds (CFI) */
	LS_STACK_FP = 1,	/* bpf_get_stack(): frame pointers only */
	LS_STACK_NONE = 2,
};

#define LS_TEV_F_EXACT 1u	/* ip was interrupted (syscall, fault), not
				   a return address */
#define LS_TEV_F_KERNEL 2u	/* data holds kernel return addresses */

/*
 * One record of the ring buffer.  data holds nips return addresses
 * (innermost first), then stack_len bytes copied from the user stack at
 * sp.  ip, sp and bp are the user registers the walk starts from.
 */
struct ls_trace_event {
	__u32 type;		/* enum ls_trace_type */
	__u32 fn;		/* enum ls_trace_fn */
	__u32 pid;		/* thread group */
	__u32 tid;
	__u64 ts;		/* CLOCK_MONOTONIC ns */
	__u64 addr, size, old;
	__u64 ip, sp, bp;
	__u32 flags;		/* LS_TEV_F_* */
	__u32 nips;
	__u32 stack_len;
	__u32 pad;
	__u64 data[];
};

/* Per-stack totals kept in the kernel (--combined-only with frame-pointer
 * stacks): the `comb` map, keyed by the `stacks` map's stack id. */
struct ls_trace_comb {
	__u64 bytes, blocks;		/* outstanding */
	__u64 alloc_bytes, alloc_blocks;	/* since the trace began */
};

/* Counters the kernel side keeps (one per-CPU array slot each). */
enum ls_trace_stat {
	LS_STAT_EVENTS = 0,	/* records written */
	LS_STAT_LOST,		/* ring buffer full: records dropped */
	LS_STAT_LIVE_FULL,	/* allocation not recorded: live map full */
	LS_STAT_NEST_LOST,	/* exit without a matching entry */
	LS_STAT_SAMPLED_OUT,	/* allocations left out by sampling */
	LS_STAT_STACK_FAIL,	/* stack could not be read at all */
	LS_STAT_COUNT,
};

#endif
