/*
 * exitstop.c - the other threads stopped by a tracer child, for the
 * check at exit (exitstop.h).
 *
 * Why a tracer and not a signal whose handler saves its ucontext: a
 * handler interrupts the system call the thread waits in, and the calls
 * SA_RESTART does not restart (nanosleep, poll, epoll_wait, select,
 * futex waits with a timeout, semop...) return EINTR to the program,
 * which may act on it while the process exits (print, exit with another
 * status).  A ptrace stop restarts every call, untouched.
 *
 * The tracer is a copy-on-write child of a process whose other threads
 * may hold any lock: it calls only system-call wrappers (no malloc, no
 * stdio) and leaves through exit_group.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/user.h>
#include <sys/wait.h>
#include "../common/stopwait.h"
#include "exitstop.h"
#include "sys.h"

#define STOP_TIMEOUT_NS 500000000ull	/* for every thread to stop */
#define REPLY_TIMEOUT_MS 2000		/* for each of the tracer's records */
#define MAX_HELD 1024

/* The tracer's: the threads it holds (its copy of this static). */
static struct {
	pid_t tid[MAX_HELD];
	int sig[MAX_HELD];	/* a signal to deliver at the detach */
	uint8_t stopped[MAX_HELD];
	uint32_t n;
} held;

/* Gone, or a zombie (a leader that called pthread_exit, a thread in its
 * exit): nothing to stop. */
static int thread_gone(pid_t pid, pid_t tid)
{
	char path[64], buf[512], *p;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid,
		 (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 1;
	buf[n] = 0;
	p = strrchr(buf, ')');
	return !p || p[1] != ' ' || p[2] == 'Z' || p[2] == 'X';
}

static int is_held(pid_t tid)
{
	uint32_t i;

	for (i = 0; i < held.n; i++)
		if (held.tid[i] == tid)
			return 1;
	return 0;
}

/* 1 seized and asked to stop, 0 gone, or a negative errno. */
static int seize_one(pid_t pid, pid_t tid)
{
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL)) {
		int e = errno;

		if (e == ESRCH || (e == EPERM && thread_gone(pid, tid)))
			return 0;
		return -e;
	}
	ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
	return 1;
}

/* Seize the threads of /proc/PID/task not held yet: how many, or a
 * negative errno. */
static int seize_new(pid_t pid, pid_t skip, uint32_t cap)
{
	char path[64], buf[4096];
	int fd, added = 0, r = 0;
	long k, off;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	while (r >= 0 && (k = syscall(SYS_getdents64, fd, buf, sizeof(buf))) > 0)
		for (off = 0; off < k && r >= 0;) {
			pid_t tid = (pid_t)strtol(buf + off + 19, NULL, 10);
			unsigned short reclen;

			memcpy(&reclen, buf + off + 16, sizeof(reclen));
			off += reclen;
			if (tid <= 0 || tid == skip || is_held(tid))
				continue;
			if (held.n == cap) {
				r = -E2BIG;
				break;
			}
			if ((r = seize_one(pid, tid)) <= 0)
				continue;
			held.tid[held.n] = tid;
			held.sig[held.n] = 0;
			held.stopped[held.n++] = 0;
			added++;
		}
	close(fd);
	return r < 0 ? r : added;
}

static void forget(uint32_t i)
{
	held.n--;
	held.tid[i] = held.tid[held.n];
	held.sig[i] = held.sig[held.n];
	held.stopped[i] = held.stopped[held.n];
}

/* What waitpid said of thread i: 1 stopped, 0 running, -1 gone. */
static int note_status(uint32_t i, int st)
{
	if (WIFEXITED(st) || WIFSIGNALED(st))
		return -1;
	if (!WIFSTOPPED(st))
		return 0;
	held.stopped[i] = 1;
	/* Our interrupt or a group stop carries an event in the high bits;
	 * a bare stop is a signal on its way to the thread. */
	if (st >> 16 == 0)
		held.sig[i] = WSTOPSIG(st);
	return 1;
}

static size_t held_count(void *list)
{
	return held.n;
}

static pid_t held_waiting(void *list, size_t i)
{
	return held.stopped[i] ? 0 : held.tid[i];
}

static int held_note(void *list, size_t i, int st)
{
	return note_status((uint32_t)i, st);
}

static void held_forget(void *list, size_t i)
{
	forget((uint32_t)i);
}

/* Wait until every held thread is stopped, or the deadline. */
static int wait_stopped(pid_t pid, uint64_t deadline)
{
	const struct ls_stopwait sw = {
		.pid = pid, .deadline = deadline, .count = held_count,
		.waiting = held_waiting, .note = held_note,
		.drop = held_forget, .gone = thread_gone,
	};

	return ls_stopwait(&sw, NULL);
}

/* Every thread of pid but skip stopped: 0 or a negative errno.  A thread
 * that runs may create another until it stops: list again until the
 * listing finds none new. */
static int stop_all(pid_t pid, pid_t skip, uint32_t cap)
{
	uint64_t deadline = ls_now_ns(CLOCK_MONOTONIC) + STOP_TIMEOUT_NS;
	int added, r;

	do {
		added = seize_new(pid, skip, cap);
		if (added < 0)
			return added;
		if ((r = wait_stopped(pid, deadline)))
			return r;
	} while (added > 0);
	return 0;
}

