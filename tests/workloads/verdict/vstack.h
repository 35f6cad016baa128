/*
 * vstack.h - stacks the verdict programs allocate with malloc: a signal
 * handler's alternate stack, a makecontext coroutine's (roots.c,
 * exits.c).  Each is a 64 KiB block of v_alloc.
 */
#ifndef VSTACK_H
#define VSTACK_H
#include <signal.h>
#include <ucontext.h>
#include "v.h"

#define V_STACK 65536

/* The kernel's flag (linux/signal.h, which clashes with signal.h): the
 * alternate stack reads as disabled while its handler runs. */
#ifndef SS_AUTODISARM
#define SS_AUTODISARM (1U << 31)
#endif

/* Runs handler for SIGUSR1 on the V_STACK bytes at stack, installed
 * with flags (0 or SS_AUTODISARM).  valgrind (3.19) refuses
 * SS_AUTODISARM (EINVAL): the stack is then installed without it, and
 * valgrind's verdict is that of the same program without the flag,
 * which changes only what sigaltstack() says inside the handler. */
__attribute__((noinline)) static void v_raise_on_flags(void *stack,
						       void (*handler)(int),
						       int flags)
{
	struct sigaction sa;
	stack_t ss;

	ss.ss_sp = stack;
	ss.ss_size = V_STACK;
	ss.ss_flags = flags;
	if (sigaltstack(&ss, NULL)) {
		ss.ss_flags = 0;
		if (!flags || sigaltstack(&ss, NULL))
			abort();
	}
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = handler;
	sa.sa_flags = SA_ONSTACK;
	sigaction(SIGUSR1, &sa, NULL);
	raise(SIGUSR1);
}

/* Runs handler for SIGUSR1 on the V_STACK bytes at stack. */
__attribute__((noinline)) static void v_raise_on(void *stack,
						 void (*handler)(int))
{
	v_raise_on_flags(stack, handler, 0);
}

/* Runs handler for SIGUSR1 on a malloc'ed alternate stack, kept in
 * *keep first. */
__attribute__((noinline)) static void v_altstack_raise(void (*handler)(int),
						       void **keep)
{
	void *stack = v_alloc(V_STACK);

	*keep = stack;
	v_raise_on(stack, handler);
}

/* Makes co a coroutine running body(arg) on a malloc'ed stack, kept in
 * *keep first, that ends into link; switches to it from link. */
__attribute__((noinline)) static void v_coroutine(ucontext_t *co,
						  ucontext_t *link,
						  void (*body)(int), int arg,
						  void **keep)
{
	void *stack = v_alloc(V_STACK);

	*keep = stack;
	getcontext(co);
	co->uc_stack.ss_sp = stack;
	co->uc_stack.ss_size = V_STACK;
	co->uc_link = link;
	makecontext(co, (void (*)(void))body, 1, arg);
	swapcontext(link, co);
}
#endif
