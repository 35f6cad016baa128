/*
 * t-agent-redzone.c - the red zone below a stopped thread's stack
 * pointer (ls_scan_red_zone, agent/reach.c), on real threads of this
 * process: A waits in libc's read(), D in read() through libc's
 * syscall() (a wrapper without a frame), B in a read() made here in
 * assembly, C spins.  Only A and D wait in a system call of the C
 * library: their stacks are scanned from the stack pointer exactly; B
 * (its system call is the program's own, a leaf may keep a live word
 * below its stack pointer across it) and C (stopped between two
 * instructions) keep the 128-byte red zone.  The same rule on each
 * stop's records: the tracer's (ls_exitstop_stop, every register) and
 * /proc's (ls_scan_blocked_thread, the fallback without ptrace, and
 * ls_scan_blocked_sps, the concurrent mark's), and where
 * ls_scan_root_start begins each stack.  A record that does not say
 * the call is libc's (orig_rax -1, no `syscall` instruction before rip,
 * too few registers, libc's code not known) keeps the red zone.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <unistd.h>
#include "../../agent/exitstop.h"
#include "../../agent/reach.h"
#include "../../agent/reachint.h"
#include "../../agent/sys.h"
#include "tap.h"

#define ORIG_RAX (offsetof(struct user_regs_struct, orig_rax) / 8)
#define RIP (offsetof(struct user_regs_struct, rip) / 8)
#define RSP (offsetof(struct user_regs_struct, rsp) / 8)

enum { A, D, B, C, NT };
static const char *const name[NT] = { "libc's read()", "libc's syscall()",
				       "the program's own syscall",
				       "a spinning thread" };
static int hold[2], ready[2];
static volatile int quit;
static pid_t tids[NT];
static uint64_t at[NT];		/* an address in each one's stack */
static const struct region *stack_of[NT];	/* its mapping in sc's maps */
static struct scan sc;	/* static: 270 KiB */

static void *body(void *arg)
{
	int i = (int)(intptr_t)arg;
	long nr = SYS_read;
	char c = 0;

	tids[i] = ls_gettid();
	at[i] = (uint64_t)(uintptr_t)&c;
	(void)!write(ready[1], "r", 1);
	switch (i) {
	case A:
		return (void *)(intptr_t)read(hold[0], &c, 1);
	case D:
		return (void *)(intptr_t)syscall(SYS_read, hold[0], &c, 1);
	case B:
		__asm__ volatile("syscall"
				 : "+a"(nr)
				 : "D"((long)hold[0]), "S"(&c), "d"(1L)
				 : "rcx", "r11", "memory");
		return (void *)nr;
	default:
		while (!quit)
			;
		return NULL;
	}
}

/* Until the threads but C wait in read() (2 s at most). */
static void wait_blocked(void)
{
	struct lsnap_check_thread t;
	int i, k, n;

	for (k = 0; k < 2000; k++) {
		for (i = n = 0; i < C; i++)
			n += !ls_scan_blocked_thread(tids[i], &t, NULL) &&
			     t.regs[ORIG_RAX] == SYS_read;
		if (n == C)
			return;
		ls_sys_sleep_ms(1);
	}
}

/* The thread whose stack mapping (in this process's maps, read by the
 * scan's own reader) holds sp, or -1. */
static int thread_of(uint64_t sp)
{
	const struct region *g = ls_scan_region_of(&sc, sp);
	int i;

	for (i = 0; i < NT && g; i++)
		if (g == stack_of[i])
			return i;
	return -1;
}

static int read_maps(void)
{
	int i;

	if (ls_scan_parse_maps(&sc))
		return -1;
	for (i = 0; i < NT; i++)
		if (!(stack_of[i] = ls_scan_region_of(&sc, at[i])))
			return -1;
	return 0;
}

static uint64_t want_red(int i)
{
	return i == A || i == D ? 0 : RED_ZONE;
}

