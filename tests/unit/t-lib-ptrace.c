/*
 * t-lib-ptrace.c - stopping every thread of another process (lib/ptrace.c).
 *
 * The targets are children of this test, made for the purpose: one whose
 * threads compute, block in read(), and create and end threads without
 * pause; a zombie; a process with a zombie leader; a job-control stopped
 * one; one already traced by a helper.  Every check is a fact the target
 * or /proc reports, never a duration.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include "tap.h"
#include "../../lib/ptrace.h"

#define WORKERS 3
#define ROUNDS 25

static atomic_int stop_flag, spawned, usr1_seen;
static atomic_ulong work[WORKERS];

static void *short_lived(void *arg)
{
	atomic_fetch_add(&spawned, 1);
	return arg;
}

/* Creates threads that end at once, as fast as it can. */
static void *spawner(void *arg)
{
	while (!atomic_load(&stop_flag)) {
		pthread_t t;

		if (!pthread_create(&t, NULL, short_lived, NULL))
			pthread_join(t, NULL);
	}
	return arg;
}

static void *worker(void *arg)
{
	atomic_ulong *w = arg;

	while (!atomic_load(&stop_flag))
		atomic_fetch_add(w, 1);
	return NULL;
}

static void on_usr1(int sig)
{
	(void)sig;
	atomic_fetch_add(&usr1_seen, 1);
}

/*
 * The target: answers each byte read from `in` with one line computed
 * from the byte's rank; 'q' ends it with a last line of facts.  Any read
 * or write cut short by EINTR is reported, since a stop must not show.
 */
static int target_main(int in, int out)
{
	pthread_t sp, wk[WORKERS];
	char c, line[128];
	int i, n = 0, eintr = 0;

	signal(SIGUSR1, on_usr1);
	pthread_create(&sp, NULL, spawner, NULL);
	for (i = 0; i < WORKERS; i++)
		pthread_create(&wk[i], NULL, worker, &work[i]);
	if (write(out, "ready\n", 6) != 6)
		return 2;
	for (;;) {
		ssize_t r = read(in, &c, 1);

		if (r < 0 && errno == EINTR) {
			eintr++;
			continue;
		}
		if (r != 1 || c == 'q')
			break;
		snprintf(line, sizeof(line), "%d %lu\n", n, (unsigned long)n * 2654435761u);
		n++;
		if (write(out, line, strlen(line)) != (ssize_t)strlen(line))
			return 3;
	}
	atomic_store(&stop_flag, 1);
	pthread_join(sp, NULL);
	for (i = 0; i < WORKERS; i++)
		pthread_join(wk[i], NULL);
	snprintf(line, sizeof(line), "end eintr=%d spawned>0=%d usr1=%d\n", eintr,
		 atomic_load(&spawned) > 0, atomic_load(&usr1_seen));
	return write(out, line, strlen(line)) == (ssize_t)strlen(line) ? 0 : 4;
}

struct target {
	pid_t pid;
	int to, from;
};

static int start_target(struct target *t)
{
	int a[2], b[2];
	char buf[8];

	if (pipe(a) || pipe(b))
		return -1;
	t->pid = fork();
	if (t->pid == 0) {
		close(a[1]);
		close(b[0]);
		_exit(target_main(a[0], b[1]));
	}
	close(a[0]);
	close(b[1]);
	t->to = a[1];
	t->from = b[0];
	return read(t->from, buf, 6) == 6 ? 0 : -1;
}

static int read_line(int fd, char *buf, size_t cap)
{
	size_t n = 0;

	while (n + 1 < cap && read(fd, buf + n, 1) == 1)
		if (buf[n++] == '\n')
			break;
	buf[n] = 0;
	return (int)n;
}

