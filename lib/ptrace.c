/*
 * ptrace.c - stopping every thread of another process for a moment.
 *
 * PTRACE_SEIZE attaches without stopping and without sending a signal the
 * target could see (PTRACE_ATTACH would queue a SIGSTOP that a program
 * waiting in sigwaitinfo() or a job-control shell would notice), and
 * PTRACE_INTERRUPT then stops the thread wherever it is: in user code, or
 * in a system call, which the kernel restarts when the thread is let go.
 *
 * Threads are found in /proc/PID/task.  A thread that is still running can
 * create another one at any moment, so the listing is repeated after every
 * thread found so far has stopped: a thread in the middle of clone() stops
 * only when clone() returns, by which time its child is listed.  When a
 * listing finds nothing new, nothing is left running that could create a
 * thread (except opts->skip_tid, which the caller vouches for).
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "../common/stopwait.h"
#include "procinfo.h"
#include "ptrace.h"

#define DEFAULT_TIMEOUT_MS 2000

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

#define YAMA_SCOPE "/proc/sys/kernel/yama/ptrace_scope"

/* The text of Yama's ptrace_scope into buf (at most a few bytes), or
 * NULL when the kernel has no Yama. */
static const char *yama_text(char *buf, size_t cap)
{
	int fd = open(YAMA_SCOPE, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return NULL;
	n = read(fd, buf, cap - 1);
	close(fd);
	if (n < 0)
		return NULL;
	buf[n] = 0;
	return buf;
}

/* Yama's scope from the file's text: 0 to 3, or -1 (no Yama, or text
 * that is not one of them). */
static int yama_scope(const char *text)
{
	char *end;
	long v;

	if (!text)
		return -1;
	errno = 0;
	v = strtol(text, &end, 10);
	if (errno || end == text || (*end && *end != '\n') || v < 0 || v > 3)
		return -1;
	return (int)v;
}

void ls_world_denied_reason(pid_t pid, int e, const char *yama, uid_t euid,
			    long owner, char *err, size_t errlen)
{
	if (e != EPERM) {
		snprintf(err, errlen, "cannot trace pid %d: %s", (int)pid,
			 strerror(e));
		return;
	}
	if (euid != 0 && owner >= 0 && (uid_t)owner != euid) {
		snprintf(err, errlen, "cannot trace pid %d: it belongs to uid %ld, "
			 "not to you (run as that user or as root)",
			 (int)pid, owner);
		return;
	}
	switch (yama_scope(yama)) {
	case 1:
		snprintf(err, errlen, "cannot trace pid %d: kernel.yama.ptrace_scope "
			 "is 1 (only a parent may trace its children): run as root, "
			 "or `sysctl kernel.yama.ptrace_scope=0`, or start the "
			 "program under `leakscope run`", (int)pid);
		return;
	case 2:
		snprintf(err, errlen, "cannot trace pid %d: kernel.yama.ptrace_scope "
			 "is 2 (only root may trace): run as root "
			 "(or with CAP_SYS_PTRACE), or start the program under "
			 "`leakscope run`", (int)pid);
		return;
	case 3:
		snprintf(err, errlen, "cannot trace pid %d: kernel.yama.ptrace_scope "
			 "is 3 (no process may trace, not even root, until reboot): "
			 "start the program under `leakscope run`", (int)pid);
		return;
	}
	snprintf(err, errlen, "cannot trace pid %d: operation not permitted "
		 "(a setuid program, a container without CAP_SYS_PTRACE, "
		 "or a security module refused)", (int)pid);
}

/* ls_world_denied_reason for pid, from this machine's Yama and pid's
 * owner. */
static void denied(pid_t pid, int e, char *err, size_t errlen)
{
	char path[64], text[16];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	ls_world_denied_reason(pid, e, yama_text(text, sizeof(text)), geteuid(),
			       stat(path, &st) ? -1 : (long)st.st_uid, err,
			       errlen);
}

/* -ESRCH with a reason when pid is not a process we may look at. */
static int check_target(pid_t pid, char *err, size_t errlen)
{
	long tgid = ls_proc_status_long(pid, "Tgid");
	long tracer;

	if (pid <= 0 || tgid < 0) {
		snprintf(err, errlen, "no process with pid %d", (int)pid);
		return -ESRCH;
	}
	if (tgid != pid) {
		snprintf(err, errlen, "%d is a thread of process %ld, not a process",
			 (int)pid, tgid);
		return -ESRCH;
	}
	if (pid == getpid()) {
		snprintf(err, errlen, "cannot trace pid %d: it is leakscope itself",
			 (int)pid);
		return -EPERM;
	}
	tracer = ls_proc_status_long(pid, "TracerPid");
	if (tracer > 0 && tracer != getpid()) {
		snprintf(err, errlen, "pid %d is already traced by pid %ld "
			 "(a debugger or another tool): detach it first",
			 (int)pid, tracer);
		return -EBUSY;
	}
	return 0;
}

static int grow(struct ls_world *w, size_t *cap)
{
	struct ls_world_thread *t;
	size_t n = *cap ? *cap * 2 : 16;

	if (w->nthreads < *cap)
		return 0;
	t = realloc(w->threads, n * sizeof(*t));
	if (!t)
		return -ENOMEM;
	w->threads = t;
	*cap = n;
	return 0;
}

static int known(const struct ls_world *w, pid_t tid)
{
	size_t i;

	for (i = 0; i < w->nthreads; i++)
		if (w->threads[i].tid == tid)
			return 1;
	return 0;
}

static void drop(struct ls_world *w, size_t i)
{
	w->threads[i] = w->threads[--w->nthreads];
}

/* TracerPid of one thread, or -1. */
static pid_t thread_tracer(pid_t pid, pid_t tid)
{
	char path[80], line[128];
	pid_t v = -1;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)pid, (int)tid);
	fp = fopen(path, "re");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp))
		if (!strncmp(line, "TracerPid:", 10)) {
			v = (pid_t)atoi(line + 10);
			break;
		}
	fclose(fp);
	return v;
}

