/*
 * t-web-httpc.c - the pusher's HTTP client (web/httpc.c): URLs it takes and
 * refuses, percent-encoding, and one POST against a loopback peer of the
 * test's own that records the request and answers as each case wants
 * (a status, garbage, silence until the timeout, a refused port).
 */
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>
#include "../../web/httpc.h"
#include "tap.h"

static void urls(void)
{
	struct ls_url u;
	char err[256];

	ok(!ls_url_parse("http://pyro.example:4040", &u, err, sizeof(err)) &&
	   !strcmp(u.host, "pyro.example") && !strcmp(u.port, "4040") &&
	   !strcmp(u.prefix, ""), "host and port");
	ok(!ls_url_parse("http://10.0.0.1/parca/", &u, err, sizeof(err)) &&
	   !strcmp(u.port, "80") && !strcmp(u.prefix, "/parca"),
	   "default port, prefix without its trailing slash");
	ok(!ls_url_parse("http://[::1]:7070/x", &u, err, sizeof(err)) &&
	   !strcmp(u.host, "::1") && !strcmp(u.port, "7070") &&
	   !strcmp(u.prefix, "/x"), "IPv6 in brackets");
	ok(ls_url_parse("https://h", &u, err, sizeof(err)) == -EINVAL &&
	   strstr(err, "only http://"), "https refused: %s", err);
	static const char *const bad[] = {
		"http://", "http://h:", "http://h:0", "http://h:65536",
		"http://h:80x", "http://u@h", "http://h/?q=1", "http://h#f",
		"http://[::1", "ftp://h", "h:80",
	};
	for (size_t i = 0; i < sizeof(bad) / sizeof(*bad); i++)
		ok(ls_url_parse(bad[i], &u, err, sizeof(err)) == -EINVAL,
		   "'%s' refused", bad[i]);
}

static void encoding(void)
{
	char out[64];

	ok(!ls_url_encode("svc{host=a b,pid=7}", out, sizeof(out)) &&
	   !strcmp(out, "svc%7Bhost%3Da%20b%2Cpid%3D7%7D"), "encoded: %s", out);
	ok(!ls_url_encode("A-z_0.9~", out, sizeof(out)) &&
	   !strcmp(out, "A-z_0.9~"), "unreserved bytes kept");
	ok(ls_url_encode("{{{{", out, 12) == -ENOSPC, "too long: -ENOSPC");
}

/* ------------------------------------------------------------- a peer */

struct peer {
	int fd;			/* listening */
	const char *answer;	/* NULL: read, then say nothing */
	char got[4096];		/* the request as received */
	size_t len;
};

static void *serve_one(void *arg)
{
	struct peer *p = arg;
	int c = accept(p->fd, NULL, NULL);
	ssize_t n;

	while (c >= 0 && p->len < sizeof(p->got) - 1 &&
	       (n = read(c, p->got + p->len, sizeof(p->got) - 1 - p->len)) > 0) {
		p->len += (size_t)n;
		p->got[p->len] = 0;
		if (strstr(p->got, "\r\n\r\n") && strstr(p->got, "BODY"))
			break;
	}
	if (c >= 0 && p->answer && write(c, p->answer, strlen(p->answer)) < 0)
		p->len = 0;
	if (c >= 0 && !p->answer)
		sleep(2);	/* silent past the client's timeout */
	if (c >= 0)
		close(c);
	return NULL;
}

static int post(const char *answer, struct peer *p, unsigned timeout_ms,
		char *err, size_t errlen)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	struct ls_http_req req = { .target = "/ingest?name=x", .type = "a/b",
				   .auth = "Bearer t", .body = "BODY",
				   .len = 4, .timeout_ms = timeout_ms };
	struct ls_url u;
	pthread_t t;
	int r;

	memset(p, 0, sizeof(*p));
	p->answer = answer;
	p->fd = socket(AF_INET, SOCK_STREAM, 0);
	if (p->fd < 0 || bind(p->fd, (struct sockaddr *)&a, sizeof(a)) ||
	    listen(p->fd, 1) || getsockname(p->fd, (struct sockaddr *)&a, &al))
		return -999;
	memset(&u, 0, sizeof(u));
	strcpy(u.host, "127.0.0.1");
	snprintf(u.port, sizeof(u.port), "%u", ntohs(a.sin_port));
	pthread_create(&t, NULL, serve_one, p);
	r = ls_http_post(&u, &req, err, errlen);
	pthread_join(t, NULL);
	close(p->fd);
	return r;
}

static void exchanges(void)
{
	struct peer p;
	char err[256] = "";
	int r;

	r = post("HTTP/1.1 204 No Content\r\nContent-Length: 0\r\n\r\n", &p,
		 2000, err, sizeof(err));
	ok(r == 204, "the status of the answer (%d)", r);
	ok(strstr(p.got, "POST /ingest?name=x HTTP/1.1\r\n") == p.got &&
	   strstr(p.got, "\r\nHost: 127.0.0.1:") &&
	   strstr(p.got, "\r\nContent-Type: a/b\r\n") &&
	   strstr(p.got, "\r\nAuthorization: Bearer t\r\n") &&
	   strstr(p.got, "\r\nContent-Length: 4\r\n") &&
	   strstr(p.got, "\r\nConnection: close\r\n\r\nBODY"),
	   "the request line, headers and body");
	r = post("HTTP/1.0 503 Busy\r\n\r\n", &p, 2000, err, sizeof(err));
	ok(r == 503, "503 (%d)", r);
	r = post("SSH-2.0-OpenSSH\r\n\r\n", &p, 2000, err, sizeof(err));
	ok(r == -EPROTO && !strcmp(err, "malformed answer"),
	   "garbage: -EPROTO (%d, %s)", r, err);
	r = post(NULL, &p, 300, err, sizeof(err));
	ok(r == -ETIMEDOUT && !strcmp(err, "no answer in time"),
	   "silence: -ETIMEDOUT after the timeout (%d, %s)", r, err);
}

static void refused(void)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t al = sizeof(a);
	struct ls_http_req req = { .target = "/", .type = "a/b", .body = "",
				   .timeout_ms = 1000 };
	struct ls_url u;
	char err[256];
	int fd = socket(AF_INET, SOCK_STREAM, 0), r;

	/* a port bound but not listening: nobody answers there */
	bind(fd, (struct sockaddr *)&a, sizeof(a));
	getsockname(fd, (struct sockaddr *)&a, &al);
	memset(&u, 0, sizeof(u));
	strcpy(u.host, "127.0.0.1");
	snprintf(u.port, sizeof(u.port), "%u", ntohs(a.sin_port));
	r = ls_http_post(&u, &req, err, sizeof(err));
	ok(r == -ECONNREFUSED && strstr(err, "cannot connect to 127.0.0.1:"),
	   "a closed port: -ECONNREFUSED (%d, %s)", r, err);
	close(fd);
}

int main(void)
{
	urls();
	encoding();
	exchanges();
	refused();
	return tap_done();
}
