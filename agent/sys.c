/*
 * sys.c - raw memory and descriptors for the agent, and the register of
 * the agent's memory.
 *
 * Every mapping made here is noted in a fixed table, so
 * that a reachability scan (reach.c) can leave the agent's own memory out
 * of its roots: the live tables hold the address of every block and would
 * otherwise keep them all "reachable".  Noting scans for the lowest free
 * slot; mappings are made rarely (a table rebuild, an arena chunk).
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <sys/resource.h>
#include <unistd.h>
#include "sys.h"

struct own_slot {
	uint64_t start;		/* 0 = free */
	uint64_t len;		/* 0 while being noted */
};

/* Taken lowest first, so that the pages of own[] a program touches are
 * those its mappings at their most numerous need, not every page the
 * table spans (16384 slots, 256 KiB, one a mapping ever made). */
static struct own_slot own[LS_SYS_OWN_SLOTS];
static uint32_t own_top;	/* slots from here on were never taken */

static void own_note(void *p, size_t len)
{
	uint64_t a = (uint64_t)p, zero;
	uint32_t i, top;

	for (i = 0; i < LS_SYS_OWN_SLOTS; i++) {
		zero = 0;
		if (__atomic_load_n(&own[i].start, __ATOMIC_RELAXED) == 0 &&
		    __atomic_compare_exchange_n(&own[i].start, &zero, a, 0,
						__ATOMIC_ACQ_REL,
						__ATOMIC_RELAXED)) {
			__atomic_store_n(&own[i].len, len, __ATOMIC_RELEASE);
			top = __atomic_load_n(&own_top, __ATOMIC_RELAXED);
			while (top <= i &&
			       !__atomic_compare_exchange_n(&own_top, &top, i + 1,
							    1, __ATOMIC_RELEASE,
							    __ATOMIC_RELAXED))
				;
			return;
		}
	}
	/* Full: the mapping stays unnoted, and a scan treats it as the
	 * program's (conservative: it can only hide leaks). */
}

static void own_forget(void *p)
{
	uint64_t a = (uint64_t)p;
	uint32_t i, top = __atomic_load_n(&own_top, __ATOMIC_ACQUIRE);

	for (i = 0; i < top; i++)
		if (__atomic_load_n(&own[i].start, __ATOMIC_RELAXED) == a) {
			__atomic_store_n(&own[i].len, 0, __ATOMIC_RELAXED);
			__atomic_store_n(&own[i].start, 0, __ATOMIC_RELEASE);
			return;
		}
}

void *ls_sys_map(size_t len)
{
	int saved = errno;
	long r = syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	errno = saved;
	if (r == -1)
		return NULL;
	own_note((void *)r, len);
	return (void *)r;
}

void ls_sys_unmap(void *p, size_t len)
{
	int saved = errno;

	if (p) {
		own_forget(p);
		syscall(SYS_munmap, p, len);
	}
	errno = saved;
}

size_t ls_sys_resident(const void *p, size_t len)
{
	unsigned char vec[64];
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
	size_t n = (uintptr_t)p + len - a, step = 64 * 4096, k, pages, in = 0;
	int saved = errno;

	for (; p && n; a += step, n -= n < step ? n : step) {
		pages = ((n < step ? n : step) + 4095) / 4096;
		if (syscall(SYS_mincore, a, pages * 4096, vec))
			continue;	/* a hole: nothing resident there */
		for (k = 0; k < pages; k++)
			in += vec[k] & 1;
	}
	errno = saved;
	return in * 4096;
}

size_t ls_sys_own_resident(size_t *mapped)
{
	size_t i, in = 0, all = 0, top = __atomic_load_n(&own_top, __ATOMIC_ACQUIRE);

	for (i = 0; i < top; i++) {
		uint64_t s = __atomic_load_n(&own[i].start, __ATOMIC_ACQUIRE);
		uint64_t l = __atomic_load_n(&own[i].len, __ATOMIC_ACQUIRE);

		if (s && l) {
			all += l;
			in += ls_sys_resident((const void *)s, l);
		}
	}
	if (mapped)
		*mapped = all;
	return in;
}

size_t ls_sys_own_copy(uint64_t *starts, uint64_t *lens, size_t cap)
{
	size_t i, k = 0, top = __atomic_load_n(&own_top, __ATOMIC_ACQUIRE);

	for (i = 0; i < top && k < cap; i++) {
		uint64_t s = __atomic_load_n(&own[i].start, __ATOMIC_ACQUIRE);
		uint64_t l = __atomic_load_n(&own[i].len, __ATOMIC_ACQUIRE);

		if (s && l) {
			starts[k] = s;
			lens[k++] = l;
		}
	}
	return k;
}

/*
 * Programs count on the lowest free descriptor: a test's first open() is
 * 3, a daemon hands fd 3 to a child.  A descriptor the agent keeps open
 * moves to just under the soft RLIMIT_NOFILE (where shells keep theirs),
 * close-on-exec.
 */
int ls_sys_fd_high(int fd)
{
	struct rlimit rl;
	long top = 1024;
	int hi;

	if (fd < 0)
		return fd;
	if (!getrlimit(RLIMIT_NOFILE, &rl) && rl.rlim_cur != RLIM_INFINITY)
		top = rl.rlim_cur < 1024 ? (long)rl.rlim_cur : 1024;
	if (top <= LS_FD_SPARE + 3)
		return fd;
	hi = fcntl(fd, F_DUPFD_CLOEXEC, (int)(top - LS_FD_SPARE));
	if (hi < 0)
		return fd;	/* none free up there: keep the low one */
	close(fd);
	return hi;
}

void ls_sys_sleep_ms(unsigned ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };

	nanosleep(&ts, NULL);
}

void ls_sys_wait_thread_gone(pid_t tid)
{
	int i;

	for (i = 0; i < 5000 && !syscall(SYS_tgkill, getpid(), tid, 0); i++)
		ls_sys_sleep_ms(1);
}

int ls_sys_thread_start(void *(*fn)(void *), size_t stack)
{
	sigset_t all, old;
	pthread_attr_t attr;
	pthread_t th;
	int r;

	sigfillset(&all);
	sigprocmask(SIG_BLOCK, &all, &old);
	pthread_attr_init(&attr);
	pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize(&attr, stack);
	r = -pthread_create(&th, &attr, fn, NULL);
	pthread_attr_destroy(&attr);
	sigprocmask(SIG_SETMASK, &old, NULL);
	return r;
}

/* The functions glibcver.h redirects here: the system calls themselves,
 * which glibc only gave newer symbol versions. */
int stat(const char *path, struct stat *st)
{
	return (int)syscall(SYS_newfstatat, AT_FDCWD, path, st, 0);
}

int lstat(const char *path, struct stat *st)
{
	return (int)syscall(SYS_newfstatat, AT_FDCWD, path, st,
			    AT_SYMLINK_NOFOLLOW);
}

int fstat(int fd, struct stat *st)
{
	return (int)syscall(SYS_fstat, fd, st);
}

int fstatat(int dir, const char *name, struct stat *st, int flags)
{
	return (int)syscall(SYS_newfstatat, dir, name, st, flags);
}

ssize_t getdents64(int fd, void *buf, size_t len)
{
	return syscall(SYS_getdents64, fd, buf, len);
}

int renameat2(int from, const char *name, int to, const char *newname,
	      unsigned int flags)
{
	return (int)syscall(SYS_renameat2, from, name, to, newname, flags);
}
