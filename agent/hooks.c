/*
 * hooks.c - the interposed allocation functions.
 *
 * Everything in this file runs inside the traced program's allocation
 * calls.  Each hook does the minimum: take the recursion guard, call the
 * real function, and on success hand the result to ls_track_*.  errno is
 * what the real function left, whatever the bookkeeping did to it.  A
 * call made while the guard is held (the agent's own allocations, a
 * signal handler interrupting a hook) or before the agent is on goes
 * straight through.
 *
 * Order, and what keeps it: a block is recorded after the real allocation
 * returned it, and a freed one is taken out of the table before the real
 * free (or realloc) gives its address back, since another thread may be
 * handed the same address at once.  The real calls are calls through
 * ls_real's pointers, which the compiler cannot move bookkeeping across.
 * The guard and errno are taken inside ls_track_alloc, ls_track_malloc,
 * ls_track_calloc and ls_track_free (track.c), not around them here: the
 * guard's increment and decrement carry their own compiler barriers
 * (guard.h), so no ordering depends on where the call boundary lies.
 */
#include <errno.h>
#include <malloc.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "../common/lsnap.h"
#include "agent.h"
#include "track.h"
#include "codemap.h"
#include "exec.h"
#include "guard.h"
#include "live.h"
#include "reach.h"
#include "real.h"
#include "sample.h"
#include "sys.h"
#include "thread.h"

#define LS_EXPORT __attribute__((visibility("default")))

static size_t page_size = 4096;

static inline size_t page_round(size_t n)
{
	return (n + page_size - 1) & ~(page_size - 1);
}

/* The real functions are known.  Resolves them on first use; while that
 * resolution is itself allocating, answers no and the boot pool serves. */
static inline int ready(void)
{
	if (ls_likely(__atomic_load_n(&ls_real.free, __ATOMIC_ACQUIRE) != NULL))
		return 1;
	if (ls_real_resolving())
		return 0;
	ls_real_init();
	return ls_real.free != NULL;
}

/*
 * The thread record when this call is to be tracked (tracking() counts
 * the call too);
 * NULL when it should just pass through.  Takes no guard: the real
 * allocator is called unguarded, and only the agent's own bookkeeping
 * runs under the guard.
 */
static inline struct ls_thread *tracking_uncounted(void)
{
	struct ls_thread *t;

	if (ls_guard_held())
		return NULL;
	if (ls_unlikely(!ls_agent_on()) &&
	    (ls_agent.state != LS_OFF || !ls_agent_core_start()))
		return NULL;
	if (ls_unlikely(ls_agent.control_pending))
		ls_agent_child_control();
	t = ls_thread_tls;
	if (ls_unlikely(!t)) {
		ls_guard_enter();
		t = ls_thread_claim();
		ls_guard_leave();
		if (!t) {
			ls_agent_drop();
			return NULL;
		}
	}
	return t;
}

static inline struct ls_thread *tracking(enum ls_fn fn)
{
	struct ls_thread *t = tracking_uncounted();

	if (t)
		ls_thread_count(t, fn);
	return t;
}

/* A block appeared.  In sampled mode most are let go here, in a few
 * instructions. */
static inline __attribute__((always_inline))
void note_alloc(struct ls_thread *t, void *p, size_t size)
{
	if (ls_sample_rate && !ls_sample_take(t, size))
		return;
	t->start = LS_UNWIND_HERE();	/* the program's call into the hook */
	ls_track_alloc(t, p, size);
	ls_track_clear_red_zone();
}

/* A block is going: recorded and freed, or (in sampled mode the filter
 * clears almost all) just freed. */
static inline void note_free(struct ls_thread *t, void *p)
{
	if (!p || (ls_sample_rate && !ls_sample_maybe((uint64_t)(uintptr_t)p)))
		ls_real.free(p);
	else
		ls_track_free(p, t);
}

/*
 * The common case of ready() and tracking() for a thread t that has a
 * record: no guard, the agent on, no fork child's control to start.
 * What they decide then is "track, with t"; the slow paths' first lanes
 * take it without their calls and saved registers, and leave everything
 * else to the general code.  The real functions are known then: the
 * agent is only ever switched on (released) after ls_real.free was set
 * (ls_agent_core_start, ls_agent_start_attached), and it is never unset,
 * so the acquire load of the state is all ready() would add.
 */
static inline int common_case(const struct ls_thread *t)
{
	return ls_likely(t && !ls_guard_held() &&
			 __atomic_load_n(&ls_agent.hook_word, __ATOMIC_ACQUIRE) ==
			 LS_ON);
}

