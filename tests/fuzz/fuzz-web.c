/*
 * fuzz-web.c - the web server's parsers (web/, docs/WEB-API.md): the
 * request target, its query string and the report options it carries,
 * the path's names (pids, saved snapshot names), and a saved snapshot
 * read and rendered for the page.
 *
 * The real server (ls_web_start) listens on 127.0.0.1 in the fuzzer, in a
 * pid namespace of its own (fuzz_private), with a private snapshot dir.
 * The input is a request head; "@T" in it becomes the access token.
 * After a line "@SNAP", the rest is a snapshot saved as f.lsnap in the
 * snapshot dir before the request (its END record fixed and its module
 * paths blanked, fuzz.h).  The server must answer every complete request
 * with an HTTP status line within WAIT_MS.
 */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <poll.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>
#include "../../common/contract.h"
#include "../../web/web.h"
#include "fuzz.h"

#define WAIT_MS 10000
#define SNAP_MARK "\n@SNAP\n"

static struct ls_web *web;
static unsigned port;
static char token[128];
static char saved[4200];	/* the snapshot dir's f.lsnap */

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	struct ls_web_opts o = { .agent_timeout_ms = 500 };
	char dir[4096], err[512];
	const char *url, *t;

	fuzz_private(*argv, 1);
	snprintf(dir, sizeof(dir), "%s/snapshots", getenv(LS_ENV_RUNTIME_DIR));
	snprintf(saved, sizeof(saved), "%s/f.lsnap", dir);
	o.snapshot_dir = dir;
	if (ls_web_start(&o, &web, err, sizeof(err)))
		fuzz_fail("cannot start the server: %s", err);
	url = ls_web_url(web);
	t = strstr(url, "token=");
	if (sscanf(url, "http://127.0.0.1:%u", &port) != 1 || !t ||
	    strlen(t + 6) >= sizeof(token))
		fuzz_fail("no port or token in '%s'", url);
	strcpy(token, t + 6);
	return 0;
}

static void save_snapshot(const uint8_t *data, size_t size)
{
	uint8_t *c = fuzz_fix_snapshot_blank(data, size);
	int fd = open(saved, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0 || (size && write(fd, c, size) != (ssize_t)size))
		fuzz_fail("cannot save '%s': %s", saved, strerror(errno));
	close(fd);
	free(c);
}

/* The head with "@T" replaced by the token and an empty line after it
 * (a head without one would only make the server wait). */
static char *request(const uint8_t *data, size_t size, size_t *len)
{
	char *r = malloc(size * (strlen(token) + 1) + 5);
	size_t i, n = 0;

	if (!r)
		fuzz_fail("out of memory");
	for (i = 0; i < size; i++) {
		if (data[i] == '@' && i + 1 < size && data[i + 1] == 'T') {
			memcpy(r + n, token, strlen(token));
			n += strlen(token);
			i++;
		} else {
			r[n++] = (char)data[i];
		}
	}
	memcpy(r + n, "\r\n\r\n", 5);	/* and a NUL, for messages */
	*len = n + 4;
	return r;
}

static long long ms_left(const struct timespec *until)
{
	struct timespec now;

	clock_gettime(CLOCK_MONOTONIC, &now);
	return (until->tv_sec - now.tv_sec) * 1000LL +
	       (until->tv_nsec - now.tv_nsec) / 1000000;
}

/* Bytes of the answer that complete it, once its head has come: the
 * head and Content-Length more (none for HEAD); 0 until then or for an
 * interim 1xx answer, SIZE_MAX without a length (up to EOF). */
static size_t answer_size(const char *buf, size_t len, int head_only)
{
	const char *end = memmem(buf, len, "\r\n\r\n", 4), *cl;
	size_t h;

	if (!end || !strncmp(buf + 8, " 1", 2))
		return 0;
	h = (size_t)(end + 4 - buf);
	cl = strcasestr(buf, "\r\nContent-Length:");
	if (head_only)
		return h;
	return cl && cl < end ? h + strtoull(cl + 17, NULL, 10) : SIZE_MAX;
}

/* Read the answer up to its end or EOF within WAIT_MS. */
static void answer(int fd, const char *req, int head_only)
{
	static char buf[1 << 16];
	struct timespec until;
	size_t len = 0, total = 0, want = 0;

	clock_gettime(CLOCK_MONOTONIC, &until);
	until.tv_sec += WAIT_MS / 1000;
	while (!want || total < want) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long long left = ms_left(&until);
		ssize_t n;
		int r = left > 0 ? poll(&p, 1, (int)left) : 0;

		/* libFuzzer's -timeout alarm interrupts calls: not an end. */
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			fuzz_fail("no answer within %d ms to '%.200s'", WAIT_MS,
				  req);
		n = recv(fd, buf + len, sizeof(buf) - 1 - len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		total += (size_t)n;
		if (!want) {
			len += (size_t)n;
			buf[len] = 0;
			want = answer_size(buf, len, head_only);
			if (!want && memmem(buf, len, "\r\n\r\n", 4)) {
				total = len = 0;	/* past a 1xx */
				continue;
			}
		}
		if (len == sizeof(buf) - 1)
			len = 0;
	}
	if (total && strncmp(buf, "HTTP/1.", 7))
		fuzz_fail("an answer that is not HTTP: '%.40s'", buf);
	if (getenv("LEAKSCOPE_FUZZ_VERBOSE"))	/* the status, to see */
		fprintf(stderr, "%.*s <- %.60s\n", total ? 12 : 4,
			total ? buf : "none", req);
}

/* The whole request, through interrupted calls: 1, or 0 when the server
 * closed first (it may refuse a request before it is whole). */
static int send_all(int fd, const char *p, size_t len)
{
	while (len) {
		ssize_t n = send(fd, p, len, MSG_NOSIGNAL);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return 0;
		p += n;
		len -= (size_t)n;
	}
	return 1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct sockaddr_in a = { .sin_family = AF_INET,
				 .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	const uint8_t *snap = memmem(data, size, SNAP_MARK, strlen(SNAP_MARK));
	size_t head = snap ? (size_t)(snap - data) : size, len;
	char *req;
	int fd;

	if (snap)
		save_snapshot(snap + strlen(SNAP_MARK),
			      size - head - strlen(SNAP_MARK));
	req = request(data, head, &len);
	a.sin_port = htons((uint16_t)port);
	fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		fuzz_fail("cannot make a socket: %s", strerror(errno));
	while (connect(fd, (struct sockaddr *)&a, sizeof(a)))
		if (errno != EINTR)
			fuzz_fail("cannot connect to the server: %s",
				  strerror(errno));
	/* The end of what it sends: a request the head leaves incomplete
	 * ends there, not at the server's idle timeout. */
	if (send_all(fd, req, len) && !shutdown(fd, SHUT_WR))
		answer(fd, req, !strncmp(req, "HEAD ", 5));
	close(fd);
	free(req);
	return 0;
}
