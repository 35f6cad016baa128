/*
 * inject.c - loading the agent into a running process (inject.h).
 */
#include <dlfcn.h>
#include <elf.h>
#include <linux/magic.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "../common/attach.h"
#include "../common/contract.h"
#include "../common/loaderlock.h"
#include "client.h"
#include "container.h"
#include "elfsym.h"
#include "inject.h"
#include "procinfo.h"
#include "ptrace.h"

#define DEFAULT_TIMEOUT_MS 5000
#define CALL_TIMEOUT_MS 10000
#define NBP 4
#define SCRATCH 4096		/* below the red zone: strings and results */

struct mod {
	char path[4096];	/* as the target sees it */
	uint64_t base;		/* start of its mapping at file offset 0 */
	uint64_t first_end;	/* ... and its end */
	uint64_t end;		/* end of its last mapping */
};

/* The agent's mapping when it came as a memfd (deliver_memfd). */
#define AGENT_MEMFD "/memfd:libleakscope.so (deleted)"

struct thr {
	pid_t tid;
	int sig;		/* to deliver when let go */
	uint64_t later;		/* more signals kept during our calls,
				   sent again once it is let go */
	int stopped;
	long nr0;		/* system call it was in at stop 1, or -1 */
	uint64_t rip0;
};

struct ctx {
	pid_t pid;
	int mem;		/* /proc/PID/mem */
	int rootfd;		/* /proc/PID/root (O_PATH): its files */
	struct mod libc, ldso, agent;
	char musl[256];		/* a musl libc or loader mapped, or "" */
	uint64_t bp[NBP];
	uint8_t bp_byte[NBP];
	int bp_in;
	uint64_t r_debug;
	uint64_t ar_addr;	/* the agent's struct ls_attach_result */
	struct thr *t;
	size_t n, cap;
	pid_t safe;
	struct user_regs_struct saved;	/* the safe thread's own registers */
	char *err;
	size_t errlen;
};

/* The signal that interrupted the attach (worker side), 0 if none. */
static volatile sig_atomic_t interrupted;

static int interrupted_fail(struct ctx *c);

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void nap(void)
{
	struct timespec ts = { 0, 50000 };

	nanosleep(&ts, NULL);
}

#define FAIL(c, code, ...) (snprintf((c)->err, (c)->errlen, __VA_ARGS__), (code))

/* --- the target's memory and files ---------------------------------------- */

static int mem_read(struct ctx *c, uint64_t addr, void *buf, size_t len)
{
	return pread(c->mem, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -EIO;
}

static int mem_write(struct ctx *c, uint64_t addr, const void *buf, size_t len)
{
	return pwrite(c->mem, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -EIO;
}

static int read_string(struct ctx *c, uint64_t addr, char *buf, size_t cap)
{
	size_t i;

	for (i = 0; i + 1 < cap; i++)
		if (mem_read(c, addr + i, &buf[i], 1) || !buf[i])
			break;
	buf[i] = 0;
	return 0;
}

/*
 * path as the target sees it, opened for reading in its root by fd
 * (openat2 RESOLVE_IN_ROOT: its symlinks resolve inside its root, never
 * to a file of ours) and named "/proc/self/fd/N" in out; when path does
 * not resolve there and m is its module (a chroot's /proc/PID/maps, read
 * from outside it, names our paths), the file of m's mapping in
 * /proc/PID/map_files.  The fd (the caller closes it), or -1 with out "".
 */
static int target_file(const struct ctx *c, const struct mod *m,
		       const char *path, char *out, size_t cap)
{
	char mf[96];
	int fd = ls_container_open(c->rootfd, path, O_RDONLY);

	if (fd < 0 && m && m->base) {
		snprintf(mf, sizeof(mf), "/proc/%d/map_files/%llx-%llx",
			 (int)c->pid, (unsigned long long)m->base,
			 (unsigned long long)m->first_end);
		fd = open(mf, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0) {
		out[0] = 0;
		return -1;
	}
	snprintf(out, cap, "/proc/self/fd/%d", fd);
	return fd;
}

static const char *base_name(const char *p)
{
	const char *s = strrchr(p, '/');

	return s ? s + 1 : p;
}

static void note_mapping(struct ctx *c, uint64_t start, uint64_t end,
			 uint64_t off, const char *path)
{
	const char *b = base_name(path);
	struct mod *m = NULL;

	if (c->ldso.base && !strcmp(path, c->ldso.path) && end > c->ldso.end)
		c->ldso.end = end;
	if (off)
		return;
	if (strstr(path, "musl") && (!strncmp(b, "ld-", 3) ||
				     !strncmp(b, "libc", 4)) && !c->musl[0])
		snprintf(c->musl, sizeof(c->musl), "%s", path);
	if (!strncmp(b, "libc.so", 7) || !strncmp(b, "libc-2.", 7))
		m = &c->libc;
	else if (!strncmp(b, "ld-linux-x86-64.so", 18) || !strncmp(b, "ld-2.", 5))
		m = &c->ldso;
	else if (!strcmp(b, "libleakscope.so") || !strcmp(path, AGENT_MEMFD))
		m = &c->agent;
	if (m && !m->base && strlen(path) < sizeof(m->path)) {
		m->base = start;
		m->first_end = end;
		strcpy(m->path, path);
	}
}

static int read_maps(struct ctx *c)
{
	char path[64], line[4096 + 256];
	FILE *fp;

	memset(&c->libc, 0, sizeof(c->libc));
	memset(&c->ldso, 0, sizeof(c->ldso));
	memset(&c->agent, 0, sizeof(c->agent));
	c->musl[0] = 0;
	snprintf(path, sizeof(path), "/proc/%d/maps", (int)c->pid);
	fp = fopen(path, "re");
	if (!fp)
		return FAIL(c, -ESRCH, "pid %d exited", (int)c->pid);
	while (fgets(line, sizeof(line), fp)) {
		unsigned long long lo, hi, off;
		int pos = 0;

		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%llx-%llx %*s %llx %*s %*s %n", &lo, &hi, &off, &pos) < 3 ||
		    !pos || line[pos] != '/')
			continue;
		note_mapping(c, lo, hi, off, line + pos);
	}
	fclose(fp);
	return 0;
}

/* Address of a dynamic symbol of a mapped module. */
/* Where name lies in the target (and its size when size is not NULL):
 * 0 or -ENOENT, no message. */
static int sym_at(struct ctx *c, const struct mod *m, const char *local_path,
		  const char *name, uint64_t *addr, uint64_t *size)
{
	char file[4200];
	struct ls_elf_kind k;
	uint64_t v;
	int fd = -1, r;

	if (local_path)
		snprintf(file, sizeof(file), "%s", local_path);
	else
		fd = target_file(c, m, m->path, file, sizeof(file));
	r = ls_elf_kind(file, &k) || ls_elf_dynsym_sized(file, name, &v, size);
	if (fd >= 0)
		close(fd);
	if (r)
		return -ENOENT;
	*addr = m->base - k.first_load + v;
	return 0;
}

static int sym(struct ctx *c, const struct mod *m, const char *local_path,
	       const char *name, uint64_t *addr)
{
	if (sym_at(c, m, local_path, name, addr, NULL))
		return FAIL(c, -ENOENT, "%s not found in %s", name, m->path);
	return 0;
}

/*
 * Where the program's calls of name go: its first definition in the
 * loader's list of objects (the global scope's order), read from the
 * target's link_map chain.  jemalloc's malloc in a program linked with
 * it, else glibc's.
 */
static int global_sym(struct ctx *c, const char *name, uint64_t *addr)
{
	struct { uint64_t l_addr, l_name, l_ld, l_next, l_prev; } lm;
	uint64_t at = 0, v;
	char lname[4096], file[4200];
	int n = 0, fd, r;

	if (mem_read(c, c->r_debug + 8, &at, 8))
		return FAIL(c, -EIO, "cannot read the loader's state in pid %d", (int)c->pid);
	for (; at && n < 4096; at = lm.l_next, n++) {
		if (mem_read(c, at, &lm, sizeof(lm)))
			break;
		read_string(c, lm.l_name, lname, sizeof(lname));
		fd = -1;
		if (lname[0] == '/')
			fd = target_file(c, NULL, lname, file, sizeof(file));
		else if (!lname[0] && n == 0)
			snprintf(file, sizeof(file), "/proc/%d/exe", (int)c->pid);
		else
			continue;	/* the vDSO, or a name we cannot open */
		r = ls_elf_dynsym(file, name, &v);
		if (fd >= 0)
			close(fd);
		if (!r) {
			*addr = lm.l_addr + v;
			return 0;
		}
	}
	return sym(c, &c->libc, NULL, name, addr);
}

/* --- checks that need no stop ----------------------------------------------- */

static int preflight(struct ctx *c)
{
	char exe[64];
	struct ls_elf_kind k;
	int r;

	snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)c->pid);
	r = ls_elf_kind(exe, &k);
	if (r == -ENOENT || r == -ESRCH)
		return FAIL(c, -ESRCH, "no process with pid %d", (int)c->pid);
	if (r == -EACCES || r == -EPERM)
		return FAIL(c, -EPERM, "cannot read the program of pid %d: %s "
			    "(%s)", (int)c->pid, strerror(-r),
			    ls_container_userns_root() ? "we are root of a user "
			    "namespace, not the host's root: only processes of "
			    "this namespace can be attached to" : "another "
			    "user's process? run as its owner or root");
	if (r || !k.is_elf)
		return FAIL(c, -ENOEXEC, "pid %d does not run an ELF program", (int)c->pid);
	if (!k.is_64)
		return FAIL(c, -ENOEXEC, "pid %d is a 32-bit program and the agent is 64-bit", (int)c->pid);
	if (!k.is_x86_64)
		return FAIL(c, -ENOEXEC, "pid %d is not an x86-64 program", (int)c->pid);
	if (!k.has_interp)
		return FAIL(c, -ENOEXEC, "pid %d is statically linked: it has no "
			    "dynamic loader to load the agent with", (int)c->pid);
	if (ls_proc_state(c->pid, c->pid) == 'T')
		return FAIL(c, -EAGAIN, "pid %d is stopped (SIGSTOP or SIGTSTP): "
			    "attaching would have to run it; 'kill -CONT %d' first",
			    (int)c->pid, (int)c->pid);
	r = read_maps(c);
	if (r)
		return r;
	/* The agent is built for glibc: its libc.so.6 and loader (a musl
	 * process has neither; it could only fail, or worse). */
	if (c->musl[0])
		return FAIL(c, -ENOEXEC, "pid %d runs on musl libc (%s), not "
			    "glibc: the agent cannot load into it", (int)c->pid,
			    c->musl);
	if (!c->ldso.base)
		return FAIL(c, -ENOEXEC, "pid %d has no dynamic loader mapped", (int)c->pid);
	if (!c->libc.base)
		return FAIL(c, -ENOEXEC, "pid %d has no glibc mapped", (int)c->pid);
	if (ls_proc_preloaded(c->pid))
		return FAIL(c, -EEXIST, "the agent is already in pid %d (LD_PRELOAD, "
			    "e.g. under leakscope run): use 'leakscope report %d'",
			    (int)c->pid, (int)c->pid);
	return 0;
}