/*
 * Sampled mode's fast paths (malloc, free, calloc, realloc below): a
 * thread whose next sample point lies past this allocation, or a free of
 * a block the filter says was never recorded, counts the call and
 * tail-calls the real function.  Nothing else is touched, and no
 * register is saved: everything else is in the out-of-line slow paths.
 * They need not look at the guard or the agent's state: they record
 * nothing and take no lock, and the slow path that a sample point leads
 * to checks both.  In full tracking sample_left stays 0, so the malloc
 * test fails at once.
 */
static __attribute__((noinline)) void *malloc_rare(size_t n)
{
	struct ls_thread *t;
	void *p;

	if (ls_unlikely(!ready()))
		return ls_boot_alloc(n, 16);
	int e = errno;

	t = tracking(LS_FN_MALLOC);
	p = ls_real.malloc(n);
	ls_thread_keep_errno(&errno, e, p);
	if (t && p)
		note_alloc(t, p, n);
	return p;
}

/*
 * malloc's lanes past its sampled fast path, inline in it (a jump and a
 * test of the record fewer than out of line): both are tail calls of
 * malloc's, so LS_UNWIND_HERE() in ls_track_malloc and in malloc_rare
 * sees the program's call.  t is malloc's read of the thread record.
 * The frame that does the recording then lies right under the program's
 * frames: where a check's conservative scan of a thread stopped in a
 * shallow read() found the copy of the table entry it had left, and so a
 * block the thread had allocated and dropped still referenced
 * (tests/integration/t_check.py, site_born_lost).  track.c's insert()
 * clears that copy's address once the entry is in the table.
 */
static inline __attribute__((always_inline))
void *malloc_slow(size_t n, struct ls_thread *t)
{
	if (!common_case(t))
		return malloc_rare(n);
	return ls_track_malloc(n, t);
}

LS_EXPORT void *malloc(size_t n)
{
	struct ls_thread *t = ls_thread_tls;

	if (t && ls_likely(t->sample_left > n)) {
		ls_thread_count(t, LS_FN_MALLOC);
		t->sample_left -= n;
		return ls_real.malloc(n);
	}
	return malloc_slow(n, t);
}

/* Everything free_slow's first lane does not take. */
static __attribute__((noinline)) void free_rare(void *p)
{
	struct ls_thread *t;

	if (ls_unlikely(ls_boot_owns(p)) || ls_unlikely(!ready()))
		return;
	t = tracking(LS_FN_FREE);
	if (t)
		note_free(t, p);	/* and the real free */
	else
		ls_real.free(p);
}

/* Full tracking's free, and sampled mode's frees the filter does not
 * clear: only tail calls, no register to save; inline in free, as
 * malloc_slow in malloc.  t is free's read of the thread record. */
static inline __attribute__((always_inline))
void free_slow(void *p, struct ls_thread *t)
{
	if (!common_case(t) || ls_unlikely(ls_boot_owns(p))) {
		free_rare(p);
		return;
	}
	ls_thread_count(t, LS_FN_FREE);
	/* Sampled, free() has already asked the filter: a block that came
	 * here passed it (or free's first test failed: then common_case()
	 * did too, and free_rare asks). */
	if (!p)
		ls_real.free(p);
	else
		ls_track_free(p, t);	/* and the real free */
}

LS_EXPORT void free(void *p)
{
	struct ls_thread *t = ls_thread_tls;

	if (t && ls_sample_rate && !ls_boot_owns(p) &&
	    !ls_sample_maybe((uint64_t)(uintptr_t)p)) {
		ls_thread_count(t, LS_FN_FREE);
		ls_real.free(p);
		return;
	}
	free_slow(p, t);
}

static __attribute__((noinline)) void *calloc_rare(size_t n, size_t m)
{
	struct ls_thread *t;
	size_t total;
	void *p;

	if (ls_unlikely(!ready())) {
		if (__builtin_mul_overflow(n, m, &total)) {
			errno = ENOMEM;
			return NULL;
		}
		return ls_boot_alloc(total, 16);	/* the pool is zeroed */
	}
	int e = errno;

	t = tracking(LS_FN_CALLOC);
	p = ls_real.calloc(n, m);
	ls_thread_keep_errno(&errno, e, p);
	if (t && p)
		note_alloc(t, p, n * m);
	return p;
}

/* As malloc_slow. */
static inline __attribute__((always_inline))
void *calloc_slow(size_t n, size_t m, struct ls_thread *t)
{
	if (!common_case(t))
		return calloc_rare(n, m);
	return ls_track_calloc(n, m, t);
}

