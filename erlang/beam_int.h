/*
 * beam_int.h - what the sampler (beam_sample.c) hands to the analysis and
 * report (beam_report.c).  Internal to `leakscope beam`.
 *
 * Every figure is a series of `count` samples; a sample where the subject
 * did not exist (a process not yet started or already gone, a table not
 * yet created) is 0 with seen[i] = 0.
 */
#ifndef LEAKSCOPE_ERLANG_BEAM_INT_H
#define LEAKSCOPE_ERLANG_BEAM_INT_H

#include <stdint.h>
#include "beam.h"
#include "cnode.h"
#include "../lib/snapshot.h"

/* Per-process figures, in this order in struct beam_proc.v. */
enum {
	PM_MEMORY,		/* bytes: heap, stack, mailbox, internal */
	PM_MQ,			/* message_queue_len */
	PM_BINARY,		/* bytes of refc binaries it references */
	PM_REDUCTIONS,		/* cumulative: ranked by delta, not labelled */
	PM_MONITORS,
	PM_MONITORED_BY,
	PM_LINKS,
	PM_N
};

struct beam_proc {
	unsigned num, serial;	/* <0.num.serial> */
	char name[128];		/* registered name, or "" */
	char init[160];		/* initial call m:f/a; for proc_lib's, the
				   one proc_lib keeps ('$initial_call') */
	int resolved;		/* init is final: not asked again */
	char current[160];	/* current function m:f/a */
	int64_t *v[PM_N];	/* [count] each */
	uint8_t *seen;		/* [count] */
	struct beam_proc *next;	/* hash chain */
};

struct beam_tab {
	char id[64];		/* raw encoding of the table id */
	int idlen;
	char name[128];
	char owner[32];		/* <0.n.s> */
	int64_t *memory, *size;	/* [count]; memory in bytes */
	uint8_t *seen;
};

/* A node-wide figure: counts, erlang:memory types, allocators. */
struct beam_scalar {
	char name[96];		/* "process_count", "memory.ets", ... */
	const char *kind;	/* kind key, see beam_report.c */
	int bytes;		/* unit: bytes (1) or a count (0) */
	int64_t limit;		/* 0: none */
	int64_t *v;
	uint8_t *seen;
};

/* Things counted per sample by a key: processes by initial call, ETS
 * tables by name. */
struct beam_group {
	char key[160];
	int64_t *v;
	uint8_t *seen;
};

struct beam_groups {
	struct beam_group *g;
	size_t n, cap;
};

/* --gc-check: what one process let go of in a forced collection. */
struct beam_gc {
	unsigned num, serial;
	char label[300];
	int64_t bins_before, bins_after;	/* refc binaries referenced */
	int64_t bytes_before, bytes_after;
};

struct beam_data {
	unsigned count;		/* samples asked for */
	unsigned taken;		/* samples taken */
	double interval_s;	/* asked for */
	double period_s;	/* the mean spacing of the samples taken */
	char node[512];
	char otp[32];
	long os_pid;		/* 0 when unknown */
	int rss_local;		/* the node is on this host: RSS known */
	int64_t wordsize;

	struct beam_proc **phash;	/* PHASH buckets */
	size_t nprocs;

	struct beam_tab *tabs;
	size_t ntabs, tabs_cap;

	struct beam_scalar *scalars;
	size_t nscalars, scalars_cap;

	struct beam_groups procs_by_init;
	struct beam_groups tabs_by_name;

	struct beam_gc *gc;	/* with gc_check */
	size_t ngc;
	int gc_done;

	/* The agent's view of the node's process, when it runs one. */
	int has_native;
	struct ls_snapshot native;
	char native_why[600];	/* why there is none */
};

#define PHASH 4096

/* beam_sample.c */
void ls_beam_data_free(struct beam_data *d);

/* beam_report.c */
int ls_beam_report(FILE *out, const struct beam_data *d,
		   const struct ls_beam_opts *o);

#endif