/* --- threads under ptrace ------------------------------------------------------ */

static struct thr *thr_find(struct ctx *c, pid_t tid)
{
	size_t i;

	for (i = 0; i < c->n; i++)
		if (c->t[i].tid == tid)
			return &c->t[i];
	return NULL;
}

static struct thr *thr_add(struct ctx *c, pid_t tid)
{
	if (c->n == c->cap) {
		size_t cap = c->cap ? c->cap * 2 : 32;
		struct thr *t = realloc(c->t, cap * sizeof(*t));

		if (!t)
			return NULL;
		c->t = t;
		c->cap = cap;
	}
	memset(&c->t[c->n], 0, sizeof(c->t[0]));
	c->t[c->n].tid = tid;
	c->t[c->n].nr0 = -1;
	return &c->t[c->n++];
}

static void thr_drop(struct ctx *c, pid_t tid)
{
	struct thr *t = thr_find(c, tid);

	if (t)
		*t = c->t[--c->n];
}

static int regs_get(pid_t tid, struct user_regs_struct *r)
{
	return ptrace(PTRACE_GETREGS, tid, NULL, r) ? -errno : 0;
}

static int regs_set(pid_t tid, const struct user_regs_struct *r)
{
	return ptrace(PTRACE_SETREGS, tid, NULL, r) ? -errno : 0;
}

static void cont(struct thr *t)
{
	ptrace(PTRACE_CONT, t->tid, NULL, (void *)(long)t->sig);
	t->sig = 0;
	t->stopped = 0;
}

/* --- breakpoints --------------------------------------------------------------- */

static int bp_set(struct ctx *c, int in)
{
	int i;

	for (i = 0; i < NBP; i++) {
		uint8_t b = in ? 0xcc : c->bp_byte[i];

		if (mem_write(c, c->bp[i], &b, 1))
			return FAIL(c, -EIO, "cannot write into pid %d", (int)c->pid);
	}
	c->bp_in = in;
	return 0;
}

/* Write the original bytes into a forked child's copy of our memory. */
static void bp_clear_in(struct ctx *c, pid_t child)
{
	char path[64];
	int fd, i;

	snprintf(path, sizeof(path), "/proc/%d/mem", (int)child);
	fd = open(path, O_RDWR | O_CLOEXEC);
	if (fd < 0)
		return;
	for (i = 0; i < NBP; i++)
		if (pwrite(fd, &c->bp_byte[i], 1, (off_t)c->bp[i]) != 1)
			break;
	close(fd);
}

static int bp_index(const struct ctx *c, uint64_t rip)
{
	int i;

	for (i = 0; i < NBP; i++)
		if (rip == c->bp[i] + 1)
			return i;
	return -1;
}

