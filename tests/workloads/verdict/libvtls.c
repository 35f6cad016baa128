/* libvtls.c - a dynamic TLS variable (dlopen'ed by tlsstart.c). */
#include "v.h"

__thread void *dyn;	/* external: stores to it stay */

void vtls_set(size_t n);

void vtls_set(size_t n)
{
	dyn = v_alloc(n);
}
