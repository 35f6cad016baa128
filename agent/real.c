/*
 * real.c - finding the real allocator behind the agent.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "real.h"
#include "sys.h"

struct ls_real ls_real;

static int resolving;
static ls_lock_t resolve_lock = LS_LOCK_INIT;

/* dlsym() needs a few hundred bytes at most; glibc's dlerror state is the
 * usual customer. */
char ls_boot_pool[LS_BOOT_POOL] __attribute__((aligned(64)));
static size_t boot_used;

struct boot_hdr {
	size_t size;
	size_t pad;
};

void *ls_boot_alloc(size_t size, size_t align)
{
	size_t used = __atomic_load_n(&boot_used, __ATOMIC_RELAXED);
	size_t start, end;
	struct boot_hdr *h;

	if (align < 16)
		align = 16;
	do {
		start = (used + sizeof(*h) + align - 1) & ~(align - 1);
		end = start + size;
		if (end > sizeof(ls_boot_pool) || end < start)
			return NULL;
	} while (!__atomic_compare_exchange_n(&boot_used, &used, end, 1,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	h = (struct boot_hdr *)(ls_boot_pool + start) - 1;
	h->size = size;
	return ls_boot_pool + start;
}

size_t ls_boot_size(const void *p)
{
	return ((const struct boot_hdr *)p - 1)->size;
}

int ls_real_resolving(void)
{
	return __atomic_load_n(&resolving, __ATOMIC_ACQUIRE);
}

/* RTLD_NEXT when preloaded; RTLD_DEFAULT once attached (real.h). */
static void *lookup = RTLD_NEXT;

#define RESOLVE(field, name) \
	(*(void **)&ls_real.field = dlsym(lookup, name))

void ls_real_init(void)
{
	int saved = errno;

	if (__atomic_load_n(&ls_real.free, __ATOMIC_ACQUIRE))
		return;
	ls_lock(&resolve_lock);
	if (ls_real.free)
		goto out;
	__atomic_store_n(&resolving, 1, __ATOMIC_RELEASE);
	RESOLVE(malloc, "malloc");
	RESOLVE(calloc, "calloc");
	RESOLVE(realloc, "realloc");
	RESOLVE(reallocarray, "reallocarray");
	RESOLVE(posix_memalign, "posix_memalign");
	RESOLVE(aligned_alloc, "aligned_alloc");
	RESOLVE(memalign, "memalign");
	RESOLVE(valloc, "valloc");
	RESOLVE(pvalloc, "pvalloc");
	RESOLVE(malloc_usable_size, "malloc_usable_size");
	RESOLVE(mmap, "mmap");
	RESOLVE(munmap, "munmap");
	RESOLVE(mremap, "mremap");
	RESOLVE(dlclose, "dlclose");
	RESOLVE(execve, "execve");
	RESOLVE(execvpe, "execvpe");
	RESOLVE(fexecve, "fexecve");
	RESOLVE(exit_, "_exit");
	RESOLVE(Exit_, "_Exit");
	/* free last: its being set is what says resolution is complete. */
	__atomic_store_n((void **)&ls_real.free, dlsym(lookup, "free"),
			 __ATOMIC_RELEASE);
	__atomic_store_n(&resolving, 0, __ATOMIC_RELEASE);
out:
	ls_unlock(&resolve_lock);
	errno = saved;
}

void ls_real_rebind_default(void)
{
	ls_lock(&resolve_lock);
	lookup = RTLD_DEFAULT;
	__atomic_store_n((void **)&ls_real.free, NULL, __ATOMIC_RELEASE);
	ls_unlock(&resolve_lock);
	ls_real_init();
}
