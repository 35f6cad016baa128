/*
 * sys.c - raw memory and descriptors for the agent.
 */
#include <errno.h>
#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>
#include "sys.h"

void *ls_sys_map(size_t len)
{
	int saved = errno;
	long r = syscall(SYS_mmap, NULL, len, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	errno = saved;
	return r == -1 ? NULL : (void *)r;
}

void ls_sys_unmap(void *p, size_t len)
{
	int saved = errno;

	if (p)
		syscall(SYS_munmap, p, len);
	errno = saved;
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
