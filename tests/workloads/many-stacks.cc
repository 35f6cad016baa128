/*
 * many-stacks.cc - one leaked block from each of 131,072 distinct stacks,
 * all through template instantiations: the time-to-first-report workload
 * (docs/PERFORMANCE.md, bench/first-report).
 *
 * Step<D, T>::walk(path) goes down 17 levels (D = 0..16); at each level
 * bit D of path picks one of two call instructions, so every path in
 * 0..131071 is a distinct chain of return addresses, and the last level
 * allocates 32 bytes with new from one site and never frees it.  Expected
 * outstanding at exit: 131,072 blocks, 4,194,304 bytes, one block per
 * stack.  The function names carry template arguments
 * ("Step<3, std::pair<int, long> >::walk(unsigned int)"), which the report
 * cuts to "Step<…>::walk(unsigned int)".
 */
#include <utility>
#include "wl.h"

enum { LEVELS = 17 };

template <int D, typename T> struct Step {
	WL_HELPER static void walk(unsigned path);
};

template <typename T> struct Step<LEVELS, T> {
	WL_SITE static void walk(unsigned path)
	{
		wl_sink = new long[4]{(long)path};
	}
};

template <int D, typename T>
void Step<D, T>::walk(unsigned path)
{
	/* Two different asm statements after the calls: the compiler
	 * cannot merge the two calls into one. */
	if (path >> D & 1) {
		Step<D + 1, T>::walk(path);
		__asm__ __volatile__("nop" ::: "memory");
	} else {
		Step<D + 1, T>::walk(path);
		__asm__ __volatile__("nop; nop" ::: "memory");
	}
}

int main(void)
{
	unsigned p;

	for (p = 0; p < 1u << LEVELS; p++)
		Step<0, std::pair<int, long> >::walk(p);
	return 0;
}
