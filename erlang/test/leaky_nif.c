/*
 * leaky_nif.c - a NIF that leaks native memory on purpose, the ground
 * truth of tests/integration/t_erlang.py.
 *
 * leaky_nif:leak(Bytes) mallocs Bytes, fills them (so that they count in
 * the process's RSS) and never frees them: each call leaves exactly one
 * block of Bytes bytes at the site leaky_keep() (the malloc marked
 * @site_leaky_keep), whose caller is leak_nif().  Nothing else here
 * allocates.  Built without frame pointers like every workload.
 */
#include <stdlib.h>
#include <string.h>
#include <erl_nif.h>

/* The blocks stay reachable from here: a leak by growth, as a cache that
 * is never trimmed. */
static void *volatile last_block;

__attribute__((noinline)) static void *leaky_keep(size_t n)
{
	void *p = malloc(n);	/* @site_leaky_keep */

	if (p)
		memset(p, 0x5a, n);
	last_block = p;
	return p;
}

static ERL_NIF_TERM leak_nif(ErlNifEnv *env, int argc,
			     const ERL_NIF_TERM argv[])
{
	unsigned long n;

	if (!enif_get_ulong(env, argv[0], &n) || !n || n > (64ul << 20))
		return enif_make_badarg(env);
	if (!leaky_keep(n))
		return enif_make_atom(env, "enomem");
	return enif_make_atom(env, "ok");
}

static ErlNifFunc funcs[] = {
	{ "leak", 1, leak_nif, 0 },
};

ERL_NIF_INIT(leaky_nif, funcs, NULL, NULL, NULL, NULL)