static void detach_all(void)
{
	uint32_t i;

	for (i = 0; i < held.n; i++)
		ptrace(PTRACE_DETACH, held.tid[i], NULL,
		       (void *)(long)held.sig[i]);
	held.n = 0;
}

static int send_all(int fd, const void *p, size_t len)
{
	const char *c = p;
	ssize_t k;

	while (len) {
		k = send(fd, c, len, MSG_NOSIGNAL);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -1;
		c += k;
		len -= (size_t)k;
	}
	return 0;
}

/* Each stopped thread's record, then the end (tid 0, sp the status). */
static int send_threads(int fd)
{
	struct lsnap_check_thread t;
	struct user_regs_struct regs;
	uint32_t i;

	for (i = 0; i < held.n; i++) {
		if (ptrace(PTRACE_GETREGS, held.tid[i], NULL, &regs))
			continue;	/* killed meanwhile */
		memset(&t, 0, sizeof(t));
		t.tid = (uint32_t)held.tid[i];
		t.nregs = sizeof(regs) / sizeof(uint64_t);
		t.sp = regs.rsp;
		memcpy(t.regs, &regs, sizeof(regs));
		if (send_all(fd, &t, sizeof(t)))
			return -1;
	}
	memset(&t, 0, sizeof(t));
	return send_all(fd, &t, sizeof(t));
}

static __attribute__((noreturn))
void tracer_main(pid_t pid, pid_t skip, int fd, uint32_t cap)
{
	struct lsnap_check_thread end;
	sigset_t all;
	char c;
	int r;

	/* None of the program's handlers runs here; die with the caller
	 * (the threads are let go when a tracer dies). */
	sigfillset(&all);
	sigprocmask(SIG_SETMASK, &all, NULL);
	prctl(PR_SET_PDEATHSIG, SIGKILL);
	if (getppid() != pid || recv(fd, &c, 1, 0) != 1)
		syscall(SYS_exit_group, 1);
	r = stop_all(pid, skip, cap);
	if (!r && !send_threads(fd)) {
		while (recv(fd, &c, 1, 0) < 0 && errno == EINTR)
			;	/* released, or the caller is gone */
		detach_all();
		syscall(SYS_exit_group, 0);
	}
	detach_all();
	memset(&end, 0, sizeof(end));
	end.sp = (uint64_t)(int64_t)(r ? r : -EIO);
	(void)send_all(fd, &end, sizeof(end));
	syscall(SYS_exit_group, 1);
	__builtin_unreachable();
}

/* Under Yama's ptrace_scope 1 a child may trace its parent only when
 * named by it. */
static void allow_tracer(pid_t tracer)
{
	char c = 0;
	int fd = open("/proc/sys/kernel/yama/ptrace_scope", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return;
	if (read(fd, &c, 1) == 1 && c == '1')
		prctl(PR_SET_PTRACER, (unsigned long)tracer, 0, 0, 0);
	close(fd);
}

static int recv_record(int fd, struct lsnap_check_thread *t)
{
	struct pollfd pf = { .fd = fd, .events = POLLIN };
	char *p = (char *)t;
	size_t got = 0;
	ssize_t k;

	while (got < sizeof(*t)) {
		if (poll(&pf, 1, REPLY_TIMEOUT_MS) != 1)
			return -ETIMEDOUT;
		k = recv(fd, p + got, sizeof(*t) - got, 0);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return -EIO;
		got += (size_t)k;
	}
	return 0;
}

int ls_exitstop_stop(struct ls_exitstop *es, struct lsnap_check_thread *th,
		     uint32_t cap)
{
	struct lsnap_check_thread t;
	pid_t pid = getpid(), skip = ls_gettid();
	uint32_t n = 0;
	int sv[2], r = 0;
	long child;

	memset(es, 0, sizeof(*es));
	es->go = -1;
	if (cap > MAX_HELD)
		cap = MAX_HELD;
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv))
		return -errno;
	/* No exit signal: the program gets no SIGCHLD and its wait()
	 * calls do not see the tracer; it is reaped with __WALL. */
	child = syscall(SYS_clone, 0UL, 0UL, NULL, NULL, 0UL);
	if (child == 0) {
		syscall(SYS_close_range, 0u, (unsigned)sv[1] - 1, 0u);
		syscall(SYS_close_range, (unsigned)sv[1] + 1, ~0u, 0u);
		tracer_main(pid, skip, sv[1], cap);
	}
	close(sv[1]);
	if (child < 0) {
		r = -errno;
		close(sv[0]);
		return r;
	}
	es->tracer = (pid_t)child;
	es->go = sv[0];
	allow_tracer(es->tracer);
	if (send_all(sv[0], "g", 1))
		r = -EIO;
	while (!r && !(r = recv_record(sv[0], &t)) && t.tid) {
		if (n == cap)
			r = -E2BIG;
		else
			th[n++] = t;
	}
	if (!r && t.sp)
		r = (int)(int64_t)t.sp;
	if (r) {
		ls_exitstop_release(es);
		return r;
	}
	return (int)n;
}

void ls_exitstop_release(struct ls_exitstop *es)
{
	int st;

	if (es->go >= 0)
		close(es->go);	/* the tracer's recv() ends: it detaches */
	es->go = -1;
	if (es->tracer > 0) {
		while (waitpid(es->tracer, &st, __WALL) < 0 && errno == EINTR)
			;
		allow_tracer(0);
	}
	es->tracer = 0;
}