LS_EXPORT void *calloc(size_t n, size_t m)
{
	struct ls_thread *t = ls_thread_tls;
	size_t total;

	if (t && !__builtin_mul_overflow(n, m, &total) &&
	    ls_likely(t->sample_left > total)) {
		ls_thread_count(t, LS_FN_CALLOC);
		t->sample_left -= total;
		return ls_real.calloc(n, m);
	}
	return calloc_slow(n, m, t);
}

static void *boot_realloc(void *p, size_t n)
{
	void *q = ready() ? malloc(n) : ls_boot_alloc(n, 16);
	size_t old = ls_boot_size(p);

	if (q)
		memcpy(q, p, old < n ? old : n);
	return q;
}

/* realloc and reallocarray, once the size is known not to overflow. */
static inline __attribute__((always_inline))
void *do_realloc(void *p, size_t n, enum ls_fn fn)
{
	char saved[LS_TRACK_SAVED];
	struct ls_thread *t = tracking(fn);
	int tracked = 0, e = errno;
	void *q;

	if (!t) {
		q = ls_real.realloc(p, n);
		ls_thread_keep_errno(&errno, e, q);
		return q;
	}
	/* Out of the table first: once the real realloc has freed p, another
	 * thread may be given the same address. */
	if (p && (!ls_sample_rate || ls_sample_maybe((uint64_t)(uintptr_t)p))) {
		ls_guard_enter();
		tracked = ls_track_take(t, p, saved);
		ls_guard_leave();
	}
	q = ls_real.realloc(p, n);
	ls_thread_keep_errno(t->err, e, q);
	if (q) {
		note_alloc(t, q, n);	/* keeps errno (ls_track_alloc) */
	} else if (tracked && n) {	/* failed: p is still live */
		e = *t->err;
		ls_guard_enter();
		ls_track_restore(t, saved);
		ls_guard_leave();
		*t->err = e;
	}
	return q;
}

static __attribute__((noinline)) void *realloc_slow(void *p, size_t n)
{
	if (ls_unlikely(ls_boot_owns(p)))
		return boot_realloc(p, n);
	if (ls_unlikely(!ready()))
		return ls_boot_alloc(n, 16);
	return do_realloc(p, n, LS_FN_REALLOC);
}

/*
 * Sampled mode's fast path, as malloc's and free's: no sample point in
 * the new size, and the old block (if any) one the filter says was never
 * recorded: nothing to take out of the table, nothing to put in.  The
 * sample stream moves only when the call succeeds, as the slow path's.
 */
LS_EXPORT void *realloc(void *p, size_t n)
{
	struct ls_thread *t = ls_thread_tls;
	void *q;

	if (t && ls_sample_rate && ls_likely(t->sample_left > n) &&
	    !ls_boot_owns(p) &&
	    (!p || !ls_sample_maybe((uint64_t)(uintptr_t)p))) {
		ls_thread_count(t, LS_FN_REALLOC);
		q = ls_real.realloc(p, n);
		if (q)
			t->sample_left -= n;
		return q;
	}
	return realloc_slow(p, n);
}

LS_EXPORT void *reallocarray(void *p, size_t n, size_t m)
{
	size_t total;

	if (__builtin_mul_overflow(n, m, &total)) {
		if (ready())
			tracking(LS_FN_REALLOCARRAY);	/* counted, nothing else */
		errno = ENOMEM;
		return NULL;
	}
	if (ls_unlikely(ls_boot_owns(p)))
		return boot_realloc(p, total);
	if (ls_unlikely(!ready()))
		return ls_boot_alloc(total, 16);
	return do_realloc(p, total, LS_FN_REALLOCARRAY);
}

LS_EXPORT int posix_memalign(void **out, size_t align, size_t n)
{
	struct ls_thread *t;
	int r, e;

	if (ls_unlikely(!ready())) {
		if (!align || (align & (align - 1)) || align % sizeof(void *))
			return EINVAL;
		*out = ls_boot_alloc(n, align);
		return *out ? 0 : ENOMEM;
	}
	e = errno;
	t = tracking(LS_FN_POSIX_MEMALIGN);
	r = ls_real.posix_memalign(out, align, n);
	ls_thread_keep_errno(&errno, e, r ? NULL : *out);
	if (t && !r)
		note_alloc(t, *out, n);
	return r;
}

/* aligned_alloc, memalign, valloc, pvalloc: an aligned block, recorded
 * as `tracked` bytes. */
static inline __attribute__((always_inline))
void *aligned(void *(*fn2)(size_t, size_t), void *(*fn1)(size_t),
	      size_t align, size_t n, size_t tracked, enum ls_fn fn)
{
	int e = errno;
	struct ls_thread *t = tracking(fn);
	void *p = fn2 ? fn2(align, n) : fn1(n);

	ls_thread_keep_errno(&errno, e, p);
	if (t && p)
		note_alloc(t, p, tracked);
	return p;
}

