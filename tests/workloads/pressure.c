/*
 * pressure.c - allocation under an address-space limit (RLIMIT_AS).
 *
 * Sets RLIMIT_AS to its current size plus HEADROOM KiB (argument, default
 * 2048), then allocates 16..1024-byte blocks into a list it keeps, until
 * malloc fails or 200000 succeeded.  Prints "ok N" on stdout: N successful
 * mallocs.  Every block stays live, from one site:
 *
 *   site            blocks  stack
 *   site_pressure   N       main -> site_pressure
 *
 * so under the agent, at exit, the report's live blocks plus what it says
 * it dropped (its own memory ran out) must be N, and the report must
 * exist.  No stdio: a stream buffer would take some of the headroom.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "wl.h"

WL_SITE static void **site_pressure(size_t size)
{
	void **p = malloc(size); /* @site_pressure */

	wl_sink = p;		/* not a tail call: the site keeps its frame */
	return p;
}

int main(int argc, char **argv)
{
	long headroom = argc > 1 ? atol(argv[1]) : 2048, vm = wl_vm_kib(), ok = 0;
	struct rlimit rl;
	void *keep = NULL;

	WL_CHECK(vm > 0, "no VmSize");
	rl.rlim_cur = rl.rlim_max = (rlim_t)(vm + headroom) * 1024;
	WL_CHECK(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit: %d", errno);
	for (int i = 0; i < wl_n(200000); i++) {
		void **p = site_pressure(16 + (size_t)(i % 64) * 16);

		if (!p)
			break;
		*p = keep;
		keep = p;
		ok++;
	}
	wl_sink = keep;
	wl_say(1, "ok %ld\n", ok);
	return 0;
}
