/*
 * cxxalloc.cc [throw|clean] [wait] - C++'s operator new and delete, every variant, as
 * an allocator that defines them itself (jemalloc, tcmalloc) serves them
 * (tests/integration/t_cxxalloc.py runs it under each, and valgrind on
 * the glibc build as the oracle).  First one block is newed and deleted
 * through each delete variant (plain, sized, aligned, sized and aligned,
 * nothrow; new[] and delete[]): none of them is a leak.  Then:
 *   - 10 `new Node` (64 bytes each) dropped in leak_nodes: 640 bytes in
 *     10 blocks definitely lost
 *   - new char[300] dropped in leak_array: 300 bytes definitely lost
 *   - an alignas(64) object of 128 bytes dropped in leak_aligned (lost),
 *     and an aligned new[] of 2 (256 bytes) kept in a global (reachable)
 *   - a nothrow new of a Node dropped in leak_nothrow (64 bytes lost); a
 *     nothrow new of 2^62 bytes returns NULL and records nothing
 *   - a std::vector<long> of 100 (800 bytes) and a std::map<int, long> of
 *     5 (5 nodes of 48) kept in globals by keep_containers, with their
 *     24- and 48-byte objects: still reachable
 *   - with "throw": new of 2^62 bytes throws std::bad_alloc, caught;
 *     then a Node dropped in leak_after_throw: 64 bytes definitely lost
 *     (valgrind cannot throw from its operator new: it aborts the program
 *     instead, so its run is without "throw")
 * In all, 1132 bytes in 13 blocks definitely lost (1196 in 14 with
 * "throw"), 1368 bytes in 9 blocks still reachable.  With "clean", only
 * the blocks kept (leak_aligned's new[], keep_containers'): nothing lost.
 * With "wait", before the first line, one block of each size the shapes
 * leak is made and kept (still reachable: a program attached to later has
 * its slabs' first regions taken, to which jemalloc's own records,
 * allocated before the attach and scanned as roots, point).  With "wait", the
 * shapes are made on each line "l" of standard input, answered "done l";
 * the program ends at end of input.
 */
#include <map>
#include <new>
#include <vector>
#include <unistd.h>
#include "v.h"

/* Every block is written whole, as v_alloc's are: an allocator that keeps
 * its free lists inside free blocks (tcmalloc) leaves a stale link in a
 * block's first word, which would chain the leaks into one. */
struct Node {
	long v[8];
	Node() { memset(v, 0x5a, sizeof(v)); }
};

struct alignas(64) Wide {
	char c[128];
	Wide() { memset(c, 0x5a, sizeof(c)); }
};

__attribute__((noinline)) static char *chars(size_t n)
{
	char *p = new char[n];

	memset(p, 0x5a, n);
	return p;
}

Wide *wide_kept;
std::vector<long> *vec_kept;
std::map<int, long> *map_kept;
volatile size_t huge = (size_t)1 << 62;

/* Each delete variant once (the compiler calls the sized and aligned ones
 * for these types). */
__attribute__((noinline)) static void each_delete(void)
{
	Node *n = new Node;
	char *a = chars(100);
	Wide *w = new Wide;
	Wide *wa = new Wide[3];
	Node *nt = new (std::nothrow) Node;
	char *at = new (std::nothrow) char[50];

	memset(at, 0x5a, 50);
	Wide *wt = new (std::nothrow) Wide;
	void *raw = ::operator new(40);
	void *rawa = ::operator new[](40, std::align_val_t(32));

	v_use(n); v_use(a); v_use(w); v_use(wa); v_use(nt); v_use(at);
	v_use(wt); v_use(raw); v_use(rawa);
	delete n;			/* sized (-fsized-deallocation) */
	delete[] a;
	delete w;			/* sized and aligned */
	delete[] wa;
	::operator delete(nt, std::nothrow);
	::operator delete[](at, std::nothrow);
	::operator delete(wt, std::align_val_t(64), std::nothrow);
	::operator delete(raw);
	::operator delete[](rawa, std::align_val_t(32));
}

__attribute__((noinline)) static void leak_nodes(void)
{
	for (int i = 0; i < 10; i++) {
		Node *n = new Node;
		v_use(n);
	}
}

__attribute__((noinline)) static void leak_array(void)
{
	char *a = new char[300];

	memset(a, 0x5a, 300);
	v_use(a);
}

__attribute__((noinline)) static void leak_aligned(void)
{
	Wide *w = new Wide;
	v_use(w);
	wide_kept = new Wide[2];
}

__attribute__((noinline)) static void leak_nothrow(void)
{
	Node *n = new (std::nothrow) Node;
	char *big = new (std::nothrow) char[huge];

	v_use(big);	/* else clang drops the allocation as unused */
	if (big)
		abort();
	v_use(n);
}

__attribute__((noinline)) static void keep_containers(void)
{
	vec_kept = new std::vector<long>(100);
	map_kept = new std::map<int, long>;
	for (int i = 0; i < 5; i++)
		(*map_kept)[i] = i;
}

__attribute__((noinline)) static void leak_after_throw(void)
{
	Node *n = new Node;
	v_use(n);
}

__attribute__((noinline)) static int throw_huge(void)
{
	try {
		char *big = new char[huge];
		v_use(big);
	} catch (const std::bad_alloc &) {
		return 1;
	}
	return 0;
}

void *warm[4];

__attribute__((noinline)) static void keep_warm(void)
{
	warm[0] = new Node;
	warm[1] = chars(300);
	warm[2] = new Wide;
	warm[3] = new Wide[2];
}

__attribute__((noinline)) static void shapes(int throws, int clean)
{
	if (clean) {
		wide_kept = new Wide[2];
		keep_containers();
		return;
	}
	leak_nodes();
	leak_array();
	leak_aligned();
	leak_nothrow();
	keep_containers();
	if (!throws)
		return;
	if (!throw_huge())
		abort();
	leak_after_throw();
}

int main(int argc, char **argv)
{
	int throws = 0, clean = 0, wait = 0;
	char c;

	for (int i = 1; i < argc; i++) {
		throws |= !strcmp(argv[i], "throw");
		clean |= !strcmp(argv[i], "clean");
		wait |= !strcmp(argv[i], "wait");
	}
	each_delete();
	if (!wait) {
		shapes(throws, clean);
		return 0;
	}
	keep_warm();
	while (read(0, &c, 1) == 1) {
		if (c != 'l')
			continue;
		shapes(throws, clean);
		if (write(1, "done l\n", 7) != 7)
			return 1;
	}
	return 0;
}
