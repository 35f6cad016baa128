/*
 * beam.h - `leakscope beam`: sample a running Erlang node from a hidden C
 * node and say which of its BEAM-level figures grow (docs/ERLANG.md).
 *
 * Each interval the C node asks the node, with read-only calls only
 * (erlang:processes/0, process_info/2, erlang:memory/0, system_info/1,
 * ets:all/0, ets:info/1), for: process, port, atom and ETS table counts
 * against their limits; every process's memory, message queue, refc binary
 * bytes, reductions, monitors, monitored_by and links; every ETS table's
 * memory and size; erlang:memory() by type; each alloc_util allocator's
 * carriers (allocated) and blocks (used); and, when the node runs on this
 * host, its RSS minus the allocators' total.  Each series gets a trend
 * label (lib/trend.h); the report lists the growing ones first with the
 * kind of leak each means.  When the node runs under the leakscope agent,
 * its growing native sites (NIF and driver mallocs) follow, from the
 * agent's own growth samples.
 *
 * Only opts->gc_check sends something that changes the node: a
 * garbage_collect/1 of every process, once, at the end (recon's bin_leak).
 *
 * Never prints to the terminal: the report goes to out, a failure comes
 * back as a negative errno with a one-line reason in err.
 */
#ifndef LEAKSCOPE_ERLANG_BEAM_H
#define LEAKSCOPE_ERLANG_BEAM_H

#include <stdio.h>

struct ls_beam_opts {
	const char *node;	/* name@host or name */
	const char *cookie;	/* borrowed; never copied into messages */
	int port;		/* > 0: the node's distribution port, no epmd */
	double interval_s;	/* between samples, > 0 */
	unsigned count;		/* samples, >= 1 */
	unsigned top;		/* entries per top list */
	int json;		/* JSON instead of text */
	int gc_check;		/* intrusive: bin_leak at the end */
	unsigned timeout_ms;	/* per connection attempt and per rpc */
};

/*
 * Connect, sample opts->count times, write the report to out.  Returns 0,
 * or a negative errno (those of ls_cnode_connect() and ls_cnode_rpc(),
 * -EPROTONOSUPPORT for a node older than OTP 23) with a one-line reason
 * in err; nothing is written to out on failure.
 */
int ls_beam_run(const struct ls_beam_opts *opts, FILE *out, char *err,
		size_t errlen);

#endif
