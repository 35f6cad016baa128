/*
 * libctorwait.c - a library whose constructor never returns: a thread
 * that dlopens it stays inside dlopen, holding the loader's load lock
 * (tests/workloads/dl-held.c, "dlopen": it waits until the object is in
 * the list of loaded objects, then it is in dlopen for good).
 */
#include <unistd.h>

__attribute__((constructor))
static void wait_for_ever(void)
{
	for (;;)
		pause();
}