LS_EXPORT void *aligned_alloc(size_t align, size_t n)
{
	if (ls_unlikely(!ready()))
		return ls_boot_alloc(n, align);
	return aligned(ls_real.aligned_alloc, NULL, align, n, n,
		       LS_FN_ALIGNED_ALLOC);
}

LS_EXPORT void *memalign(size_t align, size_t n)
{
	if (ls_unlikely(!ready()))
		return ls_boot_alloc(n, align);
	return aligned(ls_real.memalign, NULL, align, n, n, LS_FN_MEMALIGN);
}

LS_EXPORT void *valloc(size_t n)
{
	if (ls_unlikely(!ready()))
		return ls_boot_alloc(n, page_size);
	return aligned(NULL, ls_real.valloc, 0, n, n, LS_FN_VALLOC);
}

LS_EXPORT void *pvalloc(size_t n)
{
	if (ls_unlikely(!ready()))
		return ls_boot_alloc(page_round(n), page_size);
	return aligned(NULL, ls_real.pvalloc, 0, n, page_round(n),
		       LS_FN_PVALLOC);
}

LS_EXPORT size_t malloc_usable_size(void *p)
{
	if (ls_unlikely(ls_boot_owns(p)))
		return ls_boot_size(p);
	if (ls_unlikely(!ready()))
		return 0;
	return ls_real.malloc_usable_size(p);
}

/* --- C++'s operator new and delete -------------------------------------- */

/*
 * Each operator new and delete (common/interpose.def, kinds NEW, ANEW
 * and DELETE) is exported as one instruction, a jump through its slot:
 * no frame, no register touched.  The slot first holds the symbol's C
 * hook, whose first call decides, once the real function is known: a C++
 * runtime's (libstdc++, libc++) calls malloc and free, which are hooked,
 * so the slot takes the real function itself, and from then on the
 * program's call reaches it as if the agent were not there (the recorded
 * stacks are those of malloc's hook, inside operator new).  Any other
 * (jemalloc, tcmalloc, an allocator of the program's) allocates without
 * malloc: the slot keeps the C hook, which records the block as malloc's
 * hook does.  Reached by a jump, the C hook's caller is the program's
 * frame (LS_UNWIND_HERE()).  The real new may throw std::bad_alloc or
 * call the new handler, which may allocate: no guard or lock is held
 * across it, and the hook's frame has unwind information (.eh_frame,
 * gcc's default on x86-64) for the exception to pass through.
 *
 * The C hooks take the arguments as three integers: every variant's are
 * integer-class (a pointer or size, an alignment, a nothrow tag's
 * address), in the same registers whatever the callee reads, so the real
 * function is called with them as they came.
 */
