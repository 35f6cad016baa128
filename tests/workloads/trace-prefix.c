/*
 * trace-prefix.c - ground truth for `leakscope trace -O OBJ
 * --symbols-prefix wl_` (tests/integration/t_trace.py): an allocator of
 * its own, wl_malloc/wl_free (a bump allocator over a static arena; no
 * libc call), traced in the program's own binary.
 *
 *   trace-prefix wait   say "ready", wait for a byte on stdin, allocate,
 *                       say "done", wait for stdin to close
 *
 * Outstanding through wl_malloc, per site (first program frame):
 *   site_prefixed   144 bytes in 3 blocks (wl_malloc(48) three times)
 * tmp_prefixed allocates and frees.
 */
#include "wl.h"

static char arena[1 << 16];
static size_t used;

__attribute__((noinline, noipa, used)) void *wl_malloc(size_t n)
{
	void *p = arena + used;

	used += (n + 15) & ~(size_t)15;
	WL_BARRIER();
	return p;
}

__attribute__((noinline, noipa, used)) void wl_free(void *p)
{
	wl_sink = p;
	WL_BARRIER();
}

WL_SITE static void site_prefixed(void)
{
	for (int i = 0; i < wl_n(3); i++) {
		wl_sink = wl_malloc(48);
		WL_BARRIER();
	}
}

WL_HELPER static void tmp_prefixed(void)
{
	for (int i = 0; i < wl_n(5); i++) {
		void *p = wl_malloc(32);

		WL_BARRIER();
		wl_free(p);
	}
}

int main(void)
{
	char c;

	wl_say(1, "ready\n");
	if (read(0, &c, 1) != 1)
		return 1;
	site_prefixed();
	tmp_prefixed();
	wl_say(1, "done\n");
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
