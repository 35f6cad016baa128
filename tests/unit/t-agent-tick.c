/*
 * t-agent-tick.c - the hooks' shared clock (agent/tick.h): every state of
 * the word and the ticker's steps, on one thread with chosen times.  The
 * integration test (tests/integration/t_tick.py) covers the real ticker.
 */
#include <stdint.h>
#include <time.h>
#include "../../agent/state.h"
#include "../../agent/tick.h"
#include "tap.h"

#define TICK_NS (1000000000ull / LS_LIVE_TICKS_PER_S)

static int wakes;

static void wake(void)
{
	wakes++;
}

static uint64_t mono(void)
{
	return ls_now_ns(CLOCK_MONOTONIC);
}

/* A stamp read from the vDSO: within a jiffy (<= 10 ms) of now. */
static int near_now(uint32_t stamp)
{
	uint32_t now = ls_live_birth(mono(), ls_agent.start_mono);

	return stamp <= now && now - stamp <= 3;
}

int main(void)
{
	uint64_t t, due, due2, w;
	uint32_t b;

	/* Started 10 s ago: stamps around 2560. */
	ls_agent.start_mono = mono() - 10 * 1000000000ull;

	ok(ls_tick.word == 0, "no ticker at first");
	ok(near_now(ls_tick_now()), "no ticker: the vDSO's time");
	ok(ls_tick.word == 0, "no ticker: the word untouched");

	ls_tick_start(wake);
	w = ls_tick.word;
	ok((w & LS_TICK_RUNNING) && !(w & LS_TICK_USED), "started: running, unused");
	b = (uint32_t)w;
	ok(near_now(b), "started: the current tick (%u)", b);
	is_u64(ls_tick_now(), b, "first stamp: the published tick");
	ok(!!(ls_tick.word & LS_TICK_USED), "first stamp marks the word used");
	is_u64(ls_tick_now(), b, "fast path: the same tick");

	/* The ticker's steps, at chosen times. */
	t = ls_live_birth_ns(b, ls_agent.start_mono) + TICK_NS / 2;
	due = ls_tick_step(t);
	is_u64(due, ls_live_birth_ns(b + 1, ls_agent.start_mono),
	       "before the boundary: nothing, due at the next one");
	is_u64((uint32_t)ls_tick.word, b, "the tick is unchanged");
	due2 = ls_tick_step(due + 1000);
	is_u64(due2, due + TICK_NS, "a used tick: the next boundary is due");
	w = ls_tick.word;
	ok((w & LS_TICK_RUNNING) && !(w & LS_TICK_USED) && (uint32_t)w == b + 1,
	   "a used tick: tick %u published, unused", b + 1);
	due = ls_tick_step(due2 + 1000);
	is_u64(due, UINT64_MAX, "an unused tick: the ticker sleeps");
	ok(ls_tick.word == LS_TICK_IDLE, "idle");

	/* The first event after a pause: its own clock, and a wake. */
	ok(near_now(ls_tick_now()), "idle: the vDSO's time, not a stale tick");
	ok(ls_tick.word == LS_TICK_WAKE && wakes == 1,
	   "idle: the first event wakes the ticker");
	ok(near_now(ls_tick_now()), "waking: the vDSO's time");
	ok(ls_tick.word == LS_TICK_WAKE && wakes == 1, "waking: no second wake");
	t = mono();
	due = ls_tick_step(t);
	w = ls_tick.word;
	ok((w & LS_TICK_RUNNING) && (w & LS_TICK_USED), "woken: running, used");
	is_u64((uint32_t)w, ls_live_birth(t, ls_agent.start_mono),
	       "woken: the tick of now");
	ok(due > t && due - t <= TICK_NS, "woken: due within a tick");

	/* A long job: the hooks read the clock, then it ticks on. */
	w = ls_tick_busy();
	ok((w & LS_TICK_RUNNING) && ls_tick.word == 0, "busy: no ticker meanwhile");
	ok(near_now(ls_tick_now()), "busy: the vDSO's time");
	ok(ls_tick.word == 0, "busy: hooks leave the word alone");
	ls_tick_unbusy(w);
	w = ls_tick.word;
	ok((w & LS_TICK_RUNNING) && !(w & LS_TICK_USED) && near_now((uint32_t)w),
	   "after a busy running ticker: running, fresh tick");
	ls_tick.word = LS_TICK_IDLE;
	ls_tick_unbusy(ls_tick_busy());
	ok(ls_tick.word == LS_TICK_IDLE, "after a busy idle ticker: still idle");
	ls_tick.word = LS_TICK_WAKE;
	ls_tick_unbusy(ls_tick_busy());
	w = ls_tick.word;
	ok((w & LS_TICK_RUNNING) && (w & LS_TICK_USED),
	   "woken while busy: running, used");

	ls_tick_forget_child();
	ok(ls_tick.word == 0, "fork child: no ticker");
	ls_tick_start(wake);
	ls_tick_stop();
	ok(ls_tick.word == 0, "stopped: no ticker");
	is_u64(ls_tick_step(mono()), UINT64_MAX, "stopped: nothing due");
	return tap_done();
}
