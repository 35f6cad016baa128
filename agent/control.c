/*
 * control.c - the control thread: accept, check the peer, read one
 * bounded request line, answer, close.
 */
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/capability.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>
#include "../common/contract.h"
#include "attach.h"
#include "control.h"
#include "guard.h"
#include "pmfile.h"
#include "reach.h"
#include "real.h"
#include "request.h"
#include "snapwrite.h"
#include "state.h"
#include "sys.h"
#include "tick.h"

/* Whole-request limits: a client has REQUEST_TIMEOUT_MS for its request
 * line, as much again for each block of data it sends after it (check's
 * registers), and SEND_BUDGET_MS of our time blocked in send() for the
 * answer: a slow client never holds the control thread, and with it the
 * growth samples and the post-mortem file, longer than that. */
#define REQUEST_TIMEOUT_MS 2000
#define SEND_BUDGET_MS 5000

static int listen_fd = -1;
static pid_t control_tid;	/* the thread serving listen_fd, 0 = none */
static int detaching;		/* the detach verb was answered: end */
static int (*detach_fn)(char *why, size_t len);
static pid_t owner;		/* the pid whose socket path we hold */
static int sock_dir = -1;	/* the socket's directory, for unlinkat */
static char sock_name[32];	/* PID.sock */
static void (*reset_fn)(void);	/* the "reset" verb: agent.c's */
static int wake_fd = -1;	/* an eventfd: ends the control thread's poll */
static int pausing;		/* the thread is to end, the socket to stay */

/* mkdir -m 0700, then make sure nobody else owns or can write it. */
int ls_control_prepare_dir(const char *dir, int *made)
{
	struct stat st;
	int fresh = !mkdir(dir, 0700);

	if (!fresh && errno != EEXIST)
		return -errno;
	if (made)
		*made = fresh;
	if (lstat(dir, &st))
		return -errno;
	if (!S_ISDIR(st.st_mode) || st.st_uid != geteuid() ||
	    (st.st_mode & 022))
		return -EPERM;
	return 0;
}

static int peer_allowed(int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len))
		return 0;
	return cred.uid == 0 || cred.uid == getuid();
}

/* Wait until fd is readable before the deadline (CLOCK_MONOTONIC ns):
 * 0 or -ETIMEDOUT. */
static int readable_by(int fd, uint64_t deadline)
{
	struct pollfd p = { .fd = fd, .events = POLLIN };
	uint64_t now = ls_now_ns(CLOCK_MONOTONIC);

	if (now >= deadline ||
	    poll(&p, 1, (int)((deadline - now + 999999) / 1000000)) <= 0)
		return -ETIMEDOUT;
	return 0;
}

static uint64_t deadline_in(unsigned ms)
{
	return ls_now_ns(CLOCK_MONOTONIC) + ms * 1000000ull;
}

/* One line, at most LS_CONTROL_MAX_REQUEST bytes, within the timeout for
 * the whole line (not per byte: one a second would do forever). */
