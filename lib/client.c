/*
 * client.c - control socket client.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>
#include "../common/contract.h"
#include "../common/runtime.h"
#include "client.h"
#include "container.h"
#include "procinfo.h"
#include "util.h"
#include "ptrace.h"

#define REPLY_TIMEOUT_MS 30000

static _Atomic unsigned timeout_ms = REPLY_TIMEOUT_MS;
static _Atomic uint64_t reply_max = LS_CLIENT_REPLY_MAX;

void ls_client_set_timeout(unsigned ms)
{
	timeout_ms = ms ? ms : REPLY_TIMEOUT_MS;
}

void ls_client_set_reply_max(uint64_t bytes)
{
	reply_max = bytes ? bytes : LS_CLIENT_REPLY_MAX;
}

/*
 * The whole of one request's reply must come within this: each read also
 * has the per-call timeout, but an agent that trickles a byte at a time
 * would otherwise hold the client for ever.  Four per-call timeouts leave
 * room for the snapshot of a very large process.
 */
static uint64_t reply_deadline(void)
{
	return ls_mono_ns() + (uint64_t)timeout_ms * 4 * 1000000;
}

/* recv() within deadline: its result, or -1 with errno ETIMEDOUT. */
static ssize_t recv_by(int fd, void *buf, size_t len, int flags,
		       uint64_t deadline)
{
	int r = ls_wait_readable(fd, deadline);

	if (r) {
		errno = -r;
		return -1;
	}
	return recv(fd, buf, len, flags);
}

int ls_client_socket_path(pid_t pid, char *buf, size_t cap)
{
	return ls_proc_runtime_file(pid, LS_SUFFIX_SOCKET, buf, cap);
}

/* A pid that is gone may have left its post-mortem file: say so. */
static void no_process(pid_t pid, char *err, size_t errlen)
{
	char pm[4096];
	uid_t uid;
	int fd = ls_proc_runtime_open(pid, LS_SUFFIX_PM, &uid, pm, sizeof(pm));

	if (fd >= 0) {
		close(fd);
		snprintf(err, errlen, "no process with pid %d; it left a "
			 "post-mortem file: use 'leakscope report --postmortem "
			 "%d'", (int)pid, (int)pid);
	} else
		snprintf(err, errlen, "no process with pid %d", (int)pid);
}

/* Why there is no socket to connect to (r: -ENOENT, -EACCES, ...). */
static int no_socket(pid_t pid, int r, const char *path, char *err,
		     size_t errlen)
{
	uid_t owner;

	if ((r == -ENOENT || r == -EACCES) && !ls_proc_uid(pid, &owner) &&
	    owner != getuid() && getuid() != 0) {
		snprintf(err, errlen, "pid %d belongs to another user "
			 "(uid %u): only its owner or root can ask its "
			 "agent", (int)pid, (unsigned)owner);
		r = -EACCES;
	} else if (r == -EACCES) {
		snprintf(err, errlen, "pid %d: not allowed to look into its "
			 "namespaces and files%s", (int)pid,
			 ls_container_userns_root() ? " (we are root of a user "
			 "namespace, not the host's root)" : "");
	} else if (r == -ENOENT && ls_proc_has_agent(pid) &&
		   !ls_proc_preloaded(pid))
		snprintf(err, errlen, "pid %d is not tracked: the agent "
			 "an earlier 'leakscope attach' loaded is detached "
			 "('leakscope attach %d' starts again)", (int)pid,
			 (int)pid);
	else if (r == -ENOENT && ls_proc_has_agent(pid))
		snprintf(err, errlen, "pid %d has the leakscope agent "
			 "but no control socket '%s' (it said why on "
			 "its stderr; 'leakscope stats' cannot ask it)",
			 (int)pid, path);
	else if (r == -ENOENT)
		snprintf(err, errlen, "pid %d has no leakscope agent "
			 "(no socket '%s')", (int)pid, path);
	else if (r == -ECONNREFUSED)
		snprintf(err, errlen, "pid %d: stale socket '%s' (the "
			 "agent is gone)", (int)pid, path);
	else
		snprintf(err, errlen, "cannot connect to pid %d: %s",
			 (int)pid, strerror(-r));
	return r;
}

