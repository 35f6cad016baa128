/*
 * server.c - the HTTP side of `leakscope serve`: listening socket, access
 * token, request limits, dispatch to the page's assets and to the API.
 *
 * libmicrohttpd parses HTTP; it runs one thread per connection (a slow
 * agent holds only the connection that asked it), at most
 * MAX_CONNECTIONS at once, each closed after CONNECTION_TIMEOUT_S idle
 * seconds, each with CONNECTION_MEMORY bytes for its request line and
 * headers (a longer one gets 414 or 431 from the library).
 */
#include <arpa/inet.h>
#include <errno.h>
#include <microhttpd.h>
#include <netdb.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <linux/inet_diag.h>
#include <linux/netlink.h>
#include <linux/sock_diag.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>
#include "../lib/client.h"
#include "../lib/json.h"
#include "../lib/util.h"
#include "internal.h"

#define MAX_CONNECTIONS 128
#define CONNECTION_TIMEOUT_S 10
/* Connections one local user other than the server's own may hold at
 * once (peers whose user /proc does not tell, remote ones, share one
 * such budget): idle or trickling connections of one user cannot take
 * the slots the server's user needs. */
#define PEER_CONNECTIONS 16
#define CONNECTION_MEMORY (32 * 1024)
#define AGENT_TIMEOUT_MS 3000
#define API_PREFIX "/api/v1/"

/* What a connection carries between libmicrohttpd's calls. */
struct conn_state {
	size_t body;		/* request body bytes seen */
};

/* A body up to this size is read (and dropped) so that the client gets
 * its 413; a bigger one is abuse: the connection is closed. */
#define BODY_DRAIN_MAX (1 << 20)

/* ------------------------------------------------------------ replies */

int ls_web_error(struct ls_web_reply *rep, int status, const char *fmt, ...)
{
	struct ls_web_buf b;
	struct ls_json j;
	char msg[1024];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	if (!rep->persistent)
		free(rep->body);
	memset(rep, 0, sizeof(*rep));
	rep->status = status;
	rep->type = "application/json";
	if (ls_web_buf_open(&b))
		return status;
	ls_json_init(&j, b.fp);
	ls_json_object(&j, NULL);
	ls_json_str(&j, "error", msg);
	ls_json_u64(&j, "status", (uint64_t)status);
	ls_json_end(&j);
	fputc('\n', b.fp);
	ls_json_finish(&j);
	if (!fclose(b.fp)) {
		rep->body = b.data;
		rep->len = b.len;
	} else {
		free(b.data);
	}
	return status;
}

int ls_web_buf_open(struct ls_web_buf *b)
{
	memset(b, 0, sizeof(*b));
	b->fp = open_memstream(&b->data, &b->len);
	return b->fp ? 0 : -ENOMEM;
}

int ls_web_buf_reply(struct ls_web_buf *b, struct ls_web_reply *rep,
		     const char *type)
{
	int bad = ferror(b->fp);

	if (fclose(b->fp) || bad) {
		free(b->data);
		return ls_web_error(rep, 500, "cannot build the reply");
	}
	if (!rep->persistent)
		free(rep->body);
	rep->persistent = 0;
	rep->status = 200;
	rep->type = type;
	rep->body = b->data;
	rep->len = b->len;
	return 200;
}

int ls_web_json_begin(struct ls_web_buf *b, struct ls_json *j,
		      const char *format, struct ls_web_reply *rep)
{
	if (ls_web_buf_open(b))
		return ls_web_error(rep, 500, "out of memory");
	ls_json_init(j, b->fp);
	ls_json_object(j, NULL);
	if (format) {
		ls_json_str(j, "format", format);
		ls_json_u64(j, "version", LS_WEB_API_VERSION);
	}
	return 0;
}