static int read_request(int fd, char *buf, size_t cap)
{
	uint64_t deadline = deadline_in(REQUEST_TIMEOUT_MS);
	size_t len = 0;
	int r;

	while (len < cap) {
		ssize_t n;

		if (readable_by(fd, deadline))
			return -ETIMEDOUT;
		n = recv(fd, buf + len, cap - len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EPROTO;
		len += (size_t)n;
		r = ls_request_line(buf, len, cap);
		if (r)
			return r < 0 ? r : 0;
	}
	return -EMSGSIZE;
}

/* One reply line: prefix, then text. */
static void send_line(int fd, const char *prefix, const char *text)
{
	char line[256];
	int n = snprintf(line, sizeof(line), "%s%s\n", prefix, text);

	send(fd, line, (size_t)n, MSG_NOSIGNAL);
}

static void reply_error(int fd, const char *msg)
{
	send_line(fd, LS_REPLY_ERR, msg);
}

/* Exactly len bytes within the timeout for them all; 0 or a negative
 * errno. */
static int recv_all(int fd, void *buf, size_t len)
{
	uint64_t deadline = deadline_in(REQUEST_TIMEOUT_MS);
	char *p = buf;

	while (len) {
		ssize_t n;

		if (readable_by(fd, deadline))
			return -ETIMEDOUT;
		n = recv(fd, p, len, 0);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -EPROTO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The stopped threads' registers (struct lsnap_check_hdr + records) into
 * *th, agent memory of *bytes; 0 or a negative errno. */
static int recv_threads(int fd, struct lsnap_check_thread **th, uint32_t *n,
			size_t *bytes)
{
	struct lsnap_check_hdr h;
	int r = recv_all(fd, &h, sizeof(h));

	if (!r)
		r = ls_request_threads_hdr(&h, n);
	if (r)
		return r;
	*bytes = (size_t)*n * sizeof(**th) + 1;
	*th = ls_sys_map(*bytes);
	if (!*th)
		return -ENOMEM;
	r = recv_all(fd, *th, (size_t)*n * sizeof(**th));
	return r ? r : ls_request_threads_ok(*th, *n);
}

/*
 * `check`: by default we first mark while the program runs
 * (ls_reach_cm_begin); then the client stops every other thread once we
 * say READY, sends their registers; we finish the mark, say MARKED (the
 * client lets the threads go) and send the snapshot.  By the fork method
 * (`check fork`, or when the kernel cannot do the concurrent one, or
 * when the mark's log overflowed) we clone the image instead, say
 * CLONED, and the child sends the snapshot; it waits on a pipe for our
 * CLONED line to be out first.  docs/CONTROL-PROTOCOL.md.
 */
static void serve_check(int fd, int with_blocks, int fork_method,
			uint64_t budget_ns)
{
	struct lsnap_check_thread *th = NULL;
	size_t bytes = 0;
	uint32_t n = 0;
	char line[64];
	int r, len, gate[2] = { -1, -1 }, cm = 0;
	pid_t child;

	r = ls_reach_prepare();
	if (r == -ENOTSUP) {
		reply_error(fd, "check needs full tracking (this process runs "
			    "sampled)");
		return;
	}
	if (r) {
		reply_error(fd, "cannot prepare the check");
		return;
	}
	ls_reach_set_method(fork_method, budget_ns);
	cm = !fork_method && !ls_reach_cm_begin();
	len = snprintf(line, sizeof(line), "READY %d\n", (int)ls_gettid());
	if (send(fd, line, (size_t)len, MSG_NOSIGNAL) != len)
		goto out;
	r = recv_threads(fd, &th, &n, &bytes);
	if (r) {
		reply_error(fd, r == -ENOMEM ? "out of memory" :
			    "malformed register list");
		goto out;
	}
	if (cm && !ls_reach_cm_pause(th, n)) {
		len = snprintf(line, sizeof(line), "%s\n", LS_REPLY_MARKED);
		send(fd, line, (size_t)len, MSG_NOSIGNAL);
		cm = 0;		/* finish frees it all */
		ls_reach_cm_finish(fd, with_blocks);
		goto out;
	}
	if (pipe2(gate, O_CLOEXEC)) {
		reply_error(fd, "cannot create a pipe");
		goto out;
	}
	child = ls_reach_spawn(fd, th, n, with_blocks, LSNAP_REASON_REQUEST, 0,
			       gate);
	if (child < 0) {
		reply_error(fd, "cannot clone the process image");
		goto out;
	}
	len = snprintf(line, sizeof(line), "CLONED %d\n", (int)child);
	send(fd, line, (size_t)len, MSG_NOSIGNAL);
	close(gate[1]);		/* the child's turn */
	gate[1] = -1;
	if (cm) {	/* the threads run again: undo the mark */
		ls_reach_cm_abort();
		cm = 0;
	}
	ls_reach_wait(child);
out:
	if (cm)
		ls_reach_cm_abort();
	if (gate[0] >= 0)
		close(gate[0]);
	if (gate[1] >= 0)
		close(gate[1]);
	ls_sys_unmap(th, bytes);
}

static void serve(int fd)
{
	char req[LS_CONTROL_MAX_REQUEST];
	uint64_t budget;
	struct timeval tv = { .tv_sec = 1 };	/* a send returns within 1 s */
	int r;

	setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	ls_snapwrite_send_budget_ns = SEND_BUDGET_MS * 1000000ull;
	if (!peer_allowed(fd)) {
		reply_error(fd, "permission denied");
		return;
	}
	r = read_request(fd, req, sizeof(req));
	if (r == -EMSGSIZE) {
		reply_error(fd, "request too long");
		return;
	}
	if (r) {
		reply_error(fd, "malformed request");
		return;
	}
	if (ls_request_budget(req, &budget)) {
		reply_error(fd, "malformed pause budget");
		return;
	}
	switch (ls_request_verb(req)) {
	case LS_REQ_RESET:
		reset_fn();
		send_line(fd, LS_REPLY_OK, "");
		break;
	case LS_REQ_SNAPSHOT:
		ls_snapwrite(fd, LSNAP_REASON_REQUEST, 0);
		break;
	case LS_REQ_SNAPSHOT_BLOCKS:
		ls_snapwrite(fd, LSNAP_REASON_REQUEST, 1);
		break;
	case LS_REQ_DETACH: {
		char why[200];

		if (!detach_fn || detach_fn(why, sizeof(why))) {
			reply_error(fd, detach_fn ? why : "not attached");
			return;
		}
		detaching = 1;
		send_line(fd, LS_REPLY_OK, "");
		break;
	}
	case LS_REQ_CHECK:
		serve_check(fd, 0, 0, budget);
		break;
	case LS_REQ_CHECK_BLOCKS:
		serve_check(fd, 1, 0, budget);
		break;
	case LS_REQ_CHECK_FORK:
		serve_check(fd, 0, 1, 0);
		break;
	case LS_REQ_CHECK_FORK_BLOCKS:
		serve_check(fd, 1, 1, 0);
		break;
	case LS_REQ_PING:
		send_line(fd, LS_REPLY_PING, "");
		break;
	case LS_REQ_UNKNOWN:
		reply_error(fd, "unknown request");
		break;
	}
}

/* Does something listen on the socket name in dir?  Anything but a
 * refused connection or no such name says so (a full backlog, no
 * permission). */
static int socket_answers(int dir, const char *name)
{
	struct sockaddr_un to = { .sun_family = AF_UNIX };
	int fd, r, n;

	n = snprintf(to.sun_path, sizeof(to.sun_path), "/proc/self/fd/%d/%s",
		     dir, name);
	if (n < 0 || (size_t)n >= sizeof(to.sun_path))
		return 1;	/* cannot tell: kept */
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return 1;
	r = connect(fd, (struct sockaddr *)&to, sizeof(to)) ? errno : 0;
	close(fd);
	return r != ECONNREFUSED && r != ENOENT;
}

/* One entry of the runtime directory: remove it if it is a leftover. */
static void sweep_entry(int dir, const char *name, time_t now)
{
	const time_t keep = LS_PM_KEEP_DAYS * 86400;
	struct stat st;
	long pid;
	char *end;

	errno = 0;
	pid = strtol(name, &end, 10);
	if (end == name || pid <= 0 || errno || pid == (long)getpid() ||
	    (strcmp(end, LS_SUFFIX_SOCKET) && strcmp(end, LS_SUFFIX_PM)))
		return;
	if (kill((pid_t)pid, 0) == 0 || errno != ESRCH)
		return;		/* alive, or not ours to judge */
	if (!strcmp(end, LS_SUFFIX_PM) &&
	    (fstatat(dir, name, &st, AT_SYMLINK_NOFOLLOW) ||
	     now - st.st_mtime < keep))
		return;
	if (!strcmp(end, LS_SUFFIX_SOCKET) && socket_answers(dir, name))
		return;		/* an agent of another pid namespace's */
	unlinkat(dir, name, 0);
}

/* Is this process in the initial PID namespace, where the pid in a
 * file's name is the one kill() asks about?  (Its inode number is fixed:
 * PROC_PID_INIT_INO.) */
static int initial_pid_namespace(void)
{
	struct stat st;

	return !stat("/proc/self/ns/pid", &st) && st.st_ino == 0xEFFFFFFCu;
}

/*
 * Leftovers of processes that are gone, in our runtime directory: their
 * sockets at once (nobody can connect to them), their post-mortem files
 * once LS_PM_KEEP_DAYS old (long enough to look at a crash).  A pid that
 * exists, even as another user's process, keeps its files, and so does a
 * socket that answers.  Only in the initial PID namespace: in another,
 * the pids of the host's processes do not exist, and their files would
 * go.  Runs once, in this thread, off the program's path.  getdents64
 * into a stack buffer, not opendir: opendir mallocs its buffer, and this
 * thread's first malloc would make glibc map an arena of its own, 64 MiB
 * of the program's address space (under a program's RLIMIT_AS, or
 * against `ulimit -v`).  Nothing in this thread may call the program's
 * allocator.
 */
static void sweep_runtime_dir(void)
{
	char buf[4096] __attribute__((aligned(8)));
	time_t now = time(NULL);
	int fd;
	ssize_t n, off;

	if (!initial_pid_namespace())
		return;
	fd = open(ls_agent.runtime_dir, O_RDONLY | O_DIRECTORY | O_NOFOLLOW |
		  O_CLOEXEC);
	if (fd < 0)
		return;
	while ((n = getdents64(fd, buf, sizeof(buf))) > 0)
		for (off = 0; off < n;) {
			struct dirent64 *e = (struct dirent64 *)(buf + off);

			sweep_entry(fd, e->d_name, now);
			off += e->d_reclen;
		}
	close(fd);
}

/* ns until at, as ppoll's timeout; NULL (no timeout) for UINT64_MAX. */
static struct timespec *timeout_until(uint64_t at, uint64_t now,
				      struct timespec *ts)
{
	uint64_t d = at > now ? at - now : 0;

	if (at == UINT64_MAX)
		return NULL;
	ts->tv_sec = (time_t)(d / 1000000000u);
	ts->tv_nsec = (long)(d % 1000000000u);
	return ts;
}

/* Make the control thread look at its clock work (tick.h) at once.  Safe
 * in a hook and in a signal handler: one write(2) on an eventfd, errno
 * the caller's to keep; nothing when there is no thread. */
static void ls_control_wake(void)
{
	uint64_t one = 1;
	int fd = __atomic_load_n(&wake_fd, __ATOMIC_RELAXED);

	if (fd >= 0)
		(void)!write(fd, &one, sizeof(one));
}

/*
 * glibc ends the process when its last thread ends (a thread returning
 * or calling pthread_exit, main calling pthread_exit, with the others
 * gone): that thread calls exit(0) when the count of running threads,
 * __nptl_nthreads, falls to 0.  The control thread is not the
 * program's: it leaves that count while it runs, and puts itself back
 * before it returns (glibc takes it out again as it ends), so a program
 * whose main calls pthread_exit exits as it does natively.  A glibc
 * without the symbol (before 2.34) keeps counting it.
 */
static unsigned *nptl_nthreads(void)
{
	static unsigned *n;
	static int looked;

	if (!__atomic_load_n(&looked, __ATOMIC_ACQUIRE)) {
		n = dlvsym(RTLD_DEFAULT, "__nptl_nthreads", "GLIBC_PRIVATE");
		__atomic_store_n(&looked, 1, __ATOMIC_RELEASE);
	}
	return n;
}

/* Out of the count.  Should the program's last thread have ended while
 * this one was counted (it then left without exiting), its exit(0) is
 * this thread's to call. */
static void uncount_self(void)
{
	unsigned *n = nptl_nthreads();

	if (n && __atomic_sub_fetch(n, 1, __ATOMIC_ACQ_REL) == 0) {
		ls_guard_leave();	/* the exit path is the program's */
		/* glibc's own exit(0) here (the hook would take this thread
		 * for the program's caller of exit) */
		if (ls_real.libc_exit)
			ls_real.libc_exit(0);
		syscall(SYS_exit_group, 0);
	}
}

static void count_self(void)
{
	unsigned *n = nptl_nthreads();

	if (n)
		__atomic_add_fetch(n, 1, __ATOMIC_ACQ_REL);
}

/*
 * Serve requests; between them, take a growth sample every period, and
 * keep the hooks' clock (tick.h) while they use it.  Anything long (a
 * sample, a request) hands the hooks to the vDSO for its duration, so a
 * stamp is never older than a tick however long the thread is away.
 */
static void *control_main(void *arg)
{
	/* The first sample at once: a process killed early still leaves a
	 * post-mortem file with its start-up state and command line. */
	uint64_t next = ls_now_ns(CLOCK_MONOTONIC), was;

	ls_guard_enter();	/* for good: nothing this thread does is tracked */
	uncount_self();
	__atomic_store_n(&control_tid, ls_gettid(), __ATOMIC_RELEASE);
	prctl(PR_SET_NAME, "leakscope");
	sweep_runtime_dir();
	ls_tick_start(ls_control_wake);
	while (!detaching && !__atomic_load_n(&pausing, __ATOMIC_ACQUIRE)) {
		struct pollfd p[2] = { { .fd = listen_fd, .events = POLLIN },
				       { .fd = wake_fd, .events = POLLIN } };
		uint64_t now = ls_now_ns(CLOCK_MONOTONIC), due, n;
		const uint64_t period = (uint64_t)ls_pm_period_ms() * 1000000u;
		struct timespec ts;
		int fd, r;

		if (now >= next) {
			was = ls_tick_busy();
			ls_snapwrite_lock();
			ls_snapwrite_prepare();
			ls_pm_tick();
			ls_snapwrite_unlock();
			/* Attached: objects loaded without our dlopen hook
			 * (a library's own dlopen, a racing load). */
			ls_attach_rescan();
			ls_tick_unbusy(was);
			next += period;
			if (next <= now)	/* fell behind: do not catch up */
				next = now + period;
			continue;
		}
		due = ls_tick_step(now);
		if (due > next)
			due = next;
		r = ppoll(p, wake_fd >= 0 ? 2 : 1, timeout_until(due, now, &ts),
			  NULL);
		if (r > 0 && p[1].revents & POLLIN)
			(void)!read(wake_fd, &n, sizeof(n));
		if (r <= 0 || !p[0].revents)
			continue;
		fd = ls_sys_fd_high(accept4(listen_fd, NULL, NULL,
					    SOCK_CLOEXEC));
		if (fd < 0) {
			if (errno == EBADF || errno == EINVAL)
				break;
			continue;
		}
		was = ls_tick_busy();
		serve(fd);
		close(fd);
		ls_tick_unbusy(was);
	}
	ls_tick_stop();
	if (detaching) {	/* the socket is gone: the listener goes too */
		close(listen_fd);
		listen_fd = -1;
		close(sock_dir);
		sock_dir = -1;
		owner = 0;
		detaching = 0;
	}
	__atomic_store_n(&control_tid, 0, __ATOMIC_RELEASE);
	count_self();
	return NULL;
}

pid_t ls_control_tid(void)
{
	return __atomic_load_n(&control_tid, __ATOMIC_ACQUIRE);
}

pid_t ls_control_tid_wait(void)
{
	int i;

	/* Started a moment ago: give it a second to say who it is. */
	for (i = 0; i < 1000 && !__atomic_load_n(&control_tid, __ATOMIC_ACQUIRE); i++) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	return __atomic_load_n(&control_tid, __ATOMIC_ACQUIRE);
}

void ls_control_on_detach(int (*detach)(char *why, size_t len))
{
	detach_fn = detach;
}

/* The socket's name in its directory; 0 or -ENAMETOOLONG when dir/name
 * does not fit a socket address (copied into *to). */
static int socket_address(const char *dir, struct sockaddr_un *to)
{
	int n;

	snprintf(sock_name, sizeof(sock_name), "%d" LS_SUFFIX_SOCKET,
		 (int)getpid());
	to->sun_family = AF_UNIX;
	n = snprintf(to->sun_path, sizeof(to->sun_path), "%s/%s", dir,
		     sock_name);
	return n < 0 || (size_t)n >= sizeof(to->sun_path) ? -ENAMETOOLONG : 0;
}

/*
 * A listening socket at to, in the directory dfd, made by the calling
 * thread with its current credentials (the owner of the directory): a
 * stale one of a dead process of this pid goes first, the new one is
 * 0600.  One that answers is a live agent's, of a process of another PID
 * namespace with our pid there: it stays, and we have none (-EADDRINUSE).
 * The new fd, or -errno.
 */
static int bind_in(int dfd, const struct sockaddr_un *to, const char *name)
{
	int fd, r;

	if (socket_answers(dfd, name))
		return -EADDRINUSE;
	fd = ls_sys_fd_high(socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0));
	if (fd < 0)
		return -errno;
	unlinkat(dfd, name, 0);
	if (bind(fd, (const struct sockaddr *)to, sizeof(*to)) ||
	    fchmodat(dfd, name, 0600, 0) || listen(fd, 8)) {
		r = -errno;
		close(fd);
		unlinkat(dfd, name, 0);
		return r;
	}
	return fd;
}

static int open_socket(void)
{
	struct sockaddr_un to;
	int fd, dfd, r = socket_address(ls_agent.runtime_dir, &to);

	if (r)
		return r;
	dfd = ls_sys_fd_high(open(ls_agent.runtime_dir, O_PATH | O_DIRECTORY |
				  O_NOFOLLOW | O_CLOEXEC));
	if (dfd < 0)
		return -errno;
	fd = bind_in(dfd, &to, sock_name);
	if (fd < 0) {
		close(dfd);
		return fd;
	}
	listen_fd = fd;
	sock_dir = dfd;
	owner = getpid();
	return 0;
}

static int start_thread(void)
{
	/* Looked up here: dlvsym waits for the loader's lock, which a
	 * thread of the program inside dlopen may hold for ever. */
	nptl_nthreads();
	return ls_sys_thread_start(control_main, 256 << 10);
}

int ls_control_start(void (*reset)(void))
{
	int r = open_socket();

	if (r)
		return r;
	reset_fn = reset;
	if (wake_fd < 0)
		wake_fd = ls_sys_fd_high(eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
	r = start_thread();
	if (r)
		ls_control_stop();
	return r;
}

int ls_control_pause(void)
{
	pid_t tid;

	if (listen_fd < 0 || wake_fd < 0 || owner != getpid())
		return 0;
	tid = ls_control_tid_wait();	/* one started a moment ago */
	if (!tid)
		return 0;
	__atomic_store_n(&pausing, 1, __ATOMIC_RELEASE);
	ls_control_wake();
	ls_sys_wait_thread_gone(tid);
	return 1;
}

void ls_control_resume(void)
{
	__atomic_store_n(&pausing, 0, __ATOMIC_RELEASE);
	/* A thread that did not end in time (a long request) goes on
	 * serving: no second one. */
	if (listen_fd >= 0 && owner == getpid() && !ls_control_tid())
		start_thread();
}

/*
 * The calling thread's credentials, changed for the time of a bind in
 * another user's directory and put back.  The raw system calls change
 * this thread only (glibc's setresuid() changes every thread): the rest
 * of the program keeps its own.  Supplementary groups go too, and the
 * capability sets are restored as they were (a return to euid 0 would
 * otherwise raise the effective set to the permitted one).
 */
struct creds {
	uid_t euid;
	gid_t egid;
	int ngroups;
	gid_t groups[64];
	struct __user_cap_data_struct cap[2];
};

static int cap_call(long nr, struct __user_cap_data_struct *cap)
{
	struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };

	return (int)syscall(nr, &h, cap);
}

static void unbecome(const struct creds *c)
{
	/* Back to the saved ids (still 0): none of these can fail. */
	(void)!syscall(SYS_setresuid, -1, c->euid, -1);
	(void)!syscall(SYS_setresgid, -1, c->egid, -1);
	(void)!syscall(SYS_setgroups, c->ngroups, c->groups);
	(void)!cap_call(SYS_capset, (struct __user_cap_data_struct *)c->cap);
}

static int become(uid_t uid, gid_t gid, struct creds *c)
{
	c->euid = geteuid();
	c->egid = getegid();
	c->ngroups = getgroups(64, c->groups);
	if (c->ngroups < 0 || cap_call(SYS_capget, c->cap))
		return -errno;
	if (syscall(SYS_setgroups, 0, NULL) ||
	    syscall(SYS_setresgid, -1, gid, -1) ||
	    syscall(SYS_setresuid, -1, uid, -1)) {
		int r = -errno;

		unbecome(c);
		return r;
	}
	return 0;
}

/*
 * Before the process becomes uid:gid: the socket is made again in that
 * user's directory dfd (dir, checked by the caller), bound by this thread
 * as that user, so that nothing there is ever created, chmodded or
 * chowned by root through a name the user could swap.  The old socket is
 * removed from its own directory through its fd.
 */
int ls_control_move(int dfd, const char *dir, uid_t uid, gid_t gid)
{
	struct sockaddr_un to;
	char old[sizeof(sock_name)];
	struct creds c;
	int fd, r, nd;

	if (listen_fd < 0 || owner != getpid())
		return -ENOTCONN;
	memcpy(old, sock_name, sizeof(old));
	r = socket_address(dir, &to);
	nd = ls_sys_fd_high(fcntl(dfd, F_DUPFD_CLOEXEC, 0));
	if (!r && nd < 0)
		r = -errno;
	if (!r)
		r = become(uid, gid, &c);
	if (r)
		goto fail;
	fd = bind_in(nd, &to, sock_name);
	unbecome(&c);
	if (fd < 0) {
		r = fd;
		goto fail;
	}
	/* The control thread polls listen_fd: the same number, now the new
	 * socket; the wake makes it poll that at once. */
	if (dup3(fd, listen_fd, O_CLOEXEC) < 0) {
		r = -errno;
		unlinkat(nd, sock_name, 0);
		close(fd);
		goto fail;
	}
	close(fd);
	unlinkat(sock_dir, old, 0);
	close(sock_dir);
	sock_dir = nd;
	ls_control_wake();
	return 0;
fail:
	if (nd >= 0)
		close(nd);
	memcpy(sock_name, old, sizeof(old));
	return r;
}

void ls_control_stop(void)
{
	if (listen_fd < 0 || owner != getpid())
		return;
	unlinkat(sock_dir, sock_name, 0);
}

void ls_control_forget_child(void)
{
	control_tid = 0;
	pausing = 0;
	if (wake_fd >= 0)	/* the parent's: a write would wake its thread */
		close(wake_fd);
	wake_fd = -1;
	if (listen_fd >= 0)
		close(listen_fd);
	listen_fd = -1;
	if (sock_dir >= 0)
		close(sock_dir);
	sock_dir = -1;
	owner = 0;
}
