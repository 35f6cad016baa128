/*
 * tick.c - the shared coarse clock (tick.h): the hooks' slow path and the
 * control thread's ticking.
 */
#include <time.h>
#include "live.h"
#include "state.h"
#include "tick.h"

#define TICK_NS (1000000000u / LS_LIVE_TICKS_PER_S)

/* The rest of the word's line stays unwritten: no false sharing. */
struct ls_tick_line ls_tick;

/* The ticker's own: when the next tick is due (CLOCK_MONOTONIC ns), and
 * how a hook wakes it. */
static uint64_t tick_due;
static void (*wake_fn)(void);

uint32_t ls_tick_now_slow(uint64_t w)
{
	uint32_t now;

	/* The first event since the tick: say so, and use the value. */
	while (w & LS_TICK_RUNNING) {
		if (__atomic_compare_exchange_n(&ls_tick.word, &w,
						w | LS_TICK_USED, 0,
						__ATOMIC_RELAXED,
						__ATOMIC_RELAXED))
			return (uint32_t)w;
	}
	now = ls_tick_read_clock();
	/* The ticker sleeps: one hook wakes it, the others read the vDSO
	 * until it has published. */
	if ((w & LS_TICK_IDLE) &&
	    __atomic_compare_exchange_n(&ls_tick.word, &w, LS_TICK_WAKE, 0,
					__ATOMIC_RELAXED, __ATOMIC_RELAXED))
		wake_fn();
	return now;
}

/* The boundary after tick b (b saturates after 194 days: then every
 * TICK_NS, never a busy loop). */
static void set_due(uint64_t now_ns, uint32_t b)
{
	tick_due = ls_agent.start_mono + ((uint64_t)b + 1) * TICK_NS;
	if (tick_due <= now_ns)
		tick_due = now_ns + TICK_NS;
}

/* Publish the tick of now_ns with flags; the next one is due at the
 * following tick boundary. */
static void publish(uint64_t now_ns, uint64_t flags)
{
	uint32_t b = ls_live_birth(now_ns, ls_agent.start_mono);

	set_due(now_ns, b);
	__atomic_store_n(&ls_tick.word, flags | b, __ATOMIC_RELAXED);
}

void ls_tick_start(void (*wake)(void))
{
	wake_fn = wake;
	publish(ls_now_ns(CLOCK_MONOTONIC), LS_TICK_RUNNING);
}

uint64_t ls_tick_step(uint64_t now_ns)
{
	uint64_t w = __atomic_load_n(&ls_tick.word, __ATOMIC_RELAXED);
	uint32_t b;

	if (w & LS_TICK_WAKE) {	/* a hook woke us: it is using the clock */
		publish(now_ns, LS_TICK_RUNNING | LS_TICK_USED);
		return tick_due;
	}
	if (!(w & LS_TICK_RUNNING))	/* idle, or stopped */
		return UINT64_MAX;
	if (now_ns < tick_due)	/* woken early (a request, a wake) */
		return tick_due;
	b = ls_live_birth(now_ns, ls_agent.start_mono);
	/* Hooks only ever add USED to a RUNNING word: retry on that. */
	for (;;) {
		if (!(w & LS_TICK_USED)) {
			/* Nobody read the clock during the last tick. */
			if (__atomic_compare_exchange_n(&ls_tick.word, &w,
							LS_TICK_IDLE, 0,
							__ATOMIC_RELAXED,
							__ATOMIC_RELAXED))
				return UINT64_MAX;
		} else if (__atomic_compare_exchange_n(&ls_tick.word, &w,
						       LS_TICK_RUNNING | b, 0,
						       __ATOMIC_RELAXED,
						       __ATOMIC_RELAXED)) {
			set_due(now_ns, b);
			return tick_due;
		}
	}
}

uint64_t ls_tick_busy(void)
{
	return __atomic_exchange_n(&ls_tick.word, 0, __ATOMIC_RELAXED);
}

void ls_tick_unbusy(uint64_t was)
{
	/* Hooks leave a 0 word alone: plain stores.  Sleeping before stays
	 * sleeping (a hook meanwhile read the vDSO and found no one to
	 * wake; the next one will); anything else ticks on, with a fresh
	 * USED test at the next tick. */
	if (was & LS_TICK_IDLE)
		__atomic_store_n(&ls_tick.word, LS_TICK_IDLE, __ATOMIC_RELAXED);
	else if (was & (LS_TICK_RUNNING | LS_TICK_WAKE))
		publish(ls_now_ns(CLOCK_MONOTONIC), LS_TICK_RUNNING |
			(was & LS_TICK_WAKE ? LS_TICK_USED : 0));
}

void ls_tick_stop(void)
{
	__atomic_store_n(&ls_tick.word, 0, __ATOMIC_RELAXED);
}

void ls_tick_forget_child(void)
{
	ls_tick.word = 0;
}

void ls_tick_wait_idle(void)
{
	int i;

	for (i = 0; i < 50; i++) {
		if (!(__atomic_load_n(&ls_tick.word, __ATOMIC_RELAXED) &
		      (LS_TICK_RUNNING | LS_TICK_WAKE))) {
			ls_sys_sleep_ms(1);	/* back into its ppoll */
			return;
		}
		ls_sys_sleep_ms(1);
	}
}
