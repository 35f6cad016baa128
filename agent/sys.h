/*
 * sys.h - the agent's primitives: raw memory from the kernel, a spinlock
 * safe to use inside allocation hooks, clocks.
 *
 * Everything here may run inside an allocation hook: none of it allocates
 * through malloc or calls stdio.
 */
#ifndef LEAKSCOPE_AGENT_SYS_H
#define LEAKSCOPE_AGENT_SYS_H

#include <sched.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#define LS_HIDDEN __attribute__((visibility("hidden")))
#define ls_likely(x) __builtin_expect(!!(x), 1)
#define ls_unlikely(x) __builtin_expect(!!(x), 0)
#define LS_CACHELINE 64

/*
 * The member of the packed struct *ptr as a type *, for the __atomic
 * builtins.  Through the packed member itself clang cannot assume the
 * word aligned and makes them calls into libatomic, which the agent does
 * not link.  The member must be a type at a multiple of its size
 * (checked here at compile time); the caller vouches that ptr is aligned
 * to type.
 */
#define LS_PACKED_WORD(type, ptr, member) (__extension__({		\
	_Static_assert(sizeof((ptr)->member) == sizeof(type) &&		\
		       offsetof(__typeof__(*(ptr)), member) %		\
		       sizeof(type) == 0,					\
		       #member " is an aligned " #type);			\
	(type *)(void *)((char *)(ptr) +					\
			 offsetof(__typeof__(*(ptr)), member));		\
}))

/*
 * Anonymous memory straight from the kernel.  The agent never uses the
 * traced program's allocator for itself, and calls the syscall directly
 * so that its own mappings never pass through the mmap interposer.
 * Return NULL on failure; errno is left as the caller had it.
 */
void *ls_sys_map(size_t len);
void ls_sys_unmap(void *p, size_t len);

/*
 * The agent's own memory, for reachability scans (reach.h): every
 * ls_sys_map() mapping is noted until ls_sys_unmap().  Lock-free, safe in
 * hooks and in a copy-on-write child.  ls_sys_own_copy() copies at most
 * cap ranges and returns how many.
 */
#define LS_SYS_OWN_SLOTS 16384
/* Bytes of [p, p + len) in RAM (mincore); *mapped, when not NULL, gets
 * the total of every ls_sys_map() mapping and ls_sys_own_resident()
 * their resident part.  Not in hooks: a syscall per 256 KiB. */
size_t ls_sys_resident(const void *p, size_t len);
size_t ls_sys_own_resident(size_t *mapped);
size_t ls_sys_own_copy(uint64_t *starts, uint64_t *lens, size_t cap);

static inline uint64_t ls_now_ns(clockid_t clk)
{
	struct timespec ts;

	clock_gettime(clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* Move fd above the program's way: a close-on-exec duplicate among the
 * LS_FD_SPARE highest descriptors under min(RLIMIT_NOFILE, 1024); fd
 * itself when none is free.  Not in a hook. */
#define LS_FD_SPARE 32
int ls_sys_fd_high(int fd);

/* Sleep ms milliseconds (nanosleep; EINTR ends it early). */
void ls_sys_sleep_ms(unsigned ms);
/* Wait, in 1 ms steps and at most about 5 s, until thread tid of this
 * process has left the kernel's thread group (not only its start
 * routine): a call that needs a single-threaded process may follow. */
void ls_sys_wait_thread_gone(pid_t tid);
/* fn on a new detached thread of stack bytes of stack, with every signal
 * blocked (it takes none meant for the program): 0 or a negative errno.
 * Not in a hook. */
int ls_sys_thread_start(void *(*fn)(void *), size_t stack);

static inline pid_t ls_gettid(void)
{
	return (pid_t)syscall(SYS_gettid);
}

/*
 * sched_yield() as a bare system call (x86-64: the agent is x86-64 only),
 * so that a lock has no function call in it and the table operations
 * that inline one (live.c) need not keep their values where a call
 * would not clobber them, for a yield that almost never happens.
 */
static inline void ls_sys_yield(void)
{
	long r = SYS_sched_yield;

	__asm__ volatile("syscall" : "+a"(r) : : "rcx", "r11", "memory");
}

/*
 * A test-and-test-and-set lock.  Holders never call out of the agent
 * while holding one, so waits are short; after a while a waiter yields the
 * CPU, because on a 2-core machine the holder may have been preempted.
 * Not reentrant.  A signal handler never takes one: the hooks' recursion
 * guard sends any allocation made while a lock is held straight to the
 * real allocator.
 */
typedef struct { int v; } ls_lock_t;
#define LS_LOCK_INIT { 0 }

static inline void ls_lock(ls_lock_t *l)
{
	unsigned spins = 0;

	for (;;) {
		if (!__atomic_exchange_n(&l->v, 1, __ATOMIC_ACQUIRE))
			return;
		while (__atomic_load_n(&l->v, __ATOMIC_RELAXED)) {
			if (++spins > 200)
				ls_sys_yield();
			else
				__builtin_ia32_pause();
		}
	}
}

static inline void ls_unlock(ls_lock_t *l)
{
	__atomic_store_n(&l->v, 0, __ATOMIC_RELEASE);
}

/* After fork, in the child: whatever a vanished thread held is free. */
static inline void ls_lock_reset(ls_lock_t *l)
{
	l->v = 0;
}

#endif