/* --- events -------------------------------------------------------------------- */

enum ev {
	IEV_NONE,	/* handled, nothing to report */
	IEV_TRAP,	/* stopped at a breakpoint; regs in *r */
	IEV_STOPPED,	/* stopped for us (interrupt): left stopped */
	IEV_GONE,	/* the whole process exited or exec'd */
};

/* A forked child starts traced: clean its copy of the breakpoints, let go. */
static void release_child(struct ctx *c, pid_t child, int vfork)
{
	int st;

	while (waitpid(child, &st, __WALL) < 0 && errno == EINTR)
		;
	if (!vfork)
		bp_clear_in(c, child);
	ptrace(PTRACE_DETACH, child, NULL, NULL);
}

static enum ev on_event(struct ctx *c, struct thr *t, int status)
{
	int ev = status >> 16;
	unsigned long msg = 0;

	switch (ev) {
	case PTRACE_EVENT_CLONE:
		ptrace(PTRACE_GETEVENTMSG, t->tid, NULL, &msg);
		if (!thr_find(c, (pid_t)msg))
			thr_add(c, (pid_t)msg);	/* reports its own stop */
		return IEV_NONE;
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
		ptrace(PTRACE_GETEVENTMSG, t->tid, NULL, &msg);
		/* A vfork child shares our memory: no breakpoint may stay
		 * while it runs untraced. */
		if (ev == PTRACE_EVENT_VFORK && c->bp_in)
			bp_set(c, 0);
		release_child(c, (pid_t)msg, ev == PTRACE_EVENT_VFORK);
		return IEV_NONE;
	case PTRACE_EVENT_VFORK_DONE:
		if (!c->bp_in)
			bp_set(c, 1);
		return IEV_NONE;
	case PTRACE_EVENT_EXEC:
		return IEV_GONE;
	case PTRACE_EVENT_STOP:
		return IEV_STOPPED;
	}
	return IEV_NONE;
}

/*
 * One wait status of a traced thread.  Threads are left stopped only for
 * IEV_TRAP and IEV_STOPPED; everything else is continued here.
 */
static enum ev on_status(struct ctx *c, pid_t tid, int status,
			 struct user_regs_struct *r)
{
	struct thr *t = thr_find(c, tid);
	enum ev e;

	if (WIFEXITED(status) || WIFSIGNALED(status)) {
		thr_drop(c, tid);
		return tid == c->pid || !c->n ? IEV_GONE : IEV_NONE;
	}
	if (!WIFSTOPPED(status))
		return IEV_NONE;
	if (!t && !(t = thr_add(c, tid)))
		return IEV_NONE;
	t->stopped = 1;
	if (status >> 16) {
		e = on_event(c, t, status);
		if (e == IEV_STOPPED || e == IEV_GONE)
			return e;
		cont(t);
		return IEV_NONE;
	}
	if (WSTOPSIG(status) == SIGTRAP && !regs_get(tid, r) &&
	    bp_index(c, r->rip) >= 0)
		return IEV_TRAP;
	t->sig = WSTOPSIG(status);	/* the program's own signal */
	cont(t);
	return IEV_NONE;
}

/* A status of any traced thread before deadline; -EINTR as soon as the
 * attach is interrupted when that may end the wait. */
static int wait_any(pid_t *tid, int *status, uint64_t deadline,
		    int interruptible)
{
	for (;;) {
		pid_t r = waitpid(-1, status, __WALL | WNOHANG);

		if (r > 0) {
			*tid = r;
			return 0;
		}
		if (r < 0 && errno != EINTR)
			return -errno;
		if (interruptible && interrupted)
			return -EINTR;
		if (now_ns() > deadline)
			return -ETIMEDOUT;
		nap();
	}
}

/* --- the safe point ------------------------------------------------------------ */

/* Is no dlopen or dlclose under way?  (r_state of struct r_debug.) */
static int loader_consistent(struct ctx *c)
{
	int32_t state = -1;

	return !mem_read(c, c->r_debug + 24, &state, sizeof(state)) && state == 0;
}

/* Step a thread over a breakpoint it must not stop at. */
static int step_over(struct ctx *c, struct thr *t, struct user_regs_struct *r)
{
	int st, i = bp_index(c, r->rip);

	r->rip -= 1;
	if (regs_set(t->tid, r) || mem_write(c, c->bp[i], &c->bp_byte[i], 1))
		return -EIO;
	ptrace(PTRACE_SINGLESTEP, t->tid, NULL, NULL);
	while (waitpid(t->tid, &st, __WALL) < 0 && errno == EINTR)
		;
	mem_write(c, c->bp[i], "\xcc", 1);
	if (WIFSTOPPED(st) && WSTOPSIG(st) != SIGTRAP)
		t->sig = WSTOPSIG(st);
	if (WIFSTOPPED(st))
		cont(t);
	else
		thr_drop(c, t->tid);
	return 0;
}

/* Stop every thread but the safe one; a thread at a breakpoint is rewound. */
static int stop_others(struct ctx *c, uint64_t deadline)
{
	size_t i, waiting;

	for (i = 0; i < c->n; i++)
		if (c->t[i].tid != c->safe && !c->t[i].stopped)
			ptrace(PTRACE_INTERRUPT, c->t[i].tid, NULL, NULL);
	do {
		struct user_regs_struct r;
		pid_t tid;
		int st;
		enum ev e;

		for (waiting = 0, i = 0; i < c->n; i++)
			waiting += c->t[i].tid != c->safe && !c->t[i].stopped;
		if (!waiting)
			return 0;
		if (wait_any(&tid, &st, deadline, 0))
			return FAIL(c, -ETIMEDOUT, "threads of pid %d did not stop", (int)c->pid);
		e = on_status(c, tid, st, &r);
		if (e == IEV_GONE)
			return FAIL(c, -ESRCH, "pid %d exited during the attach", (int)c->pid);
		if (e == IEV_TRAP) {	/* also reached a breakpoint: undo */
			r.rip -= 1;
			regs_set(tid, &r);
		}
	} while (1);
}

static const struct {
	long nr;
	const char *name;
} waits[] = {
	{ SYS_read, "read" }, { SYS_poll, "poll" }, { SYS_select, "select" },
	{ SYS_pause, "pause" }, { SYS_nanosleep, "nanosleep" },
	{ SYS_accept, "accept" }, { SYS_accept4, "accept4" },
	{ SYS_recvfrom, "recvfrom" }, { SYS_recvmsg, "recvmsg" },
	{ SYS_wait4, "wait4" }, { SYS_waitid, "waitid" },
	{ SYS_rt_sigsuspend, "rt_sigsuspend" },
	{ SYS_rt_sigtimedwait, "rt_sigtimedwait" },
	{ SYS_clock_nanosleep, "clock_nanosleep" }, { SYS_pselect6, "pselect6" },
	{ SYS_ppoll, "ppoll" }, { SYS_epoll_wait, "epoll_wait" },
	{ SYS_epoll_pwait, "epoll_pwait" },
};

