/*
 * sys.c - raw memory for the agent.
 */
#include <errno.h>
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
