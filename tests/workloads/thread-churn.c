/*
 * thread-churn.c - thousands of short-lived threads, one after another.
 *
 * Expected outstanding sites at exit:
 *
 *   site               bytes  blocks
 *   site_churn_leak     1440    30    every 100th of the 3000 threads
 *
 * Each thread also allocates a block in tmp_thread_block and hands it to a
 * pthread key whose destructor frees it: that free runs after the agent's
 * own key destructor, while glibc is taking the thread down, so it must
 * still be tracked (no tmp_* site may appear).  The agent's per-thread
 * records must be reused: its peak slack (64 KiB per record) stays that
 * of a few records, not of 3000.
 */
#include <pthread.h>
#include <stdlib.h>
#include "wl.h"

#define THREADS 3000

static pthread_key_t key;

WL_SITE static void site_churn_leak(void)
{
	wl_sink = malloc(48); /* @site_churn_leak */
}

WL_HELPER static void *tmp_thread_block(void)
{
	return malloc(200);
}

static void key_free(void *p)
{
	free(p);
}

static void *worker(void *arg)
{
	void *p = tmp_thread_block();

	WL_CHECK(p != NULL, "malloc failed");
	WL_CHECK(pthread_setspecific(key, p) == 0, "setspecific failed");
	if ((long)arg % 100 == 0)
		site_churn_leak();
	return NULL;
}

int main(void)
{
	WL_CHECK(pthread_key_create(&key, key_free) == 0, "key_create failed");
	for (long i = 0; i < wl_n(THREADS); i++) {
		pthread_t t;

		WL_CHECK(pthread_create(&t, NULL, worker, (void *)i) == 0,
			 "pthread_create failed");
		WL_CHECK(pthread_join(t, NULL) == 0, "pthread_join failed");
	}
	return 0;
}