int ls_web_json_end(struct ls_web_buf *b, struct ls_json *j, int err,
		    int status, struct ls_web_reply *rep)
{
	ls_json_end(j);
	fputc('\n', b->fp);
	if (ls_json_finish(j) || err) {
		fclose(b->fp);
		free(b->data);
		return ls_web_error(rep, 500, "cannot build the reply%s%s",
				    err ? ": " : "", err ? strerror(-err) : "");
	}
	ls_web_buf_reply(b, rep, "application/json");
	rep->status = status;
	return status;
}

/* --------------------------------------------------------- parameters */

const char *ls_web_param(struct ls_web_req *r, const char *name)
{
	return MHD_lookup_connection_value(r->conn, MHD_GET_ARGUMENT_KIND, name);
}

struct allowed_ctx {
	const char *const *allowed;
	const char *bad;
};

static enum MHD_Result check_arg(void *cls, enum MHD_ValueKind kind,
				 const char *key, const char *value)
{
	struct allowed_ctx *c = cls;
	size_t i;

	if (!strcmp(key, "view"))
		return MHD_YES;
	for (i = 0; c->allowed && c->allowed[i]; i++)
		if (!strcmp(key, c->allowed[i]))
			return MHD_YES;
	c->bad = key;
	return MHD_NO;
}

int ls_web_params_only(struct ls_web_req *r, const char *const *allowed,
		       struct ls_web_reply *rep)
{
	struct allowed_ctx c = { allowed, NULL };

	MHD_get_connection_values(r->conn, MHD_GET_ARGUMENT_KIND, check_arg, &c);
	if (c.bad)
		return ls_web_error(rep, 400, "unknown parameter '%.64s'", c.bad);
	return 0;
}

int ls_web_param_count(struct ls_web_req *r, const char *name, uint64_t max,
		       uint64_t *out, struct ls_web_reply *rep)
{
	const char *v = ls_web_param(r, name);

	if (!v)
		return 0;
	if (ls_parse_count(v, out) || *out > max)
		return ls_web_error(rep, 400, "invalid value for '%s': expected "
				    "a number from 0 to %llu", name,
				    (unsigned long long)max);
	return 0;
}

int ls_web_parse_pid(const char *s, pid_t *pid)
{
	long v = 0;

	if (!*s || *s == '0')
		return 0;
	for (; *s; s++) {
		if (*s < '0' || *s > '9' || v > 4194304)
			return 0;
		v = v * 10 + (*s - '0');
	}
	if (v > 4194304)
		return 0;
	*pid = (pid_t)v;
	return 1;
}

/* ------------------------------------------------------------- access */

/* Constant time: the comparison does not tell how much of a guess was
 * right. */
static int token_equal(const char *a, const char *b)
{
	unsigned char d = 0;
	size_t i;

	if (!a || strlen(a) != LS_WEB_TOKEN_HEX)
		return 0;
	for (i = 0; i < LS_WEB_TOKEN_HEX; i++)
		d |= (unsigned char)(a[i] ^ b[i]);
	return d == 0;
}

static int is_read(const char *method)
{
	return !strcmp(method, "GET") || !strcmp(method, "HEAD");
}

/* The token from "Authorization: Bearer T" or "X-Leakscope-Token: T". */
static const char *header_token(struct MHD_Connection *c)
{
	const char *a = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    "Authorization");

	if (a && !strncasecmp(a, "Bearer ", 7))
		return a + 7;
	return MHD_lookup_connection_value(c, MHD_HEADER_KIND,
					   "X-Leakscope-Token");
}

/*
 * On a loopback address, Host: must name it (or localhost) with our
 * port: a page of another site whose name an attacker points at
 * 127.0.0.1 (DNS rebinding) sends its own name.
 */
static int host_ok(const struct ls_web *w, struct MHD_Connection *c)
{
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
	char local[32];

	if (!w->loopback)
		return 1;
	snprintf(local, sizeof(local), "localhost:%u", w->port);
	return h && (!strcmp(h, w->host) || !strcasecmp(h, local));
}

/*
 * A state-changing request comes from our own page or from a program:
 * Origin:, when sent, is this server's; Sec-Fetch-Site:, when sent, says
 * same-origin.
 */
