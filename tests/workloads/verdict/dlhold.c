/*
 * dlhold.c LIBRARY MODE - a block held only by a static of a dlopen'ed
 * library (tests/workloads/verdict/libvhold.c).
 *   0  dlopen, the library keeps a 400-byte block, dlclose: the
 *      library's data is unmapped, the block is definitely lost
 *   1  the same without dlclose: still reachable
 *   2  dlopen and dlclose only: the library's own 100-byte block is
 *      freed by its destructor, nothing left
 */
#include <dlfcn.h>
#include "v.h"

int main(int argc, char **argv)
{
	void *h = dlopen(argv[1], RTLD_NOW);
	void (*set)(size_t);
	int mode = argc > 2 ? atoi(argv[2]) : 0;

	if (!h)
		abort();
	set = (void (*)(size_t))dlsym(h, "vhold_set");
	if (!set)
		abort();
	if (mode != 2)
		set(400);
	if (mode != 1)
		dlclose(h);
	return 0;
}
