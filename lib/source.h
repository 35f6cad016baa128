/*
 * source.h - where a snapshot comes from: the table of sources.
 *
 * Every source turns a target the user named into a struct ls_snapshot
 * (snapshot.h).  A row is {name, probe, load}: probe says, cheaply and
 * without side effects, whether the row takes the target; the first row
 * whose probe says yes loads it.  Rows today: a post-mortem file of a pid
 * (with opts.postmortem), a live pid over its control socket (client.h),
 * a post-mortem file (by its magic), a snapshot file (anything else).
 *
 * Adding a source is adding a row to ls_sources[] in source.c and a
 * file with its probe and load.  Not thread-safe where its load is not.
 */
#ifndef LEAKSCOPE_SOURCE_H
#define LEAKSCOPE_SOURCE_H

#include <stddef.h>
#include <sys/types.h>
#include "snapshot.h"

struct ls_source_opts {
	int blocks;		/* the block list is wanted (live pid) */
	int postmortem;		/* a pid names its post-mortem file */
	pid_t beside;		/* ... of a process that ran in the
				   container of this live pid (--in) */
};

struct ls_source {
	const char *name;	/* "pid", "snapshot", ... (for messages) */
	const char *help;	/* one line, for --help and the man page */
	/* 1 if this row takes target, else 0. */
	int (*probe)(const char *target, const struct ls_source_opts *o);
	/* Load target: 0, or a negative errno with a one-line reason in
	 * err, *snap then empty. */
	int (*load)(const char *target, const struct ls_source_opts *o,
		    struct ls_snapshot *snap, char *err, size_t errlen);
};

/* The rows, in probing order, ending with a row whose name is NULL. */
extern const struct ls_source ls_sources[];

/* Load target through the first row that takes it.  Returns 0 or a
 * negative errno with the reason in err. */
int ls_source_load(const char *target, const struct ls_source_opts *o,
		   struct ls_snapshot *snap, char *err, size_t errlen);

/* A decimal pid > 0?  Sets *pid. */
int ls_source_is_pid(const char *s, pid_t *pid);

#endif
