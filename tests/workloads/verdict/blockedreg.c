/*
 * blockedreg.c MODE [ready] - a thread blocked in a system call when main
 * returns holds the only pointer to a 400-byte block in a callee-saved
 * register: still reachable, as valgrind and LeakSanitizer say (both
 * read every register of every thread).  The system call is made here
 * in assembly, so the pointer is in that register and nowhere in memory
 * (its stack below was wiped, the only copy in memory is its complement).
 *   0  read() of a pipe nobody writes, the pointer in r12
 *   1  a futex wait nobody wakes, in rbx
 *   2  nanosleep of an hour, in r15
 * With a second argument main writes "ready" once the thread waits and
 * returns when its standard input closes.
 */
#include <pthread.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include "v.h"

static int ready[2], hold[2], mode;
static int word;
static const struct timespec hour = { 3600, 0 };

/* System call nr (a1, a2, a3; no fourth) with the complement of enc
 * turned back into the pointer in register reg just before it, and
 * cleared just after. */
#define HOLD_IN(reg, nr, a1, a2, a3, enc)					\
	__asm__ volatile("mov %4, %%" reg "\n\t"			\
			 "not %%" reg "\n\t"				\
			 "xor %%r10d, %%r10d\n\t"			\
			 "syscall\n\t"					\
			 "xor %%" reg ", %%" reg			\
			 : "+a"(nr)					\
			 : "D"(a1), "S"(a2), "d"(a3), "r"(enc)		\
			 : "rcx", "r10", "r11", reg, "memory")

/* Zeroes the stack below the caller's frame: no stale copy of the
 * pointer stays there from the calls that made the block. */
__attribute__((noinline)) static void wipe(void)
{
	volatile char buf[8192];

	memset((char *)buf, 0, sizeof(buf));
	v_use((void *)buf);
}

static void *blocked(void *arg)
{
	uintptr_t enc = ~(uintptr_t)v_alloc(400);
	long nr;
	char c;

	(void)!write(ready[1], "r", 1);
	wipe();
	switch (mode) {
	case 0:
		nr = SYS_read;
		HOLD_IN("r12", nr, (long)hold[0], (long)&c, 1L, enc);
		break;
	case 1:
		nr = SYS_futex;
		HOLD_IN("rbx", nr, (long)&word, (long)FUTEX_WAIT_PRIVATE, 0L,
			enc);
		break;
	default:
		nr = SYS_nanosleep;
		HOLD_IN("r15", nr, (long)&hour, 0L, 0L, enc);
		break;
	}
	return arg;
}

int main(int argc, char **argv)
{
	pthread_t t;
	char c;

	mode = v_mode(argc, argv);
	if (pipe(ready) || pipe(hold))
		return 2;
	pthread_create(&t, NULL, blocked, NULL);
	(void)!read(ready[0], &c, 1);
	usleep(20000);	/* into its system call */
	v_ready(argc);
	return 0;
}