static int same_origin(struct MHD_Connection *c)
{
	const char *o = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Origin");
	const char *h = MHD_lookup_connection_value(c, MHD_HEADER_KIND, "Host");
	const char *f = MHD_lookup_connection_value(c, MHD_HEADER_KIND,
						    "Sec-Fetch-Site");

	if (f && strcmp(f, "same-origin"))
		return 0;
	return !o || (h && !strncmp(o, "http://", 7) && !strcmp(o + 7, h));
}

/* 0: allowed; else the status, *why the reason. */
static int authorize(struct ls_web *w, struct MHD_Connection *c,
		     const char *method, const char **why)
{
	const char *t = header_token(c);
	const char *v = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND,
						    "view");

	*why = "wrong access token";
	if (t && !token_equal(t, w->token))
		return 403;
	if (!t && v && (!is_read(method) || !token_equal(v, w->view)))
		return 403;
	if (!t && !v) {
		*why = "an access token is required in the Authorization "
		       "header (open the URL leakscope serve printed)";
		return 401;
	}
	*why = "cross-origin request refused";
	return is_read(method) || same_origin(c) ? 0 : 403;
}

/* ----------------------------------------------------------- dispatch */

static int split_path(struct ls_web_req *r, const char *url)
{
	char *p, *save = NULL;

	if (strlen(url) >= sizeof(r->path))
		return -1;
	strcpy(r->path, url);
	for (p = strtok_r(r->path, "/", &save); p; p = strtok_r(NULL, "/", &save)) {
		if (r->nsegs == LS_WEB_MAX_SEGS)
			return -1;
		r->segs[r->nsegs++] = p;
	}
	return 0;
}

static void serve_asset(const char *method, const char *url,
			struct ls_web_reply *rep, int *is_page)
{
	const struct ls_web_asset *a = ls_web_asset_find(url);

	if (!a) {
		ls_web_error(rep, 404, "no such page");
		return;
	}
	if (strcmp(method, "GET") && strcmp(method, "HEAD")) {
		ls_web_error(rep, 405, "method not allowed");
		return;
	}
	rep->status = 200;
	rep->type = a->type;
	rep->body = (char *)a->data;
	rep->len = (size_t)*a->len;
	rep->persistent = 1;
	*is_page = !strncmp(a->type, "text/html", 9);
}

static void route(struct ls_web *w, struct MHD_Connection *c, const char *url,
		  const char *method, struct ls_web_reply *rep)
{
	struct ls_web_req *r;

	r = calloc(1, sizeof(*r));
	if (!r) {
		ls_web_error(rep, 500, "out of memory");
		return;
	}
	r->w = w;
	r->conn = c;
	r->method = method;
	if (split_path(r, url + strlen(API_PREFIX)))
		ls_web_error(rep, 404, "no such endpoint");
	else
		ls_web_api(r, rep);
	free(r);
}

static void add_headers(struct MHD_Response *resp,
			const struct ls_web_reply *rep, int is_page)
{
	MHD_add_response_header(resp, "Content-Type", rep->type ? rep->type :
				"application/json");
	MHD_add_response_header(resp, "Cache-Control", "no-store");
	MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
	MHD_add_response_header(resp, "Referrer-Policy", "no-referrer");
	MHD_add_response_header(resp, "X-Frame-Options", "SAMEORIGIN");
	/* The page runs only its own scripts; the flame graph's SVG carries
	 * its inline script and is framed by the page, so it gets none. */
	if (is_page)
		MHD_add_response_header(resp, "Content-Security-Policy",
			"default-src 'self'; script-src 'self'; "
			"style-src 'self' 'unsafe-inline'; img-src 'self' data:; "
			"frame-ancestors 'none'; base-uri 'none'; form-action 'none'");
}

/* libmicrohttpd leaves the body out of a HEAD answer by itself. */
static enum MHD_Result send_reply(struct MHD_Connection *c,
				  struct ls_web_reply *rep, int is_page)
{
	struct MHD_Response *resp;
	enum MHD_Result ret;

