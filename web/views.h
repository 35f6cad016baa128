/*
 * views.h - what the API answers about one source (views.c): the report,
 * the folded stacks and flame graph, stats, per-site growth history, the
 * oldest blocks; plus the process list and the diff of two snapshots.
 * Each fills a reply; all are safe to run from many threads at once.
 */
#ifndef LEAKSCOPE_WEB_VIEWS_H
#define LEAKSCOPE_WEB_VIEWS_H

#include "internal.h"

/* A snapshot to view: a cached live one (ref) or one owned here. */
struct ls_web_src {
	pid_t pid;			/* live: the process */
	struct ls_web_snap *ref;	/* live: from the cache */
	struct ls_web_agents *agents;	/* live: for the shared symbolizer */
	struct ls_snapshot own;		/* saved or post-mortem */
	const struct ls_snapshot *snap;
};

/*
 * Sources: a live process by its pid string (a cache reference, with the
 * block list when blocks), a saved snapshot by name (validated).  0, or
 * an error reply's status.  Release with ls_web_src_release().
 */
int ls_web_src_live(struct ls_web_req *r, const char *pid, int blocks,
		    struct ls_web_src *src, struct ls_web_reply *rep);
int ls_web_src_saved(struct ls_web_req *r, const char *name,
		     struct ls_web_src *src, struct ls_web_reply *rep);
void ls_web_src_release(struct ls_web_req *r, struct ls_web_src *src);

/* "report", "folded", "flamegraph.svg", "stats", "history", "olds". */
int ls_web_view_known(const char *view);
/* Answer view of src, its parameters read from r. */
void ls_web_view(struct ls_web_req *r, struct ls_web_src *src,
		 const char *view, struct ls_web_reply *rep);

/* GET processes: every agent this user may ask, with a sparkline. */
void ls_web_view_processes(struct ls_web_req *r, struct ls_web_reply *rep);

/* GET diff?from=A&to=B: two saved snapshots (or pid:N, a live process
 * now) compared by lib/diff.h, as JSON or (format=svg) a differential
 * flame graph when the library can draw one. */
void ls_web_view_diff(struct ls_web_req *r, struct ls_web_reply *rep);

/* Whether this build has the diff and flame graph renderers. */
int ls_web_view_has_diff(void);
int ls_web_view_has_svg(void);
int ls_web_view_has_diff_svg(void);

#endif