static const char *waiting_call(long nr)
{
	size_t i;

	for (i = 0; i < sizeof(waits) / sizeof(waits[0]); i++)
		if (waits[i].nr == nr)
			return waits[i].name;
	return NULL;
}

/*
 * No breakpoint was reached: a thread that has been blocked in the same
 * waiting system call since stop 1 is not inside the allocator or the
 * loader either (docs/ATTACH.md).
 */
static int pick_blocked(struct ctx *c, struct ls_inject_result *res)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		struct thr *t = &c->t[i];
		struct user_regs_struct r;
		const char *name;

		/* ld.so's own read() is the loader at work (lock held). */
		if (!t->stopped || regs_get(t->tid, &r) || t->nr0 < 0 ||
		    (long)r.orig_rax != t->nr0 || r.rip != t->rip0 ||
		    !(name = waiting_call(t->nr0)) ||
		    (r.rip >= c->ldso.base && r.rip < c->ldso.end))
			continue;
		c->safe = t->tid;
		c->saved = r;
		snprintf(res->safe_point, sizeof(res->safe_point),
			 "thread %d blocked in %s()", (int)t->tid, name);
		return 0;
	}
	return -ENOENT;
}

/* Wait for a breakpoint hit where the loader is idle. */
static int wait_trap(struct ctx *c, uint64_t deadline, struct ls_inject_result *res)
{
	for (;;) {
		struct user_regs_struct r;
		pid_t tid;
		int st, w = wait_any(&tid, &st, deadline, 1);
		enum ev e;

		if (w == -ETIMEDOUT || w == -EINTR)
			return w;
		if (w)
			return FAIL(c, -ESRCH, "pid %d exited during the attach", (int)c->pid);
		e = on_status(c, tid, st, &r);
		if (e == IEV_GONE)
			return FAIL(c, -ESRCH, "pid %d exited (or ran another program) "
				    "during the attach", (int)c->pid);
		if (e == IEV_STOPPED) {
			cont(thr_find(c, tid));
			continue;
		}
		if (e != IEV_TRAP)
			continue;
		if (!loader_consistent(c)) {
			step_over(c, thr_find(c, tid), &r);
			continue;
		}
		c->safe = tid;
		r.rip -= 1;
		c->saved = r;
		snprintf(res->safe_point, sizeof(res->safe_point),
			 "thread %d at a call of %s", (int)tid,
			 (const char *[]){ "malloc", "free", "calloc", "realloc" }
			 [bp_index(c, r.rip + 1)]);
		return 0;
	}
}

/* --- calls in the target ------------------------------------------------------- */

/*
 * Call fn(a0, a1) on the safe thread: arguments in registers, a return
 * address of 0, so that returning faults and stops the thread for us.
 */
static int call(struct ctx *c, uint64_t fn, uint64_t a0, uint64_t a1,
		uint64_t *ret)
{
	struct user_regs_struct r = c->saved;
	uint64_t deadline = now_ns() + CALL_TIMEOUT_MS * 1000000ull, zero = 0;
	struct thr *t = thr_find(c, c->safe);
	int st;

	r.rsp = ((c->saved.rsp - 128 - SCRATCH) & ~0xfull) - 8;
	r.rip = fn;
	r.rdi = a0;
	r.rsi = a1;
	r.rax = 0;
	r.orig_rax = (uint64_t)-1;	/* no system call restart */
	if (mem_write(c, r.rsp, &zero, 8) || regs_set(c->safe, &r))
		return FAIL(c, -EIO, "cannot set up a call in pid %d", (int)c->pid);
	ptrace(PTRACE_CONT, c->safe, NULL, NULL);
	for (;;) {
		pid_t got = waitpid(c->safe, &st, __WALL | WNOHANG);

		if (got < 0 && errno != EINTR)
			return FAIL(c, -ESRCH, "pid %d exited during the attach", (int)c->pid);
		if (got <= 0) {
			if (now_ns() > deadline)
				return FAIL(c, -EIO, "a call in pid %d did not return "
					    "within %d s", (int)c->pid, CALL_TIMEOUT_MS / 1000);
			nap();
			continue;
		}
		if (WIFEXITED(st) || WIFSIGNALED(st))
			return FAIL(c, -ESRCH, "pid %d exited during the attach", (int)c->pid);
		if (WSTOPSIG(st) == SIGSEGV && (st >> 16) == 0 &&
		    !regs_get(c->safe, &r) && r.rip == 0)
			break;
		if ((st >> 16) == 0 && WSTOPSIG(st) != SIGSEGV && t && !t->sig)
			t->sig = WSTOPSIG(st);	/* kept for later */
		else if ((st >> 16) == 0 && WSTOPSIG(st) != SIGSEGV && t)
			t->later |= 1ull << (WSTOPSIG(st) - 1);
		else if ((st >> 16) == 0 && WSTOPSIG(st) == SIGSEGV)
			return FAIL(c, -EIO, "a call in pid %d faulted at %#llx",
				    (int)c->pid, (unsigned long long)r.rip);
		ptrace(PTRACE_CONT, c->safe, NULL, NULL);
	}
	*ret = r.rax;
	return 0;
}

/* Copy a string into the safe thread's scratch area; its address. */
static uint64_t put_string(struct ctx *c, const char *s, size_t at)
{
	uint64_t addr = ((c->saved.rsp - 128 - SCRATCH) & ~0xfull) + at;

	return mem_write(c, addr, s, strlen(s) + 1) ? 0 : addr;
}

/* --- the agent's file as the target sees it ----------------------------------- */

static int same_file(const char *a, const char *b)
{
	struct stat sa, sb;

	return !stat(a, &sa) && !stat(b, &sb) && sa.st_dev == sb.st_dev &&
	       sa.st_ino == sb.st_ino;
}

/*
 * The target opens the agent in its own mount namespace: our path when
 * it names the same file there (what it resolves there is the target's
 * own business: it loads into itself nothing it could not load anyway);
 * else out is left empty and the agent is delivered as a memfd
 * (deliver_memfd): nothing is created in the target's file system, whose
 * names we would have to follow.
 */
static void agent_path(struct ctx *c, const char *agent, char *out, size_t cap)
{
	char there[4200];
	int fd = target_file(c, NULL, agent, there, sizeof(there));

	out[0] = 0;
	if (fd >= 0 && same_file(agent, there))
		snprintf(out, cap, "%s", agent);
	if (fd >= 0)
		close(fd);
}

/* Copy the file at path into fd; 0 or -errno. */
static int copy_into(int fd, const char *path)
{
	char buf[65536];
	int in = open(path, O_RDONLY | O_CLOEXEC), r = 0;
	ssize_t n;

	if (in < 0)
		return -errno;
	while ((n = read(in, buf, sizeof(buf))) > 0)
		if (write(fd, buf, (size_t)n) != n) {
			r = -EIO;
			break;
		}
	if (n < 0)
		r = -errno;
	close(in);
	return r;
}

