/*
 * internal.h - the types and limits the web server's files share; each
 * file's functions are declared in its own header (server.h: the
 * listening socket; api.h: the JSON endpoints; agents.h: discovery and
 * the snapshot cache; listing.h: many agents at once; store.h: saved
 * snapshots and post-mortem files; assets.h: the page; reply.h: replies
 * and query parameters; views.h: the answers).  Not a public interface.
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

#endif
