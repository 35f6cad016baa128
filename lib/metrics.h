/*
 * metrics.h - traced processes as Prometheus metrics (docs/FLEET.md).
 *
 * ls_metrics_proc_build() reduces one snapshot to the figures an exporter
 * publishes: the process's totals, the agent's own memory, and a bounded
 * number of sites, each with a stable id, a readable function and
 * file:line, its live bytes and its growth (lib/trend.h).  The snapshot
 * can be released afterwards: a scrape of many processes holds one
 * snapshot at a time.  ls_metrics_write() prints the reduced processes in
 * the Prometheus text exposition format (version 0.0.4) or in
 * OpenMetrics 1.0.
 *
 * Nothing here prints on its own, fetches or keeps state between calls.
 * Thread-safe with one symbolizer per thread (symbolize.h).
 */
#ifndef LEAKSCOPE_METRICS_H
#define LEAKSCOPE_METRICS_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "snapshot.h"
#include "symbolize.h"

/* Label values are cut to this many bytes (function names, commands). */
#define LS_METRICS_LABEL_MAX 200
/* Sites per process at most, whatever the caller asks. */
#define LS_METRICS_SITES_MAX 1000

struct ls_metrics_site {
	/* 16 hex digits: a hash of the symbolized stack (module, function,
	 * file, line of every frame) and the kind, the same for the same
	 * code in every process of one build, on every machine. */
	char id[17];
	char *function;		/* owned: the program's innermost frame,
				   template arguments cut; "[module]" or
				   "0xADDR" when it has no name */
	char *location;		/* owned: "file.c:12" (base name), or "" */
	const char *kind;	/* ls_site_kind_name() */
	int64_t live_bytes, live_blocks;
	int has_trend;		/* the snapshot had a growth history */
	double bytes_per_second;	/* the trend's slope */
	const char *trend;	/* ls_trend_name(); "unknown" without */
};

struct ls_metrics_proc {
	pid_t pid;
	char command[64];	/* base name of argv[0], or "" */
	char container[80];	/* ls_metrics_container(), or "" */
	const char *mode;	/* "full" or "sampled" */
	uint64_t sample_rate;	/* 0 in full mode */
	double uptime_s;	/* tracking began .. the snapshot */
	int has_totals;
	uint64_t live_bytes, live_blocks, peak_live_bytes;
	uint64_t allocated_bytes, allocated_blocks;
	uint64_t dropped;	/* events the agent could not record */
	int has_agent_memory;
	uint64_t agent_mapped, agent_resident;
	size_t sites_live;	/* sites holding memory, before the cut */
	struct ls_metrics_site *sites;	/* owned, at most max_sites */
	size_t nsites;
};

/*
 * Reduce snap to p (zeroed by the call; release with
 * ls_metrics_proc_release).  Keeps at most max_sites sites (capped at
 * LS_METRICS_SITES_MAX): first those whose trend is linear or
 * exponential, fastest first, then the others by live bytes; sites whose
 * stacks symbolize the same are merged into one (they would be one series).
 * container may be NULL.  Returns 0 or -ENOMEM.
 */
int ls_metrics_proc_build(struct ls_metrics_proc *p,
			  const struct ls_snapshot *snap,
			  struct ls_symbolizer *sym, size_t max_sites,
			  const char *container);
void ls_metrics_proc_release(struct ls_metrics_proc *p);

/*
 * The container a process runs in, from the text of its /proc/PID/cgroup:
 * the 64-hex-digit id of a Docker, containerd, CRI-O or Podman container
 * (shortened to 12 digits, as `docker ps` prints it), or the machine name
 * of a systemd-nspawn container ("machine-NAME.scope").  Writes "" when
 * none.  Returns 1 when one was found, else 0.
 */
int ls_metrics_container_parse(const char *cgroup, char *out, size_t cap);
/* The same for pid, reading /proc/PID/cgroup (at most 64 KiB). */
int ls_metrics_container(pid_t pid, char *out, size_t cap);

/* What the exporter says about itself. */
struct ls_metrics_scrape {
	size_t unreachable;	/* agents found that did not answer */
	double collect_s;	/* time spent asking and reducing */
};

/*
 * Print the families of every process in procs, then the exporter's, to
 * out: OpenMetrics when openmetrics (ending with "# EOF"), else the
 * Prometheus text format.  The caller may add families of its own with
 * ls_metrics_family/ls_metrics_value before ls_metrics_end.  Returns 0 or
 * the stream's write error.
 */
int ls_metrics_write(FILE *out, const struct ls_metrics_proc *procs,
		     size_t n, const struct ls_metrics_scrape *sc,
		     int openmetrics);
/* "# HELP" and "# TYPE" lines; type "gauge" or "counter" (a counter's
 * samples are named NAME_total, as both formats want). */
void ls_metrics_family(FILE *out, const char *name, const char *type,
		       const char *help, int openmetrics);
/* One sample: NAME[_total]{labels} value.  labels is NULL-terminated
 * pairs of name and raw value, escaped here. */
void ls_metrics_value(FILE *out, const char *name, int counter,
		      const char *const *labels, double v);
/* The OpenMetrics terminator when openmetrics; flushes.  0 or -EIO. */
int ls_metrics_end(FILE *out, int openmetrics);

/* Does an Accept header ask for OpenMetrics? */
int ls_metrics_wants_openmetrics(const char *accept);
/* The Content-Type of either format. */
const char *ls_metrics_content_type(int openmetrics);

#endif
