/*
 * listing.c - many agents' snapshots at once, for the process list.
 *
 * Asked one after another, each slow agent would add its whole timeout to
 * the list (three agents that trickle their replies cost 36 s).  Here up
 * to LISTING_THREADS ask in parallel, and the list is made of what came
 * by a deadline: an agent still answering then is listed as unreachable
 * (504) while its worker finishes on its own, bounded by the client's
 * timeouts, and drops what it got.
 */
#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "internal.h"
#include "agents.h"
#include "listing.h"

#define LISTING_THREADS 8

struct listing {
	pthread_mutex_t lock;
	pthread_cond_t done;
	struct ls_web_agents *a;
	const pid_t *pids;		/* a copy, owned */
	size_t n, next, finished;
	struct ls_web_snap **snaps;
	int *status;
	int abandoned;			/* the caller left: workers drop theirs */
	int refs;			/* the caller and each worker */
};

static void listing_unref(struct listing *l)
{
	size_t i;
	int last;

	pthread_mutex_lock(&l->lock);
	last = --l->refs == 0;
	pthread_mutex_unlock(&l->lock);
	if (!last)
		return;
	for (i = 0; i < l->n; i++)
		if (l->snaps[i])
			ls_web_snap_put(l->a, l->snaps[i]);
	pthread_cond_destroy(&l->done);
	pthread_mutex_destroy(&l->lock);
	free((void *)l->pids);
	free(l->snaps);
	free(l->status);
	free(l);
}

static void *worker(void *arg)
{
	struct listing *l = arg;
	struct ls_web_agents *a = l->a;

	for (;;) {
		struct ls_web_reply err = { 0 };
		struct ls_web_snap *s;
		size_t i;

		pthread_mutex_lock(&l->lock);
		i = l->abandoned ? l->n : l->next++;
		pthread_mutex_unlock(&l->lock);
		if (i >= l->n)
			break;
		s = ls_web_snap_get(a, l->pids[i], 0, &err);
		free(err.body);
		pthread_mutex_lock(&l->lock);
		if (l->abandoned && s) {
			ls_web_snap_put(a, s);
			s = NULL;
		}
		l->snaps[i] = s;
		l->status[i] = s ? 0 : err.status;
		l->finished++;
		pthread_cond_signal(&l->done);
		pthread_mutex_unlock(&l->lock);
	}
	listing_unref(l);
	__atomic_sub_fetch(&a->workers, 1, __ATOMIC_RELEASE);
	return NULL;
}

static struct listing *listing_new(struct ls_web_agents *a, const pid_t *pids,
				   size_t n)
{
	struct listing *l = calloc(1, sizeof(*l));
	pid_t *copy = malloc((n + 1) * sizeof(*copy));

	if (!l || !copy || !(l->snaps = calloc(n + 1, sizeof(*l->snaps))) ||
	    !(l->status = calloc(n + 1, sizeof(*l->status)))) {
		if (l) {
			free(l->snaps);
			free(l->status);
		}
		free(l);
		free(copy);
		return NULL;
	}
	memcpy(copy, pids, n * sizeof(*copy));
	pthread_mutex_init(&l->lock, NULL);
	pthread_cond_init(&l->done, NULL);
	l->a = a;
	l->pids = copy;
	l->n = n;
	l->refs = 1;
	return l;
}

/* Start up to LISTING_THREADS workers; how many started. */
static size_t start_workers(struct listing *l)
{
	size_t k, want = l->n < LISTING_THREADS ? l->n : LISTING_THREADS;
	pthread_attr_t at;
	pthread_t t;

	pthread_attr_init(&at);
	pthread_attr_setdetachstate(&at, PTHREAD_CREATE_DETACHED);
	for (k = 0; k < want; k++) {
		pthread_mutex_lock(&l->lock);
		l->refs++;
		pthread_mutex_unlock(&l->lock);
		__atomic_add_fetch(&l->a->workers, 1, __ATOMIC_ACQUIRE);
		if (pthread_create(&t, &at, worker, l)) {
			__atomic_sub_fetch(&l->a->workers, 1, __ATOMIC_RELEASE);
			pthread_mutex_lock(&l->lock);
			l->refs--;
			pthread_mutex_unlock(&l->lock);
			break;
		}
	}
	pthread_attr_destroy(&at);
	return k;
}

int ls_web_snap_get_many(struct ls_web_agents *a, const pid_t *pids, size_t n,
			 unsigned deadline_ms, struct ls_web_snap **snaps,
			 int *status)
{
	struct listing *l;
	struct timespec until;
	size_t i;

	if (!n)
		return 0;
	if (!(l = listing_new(a, pids, n)))
		return -ENOMEM;
	if (!start_workers(l)) {
		listing_unref(l);
		return -EAGAIN;
	}
	clock_gettime(CLOCK_REALTIME, &until);
	until.tv_sec += deadline_ms / 1000;
	until.tv_nsec += (long)(deadline_ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	pthread_mutex_lock(&l->lock);
	while (l->finished < l->n &&
	       pthread_cond_timedwait(&l->done, &l->lock, &until) != ETIMEDOUT)
		;
	for (i = 0; i < n; i++) {
		int done = i < l->next && (l->snaps[i] || l->status[i]);

		snaps[i] = l->snaps[i];
		status[i] = done ? l->status[i] : 504;
		l->snaps[i] = NULL;
	}
	l->abandoned = 1;
	pthread_mutex_unlock(&l->lock);
	listing_unref(l);
	return 0;
}

void ls_web_listing_wait(struct ls_web_agents *a, unsigned ms)
{
	struct timespec tick = { 0, 10 * 1000 * 1000 };

	while (ms >= 10 && __atomic_load_n(&a->workers, __ATOMIC_ACQUIRE)) {
		nanosleep(&tick, NULL);
		ms -= 10;
	}
}