/*
 * Is fd an empty, unlinked file of shmem (what memfd_create made)?  The
 * target's other threads run meanwhile and could put another open file
 * at that number: one whose writes are checked against the writer's
 * credentials (some files of /proc, /sys or cgroupfs) must not be written
 * by us.  Into a memfd of its own, we write nothing it could not.
 */
static int fresh_memfd(int fd)
{
	struct statfs fs;
	struct stat st;

	return !fstat(fd, &st) && S_ISREG(st.st_mode) && !st.st_nlink &&
	       !st.st_size && !fstatfs(fd, &fs) &&
	       (fs.f_type == TMPFS_MAGIC || fs.f_type == HUGETLBFS_MAGIC);
}

#ifndef MFD_EXEC
#define MFD_EXEC 0x0010U
#endif

/*
 * The agent as a memfd of the target's: the safe thread calls
 * memfd_create("libleakscope.so"), we take a duplicate of that very
 * descriptor (pidfd_getfd: the target's own open file, with the access
 * it opened it with, nothing reopened by name) and write the agent into
 * it.  out gets "/proc/self/fd/N" for the target's dlopen, *fdn the
 * target's descriptor number, to close once loaded.
 */
static int deliver_memfd(struct ctx *c, const char *agent, char *out,
			 size_t cap, int *fdn)
{
	uint64_t fn, name, fd = (uint64_t)-1;
	int pidfd, local, r;

	if (sym(c, &c->libc, NULL, "memfd_create", &fn))
		return FAIL(c, -ENOEXEC, "pid %d: its glibc has no memfd_create",
			    (int)c->pid);
	name = put_string(c, "libleakscope.so", 0);
	if (!name)
		return FAIL(c, -EIO, "cannot write into pid %d", (int)c->pid);
	/* MFD_EXEC where the kernel knows it (vm.memfd_noexec). */
	r = call(c, fn, name, MFD_CLOEXEC | MFD_EXEC, &fd);
	if (!r && (int)fd < 0)
		r = call(c, fn, name, MFD_CLOEXEC, &fd);
	if (r)
		return r;
	if ((int)fd < 0)
		return FAIL(c, -EIO, "pid %d could not create a memfd for the "
			    "agent", (int)c->pid);
	*fdn = (int)fd;
	pidfd = (int)syscall(SYS_pidfd_open, c->pid, 0);
	local = pidfd < 0 ? -1 : (int)syscall(SYS_pidfd_getfd, pidfd, *fdn, 0);
	r = local < 0 ? -errno : !fresh_memfd(local) ? -EBADF :
	    copy_into(local, agent);
	if (pidfd >= 0)
		close(pidfd);
	if (local >= 0)
		close(local);
	if (r)
		return FAIL(c, -EIO, "cannot write the agent into pid %d's "
			    "memfd: %s", (int)c->pid, strerror(-r));
	snprintf(out, cap, "/proc/self/fd/%d", *fdn);
	return 0;
}

/* --- the loader's lock --------------------------------------------------------- */

#define RTLD_GLOBAL_MAX 65536

/*
 * A thread other than the safe one that holds one of the loader's locks
 * (it is inside dlopen, dl_iterate_phdr or a library's constructor), or
 * 0.  They are the recursive mutexes in ld.so's _rtld_global (size bytes
 * at at, read into buf).  Any holder but the safe thread counts: the
 * agent's own reader (agent/dllock.c) looks for its thread instead.
 */
static pid_t loader_lock_holder(struct ctx *c, uint64_t at, size_t size,
				char *buf)
{
	size_t off;

	if (mem_read(c, at, buf, size))
		return 0;
	for (off = 0; off + sizeof(pthread_mutex_t) <= size;
	     off += _Alignof(pthread_mutex_t)) {
		pthread_mutex_t m;
		pid_t owner;

		memcpy(&m, buf + off, sizeof(m));
		owner = ls_loader_lock_owner(&m);
		if (owner && owner != c->safe)
			return owner;
	}
	return 0;
}

/*
 * The agent's dlopen would wait for a thread holding the loader's lock,
 * for ever if that thread never lets go, and a call given up midway
 * leaves the loader's per-thread state pointing into a dead frame.  So
 * it waits here instead, up to timeout_ms, before anything runs in the
 * target: giving up leaves the process as it was.  A loader whose
 * _rtld_global cannot be read (musl) is not waited for.
 */
static int wait_loader_lock(struct ctx *c, int timeout_ms)
{
	uint64_t at, size, end = now_ns() + (uint64_t)timeout_ms * 1000000u;
	pid_t owner;
	char *buf;

	if (c->musl[0] || sym_at(c, &c->ldso, NULL, "_rtld_global", &at, &size) ||
	    size < sizeof(pthread_mutex_t) || size > RTLD_GLOBAL_MAX ||
	    !(buf = malloc(size)))
		return 0;
	while ((owner = loader_lock_holder(c, at, size, buf))) {
		if (interrupted) {
			free(buf);
			return interrupted_fail(c);
		}
		if (now_ns() >= end) {
			free(buf);
			return FAIL(c, -EBUSY, "thread %d of pid %d holds the "
				    "loader's lock (inside dlopen, dl_iterate_phdr "
				    "or a library's constructor) and did not let go "
				    "within %.1f s: the agent cannot be loaded "
				    "before it does; nothing in the process was "
				    "changed", (int)owner, (int)c->pid,
				    timeout_ms / 1000.0);
		}
		nap();
	}
	free(buf);
	return 0;
}

/* dlopen the agent in the target: at path (ours, the same file there),
 * or, when path is empty, delivered as a memfd (local: our agent). */
static int load_agent(struct ctx *c, const char *path_there, const char *local,
		      int timeout_ms, struct ls_inject_result *res)
{
	uint64_t dlopen_fn, dlerror_fn, close_fn, handle = 0, msg = 0, path, ign;
	char why[256], memfd_path[64];
	int r, fdn = -1;

	res->reused = c->agent.base != 0;
	if (res->reused)
		return 0;
	if ((r = wait_loader_lock(c, timeout_ms)))
		return r;
	if ((r = sym(c, &c->libc, NULL, "dlopen", &dlopen_fn)) ||
	    (r = sym(c, &c->libc, NULL, "dlerror", &dlerror_fn)) ||
	    (r = sym(c, &c->libc, NULL, "close", &close_fn)))
		return FAIL(c, -ENOEXEC, "pid %d: its glibc is older than 2.34 "
			    "(no dlopen in libc)", (int)c->pid);
	if (!path_there[0]) {
		r = deliver_memfd(c, local, memfd_path, sizeof(memfd_path), &fdn);
		path_there = memfd_path;
	}
	path = r ? 0 : put_string(c, path_there, 0);
	if (!r && !path)
		r = FAIL(c, -EIO, "cannot write into pid %d", (int)c->pid);
	if (!r)
		r = call(c, dlopen_fn, path, RTLD_NOW | RTLD_LOCAL, &handle);
	/* Loaded or not, the memfd's descriptor goes (the mapping keeps
	 * the file). */
	if (fdn >= 0)
		call(c, close_fn, (uint64_t)fdn, 0, &ign);
	if (r)
		return r;
	if (!handle) {
		if (!call(c, dlerror_fn, 0, 0, &msg) && msg)
			read_string(c, msg, why, sizeof(why));
		else
			snprintf(why, sizeof(why), "no reason given");
		return FAIL(c, -EIO, "pid %d could not load the agent: %s", (int)c->pid, why);
	}
	return read_maps(c);
}