	resp = MHD_create_response_from_buffer(rep->len, rep->body ? rep->body :
					       (void *)"", rep->body &&
					       !rep->persistent ?
					       MHD_RESPMEM_MUST_FREE :
					       MHD_RESPMEM_PERSISTENT);
	if (!resp) {
		if (!rep->persistent)
			free(rep->body);
		return MHD_NO;
	}
	add_headers(resp, rep, is_page);
	ret = MHD_queue_response(c, (unsigned)rep->status, resp);
	MHD_destroy_response(resp);
	return ret;
}

static enum MHD_Result add_arg_len(void *cls, enum MHD_ValueKind kind,
				   const char *key, const char *value)
{
	*(size_t *)cls += strlen(key) + (value ? strlen(value) : 0) + 2;
	return MHD_YES;
}

/* The request target's length: the path and its decoded arguments. */
static size_t target_len(struct MHD_Connection *c, const char *url)
{
	size_t n = strlen(url);

	MHD_get_connection_values(c, MHD_GET_ARGUMENT_KIND, add_arg_len, &n);
	return n;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c,
				  const char *url, const char *method,
				  const char *version, const char *upload,
				  size_t *upload_size, void **con_cls)
{
	struct ls_web *w = cls;
	struct conn_state *st = *con_cls;
	struct ls_web_reply rep = { 0 };
	const char *why;
	int is_page = 0, status;

	if (!st) {		/* headers only so far */
		if (!(st = calloc(1, sizeof(*st))))
			return MHD_NO;
		*con_cls = st;
		return MHD_YES;
	}
	if (*upload_size) {	/* a body: counted and dropped */
		st->body += *upload_size;
		*upload_size = 0;
		return st->body > BODY_DRAIN_MAX ? MHD_NO : MHD_YES;
	}
	if (st->body > LS_WEB_MAX_BODY)
		ls_web_error(&rep, 413, "request body too large");
	else if (target_len(c, url) >= LS_WEB_MAX_URL)
		ls_web_error(&rep, 414, "request target too long");
	else if (!host_ok(w, c))
		ls_web_error(&rep, 421, "Host: names another server");
	else if (strncmp(url, API_PREFIX, strlen(API_PREFIX)))
		serve_asset(method, url, &rep, &is_page);	/* no secret */
	else if ((status = authorize(w, c, method, &why)))
		ls_web_error(&rep, status, "%s", why);
	else
		route(w, c, url, method, &rep);
	return send_reply(c, &rep, is_page);
}

static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls,
			 enum MHD_RequestTerminationCode toe)
{
	free(*con_cls);
	*con_cls = NULL;
}

/* ------------------------------------------------------- peer limits */

/*
 * The user owning the local TCP socket whose address is sa and whose
 * peer is ours (the listening address): one exact sock_diag lookup
 * (NETLINK_SOCK_DIAG), not a scan of /proc/net/tcp, which holds every
 * socket of the machine.  -1 when the kernel does not say (a remote
 * peer, gone).
 */
