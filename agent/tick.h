/*
 * tick.h - the coarse clock that birth stamps and lifetimes are read from.
 *
 * A block's birth and a free's "now" are in ticks of 1/256 s since the
 * agent started (live.h, LS_LIVE_TICKS_PER_S).  Reading the vDSO's
 * CLOCK_MONOTONIC_COARSE and dividing on every allocation and every free
 * cost ~14 ns per operation on the churn; instead the control thread (the
 * ticker) keeps the current tick in one shared word, and a hook's stamp is
 * one load and a test of a bit.
 *
 * The word: the tick in its low 32 bits, a state in the high ones.
 *
 *   RUNNING        the ticker publishes every tick: hooks may use the value,
 *                  but the first hook after a tick sets USED (one CAS per
 *                  tick, process-wide) so that the ticker knows it is needed
 *   RUNNING|USED   the hooks' fast path: the value, as it stands
 *   IDLE           no event since the last tick: the ticker sleeps (no
 *                  periodic wakeup while the program makes no allocation).
 *                  The first hook reads the vDSO itself, sets WAKE (one CAS
 *                  wins) and wakes the ticker (an eventfd write)
 *   WAKE           woken, not yet published: hooks read the vDSO
 *   0              no ticker: LEAKSCOPE_CONTROL=0, a fork child before its
 *                  control thread, the control thread busy with a request or
 *                  a growth sample, paused (switch.c) or gone (detach).
 *                  Hooks read the vDSO, as before the ticker existed.
 *
 * Staleness: the ticker wakes at each tick boundary (CLOCK_MONOTONIC, the
 * timer slack of a normal thread, 50 us) and publishes the tick it finds,
 * so a stamp read from the word is at most one tick (3.9 ms) behind
 * CLOCK_MONOTONIC plus the ticker's scheduling delay; one read from the
 * vDSO's COARSE clock is behind by up to a jiffy (1-10 ms), as it always
 * was.  Stamps are truncated to the tick either way.  Lifetimes are
 * clamped at 0 (a free stamped through the vDSO a jiffy behind a birth
 * stamped by the ticker).
 *
 * Thread-safety: ls_tick_now() and ls_tick_now_slow() are safe in any
 * hook, under the guard (the slow path's wake is the control thread's
 * write(2) on an eventfd: async-signal-safe, errno is the hooks' to
 * restore).  The ticker side
 * (ls_tick_start/step/busy/unbusy/stop) is for the control thread only;
 * ls_tick_forget_child() for the fork child handler.
 */
#ifndef LEAKSCOPE_AGENT_TICK_H
#define LEAKSCOPE_AGENT_TICK_H

#include <stdint.h>
#include <time.h>
#include "live.h"
#include "state.h"
#include "sys.h"

#define LS_TICK_RUNNING (1ull << 32)
#define LS_TICK_USED (1ull << 33)
#define LS_TICK_IDLE (1ull << 34)
#define LS_TICK_WAKE (1ull << 35)

/* Alone on its cache line: read by every hook, written once a tick. */
struct ls_tick_line {
	uint64_t word;
	char pad[56];
} __attribute__((aligned(64)));
extern struct ls_tick_line ls_tick;

/* Not in the word's fast state: mark it used, or read the vDSO (and wake
 * an idle ticker).  Out of line: the fast path stays a load and a test. */
uint32_t ls_tick_now_slow(uint64_t w);

/* Now from the vDSO, in the same units. */
static inline uint32_t ls_tick_read_clock(void)
{
	return ls_live_birth(ls_now_ns(CLOCK_MONOTONIC_COARSE),
			     ls_agent.start_mono);
}

/* Now, in ticks since the agent started (ls_live_birth's units).  With
 * no ticker at all (LEAKSCOPE_CONTROL=0) the vDSO is read inline, as
 * before the ticker existed: the slow path's call would cost ~17
 * instructions more. */
static inline uint32_t ls_tick_now(void)
{
	uint64_t w = __atomic_load_n(&ls_tick.word, __ATOMIC_RELAXED);

	if (ls_likely(w & LS_TICK_USED))
		return (uint32_t)w;
	if (!w)
		return ls_tick_read_clock();
	return ls_tick_now_slow(w);
}

/*
 * The ticker (the control thread).  ls_tick_start(wake) publishes the
 * current tick; wake is what a hook calls to end the ticker's sleep
 * (hook-safe, async-signal-safe).  ls_tick_step(now) does what is due at CLOCK_MONOTONIC now and
 * returns when to call it next (CLOCK_MONOTONIC ns; UINT64_MAX while idle
 * or stopped: sleep until woken).  ls_tick_busy() hands the hooks to the
 * vDSO while the thread does something long (a growth sample, a request)
 * and returns what ls_tick_unbusy() needs to take over again.
 * ls_tick_stop() before the thread ends.
 */
void ls_tick_start(void (*wake)(void));
uint64_t ls_tick_step(uint64_t now_ns);
uint64_t ls_tick_busy(void);
void ls_tick_unbusy(uint64_t was);
void ls_tick_stop(void);

/*
 * Wait, up to ~50 ms, until the ticker sleeps (two ticks after the last
 * event).  For the check at exit (reach.c), which takes the process's
 * image while the other threads run on: a thread that leaves its system
 * call meanwhile makes it scan every stack whole, and a ticking control
 * thread would do that every 3.9 ms.  Not in a hook; the caller holds the
 * guard, so its own allocations do not wake the ticker again.
 */
void ls_tick_wait_idle(void);

/* In the fork child: the parent's ticker did not come along. */
void ls_tick_forget_child(void);

#endif
