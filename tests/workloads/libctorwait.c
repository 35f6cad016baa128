/*
 * libctorwait.c - a library whose constructor does not return: a thread
 * that dlopens it stays inside dlopen, holding the loader's load lock
 * (tests/workloads/dl-held.c, "dlopen": it waits until the object is in
 * the list of loaded objects, then it is in dlopen).  For good, unless
 * CTORWAIT_FD names a descriptor: then until a byte arrives on it (or it
 * closes), and dlopen finishes.
 */
#include <stdlib.h>
#include <unistd.h>

__attribute__((constructor))
static void wait_for_ever(void)
{
	const char *fd = getenv("CTORWAIT_FD");
	char c;

	if (fd && read(atoi(fd), &c, 1) >= 0)
		return;
	for (;;)
		pause();
}
