/*
 * exitstack.c MODE - exit() called on a stack the program allocated,
 * with a leak whose only pointer lies in a dead frame on that stack
 * (spray(): its frame fills 8 KiB with the pointer and returns), and
 * live frames above it that hold blocks (a local used after a call).
 *   0  a makecontext coroutine on a 64 KiB malloc'ed stack kept in a
 *      global: main's frame (suspended in swapcontext) holds a 500-byte
 *      block, the coroutine's frame a 510-byte block and calls
 *      spray(520) before calling leave(), which calls exit(0): 520
 *      definitely lost; 64 KiB + 500 + 510 still reachable
 *   1  a SIGUSR1 handler on a 64 KiB malloc'ed alternate stack kept in
 *      a global: main holds a 530-byte block and called spray(540)
 *      before raise() (a dead frame on main's own stack, below the
 *      interrupted context's stack pointer); the handler holds a
 *      550-byte block and calls spray(560), then leave(): 540 and 560
 *      definitely lost; 64 KiB + 530 + 550 still reachable
 *   2  a thread on a 256 KiB malloc'ed stack (pthread_attr_setstack)
 *      kept in a global, while main holds a 570-byte block and waits to
 *      join it: the thread holds a 580-byte block and calls spray(590),
 *      then leave(): 590 definitely lost; 256 KiB + 570 + 580 still
 *      reachable
 *   3  the same on a 256 KiB anonymous mapping (a guard page below
 *      it): main holds 600, the thread 610 and sprays 620: 620
 *      definitely lost; 600 + 610 still reachable
 *   4  main calls exit(0) while a thread on a 256 KiB malloc'ed stack
 *      kept in a global waits in read(): the thread holds a 630-byte
 *      block and sprayed 640 before.  The stack of a thread that did not
 *      call exit() is a block scanned whole, dead frames included, by
 *      memcheck and LeakSanitizer alike: 256 KiB + 630 + 640 still
 *      reachable
 *   5  mode 1 on a 64 KiB anonymous mapping (a guard page below it):
 *      main holds 650 and sprayed 660, the handler holds 670 and sprays
 *      680: 660 and 680 definitely lost; 650 + 670 still reachable
 *   6  mode 1 with the alternate stack installed with SS_AUTODISARM
 *      (sigaltstack() reads it as disabled while the handler runs):
 *      main holds 690 and sprayed 700, the handler holds 710 and sprays
 *      720: 700 and 720 definitely lost; 64 KiB + 690 + 710 still
 *      reachable
 *   7  mode 5 with SS_AUTODISARM: main holds 730 and sprayed 740, the
 *      handler holds 750 and sprays 760: 740 and 760 definitely lost;
 *      730 + 750 still reachable
 */
#include <pthread.h>
#include <sched.h>
#include <sys/mman.h>
#include <unistd.h>
#include "vstack.h"

#define SLOTS 1024
#define T_STACK (256u << 10)

void *stack_block;	/* external: stores to it stay */
static ucontext_t main_uc, co_uc;

/* A block whose only pointer is in this frame, dead once it returns:
 * the pointer fills the lower half of a 16 KiB array, below where the
 * frames of the calls that follow (raise(), the exit path) reach, so
 * only a cut at the stack pointer can tell those words dead.  The local
 * that held it is cleared: at -O0 it sits at the top of the frame,
 * where the next call's frame may leave a slot unwritten. */
__attribute__((noinline)) static void spray(size_t n)
{
	void *volatile slot[2 * SLOTS];
	void *volatile p = v_alloc(n);
	int i;

	for (i = 0; i < SLOTS; i++)
		slot[i] = p;
	p = NULL;
	v_use((void *)slot);
}

__attribute__((noinline, noreturn)) static void leave(void)
{
	exit(0);
}

/* Holds a block of held bytes in its frame, sprays a block of dropped
 * bytes below it, then leaves from a callee. */
__attribute__((noinline)) static void hold_spray_leave(size_t held_n,
						       size_t dropped)
{
	void *volatile held = v_alloc(held_n);

	spray(dropped);
	v_use(held);
	leave();
}