/* /proc's records, the threads running: A, B and D wait, C runs. */
static void from_proc(void)
{
	struct lsnap_check_thread t;
	uint64_t sps[8], reds[8], sig;
	size_t n, k;
	int i, seen = 0;

	for (i = 0; i < NT; i++) {
		int r = ls_scan_blocked_thread(tids[i], &t, &sig);

		if (i == C) {
			ok(r == -1, "/proc: %s is not waiting", name[i]);
			continue;
		}
		ok(!r && t.tid == (uint32_t)tids[i] && t.sp == t.regs[RSP] &&
		   thread_of(t.sp) == i && t.regs[ORIG_RAX] == SYS_read,
		   "/proc: %s waits in read(), its sp in its stack", name[i]);
		is_u64(ls_scan_red_zone(&t), want_red(i),
		       "/proc: %s, the red zone", name[i]);
	}
	n = ls_scan_blocked_sps(sps, reds, 8, 42);
	ok(n == 4 && sps[0] == 42 && reds[0] == RED_ZONE,
	   "the concurrent mark's list: the caller first, with its red zone, "
	   "and the 3 waiting threads (got %zu)", n);
	for (k = 1; k < n; k++) {
		i = thread_of(sps[k]);
		if (i >= 0 && i != C && reds[k] == want_red(i))
			seen |= 1 << i;
	}
	is_u64(seen, (1 << A) | (1 << B) | (1 << D),
	       "the concurrent mark's list: each waiting thread's red zone");
}

/* Records that do not say the call is libc's keep the red zone. */
static void doubts(const struct lsnap_check_thread *a)
{
	struct lsnap_check_thread t = *a;
	uint64_t hi = ls_scan_prep.libc_hi;

	is_u64(ls_scan_red_zone(&t), 0, "A's record as it is: no red zone");
	t.regs[ORIG_RAX] = ~0ull;
	is_u64(ls_scan_red_zone(&t), RED_ZONE, "orig_rax -1 (not in a call)");
	t = *a;
	t.regs[RIP]++;
	is_u64(ls_scan_red_zone(&t), RED_ZONE,
	       "rip one byte on: no syscall instruction before it");
	t = *a;
	t.nregs = RIP;
	is_u64(ls_scan_red_zone(&t), RED_ZONE, "no rip in the record");
	t = *a;
	ls_scan_prep.libc_hi = 0;
	is_u64(ls_scan_red_zone(&t), RED_ZONE, "libc's code not known");
	ls_scan_prep.libc_hi = hi;
	t.regs[RIP] = hi + 2;
	is_u64(ls_scan_red_zone(&t), RED_ZONE, "rip past libc's code");
}

/* The tracer's records: every register. */
static void from_tracer(void)
{
	static struct lsnap_check_thread th[16];
	struct ls_exitstop es;
	int n, i, k, got = 0;

	n = ls_exitstop_stop(&es, th, 16);
	if (n == -EPERM) {
		ok(1, "# SKIP ptrace refused here (another tracer, Yama)");
		return;
	}
	is_u64(n, NT, "the other threads stopped (got %d)", n);
	for (k = 0; k < n; k++) {
		i = thread_of(th[k].sp);
		if (i < 0)
			continue;
		got |= 1 << i;
		is_u64(ls_scan_red_zone(&th[k]), want_red(i),
		       "stopped: %s, the red zone", name[i]);
		is_u64(ls_scan_root_start(&sc, stack_of[i], th, (uint32_t)n,
					  0, 0),
		       th[k].sp - want_red(i),
		       "stopped: %s, its stack's roots begin there", name[i]);
		if (i == A)
			doubts(&th[k]);
	}
	is_u64(got, (1 << NT) - 1, "a record in each thread's stack");
	ls_exitstop_release(&es);
}

int main(void)
{
	void *libc_read = dlsym(RTLD_DEFAULT, "read");
	pthread_t t[NT];
	void *ret;
	char c;
	int i;

	if (pipe(hold) || pipe(ready))
		return 2;
	ls_reach_learn_segments();
	ok(ls_scan_prep.libc_lo < ls_scan_prep.libc_hi &&
	   (uint64_t)(uintptr_t)libc_read >= ls_scan_prep.libc_lo &&
	   (uint64_t)(uintptr_t)libc_read < ls_scan_prep.libc_hi,
	   "libc's code found, read() in it");
	for (i = 0; i < NT; i++)
		pthread_create(&t[i], NULL, body, (void *)(intptr_t)i);
	for (i = 0; i < NT; i++)
		(void)!read(ready[0], &c, 1);
	wait_blocked();
	ok(!read_maps(), "each thread's stack mapping found in the maps");
	from_proc();
	from_tracer();
	quit = 1;
	(void)!write(hold[1], "xxx", 3);
	for (i = 0; i < NT; i++) {
		pthread_join(t[i], &ret);
		if (i != C)
			ok(ret == (void *)1, "%s read its byte after the stops",
			   name[i]);
	}
	return tap_done();
}
