/*
 * ulimit-errno.c - a program started under an address-space limit
 * (`ulimit -v`, set by its caller) that allocates 16..1024-byte blocks,
 * all kept, until malloc fails or 4000000 succeeded, with errno set to
 * EDOM before each call.  Prints "ok N changed M": N successful mallocs,
 * M of them that left errno other than EDOM.  Natively, single-threaded,
 * glibc never changes errno on success: M is 0.  No stdio before the
 * end: a stream buffer would take some of the limit.
 */
#include <errno.h>
#include <stdlib.h>
#include "wl.h"

int main(void)
{
	unsigned long n = 0, changed = 0;

	while (n < 4000000) {
		void *p;

		errno = EDOM;
		p = malloc(16 + (n * 7919) % 1009);
		if (!p)
			break;
		changed += errno != EDOM;
		wl_sink = p;
		n++;
	}
	wl_say(1, "ok %lu changed %lu\n", n, changed);
	return 0;
}
