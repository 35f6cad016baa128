/*
 * internal.h - what the web server's files share (server.c: HTTP, token,
 * dispatch; api.c: the JSON endpoints; agents.c: discovery and the
 * snapshot cache; store.c: saved snapshots and post-mortem files;
 * assets.c: the page).  Not a public interface.
 *
 * Threads: libmicrohttpd runs one thread per connection, so every handler
 * runs concurrently with others; the shared state (the agents' cache) has
 * its own locks, everything else is per request.
 */
#ifndef LEAKSCOPE_WEB_INTERNAL_H
#define LEAKSCOPE_WEB_INTERNAL_H

#include <netinet/in.h>
#include <sys/socket.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>
#include "../lib/report.h"
#include "../lib/snapshot.h"
#include "web.h"

#define LS_WEB_API_VERSION 1
#define LS_WEB_TOKEN_HEX 32		/* 128 random bits */
#define LS_WEB_REPLY_MAX (256ull << 20)	/* what one agent's reply may take */
#define LS_WEB_STORE_QUOTA (2ull << 30)	/* no snapshot saved beyond */
#define LS_WEB_MAX_URL 1024		/* longer request targets: 414 */
#define LS_WEB_MAX_BODY 1024		/* no endpoint takes a body */
#define LS_WEB_MAX_SEGS 6
#define LS_WEB_CACHE_SLOTS 64		/* processes with a cached snapshot */

/* A snapshot shared by the requests that read it; see ls_web_snap_get. */
struct ls_web_snap {
	int refs;			/* under agents.lock */
	int blocks;			/* has the block list */
	uint64_t fetched_ns;		/* CLOCK_MONOTONIC */
	struct ls_snapshot snap;
};

struct ls_web_proc;

struct ls_web_agents {
	pthread_mutex_t lock;		/* the slots and every refs */
	struct ls_web_proc *slots;	/* LS_WEB_CACHE_SLOTS */
	uint64_t ttl_ns;
	unsigned workers;		/* listing.c's threads still running */
};

/* Connections a user holds (server.c's peer limits). */
#define LS_WEB_PEERS 160		/* > MAX_CONNECTIONS: never full */
#define LS_WEB_PEER_OWN (-2L)		/* the server's own user */
struct ls_web_peer {
	long uid;			/* -1: unknown, remote */
	unsigned count;			/* 0: free slot */
};

struct ls_web {
	struct MHD_Daemon *mhd;
	int listen_fd;
	char token[LS_WEB_TOKEN_HEX + 1];	/* any request, in a header */
	char view[LS_WEB_TOKEN_HEX + 1];	/* GET only, as ?view= */
	char host[INET6_ADDRSTRLEN + 8];	/* "ADDR:PORT" as listened */
	unsigned agent_timeout_ms;
	pthread_mutex_t peers_lock;
	struct ls_web_peer peers[LS_WEB_PEERS];
	struct ls_web_peer *accepted;	/* by accept_peer, for on_connection */
	int loopback;				/* Host: is checked */
	struct sockaddr_storage addr;		/* where it listens */
	char url[256];
	char *snapdir;
	unsigned port;
	struct ls_web_agents agents;
	pthread_mutex_t store_lock;	/* names of new snapshots */
};

struct ls_web_req {
	struct ls_web *w;
	struct MHD_Connection *conn;
	const char *method;
	char *segs[LS_WEB_MAX_SEGS];	/* the path after /api/v1/ */
	size_t nsegs;
	char path[LS_WEB_MAX_URL];	/* segs point into it */
};

struct ls_web_reply {
	int status;
	const char *type;		/* static string */
	char *body;			/* malloc()ed, unless persistent */
	size_t len;
	int persistent;			/* body is a built-in asset */
};

/* --- server.c ------------------------------------------------------------ */