#define CXX_ENTRY(sym, field)						\
	__asm__(".text\n.globl " #sym "\n.type " #sym ", @function\n"	\
		#sym ":\n.cfi_startproc\n"				\
		"jmp *ls_cxx_slot_" #field "(%rip)\n.cfi_endproc\n"	\
		".size " #sym ", .-" #sym "\n")

/* The real function, resolved late if libstdc++ came after the start. */
static inline void *cxx_real(void **field, const char *name)
{
	void *f = __atomic_load_n(field, __ATOMIC_ACQUIRE);

	return f ? f : ls_real_late(field, name);
}

/*
 * Is the hook to record around real?  A C++ runtime's real function takes
 * the slot instead (answer 0); the answer for any other is kept in
 * *tracked, asked again only if the real function changes (an attach
 * resolves again).  NULL (no object defines the function) records, with
 * malloc or free in its place.
 */
static int cxx_records(void **slot, void **tracked, void *real)
{
	if (!real || __atomic_load_n(tracked, __ATOMIC_RELAXED) == real)
		return 1;
	if (ls_real_cxx_runtime(real)) {
		__atomic_store_n(slot, real, __ATOMIC_RELEASE);
		return 0;
	}
	__atomic_store_n(tracked, real, __ATOMIC_RELAXED);
	return 1;
}

/* Everything cxx_new's first lane does not take, reached by a tail call
 * as malloc_rare is. */
static inline __attribute__((always_inline))
void *cxx_new_rare(void **slot, void **tracked, void **field,
		   const char *name, int aligned, uint64_t a, uint64_t b,
		   uint64_t c)
{
	struct ls_thread *t;
	ls_new_fn real;
	void *p;
	int e;

	if (ls_unlikely(!ready()))
		return ls_boot_alloc(a, aligned ? b : 16);
	real = (ls_new_fn)cxx_real(field, name);
	if (!cxx_records(slot, tracked, (void *)real))
		return real(a, b, c);
	e = errno;
	t = tracking(LS_FN_MALLOC);
	if (ls_likely(real != NULL))
		p = real(a, b, c);
	else
		p = aligned ? ls_real.memalign(b, a) : ls_real.malloc(a);
	ls_thread_keep_errno(&errno, e, p);
	if (t && p)
		note_alloc(t, p, a);
	return p;
}

/*
 * As malloc's slow path: a thread in the common case, with the real
 * function decided on before, goes by a tail call to ls_track_new, in
 * whose frame the block is recorded.
 */
static inline __attribute__((always_inline))
void *cxx_new(void *(*rare)(uint64_t, uint64_t, uint64_t), void **tracked,
	      void **field, uint64_t a, uint64_t b, uint64_t c)
{
	struct ls_thread *t = ls_thread_tls;
	void *real = __atomic_load_n(field, __ATOMIC_RELAXED);

	if (real && __atomic_load_n(tracked, __ATOMIC_RELAXED) == real &&
	    common_case(t))
		return ls_track_new(a, b, c, t, (ls_new_fn)real);
	return rare(a, b, c);
}

static void release_free(void *p, uint64_t b, uint64_t c)
{
	ls_real.free(p);
}

static inline __attribute__((always_inline))
void cxx_delete(void **slot, void **tracked, void **field, const char *name,
		uint64_t a, uint64_t b, uint64_t c)
{
	void *p = (void *)(uintptr_t)a;
	struct ls_thread *t;
	ls_release_fn real;

	if (ls_unlikely(ls_boot_owns(p)) || ls_unlikely(!ready()))
		return;
	real = (ls_release_fn)cxx_real(field, name);
	if (real && __atomic_load_n(tracked, __ATOMIC_RELAXED) == real &&
	    p && !ls_sample_rate && common_case(t = ls_thread_tls)) {
		/* full tracking's common case, as free_slow's */
		ls_thread_count(t, LS_FN_FREE);
		ls_track_delete(p, t, real, b, c);	/* and real */
		return;
	}
	if (!cxx_records(slot, tracked, (void *)real)) {
		real(p, b, c);
		return;
	}
	if (ls_unlikely(!real))
		real = release_free;
	t = tracking(LS_FN_FREE);
	if (!t || !p || (ls_sample_rate && !ls_sample_maybe(a)))
		real(p, b, c);
	else
		ls_track_delete(p, t, real, b, c);	/* and real */
}

#define CXX_HOOK(sym, field, body)					\
	extern __attribute__((visibility("hidden")))			\
		void *ls_cxx_slot_##field;				\
	static void *cxx_tracked_##field;				\
	static __attribute__((noinline)) body				\
	void *ls_cxx_slot_##field __attribute__((used)) =		\
		(void *)cxx_hook_##field;				\
	CXX_ENTRY(sym, field);
/* operator new: its rare path, then the hook */
#define CXX_NEW(sym, field, kind)					\
	static void *cxx_tracked_##field;				\
	extern __attribute__((visibility("hidden")))			\
		void *ls_cxx_slot_##field;				\
	static __attribute__((noinline))				\
	void *cxx_rare_##field(uint64_t a, uint64_t b, uint64_t c)	\
	{								\
		return cxx_new_rare(&ls_cxx_slot_##field,		\
				    &cxx_tracked_##field,		\
				    (void **)&ls_real.field, #sym,	\
				    LS_IP_ALIGNED_##kind, a, b, c);	\
	}								\
	static __attribute__((noinline))				\
	void *cxx_hook_##field(uint64_t a, uint64_t b, uint64_t c)	\
	{								\
		return cxx_new(cxx_rare_##field, &cxx_tracked_##field,	\
			       (void **)&ls_real.field, a, b, c);	\
	}								\
	void *ls_cxx_slot_##field __attribute__((used)) =		\
		(void *)cxx_hook_##field;				\
	CXX_ENTRY(sym, field);
#define LS_INTERPOSE(sym, NAME, field, ret, params, attr, kind, real, got, export) \
	LS_IP_NEW_##kind(CXX_NEW(sym, field, kind))			\
	LS_IP_DELETE_##kind(CXX_HOOK(sym, field,			\
		void cxx_hook_##field(uint64_t a, uint64_t b, uint64_t c) { \
			cxx_delete(&ls_cxx_slot_##field,		\
				   &cxx_tracked_##field,		\
				   (void **)&ls_real.field, #sym, a, b, c); \
		}))
#include "../common/interpose.def"

/* --- mappings ---------------------------------------------------------- */

