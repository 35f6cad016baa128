/*
 * glibcver.h - every glibc function the agent calls, bound to the oldest
 * symbol version that has it, so that the agent loads into a program of
 * any glibc from 2.17 on (Debian 11 and Ubuntu 20.04 have 2.31, RHEL 8
 * 2.28), not only into one of the glibc it was built against.
 *
 * The Makefile includes this file first in every object of the agent
 * (-include).  Functions newer than 2.17 are not called by name: the
 * stat family (new versions in 2.33), getdents64 (2.30) and renameat2
 * (2.28) become the agent's own system calls below (sys.c), mallinfo2
 * and _dl_find_object are looked up at run time with a fallback
 * (figures.c, common/cfi.c), pthread_sigmask (2.32) is sigprocmask.
 * tests/integration/t_agent_images.py fails if the agent needs a version
 * above GLIBC_2.17 or a library beyond libc and the loader.
 *
 * Before glibc 2.34 the dl* functions lived in libdl.so.2 and the
 * pthread ones below in libpthread.so.0, loaded only by programs that
 * link them; so these are weak references, and the agent turns itself
 * off with one line when the program has not loaded them
 * (ls_glibc_missing()) rather than fail at its first call.
 */
#ifndef LEAKSCOPE_AGENT_GLIBCVER_H
#define LEAKSCOPE_AGENT_GLIBCVER_H

#include <dirent.h>
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

/* Same declarations, the agent's definitions (on x86_64 the kernel's
 * struct stat is glibc's); each returns 0 or -1 with errno set. */
extern int stat(const char *__restrict, struct stat *__restrict)
	__asm__("ls_glibc_stat");
extern int lstat(const char *__restrict, struct stat *__restrict)
	__asm__("ls_glibc_lstat");
extern int fstat(int, struct stat *) __asm__("ls_glibc_fstat");
extern int fstatat(int, const char *__restrict, struct stat *__restrict, int)
	__asm__("ls_glibc_fstatat");
extern ssize_t getdents64(int, void *, size_t) __asm__("ls_glibc_getdents64");
extern int renameat2(int, const char *, int, const char *, unsigned int)
	__asm__("ls_glibc_renameat2");

#define LS_GLIBC_BIND(fn, ver) \
	extern __typeof(fn) fn __attribute__((weak)); \
	__asm__(".symver " #fn "," #fn "@" ver)

LS_GLIBC_BIND(dlopen, "GLIBC_2.2.5");
LS_GLIBC_BIND(dlsym, "GLIBC_2.2.5");
LS_GLIBC_BIND(dlvsym, "GLIBC_2.2.5");
LS_GLIBC_BIND(dladdr, "GLIBC_2.2.5");
LS_GLIBC_BIND(dladdr1, "GLIBC_2.3.3");
LS_GLIBC_BIND(pthread_create, "GLIBC_2.2.5");
LS_GLIBC_BIND(pthread_attr_setstacksize, "GLIBC_2.2.5");
LS_GLIBC_BIND(pthread_key_create, "GLIBC_2.2.5");
LS_GLIBC_BIND(pthread_setspecific, "GLIBC_2.2.5");

/* The name of a weak function above that this process lacks (its glibc
 * is older than 2.34 and the program did not load libdl.so.2 or
 * libpthread.so.0), or NULL when all are here. */
static inline const char *ls_glibc_missing(void)
{
	return !dlopen ? "dlopen" : !dlsym ? "dlsym" : !dlvsym ? "dlvsym" : !dladdr ? "dladdr" :
	       !dladdr1 ? "dladdr1" : !pthread_create ? "pthread_create" :
	       !pthread_attr_setstacksize ? "pthread_attr_setstacksize" :
	       !pthread_key_create ? "pthread_key_create" :
	       !pthread_setspecific ? "pthread_setspecific" : NULL;
}

#endif