/* An error reply {"error": "...", "status": N}; returns status. */
int ls_web_error(struct ls_web_reply *rep, int status, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* A growing buffer for a reply body (open_memstream). */
struct ls_web_buf {
	FILE *fp;
	char *data;
	size_t len;
};
int ls_web_buf_open(struct ls_web_buf *b);
/* Close b and hand its bytes to rep with status 200 and type; on a write
 * error a 500 instead.  Returns rep->status. */
int ls_web_buf_reply(struct ls_web_buf *b, struct ls_web_reply *rep,
		     const char *type);

/*
 * A JSON object reply: ls_web_json_begin() opens the buffer and the top
 * object and writes "format" and "version"; the caller adds members;
 * ls_web_json_end() closes it and hands it to rep with status (a 500
 * instead when writing failed or err is nonzero).  Returns 0 / status.
 */
struct ls_json;
int ls_web_json_begin(struct ls_web_buf *b, struct ls_json *j,
		      const char *format, struct ls_web_reply *rep);
int ls_web_json_end(struct ls_web_buf *b, struct ls_json *j, int err,
		    int status, struct ls_web_reply *rep);

/* The query parameter name, or NULL. */
const char *ls_web_param(struct ls_web_req *r, const char *name);
/* 0 if every query parameter is in allowed (NULL-terminated; "view" is
 * always allowed), else a 400 reply and its status. */
int ls_web_params_only(struct ls_web_req *r, const char *const *allowed,
		       struct ls_web_reply *rep);

/* Parse helpers: 0, or a 400 reply naming the parameter. */
int ls_web_param_count(struct ls_web_req *r, const char *name, uint64_t max,
		       uint64_t *out, struct ls_web_reply *rep);
/* A decimal pid in 1..4194304; 1 if s is one. */
int ls_web_parse_pid(const char *s, pid_t *pid);

/* Bind and listen on "ADDR:PORT" (NULL: 127.0.0.1, a free port); host
 * gets the numeric address, *loopback whether it is a loopback one, *ss
 * the address bound.
 * Errors as ls_web_start's, with err set. */
int ls_web_open_listener(const char *listen_at, int allow_remote, int *fd,
			 unsigned *port, int *loopback,
			 struct sockaddr_storage *ss, char *host,
			 size_t hostcap, char *err, size_t errlen);

/* --- api.c --------------------------------------------------------------- */

/* Answer a request under /api/v1/; fills rep. */
void ls_web_api(struct ls_web_req *r, struct ls_web_reply *rep);

/* --- agents.c ------------------------------------------------------------ */

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

/* --- listing.c ----------------------------------------------------------- */

/*
 * ls_web_snap_get() for n pids in parallel, without the block list: by
 * deadline_ms, snaps[i] is a reference (drop it with ls_web_snap_put())
 * or NULL with status[i] the error's status (504 when the agent had not
 * answered by then; it is left to finish on its own).  0 or -ENOMEM,
 * -EAGAIN (no thread).  Thread-safe.
 */
int ls_web_snap_get_many(struct ls_web_agents *a, const pid_t *pids, size_t n,
			 unsigned deadline_ms, struct ls_web_snap **snaps,
			 int *status);
/* Wait up to ms for the workers left running (before the cache goes). */
void ls_web_listing_wait(struct ls_web_agents *a, unsigned ms);

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

/* --- store.c ------------------------------------------------------------- */

/* The default snapshot dir: $XDG_STATE_HOME/leakscope/snapshots, else
 * $HOME/.local/state/leakscope/snapshots.  malloc()ed, or NULL. */
char *ls_web_store_default_dir(void);
/* Create dir (and parents) with mode 0700 if missing. */
int ls_web_store_mkdir(const char *dir);

/* A saved snapshot's name is valid: [A-Za-z0-9][A-Za-z0-9._-]*.lsnap,
 * at most 128 bytes, no "..". */
int ls_web_store_name_ok(const char *name);

/*
 * Save a snapshot of pid (with blocks) into the snapshot dir under a new
 * name (written to a temporary file, validated, renamed).  Returns 0 and
 * the name in name[cap], or an error reply's status.
 */
int ls_web_store_save(struct ls_web *w, pid_t pid, char *name, size_t cap,
		      struct ls_web_reply *rep);
/* Load a saved snapshot by name; 0 or an error reply's status (404). */
int ls_web_store_load(struct ls_web *w, const char *name,
		      struct ls_snapshot *snap, struct ls_web_reply *rep);
/* Remove one; 0 or an error reply's status. */
int ls_web_store_remove(struct ls_web *w, const char *name,
			struct ls_web_reply *rep);
/* Write the saved snapshots as a JSON array member "snapshots". */
struct ls_json;
int ls_web_store_list(struct ls_web *w, struct ls_json *j);

/* Post-mortem files of dead processes: "postmortem" array member. */
int ls_web_postmortem_list(struct ls_json *j);
/* Load pid's post-mortem file; 0 or an error reply's status. */
int ls_web_postmortem_load(pid_t pid, struct ls_snapshot *snap,
			   struct ls_web_reply *rep);

/* --- assets.c ------------------------------------------------------------ */

/* The built-in file at path ("/", "/app.js"...), or NULL. */
struct ls_web_asset {
	const char *path;
	const char *type;
	const unsigned char *data;
	const unsigned long long *len;	/* set by the assembler */
};
const struct ls_web_asset *ls_web_asset_find(const char *path);

#endif
