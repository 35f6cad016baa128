/* libvhold.c - a library whose static holds a block (dlopen'ed by
 * dlhold.c); its constructor allocates 100 bytes that its destructor
 * frees. */
#include "v.h"

void *vhold_held;	/* external: stores to it stay */
static void *own;

void vhold_set(size_t n);

void vhold_set(size_t n)
{
	vhold_held = v_alloc(n);
}

__attribute__((constructor)) static void vhold_init(void)
{
	own = v_alloc(100);
}

__attribute__((destructor)) static void vhold_fini(void)
{
	free(own);
}