/* Mapping bookkeeping: rare and a syscall anyway, always under the guard. */
#define GUARDED(stmt) do {					\
		int e_ = errno;						\
		ls_guard_enter();					\
		stmt;							\
		ls_guard_leave();					\
		errno = e_;						\
	} while (0)

/*
 * Whose anonymous mapping is it?  Made by the allocator behind malloc
 * (the caller, the hook's return address, is in its object): chunks the
 * heap blocks are carved from, which the blocks already count.  No
 * access at all: a reservation of address space.  Else the program's.
 *
 * mprotect() moves pieces between reserved and the program's (see
 * ls_track_mprotect()); mremap keeps a reservation one.
 *
 * NEEDSWORK: an allocator that tail-calls mmap leaves its own caller as
 * the return address (counted as the program's).
 */
static uint32_t mapping_kind(uintptr_t caller, int prot)
{
	if (ls_real_by_allocator(caller))
		return LSNAP_KIND_ALLOCATOR;
	if (prot == PROT_NONE)
		return LSNAP_KIND_RESERVED;
	return LSNAP_KIND_MMAP;
}

LS_EXPORT void *mmap(void *addr, size_t len, int prot, int flags, int fd,
		     off_t off)
{
	struct ls_thread *t;
	void *p;

	if (ls_unlikely(!ready()))
		return (void *)syscall(SYS_mmap, addr, len, prot, flags, fd, off);
	t = tracking(LS_FN_MMAP);
	p = ls_real.mmap(addr, len, prot, flags, fd, off);
	if (p != MAP_FAILED && (prot & PROT_EXEC))
		ls_codemap_changed();
	if (t && p != MAP_FAILED && (flags & (MAP_FIXED | MAP_ANONYMOUS)))
		GUARDED({
			if (flags & MAP_FIXED)	/* replaced what was there */
				ls_track_munmap(t, p, page_round(len));
			if (flags & MAP_ANONYMOUS) {
				t->start = LS_UNWIND_HERE();
				ls_track_mmap(t, p, page_round(len),
					      mapping_kind((uintptr_t)
					      __builtin_return_address(0),
					      prot));
			}
		});
	return p;
}

LS_EXPORT void *mmap64(void *addr, size_t len, int prot, int flags, int fd,
		       off_t off) __attribute__((alias("mmap")));

LS_EXPORT int munmap(void *addr, size_t len)
{
	struct ls_thread *t;
	int r;

	if (ls_unlikely(!ready()))
		return (int)syscall(SYS_munmap, addr, len);
	t = tracking(LS_FN_MUNMAP);
	r = ls_real.munmap(addr, len);
	if (!r)
		ls_codemap_changed();
	if (t && !r)
		GUARDED(ls_track_munmap(t, addr, page_round(len)));
	return r;
}

/*
 * Not counted among the allocation calls (stats): most mprotect() calls
 * are the loader's and a JIT's, on memory that is not tracked.
 */
LS_EXPORT int mprotect(void *addr, size_t len, int prot)
{
	struct ls_thread *t;
	int r;

	if (ls_unlikely(!ready()) || !ls_real.mprotect)
		return (int)syscall(SYS_mprotect, addr, len, prot);
	t = tracking_uncounted();
	r = ls_real.mprotect(addr, len, prot);
	if (!r)
		ls_codemap_changed();
	if (r || !t)
		return r;
	GUARDED(t->start = LS_UNWIND_HERE();
		ls_track_mprotect(t, addr, page_round(len), prot));
	return r;
}

LS_EXPORT void *mremap(void *old, size_t oldlen, size_t newlen, int flags, ...)
{
	struct ls_thread *t;
	void *want = NULL, *p;
	va_list ap;

	if (flags & MREMAP_FIXED) {
		va_start(ap, flags);
		want = va_arg(ap, void *);
		va_end(ap);
	}
	if (ls_unlikely(!ready()))
		return (void *)syscall(SYS_mremap, old, oldlen, newlen, flags, want);
	t = tracking(LS_FN_MREMAP);
	p = ls_real.mremap(old, oldlen, newlen, flags, want);
	if (p != MAP_FAILED)
		ls_codemap_changed();
	if (t && p != MAP_FAILED)
		GUARDED(t->start = LS_UNWIND_HERE();
			ls_track_mremap(t, old, page_round(oldlen), p,
					page_round(newlen),
					mapping_kind((uintptr_t)
					__builtin_return_address(0),
					PROT_READ)));
	return p;
}

/* --- the loader and the end ---------------------------------------------- */

