/*
 * stopwait.c - the wait for threads asked to stop (stopwait.h).
 */
#include <errno.h>
#include <sched.h>
#include <sys/wait.h>
#include <time.h>
#include "stopwait.h"

/* Rounds that only yield: a stop usually takes a few microseconds. */
#define STOPWAIT_SPINS 64

static uint64_t stopwait_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One thread: 1 still running, 0 stopped, -1 ended or gone (dropped). */
static int stopwait_one(const struct ls_stopwait *sw, size_t i,
			unsigned spins)
{
	pid_t tid = sw->waiting(sw->list, i), r;
	int status = 0;

	if (!tid)
		return 0;
	r = waitpid(tid, &status, __WALL | WNOHANG);
	if ((r == tid && sw->note(sw->list, i, status) < 0) ||
	    (r < 0 && errno == ECHILD) ||
	    (r == 0 && spins > STOPWAIT_SPINS && sw->gone(sw->pid, tid))) {
		sw->drop(sw->list, i);
		return -1;
	}
	return sw->waiting(sw->list, i) != 0;
}

int ls_stopwait(const struct ls_stopwait *sw, size_t *left)
{
	unsigned spins = 0;

	for (;;) {
		size_t i, waiting = 0;
		int r;

		for (i = 0; i < sw->count(sw->list); i++) {
			r = stopwait_one(sw, i, spins);
			if (r < 0)
				i--;	/* the last thread moved to i */
			else
				waiting += (size_t)r;
		}
		if (!waiting)
			return 0;
		if (stopwait_now() > sw->deadline) {
			if (left)
				*left = waiting;
			return -ETIMEDOUT;
		}
		if (++spins < STOPWAIT_SPINS) {
			sched_yield();
		} else {
			struct timespec ts = { 0, 50000 };

			nanosleep(&ts, NULL);
		}
	}
}