/* The file of the agent loaded in the target, to read its symbols: its
 * path there, or for a memfd the mapping's file (/proc/PID/map_files,
 * where the kernel lets us), else our own agent, the bytes it was given. */
static const char *agent_file(struct ctx *c, const char *local, char *buf,
			      size_t cap)
{
	if (strcmp(c->agent.path, AGENT_MEMFD))
		return NULL;
	snprintf(buf, cap, "/proc/%d/map_files/%llx-%llx", (int)c->pid,
		 (unsigned long long)c->agent.base,
		 (unsigned long long)c->agent.first_end);
	return access(buf, R_OK) ? local : buf;
}

static int start_agent(struct ctx *c, const char *local, const char *settings,
		       struct ls_attach_result *ar, struct ls_inject_result *res)
{
	char file[128];
	uint64_t entry, s, at = 0;
	int r = sym(c, &c->agent, agent_file(c, local, file, sizeof(file)),
		    LS_ATTACH_ENTRY, &entry);

	if (r)
		return r;
	s = put_string(c, settings, 0);
	if (!s)
		return FAIL(c, -EIO, "cannot write into pid %d", (int)c->pid);
	r = call(c, entry, s, 0, &at);
	if (r)
		return r;
	c->ar_addr = at;
	if (!at || mem_read(c, at, ar, sizeof(*ar)) || ar->version != LS_ATTACH_VERSION)
		return FAIL(c, -EIO, "the agent in pid %d did not answer as expected "
			    "(another leakscope version?)", (int)c->pid);
	ar->reason[sizeof(ar->reason) - 1] = 0;
	switch (ar->status) {
	case LS_ATTACH_OK:
		res->nslots = ar->nslots;
		res->start_wall_ns = ar->start_wall_ns;
		return 0;
	case LS_ATTACH_PRELOADED:
		return FAIL(c, -EEXIST, "the agent is already in pid %d (LD_PRELOAD, "
			    "e.g. under leakscope run): use 'leakscope report %d'",
			    (int)c->pid, (int)c->pid);
	case LS_ATTACH_ACTIVE:
		return FAIL(c, -EEXIST, "pid %d is already attached: use 'leakscope "
			    "report %d', or 'leakscope detach %d' first",
			    (int)c->pid, (int)c->pid, (int)c->pid);
	}
	return FAIL(c, -EIO, "the agent could not start in pid %d: %s",
		    (int)c->pid, ar->reason);
}

/*
 * Stop 3: write every slot still holding what the agent saw, with all
 * threads but the control thread (and the safe one, ours) stopped.
 */
static int do_switch(struct ctx *c, const struct ls_attach_result *ar,
		     struct ls_inject_result *res)
{
	struct ls_world_opts o = { .skip_tid = (pid_t)ar->control_tid };
	struct ls_attach_slot *sl = calloc(ar->nslots ? ar->nslots : 1, sizeof(*sl));
	struct ls_world w;
	uint32_t i, one = 1;
	int r = -ENOMEM;

	if (!sl)
		return FAIL(c, r, "out of memory");
	if (mem_read(c, ar->slots, sl, ar->nslots * sizeof(*sl))) {
		r = FAIL(c, -EIO, "cannot read the agent's slot list in pid %d", (int)c->pid);
		goto out;
	}
	r = ls_world_stop(c->pid, &o, &w, c->err, c->errlen);
	if (r)
		goto out;
	for (i = 0; i < ar->nslots; i++) {
		uint64_t cur;

		/* Changed since (a lazy binding, an unload): the agent's
		 * own rescan deals with it, in process. */
		if (mem_read(c, sl[i].addr, &cur, 8) || cur != sl[i].orig)
			continue;
		if (!mem_write(c, sl[i].addr, &sl[i].hook, 8))
			res->switched++;
	}
	/* From now on the agent patches what it finds itself. */
	mem_write(c, c->ar_addr + offsetof(struct ls_attach_result, switched),
		  &one, sizeof(one));
	ls_world_resume(&w);
	res->pause_ns[2] = ls_world_pause_ns(&w);
	ls_world_release(&w);
out:
	free(sl);
	return r;
}

/* --- the whole dance ----------------------------------------------------------- */

/* Stop 1: seize, note, set breakpoints, let run under ptrace. */
static int stop_and_arm(struct ctx *c, struct ls_inject_result *res)
{
	struct ls_world w;
	size_t i;
	int r = ls_world_stop(c->pid, NULL, &w, c->err, c->errlen);

	if (r)
		return r;
	for (i = 0; i < w.nthreads; i++) {
		struct thr *t = thr_add(c, w.threads[i].tid);

		if (!t)
			break;
		t->sig = w.threads[i].pending_sig;
		t->stopped = 1;
		t->nr0 = (long)w.threads[i].regs.orig_rax;
		t->rip0 = w.threads[i].regs.rip;
		ptrace(PTRACE_SETOPTIONS, t->tid, NULL,
		       (void *)(long)(PTRACE_O_TRACECLONE | PTRACE_O_TRACEFORK |
				      PTRACE_O_TRACEVFORK | PTRACE_O_TRACEVFORKDONE |
				      PTRACE_O_TRACEEXEC));
	}
	r = i < w.nthreads ? FAIL(c, -ENOMEM, "out of memory") : bp_set(c, 1);
	if (r) {
		ls_world_resume(&w);	/* detaches: nothing was changed */
		ls_world_release(&w);
		c->n = 0;
		return r;
	}
	for (i = 0; i < c->n; i++)
		cont(&c->t[i]);
	res->pause_ns[0] = now_ns() - w.stopped_ns;
	ls_world_release(&w);
	return 0;
}

/* Let every thread but the safe one go, options off. */
static void release_others(struct ctx *c)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		struct thr *t = &c->t[i];

		ptrace(PTRACE_SETOPTIONS, t->tid, NULL, NULL);
		if (t->tid == c->safe)
			continue;
		ptrace(PTRACE_DETACH, t->tid, NULL, (void *)(long)t->sig);
	}
}

/* Is a SIGTRAP queued for tid (it ran into an int3 and has not yet
 * reported it)? */
static int trap_pending(struct ctx *c, pid_t tid)
{
	char path[80], line[128];
	unsigned long long pnd = 0;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/status", (int)c->pid, (int)tid);
	fp = fopen(path, "re");
	if (!fp)
		return 0;
	while (fgets(line, sizeof(line), fp))
		if (sscanf(line, "SigPnd: %llx", &pnd) == 1)
			break;
	fclose(fp);
	return !!(pnd & (1ull << (SIGTRAP - 1)));
}

