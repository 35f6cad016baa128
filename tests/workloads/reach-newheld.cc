/*
 * reach-newheld.cc - a block held only by an object C++'s operator new
 * allocated, for an allocator that defines operator new itself (Debian's
 * libjemalloc.so.2, LD_PRELOADed by tests/integration/t_reach_stale.py):
 * the agent hooks that operator new too, so the object is a tracked
 * block, reached from a global, and what it holds is reachable through
 * it with none of the allocator's memory scanned as roots.
 *
 * Ground truth (at exit; no stdio):
 *
 *   site        bytes  blocks  category
 *   site_held   100    1       still reachable: the object, reachable
 *                              from a global, holds it
 */
#include <stdlib.h>
#include "wl.h"

struct holder {
	void *p[4];
};

static holder *volatile keep;

WL_SITE static void *site_held(size_t n)
{
	void *p = calloc(1, n); /* @site_held */

	WL_BARRIER();
	return p;
}

int main()
{
	holder *h = new holder();

	h->p[2] = site_held(100);
	keep = h;
	return 0;
}
