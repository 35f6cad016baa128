/*
 * cxx.cc MODE - C++ shapes (g++ and clang++).
 *   0  an exception thrown through a frame that allocated: its raw
 *      200-byte new[] is dropped by the unwind (definitely lost), its
 *      unique_ptr's 210 bytes freed; the exception object is freed after
 *      the catch
 *   1  a std::thread that ends (joined) having dropped 220 bytes (lost)
 *      and kept 230 in a global
 *   2  static objects destroyed at exit: one whose destructor forgets its
 *      240-byte block (definitely lost once it ran), one whose destructor
 *      frees its block, a plain struct (no destructor) holding 250 bytes
 *      (still reachable)
 *   3  thread_local objects of an ended thread: one whose destructor
 *      frees its block, a plain thread_local pointer to 260 bytes
 *      (definitely lost once the thread ended)
 *   4  std::shared_ptr cycles: two make_shared nodes (control block and
 *      object in one 48-byte block: 1 definitely, 1 indirectly lost), two
 *      nodes made with new (4 blocks: 1 definitely, 3 indirectly lost)
 *   5  new[] of 10 objects with a destructor, held only by the pointer
 *      the program has (8 bytes past the block's start, after the count):
 *      still reachable (memcheck's newarray heuristic, LeakSanitizer's
 *      interior pointer)
 */
#include <memory>
#include <stdexcept>
#include <thread>
#include "v.h"

void *keep;	/* external: stores to it stay */

struct Node {
	std::shared_ptr<Node> next;
	long pad[2];
};

struct Forgets {
	void *p;
	Forgets() : p(v_alloc(240)) {}
	~Forgets() { p = nullptr; v_use(&p); }
};

struct Frees {
	void *p;
	Frees() : p(v_alloc(245)) {}
	~Frees() { free(p); p = nullptr; }
};

struct Plain {
	void *p;
};

struct Elem {
	long v;
	~Elem() { v_use(this); }
};

Plain plain;
thread_local void *tl_plain;
thread_local Frees tl_frees;
Elem *elems;

__attribute__((noinline)) static void thrower(int n)
{
	if (n > 0)
		throw std::runtime_error("unwound");
}

__attribute__((noinline)) static void allocates(int n)
{
	char *raw = new char[200];
	std::unique_ptr<char[]> owned(new char[210]);

	memset(raw, 1, 200);
	memset(owned.get(), 2, 210);
	v_use(raw);
	thrower(n);
	delete[] raw;
}

__attribute__((noinline)) static void unwind(void)
{
	try {
		allocates(1);
	} catch (const std::exception &e) {
		v_use((void *)e.what());
	}
}

__attribute__((noinline)) static void thread_ends(void)
{
	std::thread t([] {
		v_use(v_alloc(220));
		keep = v_alloc(230);
	});
	t.join();
}

__attribute__((noinline)) static void statics(void)
{
	static Forgets forgets;
	static Frees frees;

	v_use(&forgets);
	v_use(&frees);
	plain.p = v_alloc(250);
}

__attribute__((noinline)) static void thread_locals(void)
{
	std::thread t([] {
		v_use(tl_frees.p);
		tl_plain = v_alloc(260);
	});
	t.join();
}

__attribute__((noinline)) static void cycles(void)
{
	auto a = std::make_shared<Node>(), b = std::make_shared<Node>();
	a->next = b;
	b->next = a;
	std::shared_ptr<Node> c(new Node), d(new Node);
	c->next = d;
	d->next = c;
}

__attribute__((noinline)) static void arrays(void)
{
	elems = new Elem[10];
	v_use(elems);
}

int main(int argc, char **argv)
{
	switch (v_mode(argc, argv)) {
	case 0: unwind(); break;
	case 1: thread_ends(); break;
	case 2: statics(); break;
	case 3: thread_locals(); break;
	case 4: cycles(); break;
	case 5: arrays(); break;
	}
	return 0;
}