static long peer_uid(const struct sockaddr *sa, const struct sockaddr *ours)
{
	struct {
		struct nlmsghdr nh;
		struct inet_diag_req_v2 r;
	} req = {
		.nh = { .nlmsg_len = sizeof(req), .nlmsg_type = SOCK_DIAG_BY_FAMILY,
			.nlmsg_flags = NLM_F_REQUEST },
		.r = { .sdiag_family = (uint8_t)sa->sa_family,
		       .sdiag_protocol = IPPROTO_TCP, .idiag_states = ~0u,
		       .id.idiag_cookie = { INET_DIAG_NOCOOKIE,
					    INET_DIAG_NOCOOKIE } },
	};
	char buf[1024] __attribute__((aligned(8)));
	struct nlmsghdr *nh = (void *)buf;
	long uid = -1;
	ssize_t n;
	int fd;

	if (sa->sa_family == AF_INET && ours->sa_family == AF_INET) {
		const struct sockaddr_in *c = (const void *)sa, *o = (const void *)ours;

		req.r.id.idiag_sport = c->sin_port;
		req.r.id.idiag_dport = o->sin_port;
		memcpy(req.r.id.idiag_src, &c->sin_addr, 4);
		memcpy(req.r.id.idiag_dst, &o->sin_addr, 4);
	} else if (sa->sa_family == AF_INET6 && ours->sa_family == AF_INET6) {
		const struct sockaddr_in6 *c = (const void *)sa, *o = (const void *)ours;

		req.r.id.idiag_sport = c->sin6_port;
		req.r.id.idiag_dport = o->sin6_port;
		memcpy(req.r.id.idiag_src, &c->sin6_addr, 16);
		memcpy(req.r.id.idiag_dst, &o->sin6_addr, 16);
	} else
		return -1;
	fd = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (fd < 0)
		return -1;
	if (send(fd, &req, sizeof(req), 0) == (ssize_t)sizeof(req) &&
	    (n = recv(fd, buf, sizeof(buf), 0)) > 0 &&
	    NLMSG_OK(nh, (size_t)n) && nh->nlmsg_type == SOCK_DIAG_BY_FAMILY &&
	    nh->nlmsg_len >= NLMSG_LENGTH(sizeof(struct inet_diag_msg)))
		uid = (long)((struct inet_diag_msg *)NLMSG_DATA(nh))->idiag_uid;
	close(fd);
	return uid;
}

/* The count of uid's connections (caller holds peers_lock): a slot of
 * the table, made when missing; NULL when the table is full. */
static struct ls_web_peer *peer_slot(struct ls_web *w, long uid)
{
	struct ls_web_peer *free_slot = NULL;
	size_t i;

	for (i = 0; i < LS_WEB_PEERS; i++) {
		if (w->peers[i].count && w->peers[i].uid == uid)
			return &w->peers[i];
		if (!w->peers[i].count && !free_slot)
			free_slot = &w->peers[i];
	}
	if (free_slot)
		free_slot->uid = uid;
	return free_slot;
}

/* Before libmicrohttpd accepts a connection: refused when its user holds
 * PEER_CONNECTIONS already (the server's own user: no limit). */
static enum MHD_Result accept_peer(void *cls, const struct sockaddr *sa,
				   socklen_t len)
{
	struct ls_web *w = cls;
	long uid = w->loopback ? peer_uid(sa, (const struct sockaddr *)&w->addr)
			       : -1;
	struct ls_web_peer *p;
	int ok;

	if (uid == (long)getuid())
		uid = LS_WEB_PEER_OWN;
	pthread_mutex_lock(&w->peers_lock);
	if (w->accepted)	/* the last one never started: give it back */
		w->accepted->count--;
	p = peer_slot(w, uid);
	ok = p && (uid == LS_WEB_PEER_OWN || p->count < PEER_CONNECTIONS);
	if (ok)
		p->count++;	/* given back when the connection closes */
	w->accepted = ok ? p : NULL;
	pthread_mutex_unlock(&w->peers_lock);
	return ok ? MHD_YES : MHD_NO;
}

/* The connection accepted last (in the same thread, right after
 * accept_peer) takes its count along; it gives it back at its end. */
static void on_connection(void *cls, struct MHD_Connection *c,
			  void **socket_context,
			  enum MHD_ConnectionNotificationCode code)
{
	struct ls_web *w = cls;

	pthread_mutex_lock(&w->peers_lock);
	if (code == MHD_CONNECTION_NOTIFY_STARTED) {
		*socket_context = w->accepted;
		w->accepted = NULL;
	} else if (*socket_context) {
		((struct ls_web_peer *)*socket_context)->count--;
		*socket_context = NULL;
	}
	pthread_mutex_unlock(&w->peers_lock);
}

/* ------------------------------------------------------------- listen */

static int is_loopback(const struct sockaddr *sa)
{
	const struct sockaddr_in6 *s6 = (const void *)sa;
	const uint8_t *b = s6->sin6_addr.s6_addr;

	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr)
			>> 24) == 127;
	if (IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
		return 1;
	return IN6_IS_ADDR_V4MAPPED(&s6->sin6_addr) && b[12] == 127;
}

