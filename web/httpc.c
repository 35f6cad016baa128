/*
 * httpc.c - one HTTP/1.1 POST over a socket, bounded (httpc.h).
 */
#include <errno.h>
#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "httpc.h"

#define ANSWER_MAX (64 * 1024)

int ls_url_parse(const char *s, struct ls_url *u, char *err, size_t errlen)
{
	const char *h, *he, *p, *path;
	size_t hl;

	memset(u, 0, sizeof(*u));
	if (strncmp(s, "http://", 7)) {
		snprintf(err, errlen, "invalid URL '%s': only http:// is "
			 "supported (put a TLS proxy on loopback for https)", s);
		return -EINVAL;
	}
	h = s + 7;
	path = h + strcspn(h, "/?#");
	if (*path == '?' || *path == '#' || strchr(path, '?') ||
	    strchr(path, '#') || memchr(h, '@', (size_t)(path - h)))
		goto bad;
	if (*h == '[') {
		he = memchr(h, ']', (size_t)(path - h));
		if (!he)
			goto bad;
		hl = (size_t)(he - h - 1);
		h++;
		p = he + 1;
	} else {
		he = memchr(h, ':', (size_t)(path - h));
		p = he ? he : path;
		hl = (size_t)(p - h);
	}
	if (!hl || hl >= sizeof(u->host))
		goto bad;
	memcpy(u->host, h, hl);
	if (*p == ':') {
		size_t pl = (size_t)(path - p - 1);

		if (!pl || pl >= sizeof(u->port) ||
		    strspn(p + 1, "0123456789") < pl || atoi(p + 1) < 1 ||
		    atoi(p + 1) > 65535)
			goto bad;
		memcpy(u->port, p + 1, pl);
	} else if (p != path) {
		goto bad;
	} else {
		strcpy(u->port, "80");
	}
	if (strlen(path) >= sizeof(u->prefix))
		goto bad;
	strcpy(u->prefix, path);
	while (*u->prefix && u->prefix[strlen(u->prefix) - 1] == '/')
		u->prefix[strlen(u->prefix) - 1] = 0;
	return 0;
bad:
	snprintf(err, errlen, "invalid URL '%s': expected "
		 "http://HOST[:PORT][/PATH]", s);
	return -EINVAL;
}

int ls_url_encode(const char *s, char *out, size_t cap)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t n = 0;

	for (; *s; s++) {
		unsigned char c = (unsigned char)*s;
		int plain = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
			    (c >= '0' && c <= '9') || strchr("-._~", c);

		if (n + (plain ? 1 : 3) >= cap)
			return -ENOSPC;
		if (plain) {
			out[n++] = (char)c;
		} else {
			out[n++] = '%';
			out[n++] = hex[c >> 4];
			out[n++] = hex[c & 15];
		}
	}
	out[n] = 0;
	return 0;
}

static long long now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (long long)ts.tv_sec * 1000 + ts.tv_nsec / 1000000;
}

/* Wait for fd to be ready for ev until deadline; 0 or -ETIMEDOUT. */
static int wait_fd(int fd, short ev, long long deadline)
{
	struct pollfd pfd = { .fd = fd, .events = ev };
	long long left = deadline - now_ms();
	int r;

	if (left <= 0)
		return -ETIMEDOUT;
	do
		r = poll(&pfd, 1, (int)left);
	while (r < 0 && errno == EINTR);
	return r > 0 ? 0 : r == 0 ? -ETIMEDOUT : -errno;
}

