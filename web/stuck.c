/*
 * stuck.c - agents that did not answer, skipped for a while by the
 * metrics exporter and the pusher alike (fleet.h), and their clock.
 */
#include <time.h>
#include "fleet.h"

double ls_mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* ------------------------------------------------------- stuck agents */

int ls_stuck_is(const struct ls_stuck *t, pid_t pid, double now)
{
	size_t i;

	for (i = 0; i < LS_STUCK_SLOTS; i++)
		if (t->s[i].pid == pid && t->s[i].until > now)
			return 1;
	return 0;
}

void ls_stuck_clear(struct ls_stuck *t, pid_t pid)
{
	size_t i;

	for (i = 0; i < LS_STUCK_SLOTS; i++)
		if (t->s[i].pid == pid)
			t->s[i].until = 0;
}

void ls_stuck_mark(struct ls_stuck *t, pid_t pid, double now)
{
	size_t i, v = 0;

	for (i = 0; i < LS_STUCK_SLOTS; i++)
		if (t->s[i].pid == pid || t->s[i].until < t->s[v].until)
			v = i;
	t->s[v].pid = pid;
	t->s[v].until = now + LS_STUCK_S;
}
