/*
 * blockeddead.c MODE [ready] - a thread drops a block after a returned
 * call of its own left the block's address in dead words below its
 * stack pointer, then waits in a system call of the C library while
 * main calls exit().  The words lie more than 128 bytes below the stack
 * pointer the call returned to and within the 128 bytes below the one
 * the thread waits at: memcheck made them undefined when the stack
 * pointer came down over them for the wait and scans none of them,
 * LeakSanitizer scans from the stack pointer: definitely lost.
 *   0  read() of a pipe nobody writes, 700 bytes
 *   1  a futex wait nobody wakes through syscall(), a wrapper without a
 *      frame (one dead word lies below the red zone memcheck keeps), 710
 *   2  nanosleep() of an hour, 720
 *   3  pause(), 730
 *   4  no planted words: the block's address printed by snprintf() into
 *      a local buffer (its dead frames hold it), then read(), 740
 *   5  the control: the dead words of mode 0, and the block held by a
 *      live local of the waiting frame: still reachable, 750
 *   6  the control: read() made in assembly by a leaf function of the
 *      program that keeps the block's only pointer in its own red zone
 *      across the call: still reachable, as memcheck says (LeakSanitizer
 *      scans from the stack pointer and calls it lost), 760
 * With a second argument main writes "ready" once the thread waits and
 * calls exit() when its standard input closes (for `leakscope check`).
 */
#include <fcntl.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
#include <sys/syscall.h>
#include <linux/futex.h>
#include "v.h"

static int hold[2], mode;
static int word;
static volatile pid_t waiter_tid;

/* long v_leaf_read(long fd, char *c, uintptr_t enc): read(fd, c, 1)
 * with ~enc, the pointer, kept 120 bytes below the stack pointer (in
 * the red zone of this leaf) across the call, cleared after it. */
long v_leaf_read(long fd, char *c, uintptr_t enc);
__asm__(".text\n"
	".globl v_leaf_read\n"
	".type v_leaf_read, @function\n"
	"v_leaf_read:\n\t"
	".cfi_startproc\n\t"
	"not %rdx\n\t"
	"mov %rdx, -120(%rsp)\n\t"
	"mov $1, %edx\n\t"
	"xor %eax, %eax\n\t"		/* SYS_read */
	"syscall\n\t"
	"movq $0, -120(%rsp)\n\t"
	"ret\n\t"
	".cfi_endproc\n"
	".size v_leaf_read, .-v_leaf_read\n");

/* Its frame lies below the caller's stack pointer sp: every word of it
 * between 128 and 512 bytes below sp gets ~enc, the pointer, every
 * other one 0 (the dead frames of the calls that made the block). */
__attribute__((noinline)) static void leave(uintptr_t enc, uintptr_t sp)
{
	volatile uintptr_t w[1024];
	size_t i;

	for (i = 0; i < 1024; i++)
		w[i] = (uintptr_t)&w[i] < sp - 128 &&
		       (uintptr_t)&w[i] >= sp - 512 ? ~enc : 0;
}

static void *waiter(void *arg)
{
	static const struct timespec hour = { 3600, 0 };
	uintptr_t enc = ~(uintptr_t)v_alloc(700 + 10 * mode), sp;
	void *volatile held = NULL;
	char c, buf[32];

	/* The compiler must not see that ~enc is the pointer (it could
	 * keep it in a register across the calls). */
	__asm__ volatile("" : "+r"(enc));
	__asm__ volatile("mov %%rsp, %0" : "=r"(sp));
	waiter_tid = (pid_t)syscall(SYS_gettid);
	if (mode == 5)
		held = (void *)~enc;
	if (mode == 4) {
		leave(~(uintptr_t)0, sp);
		snprintf(buf, sizeof(buf), "%p", (void *)~enc);
		v_use(buf);
	} else {
		leave(mode == 6 ? ~(uintptr_t)0 : enc, sp);
	}
	/* No stale copy in the scratch registers either (valgrind's malloc
	 * left one in r9, which syscall() moved to r8; pause() sets none). */
	__asm__ volatile("xor %%eax, %%eax\n\txor %%ecx, %%ecx\n\t"
			 "xor %%edx, %%edx\n\txor %%esi, %%esi\n\t"
			 "xor %%edi, %%edi\n\txor %%r8d, %%r8d\n\t"
			 "xor %%r9d, %%r9d\n\txor %%r10d, %%r10d\n\t"
			 "xor %%r11d, %%r11d"
			 : : : "rax", "rcx", "rdx", "rsi", "rdi", "r8", "r9",
			 "r10", "r11");
	switch (mode) {
	case 1:
		syscall(SYS_futex, &word, FUTEX_WAIT_PRIVATE, 0, NULL);
		break;
	case 2:
		nanosleep(&hour, NULL);
		break;
	case 3:
		pause();
		break;
	case 6:
		v_leaf_read(hold[0], &c, enc);
		break;
	default:
		(void)!read(hold[0], &c, 1);
		break;
	}
	v_use(held);
	return arg;
}

/* Is thread tid waiting in a system call?  Its syscall file says; in a
 * process that is not dumpable only root may open that file, and its
 * stat file's state says it sleeps. */
static int waiting(pid_t tid)
{
	char path[64], line[512], *p;
	int fd, sys = 1;
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/self/task/%d/syscall", (int)tid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		sys = 0;
		snprintf(path, sizeof(path), "/proc/self/task/%d/stat",
			 (int)tid);
		fd = open(path, O_RDONLY | O_CLOEXEC);
	}
	if (fd < 0)
		return 0;
	n = read(fd, line, sizeof(line) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	line[n] = 0;
	if (sys)
		return line[0] >= '0' && line[0] <= '9';
	p = strrchr(line, ')');
	return p && p[1] == ' ' && p[2] == 'S';
}

/* Until the waiter has started and waits in a system call (5 s at
 * most), and 50 ms more (under valgrind the call seen may be its wait
 * for valgrind's lock). */
static void wait_blocked(void)
{
	int i;

	for (i = 0; i < 5000 && !(waiter_tid && waiting(waiter_tid)); i++)
		usleep(1000);
	usleep(50000);
}

int main(int argc, char **argv)
{
	pthread_t t;

	mode = v_mode(argc, argv);
	if (pipe(hold) || pthread_create(&t, NULL, waiter, NULL))
		return 2;
	wait_blocked();
	v_ready(argc);
	exit(0);
}
