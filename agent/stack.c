/*
 * stack.c - stack capture.
 *
 * Uses libunwind (nongnu, Debian's libunwind8), loaded with dlopen()
 * RTLD_LOCAL: linking it would put its _Unwind_* symbols in front of
 * libgcc's in the traced program and change how its C++ exceptions are
 * unwound.
 */
#include <dlfcn.h>
#include <errno.h>
#include "modules.h"
#include "site.h"
#include "stack.h"
#include "sys.h"

#define UNW_CACHE_PER_THREAD 2	/* libunwind's unw_caching_policy_t */

static int (*unw_backtrace_fn)(void **, int);
static uint64_t self_lo, self_hi;

int ls_stack_init(void)
{
	void *h = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
	int (*set_policy)(void *, int);
	void *as;

	ls_modules_self_range(&self_lo, &self_hi);
	if (!h)
		return -ENOENT;
	unw_backtrace_fn = (int (*)(void **, int))dlsym(h, "unw_backtrace");
	set_policy = (int (*)(void *, int))dlsym(h, "_ULx86_64_set_caching_policy");
	as = dlsym(h, "_ULx86_64_local_addr_space");
	if (set_policy && as)
		set_policy(*(void **)as, UNW_CACHE_PER_THREAD);
	return unw_backtrace_fn ? 0 : -ENOENT;
}

int ls_stack_capture(uint64_t *pcs, int max)
{
	void *buf[LS_MAX_DEPTH + 16];
	int n, i, skip = 0;

	if (!unw_backtrace_fn)
		return 0;
	n = unw_backtrace_fn(buf, max + 16 > LS_MAX_DEPTH + 16 ?
				  LS_MAX_DEPTH + 16 : max + 16);
	while (skip < n && (uint64_t)(uintptr_t)buf[skip] >= self_lo &&
	       (uint64_t)(uintptr_t)buf[skip] < self_hi)
		skip++;
	for (i = 0; skip + i < n && i < max; i++)
		pcs[i] = (uint64_t)(uintptr_t)buf[skip + i];
	return i;
}

void ls_stack_invalidate(void)
{
}

const char *ls_stack_method(void)
{
	return "libunwind";
}