LS_EXPORT int dlclose(void *handle)
{
	int r, tracking;

	if (ls_unlikely(!ready()) || !ls_real.dlclose)
		return -1;
	tracking = ls_agent_on() && !ls_guard_held();
	/* Learn the modules about to go, so their frames stay
	 * symbolizable after they are unmapped. */
	if (tracking) {
		ls_guard_enter();
		ls_agent_modules_changed();
		ls_guard_leave();
	}
	r = ls_real.dlclose(handle);
	if (tracking) {
		int e = errno;

		ls_guard_enter();
		ls_agent_modules_changed();
		ls_guard_leave();
		errno = e;
	}
	return r;
}

/* --- exec: the command's own process stays traced (exec.h) ----------------- */

extern char **environ;

LS_EXPORT int execve(const char *path, char *const argv[], char *const envp[])
{
	if (ls_unlikely(!ready()) || !ls_real.execve)
		return (int)syscall(SYS_execve, path, argv, envp);
	return ls_real.execve(path, argv, ls_exec_env(envp));
}

LS_EXPORT int execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

LS_EXPORT int execvpe(const char *file, char *const argv[], char *const envp[])
{
	if (ls_unlikely(!ready()) || !ls_real.execvpe) {
		errno = ENOSYS;
		return -1;
	}
	return ls_real.execvpe(file, argv, ls_exec_env(envp));
}

LS_EXPORT int execvp(const char *file, char *const argv[])
{
	return execvpe(file, argv, environ);
}

LS_EXPORT int fexecve(int fd, char *const argv[], char *const envp[])
{
	if (ls_unlikely(!ready()) || !ls_real.fexecve) {
		errno = ENOSYS;
		return -1;
	}
	return ls_real.fexecve(fd, argv, ls_exec_env(envp));
}

/* execl, execlp, execle: the list into an array, as glibc does. */
#define LIST_TO_ARGV(last, argv, envp_out) do {				\
		va_list ap_;						\
		size_t n_ = 1, i_;					\
									\
		va_start(ap_, last);					\
		while (va_arg(ap_, char *))				\
			n_++;						\
		va_end(ap_);						\
		argv = __builtin_alloca((n_ + 1) * sizeof(char *));	\
		argv[0] = (char *)last;					\
		va_start(ap_, last);					\
		for (i_ = 1; i_ <= n_; i_++)				\
			argv[i_] = va_arg(ap_, char *);			\
		envp_out = va_arg(ap_, char **);			\
		va_end(ap_);						\
	} while (0)

LS_EXPORT int execl(const char *path, const char *arg, ...)
{
	char **argv, **unused;

	LIST_TO_ARGV(arg, argv, unused);
	(void)unused;
	return execve(path, argv, environ);
}

LS_EXPORT int execlp(const char *file, const char *arg, ...)
{
	char **argv, **unused;

	LIST_TO_ARGV(arg, argv, unused);
	(void)unused;
	return execvpe(file, argv, environ);
}

LS_EXPORT int execle(const char *path, const char *arg, ...)
{
	char **argv, **envp;

	LIST_TO_ARGV(arg, argv, envp);
	return execve(path, argv, envp);
}

/*
 * exit, _exit, _Exit and quick_exit: an entry in assembly notes, before
 * any frame of the exit path exists, where the caller's live stack
 * begins (its stack pointer once the call returns, the CFA) and its
 * callee-saved registers, for the check at exit (reach.h), then calls
 * the C part.
 * The CFI keeps the caller's frame visible to the unwinders.
 */
