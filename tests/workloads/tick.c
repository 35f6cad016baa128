/*
 * tick.c - birth stamps and lifetimes across idle periods and fork: the
 * agent's shared clock (agent/tick.h) sleeps while nothing allocates and
 * must still stamp the first block after a pause, and the ones after it,
 * with the true time (tests/integration/t_tick.py).
 *
 * Talks with the test on stdin/stdout, one line per phase:
 *
 *   "busy\n"  then allocates and frees (tmp_churn) until a byte arrives
 *   "idle\n"  then allocates nothing until a byte arrives (the test waits
 *             > 1 s here and counts the agent thread's wakeups)
 *   site_after_idle's block, then "busy\n" again, then site_ticked's
 *   block; then, without waiting: 10 blocks of life_zero freed at once, one of
 *   life_ticked freed after 50 ms of churn, one of life_slept freed after
 *   600 ms of sleep; 100 ms of churn, then a fork.  The child (it lives
 *   about 2 s, so it writes its own exit report): site_child_first's
 *   block at once, site_child_mid's after 500 ms of sleep, then 1 s of
 *   sleep (its control thread starts after 1 s), 200 ms of churn and
 *   site_child_ticked's block.  Each writes a line
 *
 *   "times NAME=NS ..."  (the child's: "times_child NAME=NS ...")  CLOCK_MONOTONIC right after each kept block's
 *                        malloc returned, and "life_ticked=NS
 *                        life_slept=NS", the blocks' measured lifetimes
 *
 * Outstanding at exit, parent: site_first 100 B, site_after_idle 101 B,
 * site_ticked 102 B (one block each); child: those three (inherited),
 * site_child_first 103, site_child_mid 104, site_child_ticked 105.
 * Lifetimes (frees per allocating site): life_zero 10 (each within a
 * tick), life_ticked 1 (~50 ms), life_slept 1 (~600 ms); tmp_churn
 * thousands, all short.
 */
#include <poll.h>
#include <stdint.h>
#include <sys/wait.h>
#include <time.h>
#include "wl.h"

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static void sleep_ms(long ms)
{
	struct timespec ts = { ms / 1000, ms % 1000 * 1000000 };

	while (nanosleep(&ts, &ts))
		;
}

WL_SITE static void tmp_churn_once(void)
{
	void *p = malloc(48);

	wl_sink = p;
	free(p);
}

/* Until a byte on stdin (stop_on_input) or for ms milliseconds. */
WL_HELPER static void tmp_churn(int stop_on_input, long ms)
{
	uint64_t end = now_ns() + (uint64_t)ms * 1000000u;
	char c;

	for (;;) {
		for (int i = 0; i < wl_n(200); i++)
			tmp_churn_once();
		if (stop_on_input) {
			struct pollfd p = { .fd = 0, .events = POLLIN };

			if (poll(&p, 1, 0) == 1) {
				WL_CHECK(read(0, &c, 1) == 1, "stdin closed");
				return;
			}
		} else if (now_ns() >= end) {
			return;
		}
	}
}

static void *volatile kept[6];

#define KEEP(name, i, size)						\
	WL_SITE static uint64_t name(void)				\
	{								\
		kept[i] = malloc(size);					\
		WL_BARRIER();						\
		return now_ns();					\
	}
KEEP(site_first, 0, 100)
KEEP(site_after_idle, 1, 101)
KEEP(site_ticked, 2, 102)
KEEP(site_child_first, 3, 103)
KEEP(site_child_mid, 4, 104)
KEEP(site_child_ticked, 5, 105)

WL_SITE static void life_zero(void)
{
	void *p = malloc(200);

	wl_sink = p;
	free(p);
}

WL_SITE static uint64_t life_ticked(void)
{
	void *p = malloc(201);
	uint64_t t0 = now_ns(), t1;

	wl_sink = p;
	tmp_churn(0, 50);
	t1 = now_ns();
	free(p);
	return t1 - t0;
}

WL_SITE static uint64_t life_slept(void)
{
	void *p = malloc(202);
	uint64_t t0 = now_ns(), t1;

	wl_sink = p;
	sleep_ms(600);
	t1 = now_ns();
	free(p);
	return t1 - t0;
}

static void child(void)
{
	uint64_t c0 = site_child_first(), c1, c2;

	sleep_ms(500);
	c1 = site_child_mid();
	sleep_ms(1000);
	tmp_churn(0, 200);
	c2 = site_child_ticked();
	wl_say(1, "times_child site_child_first=%llu site_child_mid=%llu "
	       "site_child_ticked=%llu\n", (unsigned long long)c0,
	       (unsigned long long)c1, (unsigned long long)c2);
	exit(0);
}

int main(void)
{
	uint64_t t0 = site_first(), t1, t2, lt, ls;
	int status;
	char c;
	pid_t pid;

	wl_say(1, "busy\n");
	tmp_churn(1, 0);
	wl_say(1, "idle\n");
	WL_CHECK(read(0, &c, 1) == 1, "stdin closed");
	t1 = site_after_idle();
	wl_say(1, "busy\n");
	tmp_churn(1, 0);
	t2 = site_ticked();
	for (int i = 0; i < wl_n(10); i++)
		life_zero();
	lt = life_ticked();
	ls = life_slept();
	wl_say(1, "times site_first=%llu site_after_idle=%llu site_ticked=%llu "
	       "life_ticked=%llu life_slept=%llu\n", (unsigned long long)t0,
	       (unsigned long long)t1, (unsigned long long)t2,
	       (unsigned long long)lt, (unsigned long long)ls);
	tmp_churn(0, 100);
	pid = fork();
	WL_CHECK(pid >= 0, "fork");
	if (!pid)
		child();
	WL_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
	WL_CHECK(WIFEXITED(status) && !WEXITSTATUS(status), "child status");
	return 0;
}
