/*
 * reach-heur.cc - blocks held only by interior pointers that valgrind's
 * leak heuristics (--leak-check-heuristics=all, memcheck 3.19's default)
 * accept as pointers to the start, for tests/integration/t_reach_heur.py.
 * Built, like every workload, without frame pointers; with the old
 * (reference-counted) std::string of libstdc++, whose objects point 24
 * bytes into their buffer.
 *
 * Ground truth once "ready" is written to fd 1 (and at exit, on end of
 * input):
 *
 *   site             bytes  blocks  category, heuristic
 *   site_stdstring       8     1    still reachable (a global points to
 *                                   the std::string object)
 *                       65     1    still reachable via stdstring: its
 *                                   buffer (24-byte header, 40 chars, NUL)
 *   site_length64      108     1    still reachable via length64: a
 *                                   global points 8 bytes in, after the
 *                                   word 100
 *   site_newarray       68     1    still reachable via newarray: new
 *                                   Obj[5] (a count, then 5 x 12 bytes)
 *   site_multiple       40     1    still reachable via multipleinherit-
 *                                   ance: a global Right* into a Both
 *   site_interior      200     1    possibly lost: a global points 16
 *                                   bytes in, which no heuristic accepts
 *   site_lost           50     1    definitely lost
 *
 * No stdio.
 */
#define _GLIBCXX_USE_CXX11_ABI 0
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <unistd.h>
#include "wl.h"

struct Obj {
	int v[3];
	~Obj() { wl_sink = this; }	/* a destructor: new[] keeps a count */
};

struct Left {
	virtual ~Left() {}
	long l = 1;
};

struct Right {
	virtual ~Right() {}
	long r = 2;
};

struct Both : Left, Right {
	long b = 3;
};

static std::string *volatile keep_string;
static char *volatile keep_length64;
static Obj *volatile keep_array;
static Right *volatile keep_right;
static char *volatile keep_interior;

WL_SITE static std::string *site_stdstring(void)
{
	std::string *s = new std::string(40, 'x'); /* @site_stdstring */

	WL_BARRIER();
	return s;
}

WL_SITE static char *site_length64(void)
{
	uint64_t *p = (uint64_t *)malloc(8 + 100); /* @site_length64 */

	p[0] = 100;
	memset(p + 1, 0, 100);
	return (char *)(p + 1);
}

WL_SITE static Obj *site_newarray(void)
{
	Obj *a = new Obj[wl_n(5)]; /* @site_newarray */

	WL_BARRIER();
	return a;
}

WL_SITE static Right *site_multiple(void)
{
	Both *b = new Both; /* @site_multiple */

	WL_BARRIER();
	return b;
}

WL_SITE static char *site_interior(void)
{
	char *p = (char *)calloc(1, 200); /* @site_interior */

	WL_BARRIER();
	return p + 16;
}

WL_SITE static void *site_lost(void)
{
	void *p = malloc(50); /* @site_lost */

	WL_BARRIER();
	return p;
}

/* Overwrite the dead stack below us, so no stale copy of the lost
 * pointer is left where a scan (from the stack pointer less the red
 * zone) could see it. */
WL_HELPER static void scrub(void)
{
	volatile char pad[8192];

	memset((char *)pad, 0, sizeof(pad));
	WL_BARRIER();
}

int main()
{
	char c;

	keep_string = site_stdstring();
	keep_length64 = site_length64();
	keep_array = site_newarray();
	keep_right = site_multiple();
	keep_interior = site_interior();
	wl_sink = site_lost();
	wl_sink = nullptr;
	scrub();
	wl_say(1, "ready %d\n", (int)getpid());
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