/*
 * The runtime dir of pid's agent, checked (lib/procinfo.h), and in it a
 * socket of pid's owner: the dir's fd, the socket's name in name.
 */
static int open_socket_dir(pid_t pid, uid_t *uid, char *path, size_t cap,
			   char *err, size_t errlen)
{
	const char *name;
	struct stat st;
	int dfd = ls_proc_runtime_open(pid, LS_SUFFIX_SOCKET, uid, path, cap);

	if (dfd == -EPERM) {
		snprintf(err, errlen, "pid %d: the runtime dir of '%s' is not a "
			 "directory of uid %u that only it can write: not asking "
			 "what answers there", (int)pid, path, (unsigned)*uid);
		return dfd;
	}
	if (dfd == -ENAMETOOLONG) {
		snprintf(err, errlen, "socket path too long");
		return dfd;
	}
	if (dfd < 0)
		return no_socket(pid, dfd, path, err, errlen);
	name = strrchr(path, '/') + 1;
	if (fstatat(dfd, name, &st, AT_SYMLINK_NOFOLLOW) || !S_ISSOCK(st.st_mode) ||
	    st.st_uid != *uid) {
		snprintf(err, errlen, "pid %d: '%s' is not a socket of uid %u: "
			 "not asking what answers there", (int)pid, path,
			 (unsigned)*uid);
		close(dfd);
		return -EPERM;
	}
	return dfd;
}

/*
 * Whether the peer of fd is pid's agent: the process that listens is pid
 * (SO_PEERCRED; its pid is 0 when it is not visible in our PID namespace,
 * then pid must hold the listening socket, /proc says) and runs as pid's
 * owner or as root (a daemon that made its socket before it dropped
 * privileges).
 */
/* path as pid names it: without the "/proc/PID/root" through which we
 * reach a container's files (lib/procinfo.h). */
static const char *inner_path(pid_t pid, const char *path)
{
	char prefix[32];
	int n = snprintf(prefix, sizeof(prefix), "/proc/%d/root", (int)pid);

	return !strncmp(path, prefix, (size_t)n) && path[n] == '/' ?
	       path + n : path;
}

static int peer_is(int fd, pid_t pid, uid_t uid, const char *path)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return 0;
	if (cred.uid != uid && cred.uid != 0)
		return 0;
	if (cred.pid == pid)
		return 1;
	return cred.pid == 0 && ls_proc_listens_on(pid, inner_path(pid, path));
}

