/*
 * t-agent-exitstop.c - the other threads stopped by a tracer child
 * (agent/exitstop.h): a thread blocked in read() with a known value in
 * r12, and a thread spinning in user code.  Their records must carry
 * that r12 and a stack pointer inside each one's stack; the spinner must
 * not move while held and must move after the release; the read must
 * restart (the byte written after the release is read, no EINTR); no
 * child may be left.
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "../../agent/exitstop.h"
#include "../../agent/sys.h"
#include "tap.h"

#define SENTINEL 0x5eed1234abcd5678ull
#define R12 (offsetof(struct user_regs_struct, r12) / 8)
#define RSP (offsetof(struct user_regs_struct, rsp) / 8)

static int hold[2], ready[2];
static volatile uint64_t spins;
static volatile int quit;
static pid_t tids[2];
static uint64_t stack_lo[2], stack_hi[2];

static void note_self(int i)
{
	pthread_attr_t a;
	void *lo;
	size_t len;

	tids[i] = ls_gettid();
	pthread_getattr_np(pthread_self(), &a);
	pthread_attr_getstack(&a, &lo, &len);
	pthread_attr_destroy(&a);
	stack_lo[i] = (uint64_t)(uintptr_t)lo;
	stack_hi[i] = stack_lo[i] + len;
	(void)!write(ready[1], "r", 1);
}

static void *blocked(void *arg)
{
	long nr = SYS_read;
	char c = 0;

	note_self(0);
	__asm__ volatile("mov %4, %%r12\n\tsyscall"
			 : "+a"(nr)
			 : "D"((long)hold[0]), "S"(&c), "d"(1L), "r"(SENTINEL)
			 : "rcx", "r11", "r12", "memory");
	return nr == 1 && c == 'x' ? arg : NULL;
}

static void *spinner(void *arg)
{
	note_self(1);
	while (!quit)
		spins++;
	return arg;
}

static uint64_t spins_over(unsigned ms)
{
	uint64_t a = spins;

	ls_sys_sleep_ms(ms);
	return spins - a;
}

static const struct lsnap_check_thread *record_of(
	const struct lsnap_check_thread *th, int n, pid_t tid)
{
	int i;

	for (i = 0; i < n; i++)
		if ((pid_t)th[i].tid == tid)
			return &th[i];
	return NULL;
}

int main(void)
{
	static struct lsnap_check_thread th[16];
	const struct lsnap_check_thread *b, *s;
	struct ls_exitstop es;
	pthread_t t[2];
	void *ret = NULL;
	char c;
	int n, st;

	if (pipe(hold) || pipe(ready))
		return 2;
	pthread_create(&t[0], NULL, blocked, (void *)1);
	pthread_create(&t[1], NULL, spinner, NULL);
	(void)!read(ready[0], &c, 1);
	(void)!read(ready[0], &c, 1);
	ls_sys_sleep_ms(20);	/* into its read */
	n = ls_exitstop_stop(&es, th, 16);
	if (n == -EPERM) {
		printf("1..0 # SKIP ptrace refused here (another tracer, Yama)\n");
		return 0;
	}
	is_u64(n, 2, "both other threads stopped (got %d)", n);
	b = record_of(th, n, tids[0]);
	s = record_of(th, n, tids[1]);
	ok(b && s, "a record for each");
	if (b) {
		is_u64(b->regs[R12], SENTINEL, "the blocked thread's r12");
		is_u64(b->sp, b->regs[RSP], "its sp is its rsp");
		ok(b->sp > stack_lo[0] && b->sp < stack_hi[0],
		   "its sp is inside its stack");
	}
	if (s)
		ok(s->sp > stack_lo[1] && s->sp < stack_hi[1],
		   "the spinner's sp is inside its stack");
	is_u64(spins_over(30), 0, "the spinner does not move while held");
	ls_exitstop_release(&es);
	is_u64(es.tracer, 0, "released: no tracer");
	ok(spins_over(30) > 0, "the spinner moves after the release");
	(void)!write(hold[1], "x", 1);
	pthread_join(t[0], &ret);
	ok(ret == (void *)1, "the read restarted and read the byte (no EINTR)");
	quit = 1;
	pthread_join(t[1], NULL);
	ok(waitpid(-1, &st, __WALL | WNOHANG) < 0 && errno == ECHILD,
	   "no child left");
	return tap_done();
}
