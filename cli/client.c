/*
 * client.c - control socket client.
 */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include "client.h"

#define REPLY_TIMEOUT_S 30

int ls_client_socket_path(pid_t pid, char *buf, size_t cap)
{
	const char *rt = getenv("LEAKSCOPE_RUNTIME_DIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	int n;

	if (rt && *rt)
		n = snprintf(buf, cap, "%s/%d.sock", rt, (int)pid);
	else if (xdg && *xdg)
		n = snprintf(buf, cap, "%s/leakscope/%d.sock", xdg, (int)pid);
	else
		n = snprintf(buf, cap, "/tmp/leakscope-%u/%d.sock",
			     (unsigned)getuid(), (int)pid);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

static int connect_agent(pid_t pid, char *err, size_t errlen)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = REPLY_TIMEOUT_S };
	int fd, r;

	if (kill(pid, 0) && errno == ESRCH) {
		snprintf(err, errlen, "no process with pid %d", (int)pid);
		return -ESRCH;
	}
	if (ls_client_socket_path(pid, addr.sun_path, sizeof(addr.sun_path))) {
		snprintf(err, errlen, "socket path too long");
		return -ENAMETOOLONG;
	}
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot create a socket: %s", strerror(errno));
		return r;
	}
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	if (connect(fd, (struct sockaddr *)&addr, sizeof(addr))) {
		r = -errno;
		if (r == -ENOENT)
			snprintf(err, errlen, "pid %d has no leakscope agent "
				 "(no socket '%s')", (int)pid, addr.sun_path);
		else if (r == -ECONNREFUSED)
			snprintf(err, errlen, "pid %d: stale socket '%s' (the "
				 "agent is gone)", (int)pid, addr.sun_path);
		else
			snprintf(err, errlen, "cannot connect to pid %d: %s",
				 (int)pid, strerror(-r));
		close(fd);
		return r;
	}
	return fd;
}

int ls_client_snapshot(pid_t pid, int blocks, struct ls_snapshot *snap,
		       char *err, size_t errlen)
{
	const char *req = blocks ? "snapshot blocks\n" : "snapshot\n";
	char peek[256];
	ssize_t n;
	int fd, r;

	memset(snap, 0, sizeof(*snap));
	fd = connect_agent(pid, err, errlen);
	if (fd < 0)
		return fd;
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) < 0) {
		r = -errno;
		snprintf(err, errlen, "pid %d: cannot send request: %s",
			 (int)pid, strerror(errno));
		goto out;
	}
	do
		n = recv(fd, peek, sizeof(peek) - 1, MSG_PEEK);
	while (n < 0 && errno == EINTR);
	if (n >= 4 && !memcmp(peek, "ERR ", 4)) {
		peek[n] = 0;
		peek[strcspn(peek, "\n")] = 0;
		snprintf(err, errlen, "pid %d refused: %s", (int)pid, peek + 4);
		r = -EPROTO;
		goto out;
	}
	r = ls_snapshot_read_fd(fd, snap, err, errlen);
out:
	close(fd);
	return r;
}
