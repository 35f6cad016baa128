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
#include "../common/contract.h"
#include "../common/runtime.h"
#include "client.h"
#include "procinfo.h"

#define REPLY_TIMEOUT_S 30

int ls_client_socket_path(pid_t pid, char *buf, size_t cap)
{
	return ls_proc_runtime_file(pid, LS_SUFFIX_SOCKET, buf, cap);
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
		uid_t owner;

		r = -errno;
		if ((r == -ENOENT || r == -EACCES) && !ls_proc_uid(pid, &owner) &&
		    owner != getuid() && getuid() != 0) {
			snprintf(err, errlen, "pid %d belongs to another user "
				 "(uid %u): only its owner or root can ask its "
				 "agent", (int)pid, (unsigned)owner);
			r = -EACCES;
		} else if (r == -ENOENT)
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

/* Connect and send req; then peek: an "ERR" line is turned into an
 * error.  Returns the connected fd or a negative errno. */
static int ask(pid_t pid, const char *req, char *err, size_t errlen)
{
	char peek[256];
	ssize_t n;
	int fd, r;

	fd = connect_agent(pid, err, errlen);
	if (fd < 0)
		return fd;
	if (send(fd, req, strlen(req), MSG_NOSIGNAL) < 0) {
		r = -errno;
		snprintf(err, errlen, "pid %d: cannot send request: %s",
			 (int)pid, strerror(errno));
		close(fd);
		return r;
	}
	do
		n = recv(fd, peek, sizeof(peek) - 1, MSG_PEEK);
	while (n < 0 && errno == EINTR);
	if (n < 0) {
		r = -errno;
		snprintf(err, errlen, "pid %d: no answer: %s", (int)pid,
			 strerror(errno));
		close(fd);
		return r;
	}
	if (n >= (ssize_t)strlen(LS_REPLY_ERR) &&
	    !memcmp(peek, LS_REPLY_ERR, strlen(LS_REPLY_ERR))) {
		peek[n] = 0;
		peek[strcspn(peek, "\n")] = 0;
		snprintf(err, errlen, "pid %d refused: %s", (int)pid,
			 peek + strlen(LS_REPLY_ERR));
		close(fd);
		return -EPROTO;
	}
	return fd;
}

int ls_client_snapshot(pid_t pid, int blocks, struct ls_snapshot *snap,
		       char *err, size_t errlen)
{
	int fd, r;

	memset(snap, 0, sizeof(*snap));
	fd = ask(pid, blocks ? LS_VERB_SNAPSHOT_BLOCKS "\n" : LS_VERB_SNAPSHOT "\n",
		 err, errlen);
	if (fd < 0)
		return fd;
	r = ls_snapshot_read_fd(fd, snap, err, errlen);
	close(fd);
	return r;
}

int ls_client_request(pid_t pid, const char *req, char *reply, size_t cap,
		      char *err, size_t errlen)
{
	char line[LS_CONTROL_MAX_REQUEST];
	size_t len = 0;
	ssize_t n;
	int fd;

	if (snprintf(line, sizeof(line), "%s\n", req) >= (int)sizeof(line)) {
		snprintf(err, errlen, "request too long");
		return -EMSGSIZE;
	}
	fd = ask(pid, line, err, errlen);
	if (fd < 0)
		return fd;
	while (len < cap - 1 && (n = recv(fd, reply + len, cap - 1 - len, 0)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			break;
		len += (size_t)n;
	}
	close(fd);
	reply[len] = 0;
	reply[strcspn(reply, "\n")] = 0;
	return 0;
}

int ls_client_fetch(pid_t pid, int blocks, int out_fd, char *err, size_t errlen)
{
	char buf[65536];
	ssize_t n;
	int fd, r = 0;

	fd = ask(pid, blocks ? LS_VERB_SNAPSHOT_BLOCKS "\n" : LS_VERB_SNAPSHOT "\n",
		 err, errlen);
	if (fd < 0)
		return fd;
	while ((n = recv(fd, buf, sizeof(buf), 0)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(out_fd, buf, (size_t)n) != n) {
			r = -errno;
			snprintf(err, errlen, "pid %d: transfer failed: %s",
				 (int)pid, strerror(errno));
			break;
		}
	}
	close(fd);
	return r;
}