/*
 * Seize and interrupt tid.  Returns 1 when it is now ours, 0 when it is
 * gone (a thread that exited between the listing and now), or a negative
 * errno with the reason in err.
 */
static int seize_one(struct ls_world *w, pid_t tid, char *err, size_t errlen)
{
	if (ptrace(PTRACE_SEIZE, tid, NULL, NULL)) {
		int e = errno;

		if (e == ESRCH)
			return 0;
		if (e == EPERM && thread_tracer(w->pid, tid) == getpid())
			return 0;	/* ours already: the caller holds it */
		if (e == EPERM && ls_proc_status_long(w->pid, "TracerPid") > 0)
			return check_target(w->pid, err, errlen);
		if (e == EPERM) {
			/*
			 * A thread already exiting refuses to be seized, and
			 * so does a leader that called pthread_exit while
			 * other threads run on: a zombie.
			 */
			if (ls_proc_thread_gone(w->pid, tid))
				return 0;
			denied(w->pid, e, err, errlen);
			return -EPERM;
		}
		ls_world_denied_reason(w->pid, e, NULL, 0, -1, err, errlen);
		return -e;
	}
	if (!w->stopped_ns)
		w->stopped_ns = now_ns();
	/* ESRCH here means it died since: the wait reaps it. */
	ptrace(PTRACE_INTERRUPT, tid, NULL, NULL);
	return 1;
}

/*
 * Seize every thread listed in /proc/PID/task that is not ours yet.
 * Returns how many were added, or a negative errno.
 */
