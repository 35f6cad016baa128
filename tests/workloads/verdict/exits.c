/*
 * exits.c MODE - ways out that are not a plain exit() from main's stack.
 *   0  quick_exit(0) from main (an at_quick_exit handler runs, atexit
 *      handlers and destructors do not): main holds a 300-byte block in
 *      its live frame (still reachable), a 310-byte block was dropped
 *      (definitely lost)
 *   1  vfork, the child execs /bin/true, the parent waits for it: the
 *      parent dropped a 320-byte block (lost) and keeps a 330-byte block
 *      in a global
 *   2  exit(0) from a makecontext coroutine whose stack is a malloc'ed
 *      block kept in a global: the coroutine's frame holds a 340-byte
 *      block, main's frame (suspended in swapcontext) a 350-byte block,
 *      both still reachable; a 360-byte block dropped (definitely lost)
 *   3  exit(0) from a SIGUSR1 handler on a malloc'ed alternate stack kept
 *      in a global: the handler's frame holds a 370-byte block, main's
 *      frame (interrupted) a 380-byte block, both still reachable; a
 *      390-byte block dropped (definitely lost)
 *   4  abort() from main (SIGABRT's default action): main holds a
 *      400-byte block in its live frame, a 410-byte block was dropped
 *   5  exit(0) from a thread while another spins (never in a system
 *      call) holding a 420-byte block in its frame and main waits to
 *      join: the exiting thread's frame holds a 430-byte block, both
 *      still reachable; a 440-byte block dropped (definitely lost)
 *   6  exit(0) from a makecontext coroutine on a malloc'ed stack kept in a
 *      global, its frame holding nothing: the frame that called
 *      swapcontext, the lowest live one on main's stack, holds the only
 *      pointer to a 450-byte block (still reachable), used after the
 *      switch in code that never runs; a 460-byte block dropped before
 *      (definitely lost)
 *   7  mode 2 on a second thread while main waits to join it: exit(0)
 *      from the thread's makecontext coroutine; the coroutine's frame
 *      holds a 340-byte block, the thread's frame (suspended in
 *      swapcontext) a 350-byte block, both still reachable; a 360-byte
 *      block dropped (definitely lost)
 *   8  main leaves its stack by setcontext (nothing saved) for a
 *      makecontext coroutine that calls exit(0): the frame that called
 *      setcontext holds a 470-byte block (still reachable: memcheck
 *      keeps the words above the stack pointer it left), a 480-byte
 *      block dropped before (definitely lost)
 */
#include <pthread.h>
#include <sched.h>
#include <sys/wait.h>
#include <unistd.h>
#include "vstack.h"

void *keep, *stack_block;	/* external: stores to them stay */
static ucontext_t main_uc, co_uc;

static void at_quick(void)
{
	(void)!write(1, "at_quick_exit\n", 14);
}

__attribute__((noinline)) static void drop(size_t n)
{
	v_use(v_alloc(n));
}

__attribute__((noinline)) static void quick(void)
{
	void *volatile held = v_alloc(300);

	drop(310);
	at_quick_exit(at_quick);
	v_use(held);
	quick_exit(0);
}

__attribute__((noinline)) static void spawn(void)
{
	pid_t pid;
	int status;

	drop(320);
	keep = v_alloc(330);
	pid = vfork();
	if (pid == 0) {
		execl("/bin/true", "true", (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) != pid || status != 0)
		abort();
}

static void co_body(int unused)
{
	void *volatile held = v_alloc(340);

	v_use(held);
	exit(0);
}

__attribute__((noinline)) static void on_coroutine(void)
{
	void *volatile held = v_alloc(350);

	drop(360);
	v_coroutine(&co_uc, &main_uc, co_body, 0, &stack_block);
	v_use(held);
}

static void co_exit(int unused)
{
	exit(0);
}

/* co_uc: co_exit() on a malloc'ed stack kept in stack_block. */
__attribute__((noinline)) static void exit_context(void)
{
	stack_block = v_alloc(V_STACK);
	getcontext(&co_uc);
	co_uc.uc_stack.ss_sp = stack_block;
	co_uc.uc_stack.ss_size = V_STACK;
	co_uc.uc_link = NULL;
	makecontext(&co_uc, (void (*)(void))co_exit, 1, 0);
}

__attribute__((noinline)) static void switch_holding(void)
{
	void *volatile held = v_alloc(450);

	drop(460);
	exit_context();
	swapcontext(&main_uc, &co_uc);
	v_use(held);
}

static void *coroutine_thread(void *arg)
{
	on_coroutine();
	return arg;
}

__attribute__((noinline)) static void from_thread_coroutine(void)
{
	pthread_t t;

	pthread_create(&t, NULL, coroutine_thread, NULL);
	pthread_join(t, NULL);
}

__attribute__((noinline)) static void set_holding(void)
{
	void *volatile held = v_alloc(470);

	drop(480);
	exit_context();
	setcontext(&co_uc);
	v_use(held);
}

static void on_usr1(int sig)
{
	void *volatile held = v_alloc(370);

	v_use(held);
	exit(0);
}

__attribute__((noinline)) static void on_altstack(void)
{
	void *volatile held = v_alloc(380);

	drop(390);
	v_altstack_raise(on_usr1, &stack_block);
	v_use(held);
}

__attribute__((noinline)) static void aborts(void)
{
	void *volatile held = v_alloc(400);

	drop(410);
	v_use(held);
	abort();
}

static volatile int spinning;

static void *spinner(void *arg)
{
	void *volatile held = v_alloc(420);

	spinning = 1;
	for (;;)
		v_use(held);
	return arg;
}

static void *exiter(void *arg)
{
	void *volatile held = v_alloc(430);

	while (!spinning)
		sched_yield();
	drop(440);
	v_use(held);
	exit(0);
}

__attribute__((noinline)) static void from_thread(void)
{
	pthread_t s, e;

	pthread_create(&s, NULL, spinner, NULL);
	pthread_create(&e, NULL, exiter, NULL);
	pthread_join(e, NULL);
}

int main(int argc, char **argv)
{
	switch (v_mode(argc, argv)) {
	case 0: quick(); break;
	case 1: spawn(); break;
	case 2: on_coroutine(); break;
	case 3: on_altstack(); break;
	case 4: aborts(); break;
	case 5: from_thread(); break;
	case 6: switch_holding(); break;
	case 7: from_thread_coroutine(); break;
	case 8: set_holding(); break;
	}
	return 0;
}
