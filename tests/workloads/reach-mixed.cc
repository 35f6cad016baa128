/*
 * reach-mixed.cc - a held-out C++ program for the reachability check
 * (tests/integration/t_reach_mixed.py): written once and compared with
 * valgrind's memcheck as it is, not tuned against either tool.
 *
 * Three worker threads each fill standard containers, keep some in
 * globals, in thread_local variables and on their stacks (blocked on a
 * pipe until the process exits), and drop others; the main thread leaks
 * a linked list, a three-node cycle, a shared_ptr cycle, keeps interior
 * pointers.  Expected, per site (every worker's blocks share a stack):
 *
 *   site_kept_map        a std::map<int, std::string> in a global per
 *                        worker: nodes and long strings still reachable
 *   site_tls_vector      a thread_local std::vector<long> (as written,
 *                        gcc drops the store to a variable never read:
 *                        definitely lost, its buffer indirectly)
 *   site_stack_umap      a std::unordered_map on a worker's stack:
 *                        reachable
 *   site_dropped_vector  new std::vector<std::string>, pointer dropped:
 *                        the vector definitely lost, its buffer and
 *                        strings indirectly lost
 *   site_list            a 10-node list whose head pointer is dropped:
 *                        1 definitely lost, 9 indirectly lost
 *   site_cycle           a 3-node cycle: 1 definitely, 2 indirectly lost
 *   site_shared_cycle    two make_shared objects pointing at each other
 *   site_middle          new char[1000], only a pointer 100 bytes in:
 *                        possibly lost
 *   site_kept_list       a std::list<std::string> in a global: reachable
 *
 * Writes "ready <pid>" once set up, exits at end of input.  No stdio.
 */
#include <list>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>
#include <pthread.h>
#include <unistd.h>
#include "wl.h"

#define WORKERS 3

static std::map<int, std::string> *volatile kept_map[WORKERS];
static thread_local std::vector<long> *tls_vector;
static std::list<std::string> *volatile kept_list;
static char *volatile middle;
static int up_pipe[2], hold_pipe[2];

struct Node {
	Node *next;
	long payload[5];
};

struct Peer {
	std::shared_ptr<Peer> other;
	char pad[40];
};

WL_SITE static std::map<int, std::string> *site_kept_map(int w)
{
	auto *m = new std::map<int, std::string>;

	for (int i = 0; i < wl_n(20); i++)
		(*m)[i * WORKERS + w] = std::string(40 + i, 'a' + w);
	return m;
}

WL_SITE static std::vector<long> *site_tls_vector(void)
{
	auto *v = new std::vector<long>;

	for (long i = 0; i < wl_n(100); i++)
		v->push_back(i);
	return v;
}

WL_SITE static void site_stack_umap(std::unordered_map<int, long> &u)
{
	for (int i = 0; i < wl_n(30); i++)
		u[i] = i * 7;
}

WL_SITE static void site_dropped_vector(void)
{
	auto *v = new std::vector<std::string>;

	for (int i = 0; i < wl_n(5); i++)
		v->push_back(std::string(30 + i, 'z'));
	wl_sink = v;
	wl_sink = nullptr;
}

WL_HELPER static void scrub(void)
{
	volatile char pad[16384];

	for (unsigned i = 0; i < sizeof(pad); i++)
		pad[i] = 0;
	WL_BARRIER();
}

static void *worker(void *arg)
{
	int w = (int)(long)arg;
	std::unordered_map<int, long> u;
	char c;

	kept_map[w] = site_kept_map(w);
	tls_vector = site_tls_vector();
	site_stack_umap(u);
	site_dropped_vector();
	scrub();
	WL_CHECK(write(up_pipe[1], "x", 1) == 1, "up");
	while (read(hold_pipe[0], &c, 1) > 0)
		;
	wl_sink = &u;
	return nullptr;
}

WL_SITE static Node *site_list(Node *next)
{
	Node *n = new Node();

	n->next = next;
	return n;
}

WL_SITE static Node *site_cycle(void)
{
	return new Node();
}

WL_SITE static std::shared_ptr<Peer> site_shared_cycle(void)
{
	return std::make_shared<Peer>();
}

WL_SITE static char *site_middle(void)
{
	return new char[1000]() + 100;
}

WL_SITE static std::list<std::string> *site_kept_list(void)
{
	auto *l = new std::list<std::string>;

	for (int i = 0; i < wl_n(8); i++)
		l->push_back(std::string(50, 'k'));
	return l;
}

WL_HELPER static void make_lost(void)
{
	Node *head = nullptr, *c[3];

	for (int i = 0; i < wl_n(10); i++)
		head = site_list(head);
	wl_sink = head;
	for (int i = 0; i < wl_n(3); i++)
		c[i] = site_cycle();
	c[0]->next = c[1];
	c[1]->next = c[2];
	c[2]->next = c[0];
	{
		auto a = site_shared_cycle(), b = site_shared_cycle();

		a->other = b;
		b->other = a;
	}
	wl_sink = nullptr;
}

int main()
{
	pthread_t th;
	char c;

	WL_CHECK(pipe(up_pipe) == 0 && pipe(hold_pipe) == 0, "pipe");
	for (long w = 0; w < WORKERS; w++) {
		WL_CHECK(pthread_create(&th, nullptr, worker, (void *)w) == 0,
			 "thread");
		WL_CHECK(read(up_pipe[0], &c, 1) == 1, "worker");
	}
	make_lost();
	middle = site_middle();
	kept_list = site_kept_list();
	scrub();
	wl_say(1, "ready %d\n", (int)getpid());
	while (read(0, &c, 1) > 0)
		;
	return 0;
}
