/*
 * wl.h - shared helpers of the ground-truth workloads.
 *
 * Every workload is built -O2 -fomit-frame-pointer, so these macros keep
 * the compiler from hiding what the tests look for:
 *
 *   WL_SITE     a leaking site: never inlined, cloned, merged with an
 *               identical function (ICF) or specialised.  Its name is what
 *               the tests search frames for.
 *   WL_HELPER   the same for the helpers that give stacks their depth.
 *   WL_BARRIER  an empty asm with a memory clobber after a call, so the call
 *               is not in tail position and its caller keeps a frame.
 *   wl_sink     a volatile slot: storing a pointer there makes the block
 *               observable, so malloc/free pairs are not optimised away.
 *   wl_n(n)     n, read through a volatile: a loop bounded by it is not
 *               unrolled, so every iteration allocates from the same call
 *               instruction and the blocks share one stack (one site).
 *
 * WL_CHECK(cond, ...) verifies a C-level semantic (return value, errno,
 * alignment) and exits 2 with a message on stderr when it does not hold:
 * the integration tests treat exit status 2 as "the workload itself found
 * the C library misbehaving under the agent".
 *
 * Nothing here uses stdio: a stdio stream allocates its buffer with malloc
 * and never frees it, which would add a libc site to the ground truth.
 */
#ifndef LEAKSCOPE_WL_H
#define LEAKSCOPE_WL_H

#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define WL_SITE __attribute__((noinline, noipa))
#define WL_HELPER __attribute__((noinline, noipa))
#define WL_BARRIER() __asm__ __volatile__("" ::: "memory")

static void *volatile wl_sink;

static inline int wl_n(int n)
{
	volatile int v = n;
	return v;
}

/* Write a formatted line to fd without stdio buffers (vsnprintf on a
 * stack buffer does not allocate). */
static inline __attribute__((format(printf, 2, 3)))
void wl_say(int fd, const char *fmt, ...)
{
	char buf[512];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if ((size_t)n >= sizeof(buf))
		n = sizeof(buf) - 1;
	ssize_t w = write(fd, buf, (size_t)n);
	(void)w;
}

/* The process's address space in KiB (VmSize), -1 if unknown; read
 * without stdio (the pressure workloads' limits are set from it). */
static inline long wl_vm_kib(void)
{
	char buf[4096];
	int fd = open("/proc/self/status", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
	char *v;

	if (fd >= 0)
		close(fd);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	v = strstr(buf, "VmSize:");
	return v ? atol(v + 7) : -1;
}

#define WL_CHECK(cond, ...)						\
	do {								\
		if (!(cond)) {						\
			wl_say(2, "%s:%d: semantic check failed: %s: ",	\
			       __FILE__, __LINE__, #cond);		\
			wl_say(2, __VA_ARGS__);				\
			wl_say(2, "\n");				\
			_exit(2);					\
		}							\
	} while (0)

#endif /* LEAKSCOPE_WL_H */