/* The state letter of every thread of pid: how many are not 't'. */
static int threads_not_traced_stop(pid_t pid, int *total)
{
	char cmd[128], line[64];
	int bad = 0;
	FILE *p;

	snprintf(cmd, sizeof(cmd),
		 "for f in /proc/%d/task/*/stat; do sed 's/.*) //; s/ .*//' $f; done",
		 (int)pid);
	p = popen(cmd, "r");
	*total = 0;
	while (p && fgets(line, sizeof(line), p)) {
		(*total)++;
		bad += line[0] != 't';
	}
	if (p)
		pclose(p);
	return bad;
}

/* Wait (up to 2 s) until the target's main thread blocks in read():
 * after answering a round it loops back to read() on its own time, and a
 * stop that lands before it gets there sees it elsewhere. */
static void wait_in_read(pid_t pid)
{
	char path[64], buf[64];
	int i, fd;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/syscall", (int)pid);
	for (i = 0; i < 2000; i++) {
		fd = open(path, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return;
		n = read(fd, buf, sizeof(buf) - 1);
		close(fd);
		if (n > 0) {
			buf[n] = 0;
			if (atol(buf) == SYS_read && buf[0] != 'r')
				return;
		}
		usleep(1000);
	}
}

static void test_stop_resume(void)
{
	struct target t;
	char line[128], want[128];
	int round, ok_rounds = 0, all_stopped = 0, in_read = 0, many = 0;
	int status;

	if (start_target(&t)) {
		ok(0, "target started");
		return;
	}
	for (round = 0; round < ROUNDS; round++) {
		struct ls_world w;
		char err[256] = "";
		int total, r;
		size_t i;

		wait_in_read(t.pid);
		r = ls_world_stop(t.pid, NULL, &w, err, sizeof(err));
		if (r) {
			printf("# round %d: stop: %d %s\n", round, r, err);
			break;
		}
		all_stopped += threads_not_traced_stop(t.pid, &total) == 0 &&
			       (size_t)total == w.nthreads;
		many += w.nthreads >= 2 + WORKERS;
		for (i = 0; i < w.nthreads; i++)
			if (w.threads[i].tid == t.pid &&
			    w.threads[i].regs.orig_rax == SYS_read)
				in_read++;
		if (round == 3)
			kill(t.pid, SIGUSR1);	/* arrives while stopped */
		r = ls_world_resume(&w);
		if (r) {
			printf("# round %d: resume: %d\n", round, r);
			break;
		}
		ok_rounds += ls_world_pause_ns(&w) > 0;
		ls_world_release(&w);
		if (write(t.to, "n", 1) != 1)
			break;
		read_line(t.from, line, sizeof(line));
		snprintf(want, sizeof(want), "%d %lu\n", round,
			 (unsigned long)round * 2654435761u);
		if (strcmp(line, want)) {
			printf("# round %d: got '%s'\n", round, line);
			break;
		}
	}
	is_u64(ok_rounds, ROUNDS, "every stop and resume worked and measured a pause");
	is_u64(all_stopped, ROUNDS, "every thread, new ones included, was in a tracing stop");
	is_u64(many, ROUNDS, "main, spawner and workers were all stopped");
	is_u64(in_read, ROUNDS, "the main thread was seen inside read()");
	if (write(t.to, "q", 1) != 1)
		ok(0, "quit sent");
	read_line(t.from, line, sizeof(line));
	ok(!strcmp(line, "end eintr=0 spawned>0=1 usr1=1\n"),
	   "no system call saw EINTR, threads kept being created, the signal "
	   "sent during a stop arrived once: %s", line);
	ok(waitpid(t.pid, &status, 0) == t.pid && WIFEXITED(status) &&
	   WEXITSTATUS(status) == 0, "the target exited 0 on its own");
	close(t.to);
	close(t.from);
}

static void test_killed_during_stop(void)
{
	struct ls_world w;
	struct target t;
	char err[256] = "";
	int status, r;

	if (start_target(&t)) {
		ok(0, "target started");
		return;
	}
	r = ls_world_stop(t.pid, NULL, &w, err, sizeof(err));
	ok(r == 0, "stopped (%s)", err);
	kill(t.pid, SIGKILL);
	ok(ls_world_resume(&w) == 0, "resume of a process killed during the stop is no error");
	ls_world_release(&w);
	ok(waitpid(t.pid, &status, 0) == t.pid && WIFSIGNALED(status) &&
	   WTERMSIG(status) == SIGKILL, "it died of the SIGKILL");
	close(t.to);
	close(t.from);
}

static void test_dead_and_zombie(void)
{
	struct ls_world w;
	char err[256] = "";
	pid_t pid = fork();
	int r, status;

	if (pid == 0)
		_exit(0);
	/* Not reaped yet: a zombie. */
	while (waitid(P_PID, pid, NULL, WEXITED | WNOWAIT) < 0 && errno == EINTR)
		;
	r = ls_world_stop(pid, NULL, &w, err, sizeof(err));
	ok(r == -ESRCH && strstr(err, "exited"), "a zombie: -ESRCH, '%s'", err);
	waitpid(pid, &status, 0);
	r = ls_world_stop(pid, NULL, &w, err, sizeof(err));
	ok(r == -ESRCH && strstr(err, "no process with pid"), "a dead pid: -ESRCH, '%s'", err);
	r = ls_world_stop(-5, NULL, &w, err, sizeof(err));
	ok(r == -ESRCH, "a negative pid: -ESRCH");
	r = ls_world_stop(getpid(), NULL, &w, err, sizeof(err));
	ok(r == -EPERM && strstr(err, "leakscope itself"), "itself: -EPERM, '%s'", err);
}

static void *sleeper(void *arg)
{
	int fd = *(int *)arg;
	char c;

	return (void *)(long)read(fd, &c, 1);
}

/* A process whose main thread ended with pthread_exit: a zombie leader. */
static void test_zombie_leader(void)
{
	struct ls_world w;
	char err[256] = "", path[64];
	int p[2], status, r, tid_ok = 1;
	pid_t pid;

	if (pipe(p))
		return;
	pid = fork();
	if (pid == 0) {
		pthread_t th;

		close(p[1]);
		pthread_create(&th, NULL, sleeper, &p[0]);
		pthread_exit(NULL);
	}
	close(p[0]);
	/* Wait until the leader is a zombie. */
	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	for (r = 0; r < 5000; r++) {
		char buf[256] = "";
		FILE *fp = fopen(path, "r");

		if (fp) {
			if (!fgets(buf, sizeof(buf), fp))
				buf[0] = 0;
			fclose(fp);
		}
		if (strstr(buf, ") Z "))
			break;
		usleep(1000);
	}
	r = ls_world_stop(pid, NULL, &w, err, sizeof(err));
	ok(r == 0, "a process with a zombie leader can be stopped (%s)", err);
	is_u64(w.nthreads, 1, "its one live thread was stopped, not the leader");
	if (r == 0 && w.nthreads == 1)
		tid_ok = w.threads[0].tid != pid;
	ok(tid_ok, "the stopped thread is not the leader");
	if (r == 0)
		ls_world_resume(&w);
	ls_world_release(&w);
	close(p[1]);	/* the thread's read ends, the process exits */
	ok(waitpid(pid, &status, 0) == pid && WIFEXITED(status),
	   "it ran on and exited after the resume");
}

static void test_thread_id_and_job_stop(void)
{
	struct ls_world w;
	struct target t;
	char err[256] = "", line[128];
	int r, status, total;
	pid_t tid = 0;

	if (start_target(&t)) {
		ok(0, "target started");
		return;
	}
	r = ls_world_stop(t.pid, NULL, &w, err, sizeof(err));
	if (!r) {
		size_t i;

		for (i = 0; i < w.nthreads && !tid; i++)
			if (w.threads[i].tid != t.pid)
				tid = w.threads[i].tid;
		ls_world_resume(&w);
		ls_world_release(&w);
	}
	r = ls_world_stop(tid, NULL, &w, err, sizeof(err));
	ok(r == -ESRCH && strstr(err, "is a thread of process"),
	   "a thread id is refused: '%s'", err);

	kill(t.pid, SIGSTOP);
	waitpid(t.pid, &status, WUNTRACED);
	err[0] = 0;
	r = ls_world_stop(t.pid, NULL, &w, err, sizeof(err));
	ok(r == 0, "a job-control stopped process can be stopped (%s)", err);
	if (!r) {
		ls_world_resume(&w);
		ls_world_release(&w);
	}
	/* Let the kernel settle the group stop again. */
	usleep(20000);
	threads_not_traced_stop(t.pid, &total);
	{
		char cmd[96], st[8] = "";
		FILE *p;

		snprintf(cmd, sizeof(cmd), "sed 's/.*) //; s/ .*//' /proc/%d/stat", (int)t.pid);
		p = popen(cmd, "r");
		if (p && !fgets(st, sizeof(st), p))
			st[0] = 0;
		if (p)
			pclose(p);
		ok(st[0] == 'T', "it is still stopped after the resume (state %c)", st[0]);
	}
	kill(t.pid, SIGCONT);
	if (write(t.to, "n", 1) == 1)
		read_line(t.from, line, sizeof(line));
	ok(!strcmp(line, "0 0\n"), "after SIGCONT it answers: %s", line);
	kill(t.pid, SIGKILL);
	waitpid(t.pid, &status, 0);
	close(t.to);
	close(t.from);
}

static void test_second_tracer(void)
{
	struct ls_world w;
	struct target t;
	char err[256] = "", want[64];
	int go[2], done[2], status, r;
	pid_t helper;
	char c;

	if (start_target(&t) || pipe(go) || pipe(done)) {
		ok(0, "target started");
		return;
	}
	helper = fork();
	if (helper == 0) {
		int seized = !ptrace(PTRACE_SEIZE, t.pid, NULL, NULL);

		if (write(go[1], seized ? "y" : "n", 1) != 1 ||
		    read(done[0], &c, 1) != 1)
			_exit(1);
		_exit(0);	/* exiting lets the target go */
	}
	ok(read(go[0], &c, 1) == 1 && c == 'y', "the helper traces the target");
	r = ls_world_stop(t.pid, NULL, &w, err, sizeof(err));
	snprintf(want, sizeof(want), "already traced by pid %d", (int)helper);
	ok(r == -EBUSY && strstr(err, want), "a second tracer: -EBUSY, '%s'", err);
	if (write(done[1], "x", 1) != 1)
		ok(0, "helper released");
	waitpid(helper, &status, 0);
	err[0] = 0;
	r = ls_world_stop(t.pid, NULL, &w, err, sizeof(err));
	ok(r == 0, "once the helper is gone, stopping works (%s)", err);
	if (!r)
		ls_world_resume(&w);
	ls_world_release(&w);
	kill(t.pid, SIGKILL);
	waitpid(t.pid, &status, 0);
	close(t.to);
	close(t.from);
	close(go[0]); close(go[1]); close(done[0]); close(done[1]);
}

/* From a process of another user, without privileges: -EPERM, the owner. */
static void test_other_user(void)
{
	struct target t;
	char err[256] = "";
	int res[2], status;
	pid_t helper;
	ssize_t n;

	if (geteuid() != 0) {
		printf("ok %d - # SKIP needs root to become another user\n", ++tap_n);
		return;
	}
	if (start_target(&t) || pipe(res)) {
		ok(0, "target started");
		return;
	}
	helper = fork();
	if (helper == 0) {
		struct ls_world w;
		int r;

		if (setgid(65534) || setuid(65534))
			_exit(1);
		r = ls_world_stop(t.pid, NULL, &w, err, sizeof(err));
		dprintf(res[1], "%d %s", r, err);
		_exit(0);
	}
	close(res[1]);
	n = read(res[0], err, sizeof(err) - 1);
	err[n > 0 ? n : 0] = 0;
	waitpid(helper, &status, 0);
	ok(atoi(err) == -EPERM && strstr(err, "belongs to uid 0"),
	   "another user's process: -EPERM, '%s'", err);
	kill(t.pid, SIGKILL);
	waitpid(t.pid, &status, 0);
	close(t.to);
	close(t.from);
	close(res[0]);
}

/* The reason for each refusal, from the file's text and errno as the
 * kernel gives them (this kernel may have no Yama to set). */
static void test_denied_reasons(void)
{
	static const struct {
		const char *yama;	/* the file's text; NULL: no Yama */
		int e;
		uid_t euid;
		long owner;
		const char *want[2];	/* substrings the line holds */
	} cases[] = {
		{ "1\n", EPERM, 1000, 1000, { "ptrace_scope is 1 (only a parent",
		  "sysctl kernel.yama.ptrace_scope=0" } },
		{ "1\n", EPERM, 0, 1000, { "ptrace_scope is 1", "run as root" } },
		{ "2\n", EPERM, 1000, 1000, { "ptrace_scope is 2 (only root",
		  "CAP_SYS_PTRACE" } },
		{ "3\n", EPERM, 0, 0, { "ptrace_scope is 3 (no process may trace, "
		  "not even root, until reboot)", "`leakscope run`" } },
		{ "3", EPERM, 1000, 1000, { "ptrace_scope is 3", "leakscope run" } },
		/* another user's process: the owner is the reason whatever Yama */
		{ "1\n", EPERM, 1000, 0, { "belongs to uid 0, not to you", NULL } },
		{ "0\n", EPERM, 1000, 1000, { "operation not permitted", NULL } },
		{ NULL, EPERM, 1000, 1000, { "operation not permitted", NULL } },
		{ "", EPERM, 1000, 1000, { "operation not permitted", NULL } },
		{ "7\n", EPERM, 1000, 1000, { "operation not permitted", NULL } },
		{ "1x\n", EPERM, 1000, 1000, { "operation not permitted", NULL } },
		{ "1\n", EINVAL, 1000, 1000, { "cannot trace pid 1: Invalid argument",
		  NULL } },
	};
	char err[256];
	size_t i, k;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		int good = 1;

		ls_world_denied_reason(1, cases[i].e, cases[i].yama, cases[i].euid,
				       cases[i].owner, err, sizeof(err));
		for (k = 0; k < 2; k++)
			if (cases[i].want[k] && !strstr(err, cases[i].want[k]))
				good = 0;
		/* Yama is named exactly when it is the reason */
		if (!strstr(cases[i].want[0], "ptrace_scope") &&
		    strstr(err, "ptrace_scope"))
			good = 0;
		ok(good && !strchr(err, '\n') &&
		   !strncmp(err, "cannot trace pid 1: ", 20),
		   "yama %.1s errno %d euid %u owner %ld: %s",
		   cases[i].yama ? cases[i].yama : "absent", cases[i].e,
		   (unsigned)cases[i].euid, cases[i].owner, err);
	}
}

static int ptrace_usable(void)
{
	pid_t pid = fork();
	int status, usable;

	if (pid == 0) {
		pause();
		_exit(0);
	}
	usable = !ptrace(PTRACE_SEIZE, pid, NULL, NULL);
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	return usable;
}

int main(void)
{
	if (!ptrace_usable()) {
		printf("1..0 # SKIP ptrace is not permitted here\n");
		return 0;
	}
	test_denied_reasons();
	test_dead_and_zombie();
	test_stop_resume();
	test_killed_during_stop();
	test_zombie_leader();
	test_thread_id_and_job_stop();
	test_second_tracer();
	test_other_user();
	return tap_done();
}