static int connect_to(const struct ls_url *u, long long deadline,
		      char *err, size_t errlen)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *ai = NULL, *a;
	int fd = -1, r = getaddrinfo(u->host, u->port, &hints, &ai), e = 0;
	socklen_t el = sizeof(e);

	if (r) {
		snprintf(err, errlen, "cannot resolve '%s': %s", u->host,
			 gai_strerror(r));
		return -EHOSTUNREACH;
	}
	for (a = ai; a; a = a->ai_next) {
		fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC |
			    SOCK_NONBLOCK, a->ai_protocol);
		if (fd < 0)
			continue;
		if (!connect(fd, a->ai_addr, a->ai_addrlen) ||
		    (errno == EINPROGRESS && !(r = wait_fd(fd, POLLOUT, deadline)) &&
		     !getsockopt(fd, SOL_SOCKET, SO_ERROR, &e, &el) && !e))
			break;
		e = r == -ETIMEDOUT ? ETIMEDOUT : e ? e : errno;
		close(fd);
		fd = -1;
	}
	freeaddrinfo(ai);
	if (fd < 0)
		snprintf(err, errlen, "cannot connect to %s:%s: %s", u->host,
			 u->port, strerror(e ? e : ECONNREFUSED));
	return fd >= 0 ? fd : -(e ? e : ECONNREFUSED);
}

static int send_all(int fd, const void *data, size_t len, long long deadline)
{
	const char *p = data;

	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			int r = wait_fd(fd, POLLOUT, deadline);

			if (r)
				return r;
			continue;
		}
		if (n < 0)
			return -errno;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* Read the answer (at most ANSWER_MAX) until the peer closes or the
 * headers are complete; the status from "HTTP/1.x NNN". */
static int read_status(int fd, long long deadline, char *err, size_t errlen)
{
	char *buf = malloc(ANSWER_MAX + 1);
	size_t got = 0;
	int r = 0, status = -EPROTO;

	if (!buf)
		return -ENOMEM;
	buf[0] = 0;
	while (got < ANSWER_MAX && !strstr(buf, "\r\n\r\n")) {
		ssize_t n = recv(fd, buf + got, ANSWER_MAX - got, 0);

		if (n < 0 && (errno == EAGAIN || errno == EINTR)) {
			if ((r = wait_fd(fd, POLLIN, deadline)))
				break;
			continue;
		}
		if (n <= 0)
			break;
		got += (size_t)n;
		buf[got] = 0;
	}
	buf[got] = 0;
	if (got >= 12 && !strncmp(buf, "HTTP/1.", 7) && buf[8] == ' ' &&
	    strspn(buf + 9, "0123456789") == 3)
		status = atoi(buf + 9);
	else if (r)
		status = r;
	if (status == -ETIMEDOUT)
		snprintf(err, errlen, "no answer in time");
	else if (status < 0)
		snprintf(err, errlen, "malformed answer");
	free(buf);
	return status;
}

int ls_http_post(const struct ls_url *u, const struct ls_http_req *req,
		 char *err, size_t errlen)
{
	long long deadline = now_ms() + (req->timeout_ms ? req->timeout_ms : 10000);
	char *head = NULL;
	int fd = connect_to(u, deadline, err, errlen), r, n;

	if (fd < 0)
		return fd;
	n = asprintf(&head, "POST %s HTTP/1.1\r\nHost: %s%s%s:%s\r\n"
		     "User-Agent: leakscope\r\nContent-Type: %s\r\n"
		     "%s%s%s%s%s%sContent-Length: %zu\r\nConnection: close\r\n\r\n",
		     req->target, strchr(u->host, ':') ? "[" : "", u->host,
		     strchr(u->host, ':') ? "]" : "", u->port, req->type,
		     req->encoding ? "Content-Encoding: " : "",
		     req->encoding ? req->encoding : "",
		     req->encoding ? "\r\n" : "",
		     req->auth ? "Authorization: " : "",
		     req->auth ? req->auth : "", req->auth ? "\r\n" : "",
		     req->len);
	if (n < 0) {
		close(fd);
		snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r = send_all(fd, head, (size_t)n, deadline);
	if (!r)
		r = send_all(fd, req->body, req->len, deadline);
	free(head);
	if (r) {
		snprintf(err, errlen, "cannot send to %s:%s: %s", u->host,
			 u->port, strerror(-r));
		close(fd);
		return r;
	}
	r = read_status(fd, deadline, err, errlen);
	close(fd);
	return r;
}
