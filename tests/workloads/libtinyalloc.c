/*
 * libtinyalloc.c - a tiny allocator of the test suite's own, linked into
 * mapped-totals so that the program's malloc resolves to it (and the
 * agent's ls_real.malloc is it, not libc's).
 *
 * It carves blocks out of chunks of TA_CHUNK (1 MiB) bytes it maps itself
 * with anonymous mmap; a request that does not fit a chunk gets a mapping
 * of its own.  Every block has a 16-byte header: its size, and for a
 * block with a mapping of its own that mapping's start.  free() keeps the
 * memory of chunk blocks (a bump allocator: enough for a test, and it
 * makes the chunk count exact) and unmaps a block with its own mapping,
 * from inside the program's call of free, as real allocators do.  The
 * mmap and munmap calls are not in tail position (their results are
 * checked), so the agent sees this object as their caller.
 */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define TA_CHUNK (1u << 20)
#define TA_HDR 16

static char *cur, *end;
static int lock;

static void ta_lock(void)
{
	while (__atomic_exchange_n(&lock, 1, __ATOMIC_ACQUIRE))
		;
}

static void ta_unlock(void)
{
	__atomic_store_n(&lock, 0, __ATOMIC_RELEASE);
}

static __attribute__((noinline)) void *ta_map(size_t len)
{
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	return p == MAP_FAILED ? NULL : p;
}

/* The length of the mapping of its own that a block of n bytes gets:
 * room for any alignment up to 4096. */
static size_t ta_own_len(size_t n)
{
	return n + 4096 + TA_HDR;
}

/* A block of n bytes whose start is a multiple of align (a power of two,
 * at most 4096). */
static void *ta_alloc(size_t n, size_t align)
{
	uintptr_t at;
	char *p = NULL;

	if (align < TA_HDR)
		align = TA_HDR;
	if (n > TA_CHUNK / 2) {
		char *base = ta_map(ta_own_len(n));

		if (!base)
			goto out;
		at = ((uintptr_t)base + TA_HDR + align - 1) &
		     ~(uintptr_t)(align - 1);
		p = (char *)at;
		memcpy(p - TA_HDR + 8, &base, sizeof(base));
		goto out;
	}
	ta_lock();
	at = ((uintptr_t)cur + TA_HDR + align - 1) & ~(uintptr_t)(align - 1);
	if (!cur || at + n > (uintptr_t)end) {
		cur = ta_map(TA_CHUNK);
		end = cur ? cur + TA_CHUNK : NULL;
		at = ((uintptr_t)cur + TA_HDR + align - 1) &
		     ~(uintptr_t)(align - 1);
	}
	if (cur) {
		p = (char *)at;
		cur = p + ((n + TA_HDR - 1) & ~(size_t)(TA_HDR - 1));
	}
	ta_unlock();
out:
	if (p)
		memcpy(p - TA_HDR, &n, sizeof(n));
	else
		errno = ENOMEM;
	return p;
}

static size_t ta_size(void *p)
{
	size_t n;

	memcpy(&n, (char *)p - TA_HDR, sizeof(n));
	return n;
}

void *malloc(size_t n)
{
	return ta_alloc(n, TA_HDR);
}

void free(void *p)
{
	size_t n;
	char *base;
	int saved = errno;

	if (!p)
		return;
	n = ta_size(p);
	if (n <= TA_CHUNK / 2)
		return;
	memcpy(&base, (char *)p - TA_HDR + 8, sizeof(base));
	if (munmap(base, ta_own_len(n)))
		abort();
	errno = saved;
}

void *calloc(size_t k, size_t n)
{
	size_t t;

	if (__builtin_mul_overflow(k, n, &t)) {
		errno = ENOMEM;
		return NULL;
	}
	/* Fresh mappings are zero; reused memory there is none. */
	return ta_alloc(t, TA_HDR);
}

void *realloc(void *p, size_t n)
{
	void *q;

	if (!p)
		return malloc(n);
	q = malloc(n);
	if (q)
		memcpy(q, p, ta_size(p) < n ? ta_size(p) : n);
	return q;
}

void *reallocarray(void *p, size_t k, size_t n)
{
	size_t t;

	if (__builtin_mul_overflow(k, n, &t)) {
		errno = ENOMEM;
		return NULL;
	}
	return realloc(p, t);
}

void *memalign(size_t align, size_t n)
{
	return ta_alloc(n, align);
}

void *aligned_alloc(size_t align, size_t n)
{
	return ta_alloc(n, align);
}

int posix_memalign(void **out, size_t align, size_t n)
{
	void *p = ta_alloc(n, align);

	if (!p)
		return ENOMEM;
	*out = p;
	return 0;
}

void *valloc(size_t n)
{
	return ta_alloc(n, 4096);
}

void *pvalloc(size_t n)
{
	return ta_alloc((n + 4095) & ~(size_t)4095, 4096);
}

size_t malloc_usable_size(void *p)
{
	return p ? ta_size(p) : 0;
}
