/*
 * threads.c - leaks from a second thread, and blocks that cross threads.
 *
 * Expected outstanding sites at exit:
 *
 *   site               bytes  blocks  thread
 *   site_thread_leak    1050     5    the worker (tid != pid), stack
 *                                     worker_main -> worker_stage -> site
 *   site_main_leak       660     2    the main thread (tid == pid), stack
 *                                     main -> threads_run -> site
 *
 * Cross-thread frees: the main thread allocates 50 blocks in
 * tmp_main_alloc that the worker frees, the worker allocates 40 blocks in
 * tmp_worker_alloc that the main thread frees after the join.  Both threads
 * also churn 20,000 malloc/free pairs at the same time.  No tmp_* site may
 * appear.  (pthread_create leaves the worker's TLS vector allocated by the
 * dynamic loader, 288 bytes whose first program frame is threads_run: a
 * real outstanding block, but not part of this ground truth.)
 */
#include <pthread.h>
#include <stdlib.h>
#include "wl.h"

#define MAIN_BLOCKS 50
#define WORKER_BLOCKS 40

static void *from_main[MAIN_BLOCKS];
static void *from_worker[WORKER_BLOCKS];

WL_SITE static void site_thread_leak(void)
{
	for (int i = 0; i < wl_n(5); i++)
		wl_sink = malloc(210); /* @site_thread_leak */
}

WL_SITE static void site_main_leak(void)
{
	for (int i = 0; i < wl_n(2); i++)
		wl_sink = malloc(330); /* @site_main_leak */
}

WL_HELPER static void tmp_main_alloc(void)
{
	for (int i = 0; i < MAIN_BLOCKS; i++) {
		from_main[i] = malloc(64 + (size_t)i);
		WL_CHECK(from_main[i] != NULL, "malloc failed");
	}
}

WL_HELPER static void tmp_worker_alloc(void)
{
	for (int i = 0; i < WORKER_BLOCKS; i++) {
		from_worker[i] = calloc(1, 96 + (size_t)i);
		WL_CHECK(from_worker[i] != NULL, "calloc failed");
	}
}

WL_HELPER static void tmp_churn(int salt)
{
	/* A local pointer: both threads churn at once, and freeing the
	 * shared wl_sink would free the other thread's block. */
	for (int i = 0; i < 20000; i++) {
		void *p = malloc((size_t)((i * 31 + salt) % 700) + 1);

		wl_sink = p;
		free(p);
	}
}

WL_HELPER static void worker_stage(void)
{
	for (int i = 0; i < MAIN_BLOCKS; i++)
		free(from_main[i]);
	site_thread_leak();
	tmp_worker_alloc();
	tmp_churn(1);
	WL_BARRIER();
}

WL_HELPER static void *worker_main(void *arg)
{
	worker_stage();
	WL_BARRIER();
	return arg;
}

WL_HELPER static void threads_run(void)
{
	pthread_t t;
	tmp_main_alloc();
	WL_CHECK(pthread_create(&t, NULL, worker_main, NULL) == 0,
		 "pthread_create failed");
	tmp_churn(2);
	site_main_leak();
	WL_CHECK(pthread_join(t, NULL) == 0, "pthread_join failed");
	for (int i = 0; i < WORKER_BLOCKS; i++)
		free(from_worker[i]);
	WL_BARRIER();
}

int main(void)
{
	threads_run();
	WL_BARRIER();
	return 0;
}