/*
 * A thread stopped by our interrupt just after running into an int3 still
 * has the SIGTRAP queued: let go now, it would die of it.  Run it into
 * that signal's stop, where the signal is dropped and the thread rewound
 * to the instruction the breakpoint replaced (restored by now).
 */
static void drain_traps(struct ctx *c)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		struct thr *t = &c->t[i];
		struct user_regs_struct r;
		int st, tries = 0;

		while (t->tid != c->safe && t->stopped && trap_pending(c, t->tid) &&
		       tries++ < 8) {
			ptrace(PTRACE_CONT, t->tid, NULL, NULL);
			if (waitpid(t->tid, &st, __WALL) != t->tid || !WIFSTOPPED(st))
				break;
			if ((st >> 16) == 0 && WSTOPSIG(st) == SIGTRAP &&
			    !regs_get(t->tid, &r) && bp_index(c, r.rip) >= 0) {
				r.rip -= 1;
				regs_set(t->tid, &r);
			} else if ((st >> 16) == 0 && !t->sig) {
				t->sig = WSTOPSIG(st);
			}
		}
	}
}

/* Everyone but the safe thread stopped: breakpoints out, let them go. */
static int settle(struct ctx *c, struct ls_inject_result *res, uint64_t t0)
{
	bp_set(c, 0);
	drain_traps(c);
	release_others(c);
	res->pause_ns[1] = now_ns() - t0;
	res->safe_tid = c->safe;
	return 0;
}

/* No breakpoint reached in time: all stopped, is one blocked somewhere safe? */
static int try_blocked(struct ctx *c, struct ls_inject_result *res, uint64_t *t0)
{
	int r;

	*t0 = now_ns();
	c->safe = 0;
	r = stop_others(c, *t0 + 2000000000ull);
	if (r)
		return r;
	if (!pick_blocked(c, res) && loader_consistent(c))
		return 0;
	c->safe = 0;
	return -ENOENT;
}

#define BLOCKED_GRACE_MS 100

/* Where every stopped thread is now becomes the reference of the next
 * look, and they all run on. */
static void rearm(struct ctx *c)
{
	size_t i;

	for (i = 0; i < c->n; i++) {
		struct thr *t = &c->t[i];
		struct user_regs_struct r;

		if (!t->stopped)
			continue;
		t->nr0 = regs_get(t->tid, &r) ? -1 : (long)r.orig_rax;
		t->rip0 = r.rip;
		cont(t);
	}
}

/* Interrupted while the breakpoints are in: every thread stopped (a
 * thread at a breakpoint rewound), the original bytes back, all let go.
 * A thread that would not stop in time is left to the kernel, which lets
 * it go when this process ends: the bytes are restored all the same. */
static void abandon(struct ctx *c)
{
	uint64_t t0 = now_ns();

	c->safe = 0;
	stop_others(c, t0 + 2000000000ull);
	bp_set(c, 0);
	drain_traps(c);
	release_others(c);
}

static int interrupted_fail(struct ctx *c)
{
	return FAIL(c, -EINTR, "interrupted by %s: pid %d was left as it was "
		    "(every breakpoint removed, nothing loaded)",
		    sigabbrev_np(interrupted) ? sigabbrev_np(interrupted) : "a signal",
		    (int)c->pid);
}

/*
 * Stop 2: a safe thread held, the breakpoints gone, the others running.
 * A breakpoint is waited for; every BLOCKED_GRACE_MS all threads are
 * stopped for a look, and a thread blocked in a waiting call at the same
 * place as at the last look will do too (an idle server).
 */
static int find_safe_point(struct ctx *c, int timeout_ms, struct ls_inject_result *res)
{
	uint64_t end = now_ns() + (uint64_t)timeout_ms * 1000000u, t0;
	int r;

	for (;;) {
		uint64_t next = now_ns() + BLOCKED_GRACE_MS * 1000000ull;

		r = wait_trap(c, next < end ? next : end, res);
		if (r == -EINTR) {
			abandon(c);
			return interrupted_fail(c);
		}
		if (r != -ETIMEDOUT)
			break;
		r = try_blocked(c, res, &t0);
		if (!r)
			return settle(c, res, t0);
		if (r != -ENOENT)
			return r;
		if (now_ns() >= end) {
			settle(c, res, t0);
			return FAIL(c, -ETIMEDOUT, "no safe point in pid %d within "
				    "%.1f s: no thread called malloc, free, calloc or "
				    "realloc, and none was blocked in a waiting system "
				    "call (try a longer --timeout)", (int)c->pid,
				    timeout_ms / 1000.0);
		}
		rearm(c);
	}
	if (r)
		return r;
	t0 = now_ns();
	r = stop_others(c, t0 + 2000000000ull);
	if (r)
		return r;
	return settle(c, res, t0);
}

/* Gone, or going within 100 ms (a SIGKILL takes a moment to finish off
 * every thread)? */
static int dying(pid_t pid)
{
	int i;

	for (i = 0; i < 100 && !ls_proc_gone(pid); i++) {
		struct timespec ts = { 0, 1000000 };

		nanosleep(&ts, NULL);
	}
	return ls_proc_gone(pid);
}

/* Ask the agent to detach (it restores whatever slot it patched). */
static void undo_start(pid_t pid)
{
	char reply[64], why[256];

	ls_client_request(pid, LS_VERB_DETACH, reply, sizeof(reply), why, sizeof(why));
}

/* Detach the safe thread with the signals that came for it meanwhile. */
static void let_go_safe(struct ctx *c)
{
	struct thr *t = thr_find(c, c->safe);
	int sig;

	ptrace(PTRACE_DETACH, c->safe, NULL, (void *)(long)(t ? t->sig : 0));
	for (sig = 1; t && sig <= 64; sig++)
		if (t->later & (1ull << (sig - 1)))
			syscall(SYS_tgkill, c->pid, c->safe, sig);
}

static int open_target(struct ctx *c, pid_t pid)
{
	char path[64];

	c->pid = pid;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	c->rootfd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	snprintf(path, sizeof(path), "/proc/%d/mem", (int)pid);
	c->mem = open(path, O_RDWR | O_CLOEXEC);
	if (c->mem < 0 && errno == ENOENT)
		return FAIL(c, -ESRCH, "no process with pid %d", (int)pid);
	return 0;
}

static int attach_here(pid_t pid, const struct ls_inject_opts *opts,
		       struct ls_inject_result *res, char *err, size_t errlen)
{
	struct ctx c = { .err = err, .errlen = errlen, .mem = -1, .rootfd = -1 };
	char in_target[4096] = "";
	struct ls_attach_result ar;
	int r, started = 0;
	int timeout = opts->timeout_ms > 0 ? opts->timeout_ms : DEFAULT_TIMEOUT_MS;
	const char *bps[NBP] = { "malloc", "free", "calloc", "realloc" };
	int i;

