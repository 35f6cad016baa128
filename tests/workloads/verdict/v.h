/*
 * v.h - what the verdict programs share (tests/integration/t_verdicts.py
 * builds each with gcc and clang at -O0 and -O2, runs it under
 * `leakscope run --leak-check` and under valgrind, and compares their
 * LEAK SUMMARYs).  No stdio: its buffers would be the runtime's blocks.
 */
#ifndef V_H
#define V_H
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* The compiler must believe p is used (no allocation optimised away). */
static inline void v_use(void *p)
{
	__asm__ volatile("" : : "r"(p) : "memory");
}

/* n bytes, written, kept alive through the call. */
__attribute__((noinline)) static void *v_alloc(size_t n)
{
	void *p = malloc(n);

	if (!p && n)
		abort();
	memset(p, 0x5a, n);
	v_use(p);
	return p;
}

static inline int v_mode(int argc, char **argv)
{
	return argc > 1 ? atoi(argv[1]) : 0;
}

/* With a second argument ("MODE ready"): "ready" on standard output,
 * then until standard input closes (a test holds the program there,
 * its threads waiting, while it checks or traces it). */
static inline void v_ready(int argc)
{
	char c;

	if (argc < 3)
		return;
	(void)!write(1, "ready\n", 6);
	while (read(0, &c, 1) > 0)
		;
}
#endif
