/*
 * libearly.c - a shared library whose constructor allocates: it runs
 * before the preloaded agent's own constructor (ld.so initialises a
 * program's dependencies before the objects that were loaded first), so
 * the agent must track from the first call it sees, not from its
 * constructor.  Linked into early-ctor (see that file).
 *
 *   site               bytes  blocks
 *   site_lib_ctor      12345     1    early_lib_init (a constructor)
 */
#include <stdlib.h>
#include "wl.h"

void *early_lib_block;

WL_SITE static void site_lib_ctor(void)
{
	early_lib_block = malloc(12345); /* @site_lib_ctor */
	wl_sink = early_lib_block;
}

__attribute__((constructor)) static void early_lib_init(void)
{
	site_lib_ctor();
	WL_BARRIER();
}