	memset(res, 0, sizeof(*res));
	if ((r = open_target(&c, pid)) || (r = preflight(&c)))
		goto out;
	if (c.mem < 0) {
		r = ls_world_stop(pid, NULL, &(struct ls_world){ 0 }, err, errlen);
		if (!r)	/* it let us stop it but not read it: say why */
			r = FAIL(&c, -EPERM, "cannot open the memory of pid %d", (int)pid);
		goto out;
	}
	if ((r = sym(&c, &c.ldso, NULL, "_r_debug", &c.r_debug)))
		goto out;
	for (i = 0; i < NBP; i++)
		if ((r = global_sym(&c, bps[i], &c.bp[i])) ||
		    (r = mem_read(&c, c.bp[i], &c.bp_byte[i], 1)))
			goto out;
	if (!c.agent.base)
		agent_path(&c, opts->agent, in_target, sizeof(in_target));
	if (interrupted) {
		r = interrupted_fail(&c);
		goto out;
	}
	if ((r = stop_and_arm(&c, res)) || (r = find_safe_point(&c, timeout, res)))
		goto out;
	/* From here on the calls are bounded (CALL_TIMEOUT_MS each): an
	 * interruption is seen between them. */
	r = interrupted ? interrupted_fail(&c) :
	    load_agent(&c, in_target, opts->agent, timeout, res);
	if (!r)
		r = start_agent(&c, opts->agent, opts->settings, &ar, res);
	if (!r) {
		r = do_switch(&c, &ar, res);
		started = 1;
	}
	if (!r && interrupted)
		r = FAIL(&c, -EINTR, "interrupted by %s: the agent started in pid "
			 "%d was asked to detach again",
			 sigabbrev_np(interrupted) ? sigabbrev_np(interrupted) :
			 "a signal", (int)pid);
	/* The safe thread runs on from where it was, whatever happened. */
	regs_set(c.safe, &c.saved);
	let_go_safe(&c);
	/* The agent runs but the switch failed: have it stop again. */
	if (r && started && !ls_proc_gone(pid))
		undo_start(pid);
out:
	/* Whatever failed, a process that died meanwhile is the reason. */
	if (r && r != -ESRCH && r != -EPERM && r != -EBUSY && dying(pid))
		r = FAIL(&c, -ESRCH, "pid %d exited during the attach", (int)pid);
	if (c.mem >= 0)
		close(c.mem);
	if (c.rootfd >= 0)
		close(c.rootfd);
	free(c.t);
	return r;
}

/* --- the worker ------------------------------------------------------------------ */

/*
 * The attach runs in a worker process of its own session, which alone
 * traces the target, so that no signal to `leakscope attach` (its pid or
 * its process group: Ctrl-C, SIGTERM, SIGHUP, `timeout`, SIGKILL) can end
 * it while a breakpoint is in the target.  The caller forwards the
 * catchable ones; the worker is told of the caller's death by
 * PR_SET_PDEATHSIG (SIGTERM).  Either way the worker's handler only
 * notes the signal, and the attach stops at its next check with every
 * byte it wrote restored.
 */
static pid_t worker;
static const int stop_signals[] = { SIGINT, SIGTERM, SIGHUP, SIGQUIT };
#define NSTOP (sizeof(stop_signals) / sizeof(stop_signals[0]))

static void note_signal(int sig)
{
	if (!interrupted)
		interrupted = sig;
}

static void forward_signal(int sig)
{
	int e = errno;

	note_signal(sig);
	if (worker > 0)
		kill(worker, sig);
	errno = e;
}

static void on_stop_signals(void (*fn)(int), struct sigaction *old)
{
	struct sigaction sa = { .sa_handler = fn };
	size_t i;

	sigemptyset(&sa.sa_mask);
	for (i = 0; i < NSTOP; i++)
		sigaction(stop_signals[i], &sa, old ? &old[i] : NULL);
}

static int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static size_t read_all(int fd, void *buf, size_t len)
{
	char *p = buf;
	size_t got = 0;

	while (got < len) {
		ssize_t n = read(fd, p + got, len - got);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	return got;
}

static __attribute__((noreturn)) void
work(pid_t parent, int out, pid_t pid, const struct ls_inject_opts *opts,
     struct ls_inject_result *res, char *err, size_t errlen)
{
	int r;

	setsid();	/* out of the caller's process group */
	on_stop_signals(note_signal, NULL);
	prctl(PR_SET_PDEATHSIG, SIGTERM);
	if (getppid() != parent)	/* it died before the prctl */
		note_signal(SIGTERM);
	r = attach_here(pid, opts, res, err, errlen);
	if (write_all(out, &r, sizeof(r)) || write_all(out, res, sizeof(*res)) ||
	    write_all(out, err, errlen))
		_exit(1);
	_exit(0);
}

int ls_inject_interrupted(void)
{
	return interrupted;
}

int ls_inject_attach(pid_t pid, const struct ls_inject_opts *opts,
		     struct ls_inject_result *res, char *err, size_t errlen)
{
	struct sigaction old[NSTOP];
	sigset_t block, was;
	int p[2], r = -EIO, st;
	size_t i;

	memset(res, 0, sizeof(*res));
	if (pipe2(p, O_CLOEXEC)) {
		snprintf(err, errlen, "cannot create a pipe: %s", strerror(errno));
		return -EAGAIN;
	}
	/* Signals held until the worker's pid is known to the handler. */
	sigemptyset(&block);
	for (i = 0; i < NSTOP; i++)
		sigaddset(&block, stop_signals[i]);
	sigprocmask(SIG_BLOCK, &block, &was);
	on_stop_signals(forward_signal, old);
	worker = fork();
	if (!worker) {
		close(p[0]);
		sigprocmask(SIG_SETMASK, &was, NULL);
		work(getppid(), p[1], pid, opts, res, err, errlen);
	}
	close(p[1]);
	sigprocmask(SIG_SETMASK, &was, NULL);
	if (worker < 0) {
		snprintf(err, errlen, "cannot start the attach: fork: %s",
			 strerror(errno));
		close(p[0]);
		worker = 0;
		for (i = 0; i < NSTOP; i++)
			sigaction(stop_signals[i], &old[i], NULL);
		return -EAGAIN;
	}
	if (read_all(p[0], &r, sizeof(r)) != sizeof(r) ||
	    read_all(p[0], res, sizeof(*res)) != sizeof(*res) ||
	    read_all(p[0], err, errlen) != errlen) {
		r = -EIO;
		snprintf(err, errlen, "the attach's worker process ended without "
			 "an answer: pid %d may be left traced or with a "
			 "breakpoint", (int)pid);
	}
	close(p[0]);
	while (waitpid(worker, &st, 0) < 0 && errno == EINTR)
		;
	worker = 0;
	for (i = 0; i < NSTOP; i++)
		sigaction(stop_signals[i], &old[i], NULL);
	return r;
}