static void co_body(int unused)
{
	hold_spray_leave(510, 520);
}

__attribute__((noinline)) static void on_coroutine(void)
{
	void *volatile held = v_alloc(500);

	v_coroutine(&co_uc, &main_uc, co_body, 0, &stack_block);
	v_use(held);
}

static void on_usr1(int sig)
{
	hold_spray_leave(550, 560);
}

__attribute__((noinline)) static void on_altstack(void)
{
	void *volatile held = v_alloc(530);

	spray(540);
	v_altstack_raise(on_usr1, &stack_block);
	v_use(held);
}

static void on_usr1_mapped(int sig)
{
	hold_spray_leave(670, 680);
}

static void *mapped_stack(size_t size);

static void on_usr1_disarmed(int sig)
{
	hold_spray_leave(710, 720);
}

static void on_usr1_disarmed_mapped(int sig)
{
	hold_spray_leave(750, 760);
}

/* Modes 6 and 7: modes 1 and 5 with SS_AUTODISARM. */
__attribute__((noinline)) static void on_disarmed_altstack(int mapped)
{
	void *volatile held = v_alloc(mapped ? 730 : 690);

	spray(mapped ? 740 : 700);
	if (!mapped)
		stack_block = v_alloc(V_STACK);
	v_raise_on_flags(mapped ? mapped_stack(V_STACK) : stack_block,
			 mapped ? on_usr1_disarmed_mapped : on_usr1_disarmed,
			 SS_AUTODISARM);
	v_use(held);
}

__attribute__((noinline)) static void on_mapped_altstack(void)
{
	void *volatile held = v_alloc(650);

	spray(660);
	v_raise_on(mapped_stack(V_STACK), on_usr1_mapped);
	v_use(held);
}

static void *thread_body(void *arg)
{
	hold_spray_leave((size_t)arg, (size_t)arg + 10);
	return NULL;
}

static int waits[2];
static volatile int sprayed;

static void *waiter_body(void *arg)
{
	void *volatile held = v_alloc(630);
	char c;

	spray(640);
	sprayed = 1;
	(void)!read(waits[0], &c, 1);	/* never written */
	v_use(held);
	return arg;
}

/* A thread on a malloc'ed stack waiting while main leaves. */
__attribute__((noinline)) static void leave_waiter(void)
{
	pthread_attr_t attr;
	pthread_t t;

	stack_block = v_alloc(T_STACK);
	if (pipe(waits) || pthread_attr_init(&attr) ||
	    pthread_attr_setstack(&attr, stack_block, T_STACK) ||
	    pthread_create(&t, &attr, waiter_body, NULL))
		abort();
	while (!sprayed)
		sched_yield();
	leave();
}

/* A thread on [stack, stack + T_STACK) holding held_n bytes, joined
 * while this frame holds main_n bytes. */
__attribute__((noinline)) static void on_own_stack(void *stack, size_t main_n,
						   size_t held_n)
{
	void *volatile held = v_alloc(main_n);
	pthread_attr_t attr;
	pthread_t t;

	if (pthread_attr_init(&attr) ||
	    pthread_attr_setstack(&attr, stack, T_STACK) ||
	    pthread_create(&t, &attr, thread_body, (void *)held_n))
		abort();
	pthread_join(t, NULL);
	v_use(held);
}

/* size bytes of an anonymous mapping above a guard page. */
static void *mapped_stack(size_t size)
{
	char *m = mmap(NULL, size + 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED || mprotect(m, 4096, PROT_NONE))
		abort();
	return m + 4096;
}

int main(int argc, char **argv)
{
	switch (v_mode(argc, argv)) {
	case 0: on_coroutine(); break;
	case 1: on_altstack(); break;
	case 2:
		stack_block = v_alloc(T_STACK);
		on_own_stack(stack_block, 570, 580);
		break;
	case 3: on_own_stack(mapped_stack(T_STACK), 600, 610); break;
	case 4: leave_waiter(); break;
	case 5: on_mapped_altstack(); break;
	case 6: on_disarmed_altstack(0); break;
	case 7: on_disarmed_altstack(1); break;
	}
	return 0;
}