#define EXIT_ENTRY(name, c_part)					\
	__asm__(".text\n.globl " #name "\n.type " #name ", @function\n"	\
		#name ":\n.cfi_startproc\n"				\
		"subq $56, %rsp\n.cfi_adjust_cfa_offset 56\n"		\
		"movq %rbx, 0(%rsp)\nmovq %rbp, 8(%rsp)\n"		\
		"movq %r12, 16(%rsp)\nmovq %r13, 24(%rsp)\n"		\
		"movq %r14, 32(%rsp)\nmovq %r15, 40(%rsp)\n"		\
		"movq %rsp, %rsi\nleaq 64(%rsp), %rdx\n"		\
		"call " #c_part "\nud2\n.cfi_endproc\n"			\
		".size " #name ", .-" #name "\n")

typedef void (*exit_fn)(int) __attribute__((noreturn));

/* Into libc's *real once resolved, else straight to the kernel. */
__attribute__((noreturn))
static void leave(exit_fn const *real, int status)
{
	if (ready() && *real)
		(*real)(status);
	for (;;)
		syscall(SYS_exit_group, status);
}

__attribute__((noreturn, used))
void ls_hook_exit(int status, const uint64_t *regs, uint64_t cfa)
{
	ls_reach_note_exit_call(cfa, regs);
	leave(&ls_real.libc_exit, status);
}

__attribute__((noreturn, used))
void ls_hook__exit(int status, const uint64_t *regs, uint64_t cfa)
{
	ls_reach_note_exit_call(cfa, regs);
	ls_agent_exit_report();
	leave(&ls_real.exit_, status);
}

__attribute__((noreturn, used))
void ls_hook__Exit(int status, const uint64_t *regs, uint64_t cfa)
{
	ls_reach_note_exit_call(cfa, regs);
	ls_agent_exit_report();
	leave(&ls_real.Exit_, status);
}

/*
 * quick_exit runs the at_quick_exit handlers, then ends the process
 * through libc's own _exit, which no hook sees: the report is written by
 * the handler agent/agent.c registered when the agent started,
 * which runs after every handler the program registered later.
 */
__attribute__((noreturn, used))
void ls_hook_quick_exit(int status, const uint64_t *regs, uint64_t cfa)
{
	ls_reach_note_exit_call(cfa, regs);
	leave(&ls_real.quick_exit_, status);
}

EXIT_ENTRY(exit, ls_hook_exit);
EXIT_ENTRY(_exit, ls_hook__exit);
EXIT_ENTRY(_Exit, ls_hook__Exit);
EXIT_ENTRY(quick_exit, ls_hook_quick_exit);

__attribute__((constructor(101)))
static void hooks_init(void)
{
	long p = sysconf(_SC_PAGESIZE);

	if (p > 0)
		page_size = (size_t)p;
}

/* --- coroutines ----------------------------------------------------------- */

/*
 * Whether sp lies on the calling thread's own stack, the one glibc or
 * the kernel gave it: below its top (main's __libc_stack_end, another
 * thread's descriptor, which glibc puts at the top of its stack) by less
 * than its span: 64 MiB for main's (the kernel keeps at least 128 MiB
 * between the stack's top and the first mapping below it, where a
 * coroutine's mmap'ed stack may lie when addresses are not randomized),
 * glibc's default 8 MiB for another thread's (its arena's heap, where a
 * coroutine's stack is often malloc'ed, may lie not far below).  A guess
 * made cheaply in a hook: a switch from deeper gets no record, and the
 * exit path checks the record against the mapping (agent/reachfork.c).
 */
extern void *__libc_stack_end;
#define LS_MAIN_STACK_SPAN (64ull << 20)
#define LS_THREAD_STACK_SPAN (8ull << 20)

static inline int own_stack(const struct ls_thread *t, uint64_t sp)
{
	return sp < t->co_top && t->co_top - sp < t->co_span;
}

/*
 * A switch from sp (the hook's entry: the return address's slot, the
 * lowest word of the caller's live frames) to the context to, the
 * current one saved in from (0: setcontext()).  Leaving the own stack
 * records where its live frames begin; going back to it forgets that.
 * Reads only the program's own argument, which libc reads next.
 */
static inline void note_switch(uint64_t sp, const ucontext_t *from,
			       const ucontext_t *to)
{
	struct ls_thread *t = ls_thread_tls;

	if (!t || !to)
		return;
	if (ls_unlikely(!t->co_top)) {
		int main_thread = t->tid == ls_agent.pid;

		t->co_top = main_thread ? (uint64_t)(uintptr_t)__libc_stack_end :
			    (uint64_t)pthread_self();
		t->co_span = main_thread ? LS_MAIN_STACK_SPAN : LS_THREAD_STACK_SPAN;
	}
	if (own_stack(t, (uint64_t)to->uc_mcontext.gregs[REG_RSP])) {
		t->co_sp = 0;
	} else if (own_stack(t, sp)) {
		t->co_ucp = (uint64_t)(uintptr_t)from;
		t->co_sp = sp;
	}
}

/*
 * Transparent: the record, then a tail call with the program's own
 * arguments, return address and callee-saved registers, so that what
 * swapcontext() saves in oucp is what the program's call would have.
 */
LS_EXPORT int swapcontext(ucontext_t *oucp, const ucontext_t *ucp)
{
	note_switch((uint64_t)(uintptr_t)__builtin_dwarf_cfa() - 8, oucp, ucp);
	if (ls_unlikely(!ls_real.swapcontext))
		ls_real_init();
	return ls_real.swapcontext(oucp, ucp);
}

LS_EXPORT int setcontext(const ucontext_t *ucp)
{
	note_switch((uint64_t)(uintptr_t)__builtin_dwarf_cfa() - 8, NULL, ucp);
	if (ls_unlikely(!ls_real.setcontext))
		ls_real_init();
	return ls_real.setcontext(ucp);
}
