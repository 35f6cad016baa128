/*
 * liblazy.c - the library of stress.c's lazybind mode: a signal arrives
 * while the program is inside glibc's lazy binding.
 *
 * stress dlopen()s it RTLD_LAZY and calls liblazy_run(), whose call of
 * lazy_target() goes through the library's PLT for the first time:
 * _dl_runtime_resolve (CFA on %rbx: it realigns %rsp to save the vector
 * registers) -> _dl_fixup -> lazy_target's IFUNC resolver, which sends
 * its own thread SIGUSR1 by raw system calls (no PLT call of its own).
 * The signal arrives as tgkill returns, inside the resolver: the
 * handler's stack runs through the resolver, _dl_fixup and the
 * trampoline to liblazy_run and the program.
 */
#include <signal.h>
#include <sys/syscall.h>
#include "wl.h"

typedef int lazy_fn(int);

static long raw_syscall3(long nr, long a, long b, long c)
{
	long r = nr;

	__asm__ volatile("syscall" : "+a"(r) : "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return r;
}

static int lazy_impl(int x)
{
	return x + 1;
}

static lazy_fn *lazy_resolve(void)
{
	long pid = raw_syscall3(SYS_getpid, 0, 0, 0);
	long tid = raw_syscall3(SYS_gettid, 0, 0, 0);

	raw_syscall3(SYS_tgkill, pid, tid, SIGUSR1);
	return lazy_impl;
}

int lazy_target(int x) __attribute__((ifunc("lazy_resolve")));

WL_HELPER int liblazy_run(int x)
{
	int r = lazy_target(x);	/* through the PLT: bound now */

	WL_BARRIER();
	return r;
}
