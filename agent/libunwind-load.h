/*
 * libunwind-load.h - Debian's libunwind (libunwind8), loaded at run time
 * with RTLD_LOCAL: linking it would put its _Unwind_* symbols in front of
 * libgcc's in the traced program and change how C++ exceptions unwind.
 * Shared by the agent's LEAKSCOPE_UNWIND=libunwind|check, the unwinder's
 * tests and its benchmark, which all compare against the same setup.
 */
#ifndef LEAKSCOPE_AGENT_LIBUNWIND_LOAD_H
#define LEAKSCOPE_AGENT_LIBUNWIND_LOAD_H

#include <dlfcn.h>

typedef int (*ls_unw_backtrace_fn)(void **, int);

/*
 * libunwind's unw_backtrace(), or NULL when libunwind.so.8 or the symbol
 * is missing.  Its per-thread cache policy (UNW_CACHE_PER_THREAD) is set
 * when libunwind offers it; *cached (unless NULL) says whether it was.
 * Not for allocation hooks: dlopen() allocates.
 */
static inline ls_unw_backtrace_fn ls_libunwind_load(int *cached)
{
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	int (*policy)(void *, int);
	void **as;

	if (cached)
		*cached = 0;
	if (!h)
		return NULL;
	policy = (int (*)(void *, int))dlsym(h, "_ULx86_64_set_caching_policy");
	as = dlsym(h, "_ULx86_64_local_addr_space");
	if (policy && as) {
		policy(*as, 2);		/* UNW_CACHE_PER_THREAD */
		if (cached)
			*cached = 1;
	}
	return (ls_unw_backtrace_fn)dlsym(h, "unw_backtrace");
}

#endif
