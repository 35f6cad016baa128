/*
 * preload-floor.c - the least any LD_PRELOAD allocation tracker costs.
 *
 * Built as build/bench/libpreload-floor.so and preloaded by run-bench's
 * `preload-floor` configuration.  It defines the allocation functions
 * the agent defines (malloc, calloc, realloc, reallocarray, free and the
 * aligned family) and does nothing in them but call the next definition,
 * glibc's: the program's call goes through one more function and one
 * indirect call, as it does under any tracker that interposes by
 * preloading.  A tracker that recorded nothing at all would cost this
 * much, so it is the floor byte-sampled mode is measured against
 * (docs/PERFORMANCE.md): what sampling costs beyond it is the agent's own.
 *
 * The fast path is what the agent's sampled fast path has besides its
 * counting: a load and a test of the resolved pointer, then a tail call.
 * dlsym() may allocate (it calls calloc on a first error); those few
 * early blocks come from a static buffer, and free() and realloc() know
 * them by address.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

static void *(*next_malloc)(size_t);
static void *(*next_calloc)(size_t, size_t);
static void *(*next_realloc)(void *, size_t);
static void *(*next_reallocarray)(void *, size_t, size_t);
static void (*next_free)(void *);
static int (*next_posix_memalign)(void **, size_t, size_t);
static void *(*next_aligned_alloc)(size_t, size_t);
static void *(*next_memalign)(size_t, size_t);
static void *(*next_valloc)(size_t);
static void *(*next_pvalloc)(size_t);

/* Blocks asked for while dlsym() runs: zeroed (static), never freed. */
static _Alignas(64) char boot[16384];
static size_t boot_used;
static int resolving;

static void *boot_alloc(size_t n)
{
	void *p;

	n = (n + 63) & ~(size_t)63;
	if (n > sizeof(boot) - boot_used)
		return NULL;
	p = boot + boot_used;
	boot_used += n;
	return p;
}

static int from_boot(const void *p)
{
	return (const char *)p >= boot && (const char *)p < boot + sizeof(boot);
}

/* Every thread that finds a pointer unset resolves them all: dlsym()
 * returns the same values each time, so a race only repeats work. */
static __attribute__((noinline)) void resolve(void)
{
	resolving = 1;
	next_calloc = dlsym(RTLD_NEXT, "calloc");
	next_realloc = dlsym(RTLD_NEXT, "realloc");
	next_reallocarray = dlsym(RTLD_NEXT, "reallocarray");
	next_free = dlsym(RTLD_NEXT, "free");
	next_posix_memalign = dlsym(RTLD_NEXT, "posix_memalign");
	next_aligned_alloc = dlsym(RTLD_NEXT, "aligned_alloc");
	next_memalign = dlsym(RTLD_NEXT, "memalign");
	next_valloc = dlsym(RTLD_NEXT, "valloc");
	next_pvalloc = dlsym(RTLD_NEXT, "pvalloc");
	/* Last: malloc's test is the one the others' callers pass first. */
	__atomic_store_n(&next_malloc, dlsym(RTLD_NEXT, "malloc"),
			 __ATOMIC_RELEASE);
	resolving = 0;
}

__attribute__((constructor)) static void init(void)
{
	if (!next_malloc)
		resolve();
}

/* While resolving (dlsym's own allocations): the static buffer. */
#define READY_OR(boot_expr)						\
	do {								\
		if (__builtin_expect(!next_malloc, 0)) {		\
			if (resolving)					\
				return boot_expr;			\
			resolve();					\
		}							\
	} while (0)

EXPORT void *malloc(size_t n)
{
	READY_OR(boot_alloc(n));
	return next_malloc(n);
}

EXPORT void *calloc(size_t n, size_t m)
{
	READY_OR(m && n > SIZE_MAX / m ? NULL : boot_alloc(n * m));
	return next_calloc(n, m);
}

EXPORT void free(void *p)
{
	if (__builtin_expect(from_boot(p), 0))
		return;
	READY_OR();
	next_free(p);
}

/* A boot block moved to the heap: its size is not kept, so everything
 * from it to the buffer's end that fits is copied. */
static void *from_boot_to(void *p, size_t n)
{
	size_t have = (size_t)(boot + sizeof(boot) - (char *)p);
	void *q = malloc(n);

	if (q)
		memcpy(q, p, n < have ? n : have);
	return q;
}

EXPORT void *realloc(void *p, size_t n)
{
	if (__builtin_expect(from_boot(p), 0))
		return from_boot_to(p, n);
	READY_OR(p ? NULL : boot_alloc(n));
	return next_realloc(p, n);
}

EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
	if (__builtin_expect(from_boot(p), 0)) {
		if (m && n > SIZE_MAX / m) {
			errno = ENOMEM;
			return NULL;
		}
		return from_boot_to(p, n * m);
	}
	READY_OR(NULL);
	return next_reallocarray(p, n, m);
}

EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	READY_OR(ENOMEM);
	return next_posix_memalign(out, align, n);
}

EXPORT void *aligned_alloc(size_t align, size_t n)
{
	READY_OR(NULL);
	return next_aligned_alloc(align, n);
}

EXPORT void *memalign(size_t align, size_t n)
{
	READY_OR(NULL);
	return next_memalign(align, n);
}

EXPORT void *valloc(size_t n)
{
	READY_OR(NULL);
	return next_valloc(n);
}

EXPORT void *pvalloc(size_t n)
{
	READY_OR(NULL);
	return next_pvalloc(n);
}
