/*
 * fleetload.c - ground truth for the fleet exporter and pusher
 * (tests/integration/t_fleet.py): one site leaking at a known rate beside
 * a bounded cache that stays flat.
 *
 *   site_fleet_leak   one block of 4096 bytes every 50 ms, on an absolute
 *                     clock (no drift): 81920 bytes per second, linear
 *   site_fleet_cache  32 slots of 4096 bytes, filled at start, then one
 *                     slot replaced (freed, then allocated again) on every
 *                     tick: 131072 bytes live, flat
 *
 * Runs for SECONDS (argument, default 60).  SIGUSR1 stops both; the next
 * tick writes "leaked N\n" (N blocks of site_fleet_leak) to stdout, and
 * every later snapshot holds exactly N * 4096 and 131072 bytes in these
 * two sites.  No stdio: nothing else stays allocated.
 */
#include <signal.h>
#include <time.h>
#include "wl.h"

#define TICK_NS 50000000L
#define BLOCK 4096
#define SLOTS 32

static void *volatile leaked[1 << 16];
static void *volatile cache[SLOTS];
static volatile sig_atomic_t stop_leak;

static void on_usr1(int sig)
{
	stop_leak = 1;
}

WL_SITE static void site_fleet_leak(size_t i)
{
	void *p = malloc(BLOCK); /* @site_fleet_leak */
	leaked[i] = p;
	WL_BARRIER();
}

WL_SITE static void site_fleet_cache(int slot)
{
	void *p = malloc(BLOCK); /* @site_fleet_cache */
	cache[slot] = p;
	WL_BARRIER();
}

static void next_tick(struct timespec *t)
{
	t->tv_nsec += TICK_NS;
	if (t->tv_nsec >= 1000000000L) {
		t->tv_sec++;
		t->tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, t, NULL))
		;
}

int main(int argc, char **argv)
{
	long ticks = (argc > 1 ? atol(argv[1]) : 60) * (1000000000L / TICK_NS);
	size_t n = 0;
	int said = 0, slot;
	struct timespec t;

	signal(SIGUSR1, on_usr1);
	for (slot = 0; slot < wl_n(SLOTS); slot++)
		site_fleet_cache(slot);
	clock_gettime(CLOCK_MONOTONIC, &t);
	for (long k = 0; k < ticks; k++) {
		next_tick(&t);
		if (stop_leak) {
			if (!said)
				wl_say(1, "leaked %zu\n", n);
			said = 1;
			continue;
		}
		if (n < sizeof(leaked) / sizeof(leaked[0]))
			site_fleet_leak(n++);
		slot = (int)(k % SLOTS);
		free(cache[slot]);
		site_fleet_cache(slot);
	}
	return 0;
}