/* "ADDR:PORT" or "[V6]:PORT", numeric only (no name lookup). */
static int parse_listen(const char *s, struct addrinfo **ai, char *err,
			size_t errlen)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
				  .ai_socktype = SOCK_STREAM,
				  .ai_flags = AI_NUMERICHOST | AI_NUMERICSERV |
					      AI_PASSIVE };
	char host[256];
	const char *colon = strrchr(s, ':'), *h = s;
	size_t hl;

	if (!colon || !colon[1] || strlen(colon + 1) > 5 ||
	    strspn(colon + 1, "0123456789") != strlen(colon + 1))
		goto bad;
	hl = (size_t)(colon - s);
	if (hl >= 2 && s[0] == '[' && s[hl - 1] == ']') {
		h = s + 1;
		hl -= 2;
	}
	if (!hl || hl >= sizeof(host) || atoi(colon + 1) > 65535)
		goto bad;
	memcpy(host, h, hl);
	host[hl] = 0;
	if (getaddrinfo(host, colon + 1, &hints, ai))
		goto bad;
	return 0;
bad:
	snprintf(err, errlen, "invalid listen address '%s': expected "
		 "ADDR:PORT or [IPV6]:PORT with a numeric address", s);
	return -EINVAL;
}

int ls_web_open_listener(const char *listen_at, int allow_remote, int *fd,
			 unsigned *port, int *loopback,
			 struct sockaddr_storage *ss, char *host,
			 size_t hostcap, char *err, size_t errlen)
{
	socklen_t sl = sizeof(*ss);
	struct addrinfo *ai = NULL;
	int one = 1, r;

	r = parse_listen(listen_at ? listen_at : "127.0.0.1:0", &ai, err, errlen);
	if (r)
		return r;
	*loopback = is_loopback(ai->ai_addr);
	if (!*loopback && !allow_remote) {
		snprintf(err, errlen, "'%s' is not a loopback address: other "
			 "machines could reach the server (add --allow-remote "
			 "to mean it)", listen_at);
		r = -EPERM;
		goto out;
	}
	*fd = socket(ai->ai_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (*fd < 0 ||
	    setsockopt(*fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ||
	    bind(*fd, ai->ai_addr, ai->ai_addrlen) || listen(*fd, 64) ||
	    getsockname(*fd, (struct sockaddr *)ss, &sl)) {
		r = -errno;
		snprintf(err, errlen, "cannot listen on '%s': %s",
			 listen_at ? listen_at : "127.0.0.1:0", strerror(errno));
		if (*fd >= 0)
			close(*fd);
		*fd = -1;
		goto out;
	}
	getnameinfo((struct sockaddr *)ss, sl, host, (socklen_t)hostcap, NULL, 0,
		    NI_NUMERICHOST);
	*port = ntohs(ss->ss_family == AF_INET ?
		      ((struct sockaddr_in *)ss)->sin_port :
		      ((struct sockaddr_in6 *)ss)->sin6_port);
out:
	freeaddrinfo(ai);
	return r;
}

static int make_token(char *hex)
{
	unsigned char raw[LS_WEB_TOKEN_HEX / 2];
	size_t i;

	if (getrandom(raw, sizeof(raw), 0) != (ssize_t)sizeof(raw))
		return -EIO;
	for (i = 0; i < sizeof(raw); i++)
		sprintf(hex + 2 * i, "%02x", raw[i]);
	return 0;
}

static int start_mhd(struct ls_web *w, int v6, char *err, size_t errlen)
{
	unsigned flags = MHD_USE_THREAD_PER_CONNECTION |
			 MHD_USE_INTERNAL_POLLING_THREAD | (v6 ? MHD_USE_IPv6 : 0);

	w->mhd = MHD_start_daemon(flags, 0, accept_peer, w, on_request, w,
		MHD_OPTION_LISTEN_SOCKET, w->listen_fd,
		MHD_OPTION_NOTIFY_CONNECTION, on_connection, w,
		MHD_OPTION_CONNECTION_LIMIT, (unsigned)MAX_CONNECTIONS,
		MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)CONNECTION_TIMEOUT_S,
		MHD_OPTION_CONNECTION_MEMORY_LIMIT, (size_t)CONNECTION_MEMORY,
		MHD_OPTION_NOTIFY_COMPLETED, on_completed, w,
		MHD_OPTION_END);
	if (!w->mhd) {
		snprintf(err, errlen, "cannot start the HTTP server");
		return -EIO;
	}
	return 0;
}

static int init_store(struct ls_web *w, const char *dir, char *err,
		      size_t errlen)
{
	int r;

	w->snapdir = dir ? strdup(dir) : ls_web_store_default_dir();
	if (!w->snapdir) {
		snprintf(err, errlen, "no snapshot dir: set HOME or give "
			 "--snapshot-dir");
		return -EINVAL;
	}
	if ((r = ls_web_store_mkdir(w->snapdir)))
		snprintf(err, errlen, "cannot create '%s': %s", w->snapdir,
			 strerror(-r));
	return r;
}

int ls_web_start(const struct ls_web_opts *o, struct ls_web **out, char *err,
		 size_t errlen)
{
	struct ls_web *w = calloc(1, sizeof(*w));
	char host[INET6_ADDRSTRLEN + 2] = "";
	int r;

	*out = NULL;
	*err = 0;
	if (!w) {
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	w->listen_fd = -1;
	pthread_mutex_init(&w->store_lock, NULL);
	pthread_mutex_init(&w->peers_lock, NULL);
	if ((r = ls_web_agents_init(&w->agents)) ||
	    (r = init_store(w, o->snapshot_dir, err, errlen)) ||
	    (r = make_token(w->token)) || (r = make_token(w->view)) ||
	    (r = ls_web_open_listener(o->listen, o->allow_remote,
				      &w->listen_fd, &w->port, &w->loopback,
				      &w->addr, host, sizeof(host), err,
				      errlen)))
		goto fail;
	snprintf(w->host, sizeof(w->host), strchr(host, ':') ? "[%s]:%u" :
		 "%s:%u", host, w->port);
	snprintf(w->url, sizeof(w->url), "http://%s/#token=%s", w->host,
		 w->token);
	w->agent_timeout_ms = o->agent_timeout_ms ? o->agent_timeout_ms :
			      AGENT_TIMEOUT_MS;
	ls_client_set_timeout(w->agent_timeout_ms);
	ls_client_set_reply_max(LS_WEB_REPLY_MAX);
	/* The symbolizer unsets it; done here, before any thread reads the
	 * environment. */
	unsetenv("DEBUGINFOD_URLS");
	if ((r = start_mhd(w, strchr(host, ':') != NULL, err, errlen)))
		goto fail;
	w->listen_fd = -1;	/* libmicrohttpd owns and closes it now */
	*out = w;
	return 0;
fail:
	if (r == -EIO && !*err)
		snprintf(err, errlen, "no random bytes for the access token");
	if (r == -ENOMEM && !*err)
		snprintf(err, errlen, "out of memory");
	ls_web_stop(w);
	return r;
}

const char *ls_web_url(const struct ls_web *w)
{
	return w->url;
}

const char *ls_web_snapshot_dir(const struct ls_web *w)
{
	return w->snapdir;
}

void ls_web_stop(struct ls_web *w)
{
	if (!w)
		return;
	if (w->mhd)
		MHD_stop_daemon(w->mhd);
	if (w->listen_fd >= 0)
		close(w->listen_fd);
	/* A listing's workers left behind end within the client's whole-
	 * reply deadline (lib/client.h). */
	ls_web_listing_wait(&w->agents, w->agent_timeout_ms * 4 + 1000);
	ls_web_agents_release(&w->agents);
	free(w->snapdir);
	free(w);
}