static int seize_new(struct ls_world *w, size_t *cap, pid_t skip,
		     char *err, size_t errlen)
{
	char path[64];
	struct dirent *de;
	int added = 0, r = 0;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)w->pid);
	d = opendir(path);
	if (!d) {
		snprintf(err, errlen, "pid %d exited", (int)w->pid);
		return -ESRCH;
	}
	while ((de = readdir(d))) {
		pid_t tid = (pid_t)atoi(de->d_name);

		if (tid <= 0 || tid == skip || known(w, tid))
			continue;
		if ((r = grow(w, cap)) < 0) {
			snprintf(err, errlen, "out of memory");
			break;
		}
		r = seize_one(w, tid, err, errlen);
		if (r < 0)
			break;
		if (r == 0)
			continue;
		memset(&w->threads[w->nthreads], 0, sizeof(w->threads[0]));
		w->threads[w->nthreads].tid = tid;
		w->threads[w->nthreads].state = LS_THREAD_RUNNING;
		w->nthreads++;
		added++;
	}
	closedir(d);
	return r < 0 ? r : added;
}

static size_t world_count(void *list)
{
	return ((struct ls_world *)list)->nthreads;
}

static pid_t world_waiting(void *list, size_t i)
{
	const struct ls_world_thread *t = &((struct ls_world *)list)->threads[i];

	return t->state == LS_THREAD_STOPPED ? 0 : t->tid;
}

/* What waitpid said about thread i: 1 stopped, 0 still running, -1 it
 * ended. */
static int note_status(void *list, size_t i, int status)
{
	struct ls_world_thread *t = &((struct ls_world *)list)->threads[i];

	if (WIFEXITED(status) || WIFSIGNALED(status))
		return -1;
	if (!WIFSTOPPED(status))
		return 0;
	t->state = LS_THREAD_STOPPED;
	/*
	 * A stop for our interrupt, or a group stop, carries the event in
	 * the high bits; anything else is a signal on its way to the
	 * thread, which it must still get when let go.
	 */
	if (status >> 16 == 0)
		t->pending_sig = WSTOPSIG(status);
	return 1;
}

static void world_drop(void *list, size_t i)
{
	drop(list, i);
}

/* Wait for every thread not yet stopped, until deadline.  A thread killed
 * meanwhile is dropped: its leader's death may wait for threads we hold
 * stopped, so no status comes. */
static int wait_all(struct ls_world *w, uint64_t deadline, char *err,
		    size_t errlen)
{
	const struct ls_stopwait sw = {
		.pid = w->pid, .deadline = deadline, .list = w,
		.count = world_count, .waiting = world_waiting,
		.note = note_status, .drop = world_drop,
		.gone = ls_proc_thread_gone,
	};
	size_t waiting = 0;
	int r = ls_stopwait(&sw, &waiting);

	if (r == -ETIMEDOUT)
		snprintf(err, errlen, "pid %d: %zu thread(s) did not stop "
			 "in time (uninterruptible sleep?)", (int)w->pid,
			 waiting);
	return r;
}

static int read_regs(struct ls_world *w, char *err, size_t errlen)
{
	size_t i;

	for (i = 0; i < w->nthreads; i++) {
		struct ls_world_thread *t = &w->threads[i];

		if (ptrace(PTRACE_GETREGS, t->tid, NULL, &t->regs)) {
			snprintf(err, errlen, "cannot read the registers of thread "
				 "%d of pid %d: %s", (int)t->tid, (int)w->pid,
				 strerror(errno));
			return -errno;
		}
	}
	return 0;
}

/*
 * Let every thread go without touching its registers.  PTRACE_DETACH
 * needs a stopped thread, so the ones asked to stop are given a moment to
 * do so.
 * NEEDSWORK: one that never stops (uninterruptible sleep past the
 * timeout) stays seized, with our interrupt pending, until this process
 * exits and the kernel lets it go; the CLI exits right after a failure.
 */
static void let_go(struct ls_world *w)
{
	char ignored[8];
	size_t i;

	wait_all(w, now_ns() + 200000000u, ignored, sizeof(ignored));
	for (i = 0; i < w->nthreads; i++)
		w->threads[i].regs_dirty = 0;
	ls_world_resume(w);
}

int ls_world_stop(pid_t pid, const struct ls_world_opts *opts,
		  struct ls_world *w, char *err, size_t errlen)
{
	int timeout = opts && opts->timeout_ms > 0 ? opts->timeout_ms
						   : DEFAULT_TIMEOUT_MS;
	pid_t skip = opts ? opts->skip_tid : 0;
	uint64_t deadline = now_ns() + (uint64_t)timeout * 1000000u;
	size_t cap = 0;
	int r;