static int connect_agent(pid_t pid, char *err, size_t errlen)
{
	struct sockaddr_un addr = { .sun_family = AF_UNIX };
	unsigned ms = timeout_ms;
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = ms % 1000 * 1000 };
	char path[4096];
	int fd, dfd, r;
	uid_t uid;

	if (kill(pid, 0) && errno == ESRCH) {
		no_process(pid, err, errlen);
		return -ESRCH;
	}
	/* Stopped by a signal (SIGSTOP, ^Z): its agent's thread is stopped
	 * too and would leave us waiting for the whole reply deadline. */
	if (ls_proc_state(pid, pid) == 'T') {
		snprintf(err, errlen, "pid %d is stopped (SIGSTOP or job control): "
			 "its agent cannot answer until it continues ('kill -CONT "
			 "%d')", (int)pid, (int)pid);
		return -EAGAIN;
	}
	dfd = open_socket_dir(pid, &uid, path, sizeof(path), err, errlen);
	if (dfd < 0)
		return dfd;
	/* Through the checked dir's fd: nothing on the way is looked up
	 * again, and no path is too long for sun_path. */
	snprintf(addr.sun_path, sizeof(addr.sun_path), "/proc/self/fd/%d/%s",
		 dfd, strrchr(path, '/') + 1);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) {
		r = -errno;
		snprintf(err, errlen, "cannot create a socket: %s", strerror(errno));
		close(dfd);
		return r;
	}
	/* The send timeout also bounds connect(): an agent whose listen
	 * backlog is full makes a Unix stream connect wait. */
	setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv));
	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	r = connect(fd, (struct sockaddr *)&addr, sizeof(addr)) ? -errno : 0;
	close(dfd);
	if (r) {
		close(fd);
		return no_socket(pid, r, path, err, errlen);
	}
	if (!peer_is(fd, pid, uid, path)) {
		snprintf(err, errlen, "pid %d: what answers on '%s' is not pid "
			 "%d's agent: not asking it", (int)pid, path, (int)pid);
		close(fd);
		return -EPERM;
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

struct tid_pair {
	pid_t inner, ours;
};

static int by_inner(const void *a, const void *b)
{
	const struct tid_pair *x = a, *y = b;

	return (x->inner > y->inner) - (x->inner < y->inner);
}

/* The blocks' thread ids, as pid sees them, made ours where the thread
 * still runs (an exited thread's stays as it was). */
static void blocks_tids_ours(pid_t pid, struct ls_snapshot *snap)
{
	struct tid_pair *map = NULL, key, *hit;
	size_t n = 0, cap = 0, i;
	char path[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	while (d && (de = readdir(d))) {
		pid_t ours = (pid_t)atoi(de->d_name);

		if (ours <= 0 || LS_GROW(map, n + 1, cap))
			continue;
		map[n].ours = ours;
		map[n].inner = ls_container_tid(pid, ours, 1);
		n++;
	}
	if (d)
		closedir(d);
	if (n)
		qsort(map, n, sizeof(*map), by_inner);
	for (i = 0; n && i < snap->nblocks; i++) {
		key.inner = (pid_t)snap->blocks[i].tid;
		hit = bsearch(&key, map, n, sizeof(*map), by_inner);
		if (hit)
			snap->blocks[i].tid = (uint32_t)hit->ours;
	}
	free(map);
}

/*
 * A snapshot of pid in a container names the pid it sees itself: say
 * ours (and its blocks' thread ids), and where it runs (its files for
 * the symbolizer, its name for the reports).
 */
static void note_container(pid_t pid, struct ls_snapshot *snap)
{
	struct ls_container c;

	if (ls_container_of(pid, &c) || !ls_container_is(&c) ||
	    snap->hdr.pid != (uint32_t)c.nspid)
		return;
	ls_container_describe(&c);
	snap->container = c;
	snap->has_container = 1;
	snap->hdr.pid = (uint32_t)pid;
	if (c.other_pid_ns && snap->nblocks)
		blocks_tids_ours(pid, snap);
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
	r = ls_snapshot_read_fd_capped(fd, reply_deadline(), reply_max, snap,
				       err, errlen);
	close(fd);
	if (!r)
		note_container(pid, snap);
	return r;
}

int ls_client_request(pid_t pid, const char *req, char *reply, size_t cap,
		      char *err, size_t errlen)
{
	char line[LS_CONTROL_MAX_REQUEST];
	uint64_t deadline;
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
	deadline = reply_deadline();
	while (len < cap - 1 &&
	       (n = recv_by(fd, reply + len, cap - 1 - len, 0, deadline)) != 0) {
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
	uint64_t deadline, total = 0;
	ssize_t n;
	int fd, r = 0;

	fd = ask(pid, blocks ? LS_VERB_SNAPSHOT_BLOCKS "\n" : LS_VERB_SNAPSHOT "\n",
		 err, errlen);
	if (fd < 0)
		return fd;
	deadline = reply_deadline();
	while ((n = recv_by(fd, buf, sizeof(buf), 0, deadline)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || write(out_fd, buf, (size_t)n) != n) {
			r = -errno;
			snprintf(err, errlen, "pid %d: transfer failed: %s",
				 (int)pid, strerror(errno));
			break;
		}
		total += (uint64_t)n;
		if (total > reply_max) {
			r = -EFBIG;
			snprintf(err, errlen, "pid %d: snapshot larger than the "
				 "%llu MiB accepted", (int)pid,
				 (unsigned long long)(reply_max >> 20));
			break;
		}
	}
	close(fd);
	return r;
}

/* One reply line, byte by byte: what follows it (a snapshot) stays in the
 * socket for the snapshot reader.  0, or -EPROTO at end of input. */
static int read_line(int fd, char *buf, size_t cap)
{
	size_t len = 0;
	ssize_t n;
	char c;

	while (len < cap - 1) {
		n = recv(fd, &c, 1, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -EPROTO;
		if (c == '\n') {
			buf[len] = 0;
			return 0;
		}
		buf[len++] = c;
	}
	return -EPROTO;
}

/* The stopped threads' registers, as the agent reads them. */
static int send_threads(int fd, pid_t pid, int inner,
			const struct ls_world *w)
{
	struct lsnap_check_hdr h = { .magic = LSNAP_CHECK_MAGIC,
				     .nthreads = (uint32_t)w->nthreads };
	struct lsnap_check_thread *t = calloc(w->nthreads + 1, sizeof(*t));
	size_t i, len = w->nthreads * sizeof(*t);
	int ret = 0;

	if (!t)
		return -ENOMEM;
	for (i = 0; i < w->nthreads; i++) {
		size_t nregs = sizeof(w->threads[i].regs) / sizeof(uint64_t);

		if (nregs > LSNAP_CHECK_NREGS)
			nregs = LSNAP_CHECK_NREGS;
		/* The agent knows its threads by the tids it sees. */
		t[i].tid = (uint32_t)(inner ? ls_container_tid(pid,
				w->threads[i].tid, 1) : w->threads[i].tid);
		t[i].nregs = (uint32_t)nregs;
		t[i].sp = w->threads[i].regs.rsp;
		memcpy(t[i].regs, &w->threads[i].regs, nregs * sizeof(uint64_t));
	}
	if (send(fd, &h, sizeof(h), MSG_NOSIGNAL) != (ssize_t)sizeof(h) ||
	    send(fd, t, len, MSG_NOSIGNAL) != (ssize_t)len)
		ret = -errno ? -errno : -EIO;
	free(t);
	return ret;
}

/* The agent's "ERR reason" or an unexpected line, as one line in err. */
static int bad_reply(pid_t pid, const char *line, char *err, size_t errlen)
{
	if (!strncmp(line, LS_REPLY_ERR, strlen(LS_REPLY_ERR))) {
		snprintf(err, errlen, "pid %d refused: %s", (int)pid,
			 line + strlen(LS_REPLY_ERR));
		return -EPROTO;
	}
	snprintf(err, errlen, "pid %d: unexpected answer '%.80s'", (int)pid,
		 line);
	return -EPROTO;
}

/* The one reason a check gives when its target went away under it. */
static int exited_during_check(pid_t pid, char *err, size_t errlen)
{
	snprintf(err, errlen, "pid %d exited during the check", (int)pid);
	return -ESRCH;
}

/* After the threads are stopped: registers out, "CLONED" (the image is
 * taken) or "MARKED" (the concurrent mark is finished) back. */
static int clone_image(int fd, pid_t pid, int inner, struct ls_world *w,
		       char *err, size_t errlen)
{
	char line[256];
	int ret = send_threads(fd, pid, inner, w);

	if (ret) {
		snprintf(err, errlen, "pid %d: cannot send the registers: %s",
			 (int)pid, strerror(-ret));
		return ret;
	}
	ret = read_line(fd, line, sizeof(line));
	if (ret)
		return exited_during_check(pid, err, errlen);
	if (strncmp(line, LS_REPLY_CLONED " ", strlen(LS_REPLY_CLONED) + 1) &&
	    strcmp(line, LS_REPLY_MARKED))
		return bad_reply(pid, line, err, errlen);
	return 0;
}

/*
 * Before reading the check's snapshot: what came instead of one.  An
 * empty stream means the process (or the fork method's child) ended
 * before sending anything, often because the program was exiting; an
 * ERR line is the agent's own reason.  0 when a snapshot seems to start
 * (the reader reports anything else, timeouts included).
 */
static int no_snapshot(int fd, pid_t pid, char *err, size_t errlen)
{
	char line[256];
	ssize_t n;
	char c;

	if (ls_wait_readable(fd, reply_deadline()))
		return 0;
	n = recv(fd, &c, 1, MSG_PEEK);
	if (n == 0 && ls_proc_gone(pid))
		return exited_during_check(pid, err, errlen);
	if (n == 0) {
		snprintf(err, errlen, "pid %d: the check ended without a snapshot "
			 "(the process is exiting, or its agent closed the "
			 "connection)", (int)pid);
		return -ESRCH;
	}
	if (n == 1 && c == LS_REPLY_ERR[0] && !read_line(fd, line, sizeof(line)))
		return bad_reply(pid, line, err, errlen);
	return 0;
}

int ls_client_check(pid_t pid, int blocks, enum ls_check_method method,
		    uint64_t budget_us, struct ls_snapshot *snap, char *err,
		    size_t errlen)
{
	static const char *const verbs[2][2] = {
		{ LS_VERB_CHECK, LS_VERB_CHECK_BLOCKS },
		{ LS_VERB_CHECK_FORK, LS_VERB_CHECK_FORK_BLOCKS },
	};
	struct ls_world_opts wo = { 0 };
	struct ls_world w = { 0 };
	char line[256], why[512];
	uint64_t t_stopped, t_answer;
	struct ls_container c;
	long tid;
	int fd, ret, inner;

	memset(snap, 0, sizeof(*snap));
	fd = connect_agent(pid, err, errlen);
	if (fd < 0)
		return fd;
	/* The default budget goes unsaid: an agent of before it knew it. */
	if (method == LS_CHECK_FORK || budget_us == LS_CHECK_BUDGET_US)
		snprintf(line, sizeof(line), "%s\n",
			 verbs[method == LS_CHECK_FORK][!!blocks]);
	else
		snprintf(line, sizeof(line), "%s%s%llu\n", verbs[0][!!blocks],
			 LS_CHECK_BUDGET_ARG, (unsigned long long)budget_us);
	/* READY comes after the concurrent mark: seconds for a large heap,
	 * within the reply deadline. */
	if (send(fd, line, strlen(line), MSG_NOSIGNAL) < 0 ||
	    ls_wait_readable(fd, reply_deadline()) ||
	    read_line(fd, line, sizeof(line))) {
		ret = exited_during_check(pid, err, errlen);
		goto out;
	}
	if (strncmp(line, LS_REPLY_READY " ", strlen(LS_REPLY_READY) + 1) ||
	    (tid = strtol(line + strlen(LS_REPLY_READY) + 1, NULL, 10)) <= 0) {
		ret = bad_reply(pid, line, err, errlen);
		goto out;
	}
	/* Its control thread's tid as it sees it (in a container) */
	inner = !ls_container_of(pid, &c) && c.other_pid_ns;
	wo.skip_tid = inner ? ls_container_tid(pid, (pid_t)tid, 0) : (pid_t)tid;
	if (!wo.skip_tid) {
		ret = bad_reply(pid, line, err, errlen);
		goto out;
	}
	ret = ls_world_stop(pid, &wo, &w, why, sizeof(why));
	if (ret) {
		if (ret == -ESRCH)
			exited_during_check(pid, err, errlen);
		else
			snprintf(err, errlen, "%s", why);
		goto out;
	}
	t_stopped = ls_mono_ns();
	ret = clone_image(fd, pid, inner, &w, err, errlen);
	t_answer = ls_mono_ns();
	ls_world_resume(&w);
	if (ret)
		goto out;
	ret = no_snapshot(fd, pid, err, errlen);
	if (ret)
		goto out;
	ret = ls_snapshot_read_fd_capped(fd, reply_deadline(), reply_max, snap,
					 why, sizeof(why));
	if (ret) {
		snprintf(err, errlen, "pid %d: the check failed: %s", (int)pid,
			 why);
		goto out;
	}
	note_container(pid, snap);
	snap->reach_pause_ns = ls_world_pause_ns(&w);
	snap->reach_stop_ns = t_stopped - w.stopped_ns;
	snap->reach_agent_ns = t_answer - t_stopped;
out:
	ls_world_release(&w);
	close(fd);
	return ret;
}
