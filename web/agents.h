/*
 * agents.h - discovery of the agents and the per-process snapshot cache (agents.c).  Not a public interface.
 */
#ifndef LEAKSCOPE_WEB_AGENTS_H
#define LEAKSCOPE_WEB_AGENTS_H

#include <sys/types.h>
#include "internal.h"

int ls_web_agents_init(struct ls_web_agents *a);
void ls_web_agents_release(struct ls_web_agents *a);

/*
 * The pids of the running processes whose agent answers on a socket and
 * that this user may query (own processes; all for root), ascending.
 * Returns the count (*pids malloc()ed, NULL when 0) or a negative errno.
 */
ssize_t ls_web_agents_list(pid_t **pids);

/*
 * A snapshot of pid's agent (with the block list when blocks), at most
 * the cache's TTL old: concurrent requests for one process share one
 * fetch, so many clients cost the agent one snapshot per TTL.  Returns a
 * reference the caller drops with ls_web_snap_put(), or NULL with an
 * error reply in rep (403 another user's process, 404 no such process or
 * agent, 502 the agent failed, 504 it timed out).
 */
struct ls_web_snap *ls_web_snap_get(struct ls_web_agents *a, pid_t pid,
				    int blocks, struct ls_web_reply *rep);
void ls_web_snap_put(struct ls_web_agents *a, struct ls_web_snap *s);

/* 0 if this user may ask pid's agent (its own process; any for root),
 * else an error reply's status: 404 no such process, 403 another user's. */
int ls_web_check_pid(pid_t pid, struct ls_web_reply *rep);

/* Drop pid's cached snapshot (after a reset: the next read is fresh). */
void ls_web_agents_forget(struct ls_web_agents *a, pid_t pid);

/*
 * Run fn(snap, sym, arg) with a symbolizer for pid's process that is
 * kept between requests (libdw's per-module work is the slow part) and
 * rebuilt when the module map changes.  One request at a time per
 * process holds it.  Returns fn's value, or -ENOMEM.
 */
struct ls_symbolizer;
int ls_web_with_symbolizer(struct ls_web_agents *a, pid_t pid,
			   struct ls_web_snap *s,
			   int (*fn)(const struct ls_snapshot *snap,
				     struct ls_symbolizer *sym, void *arg),
			   void *arg);

/* The HTTP status for a client.h error. */
int ls_web_status_of(int err);

#endif