	memset(w, 0, sizeof(*w));
	w->pid = pid;
	r = check_target(pid, err, errlen);
	if (r)
		return r;
	do {
		r = seize_new(w, &cap, skip, err, errlen);
		if (r > 0) {
			int e = wait_all(w, deadline, err, errlen);

			if (e)
				r = e;
		}
	} while (r > 0);
	if (!r && (kill(pid, 0) || (!w->nthreads && ls_proc_thread_gone(pid, pid)))) {
		snprintf(err, errlen, "pid %d exited", (int)pid);
		r = -ESRCH;
	}
	if (!r)
		r = read_regs(w, err, errlen);
	if (r) {
		let_go(w);
		ls_world_release(w);
		w->pid = pid;
		/* Whatever failed, a process that died meanwhile is the reason. */
		if (r != -EPERM && r != -EBUSY && ls_proc_gone(pid)) {
			snprintf(err, errlen, "pid %d exited", (int)pid);
			r = -ESRCH;
		}
	}
	return r;
}

/* The real parent of pid, or -1. */
static pid_t parent_of(pid_t pid)
{
	return (pid_t)ls_proc_status_long(pid, "PPid");
}

/*
 * A stopped thread that PTRACE_DETACH no longer finds was killed (only
 * SIGKILL wakes a thread out of a tracing stop).  As its tracer we must
 * reap it, or it stays a zombie that keeps its process from being
 * reported dead to its parent.  Threads first, the leader last (its death
 * is reported only after theirs); a leader that is our own child is left
 * to our caller's waitpid, which reaps it as its parent.
 */
static void reap_killed(struct ls_world *w, char *killed)
{
	uint64_t deadline = now_ns() + 1000000000u;
	int leader_is_child = parent_of(w->pid) == getpid();
	int leader_pass;
	size_t i, left;

	for (leader_pass = 0; leader_pass < 2; leader_pass++) {
		do {
			left = 0;
			for (i = 0; i < w->nthreads; i++) {
				pid_t tid = w->threads[i].tid;
				int st;

				if (!killed[i] || (tid == w->pid) != leader_pass ||
				    (tid == w->pid && leader_is_child))
					continue;
				if (waitpid(tid, &st, __WALL | WNOHANG) == 0)
					left++;
				else
					killed[i] = 0;
			}
			if (left)
				sched_yield();
		} while (left && now_ns() < deadline);
	}
}

int ls_world_resume(struct ls_world *w)
{
	char *killed = calloc(w->nthreads ? w->nthreads : 1, 1);
	int first = 0, any_killed = 0;
	size_t i;

	for (i = 0; i < w->nthreads; i++) {
		struct ls_world_thread *t = &w->threads[i];

		if (t->regs_dirty &&
		    ptrace(PTRACE_SETREGS, t->tid, NULL, &t->regs) &&
		    errno != ESRCH && !first)
			first = -errno;
		t->regs_dirty = 0;
		if (ptrace(PTRACE_DETACH, t->tid, NULL,
			   (void *)(long)t->pending_sig)) {
			if (errno == ESRCH && t->state == LS_THREAD_STOPPED &&
			    killed) {
				killed[i] = 1;
				any_killed = 1;
			} else if (errno != ESRCH && !first) {
				first = -errno;
			}
		}
		t->state = LS_THREAD_DETACHED;
	}
	w->resumed_ns = now_ns();
	if (!w->stopped_ns)
		w->stopped_ns = w->resumed_ns;
	if (any_killed)
		reap_killed(w, killed);
	free(killed);
	return first;
}

uint64_t ls_world_pause_ns(const struct ls_world *w)
{
	if (!w->resumed_ns || w->resumed_ns < w->stopped_ns)
		return 0;
	return w->resumed_ns - w->stopped_ns;
}

void ls_world_release(struct ls_world *w)
{
	if (!w)
		return;
	free(w->threads);
	w->threads = NULL;
	w->nthreads = 0;
}
