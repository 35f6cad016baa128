/*
 * attach-busy.c - threads allocating without pause while `leakscope
 * attach` comes in (tests/integration/t_attach_busy.py).
 *
 * Built -no-pie, and it keeps malloc and free in a table of function
 * pointers, as python3 does (PyMemAllocatorEx): a non-PIE program that
 * takes a function's address gets a canonical PLT stub for it, and the
 * global symbol lookup answers with that stub, which jumps through the
 * very GOT slot attach redirects to the agent's hook.  The threads call
 * both ways: directly (the PLT) and through the table (the stub).
 *
 * Started, it runs 4 threads and prints "ready 4".  Commands on stdin,
 * each answered with one line:
 *
 *   l  leaks, each its own site:
 *        site_busy_direct   7 x 1234 =  8638 bytes  malloc, called directly
 *        site_busy_table    3 x 4321 = 12963 bytes  malloc through the table
 *      answers "ok l"
 *   c  waits until every thread has made some 2000 more blocks, checking
 *      the pattern of every block it frees; answers "checked 4 bad N"
 *      (N blocks whose bytes changed under them: 0 unless broken)
 *   q  stops and joins the threads (they free what they hold), answers
 *      "bye" and exits 0
 *
 * The output is the same whether or not anybody attached.
 */
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "wl.h"

#define THREADS 4
#define HOLD 64

/* Taken addresses: canonical PLT stubs in a non-PIE program (set in
 * code: an initializer would become a dynamic relocation instead).  Not
 * static, so that the compiler cannot fold the calls into direct ones. */
struct busy_allocator {
	void *(*malloc)(size_t);
	void *(*calloc)(size_t, size_t);
	void *(*realloc)(void *, size_t);
	void (*free)(void *);
};
struct busy_allocator table;

static atomic_int stop;
static atomic_ulong rounds[THREADS];
static atomic_ulong bad;

WL_SITE static void site_busy_direct(void) { wl_sink = malloc(1234); }
WL_SITE static void site_busy_table(void) { wl_sink = table.malloc(4321); }

/* Did the block keep the bytes put in it? */
static void check_block(const unsigned char *p, size_t n, unsigned char v)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != v) {
			atomic_fetch_add(&bad, 1);
			return;
		}
}

struct held {
	unsigned char *p;
	size_t n;
	unsigned char v;
};

static void *one_block(unsigned long i, size_t *n)
{
	*n = 16 + (i * 13) % 1500;
	switch (i % 4) {
	case 0: return malloc(*n);
	case 1: return table.malloc(*n);
	case 2: return table.calloc(1, *n);
	default: return calloc(*n, 1);
	}
}

static void *busy_main(void *arg)
{
	int me = (int)(intptr_t)arg;
	struct held h[HOLD] = { { 0 } };
	unsigned long i = 0;
	int k;

	while (!atomic_load_explicit(&stop, memory_order_relaxed)) {
		struct held *b = &h[i % HOLD];

		if (b->p) {
			check_block(b->p, b->n, b->v);
			if (i & 1)
				free(b->p);
			else
				table.free(b->p);
		}
		b->p = one_block(i, &b->n);
		if (b->p && i % 7 == 0) {	/* grow some, through realloc */
			unsigned char *q = (i % 14 ? realloc : table.realloc)(b->p, b->n * 2);

			if (q) {
				b->p = q;
				b->n *= 2;
			}
		}
		b->v = (unsigned char)(i * 31 + me);
		if (b->p)
			memset(b->p, b->v, b->n);
		i++;
		if (i % HOLD == 0)
			atomic_fetch_add_explicit(&rounds[me], 1, memory_order_relaxed);
	}
	for (k = 0; k < HOLD; k++)
		free(h[k].p);
	return NULL;
}

/* Every thread did want more rounds (of HOLD blocks each) since now. */
static void wait_rounds(unsigned long want)
{
	unsigned long from[THREADS];
	int k, behind;

	for (k = 0; k < THREADS; k++)
		from[k] = atomic_load(&rounds[k]);
	do {
		usleep(1000);
		for (behind = 0, k = 0; k < THREADS; k++)
			behind |= atomic_load(&rounds[k]) - from[k] < want;
	} while (behind);
}

static int read_cmd(char *c)
{
	char ch;

	*c = 0;
	for (;;) {
		if (read(0, &ch, 1) != 1)
			return -1;
		if (ch == '\n')
			return 0;
		if (!*c)
			*c = ch;
	}
}

int main(void)
{
	pthread_t th[THREADS];
	char c;
	int k, n;

	table.malloc = malloc;
	table.calloc = calloc;
	table.realloc = realloc;
	table.free = free;
	for (k = 0; k < THREADS; k++)
		pthread_create(&th[k], NULL, busy_main, (void *)(intptr_t)k);
	wl_say(1, "ready %d\n", THREADS);
	while (!read_cmd(&c)) {
		switch (c) {
		case 'l':
			for (n = 0; n < wl_n(7); n++)
				site_busy_direct();
			for (n = 0; n < wl_n(3); n++)
				site_busy_table();
			wl_say(1, "ok l\n");
			break;
		case 'c':
			wait_rounds(2000 / HOLD + 1);
			wl_say(1, "checked %d bad %lu\n", THREADS, atomic_load(&bad));
			break;
		case 'q':
			atomic_store(&stop, 1);
			for (k = 0; k < THREADS; k++)
				pthread_join(th[k], NULL);
			wl_say(1, "bye\n");
			return 0;
		default:
			wl_say(1, "unknown %c\n", c);
		}
	}
	return 0;
}
