/*
 * pressure-errno.c - errno after successful allocations under RLIMIT_AS.
 *
 *   pressure-errno THREADS [HEADROOM_KIB]
 *
 * Starts THREADS threads (64 KiB stacks; with 1, the main thread alone
 * allocates and the process stays single-threaded), sets RLIMIT_AS to the current
 * size (once it has settled) plus HEADROOM KiB (default 2048), then lets the threads allocate in
 * strict turns, one call per turn, cycling malloc, calloc, realloc (of the
 * thread's last block, to a larger size) and posix_memalign, 16..1024
 * bytes, until every thread saw a call fail or 200000 succeeded.  Before
 * each call errno is set to EDOM; a successful call that leaves anything
 * else there "changed errno".  The turns make the sequence of calls the
 * same in every run, so a traced run can be compared call by call with a
 * native one.  Prints on stdout:
 *
 *   ok N changed M failed F   (F: the turn of the first failed call, or -1)
 *   C1 C2 ...        (the turn numbers, the first 4096, of the calls that
 *                     succeeded and changed errno, each with its
 *                     function: m c r p)
 *
 * Natively glibc itself leaves ENOMEM after some successful calls (a new
 * thread's first malloc fails to map an arena and falls back to an old
 * one); under the agent the list must be the same.  Every block stays
 * live: the sites are site_errno_{malloc,calloc,realloc,memalign}.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include "wl.h"

#define MAX_THREADS 16
#define MAX_SHOWN 4096

static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int nthreads, turn_of, started, finished, live_threads;
static long turn, made, changed, nshown, first_failed = -1;
static long shown[MAX_SHOWN];
static char shown_fn[MAX_SHOWN];
static int done[MAX_THREADS];

WL_SITE static void *site_errno_malloc(size_t n)
{
	void *p = malloc(n);

	WL_BARRIER();
	return p;
}

WL_SITE static void *site_errno_calloc(size_t n)
{
	void *p = calloc(1, n);

	WL_BARRIER();
	return p;
}

WL_SITE static void *site_errno_realloc(void *old, size_t n)
{
	void *p = realloc(old, n);

	WL_BARRIER();
	return p;
}

WL_SITE static void *site_errno_memalign(size_t n)
{
	void *p = NULL;
	int r = posix_memalign(&p, 64, n);

	WL_BARRIER();
	return r ? NULL : p;
}

/* One call; the block (NULL if it failed) and errno after it. */
static void *one_call(int kind, void **last, size_t size, int *err)
{
	void *p;

	errno = EDOM;
	switch (kind) {
	case 0:
		p = site_errno_malloc(size);
		break;
	case 1:
		p = site_errno_calloc(size);
		break;
	case 2:
		/* realloc of the thread's last block; a failure leaves it. */
		p = site_errno_realloc(*last, size + 1024);
		if (p)
			*last = NULL;
		break;
	default:
		p = site_errno_memalign(size);
		break;
	}
	*err = errno;
	return p;
}

static void *worker(void *arg)
{
	int me = (int)(long)arg, err;
	void *last = NULL, **p;

	pthread_mutex_lock(&mu);
	for (;;) {
		while (!started || (!finished && turn_of != me))
			pthread_cond_wait(&cv, &mu);
		if (finished || made >= wl_n(200000)) {
			finished = 1;
			pthread_cond_broadcast(&cv);
			break;
		}
		int kind = (int)(turn % 4);
		p = one_call(kind, &last, 16 + (size_t)(turn % 64) * 16, &err);
		if (!p) {
			if (first_failed < 0)
				first_failed = turn;
			done[me] = 1;
			finished = --live_threads == 0;
		} else {
			made++;
			if (err != EDOM) {
				if (nshown < MAX_SHOWN) {
					shown[nshown] = turn;
					shown_fn[nshown++] = "mcrp"[kind];
				}
				changed++;
			}
			if (kind != 2)
				*p = last;	/* keep every block */
			last = p;
		}
		turn++;
		do		/* the next thread still allocating */
			turn_of = (turn_of + 1) % nthreads;
		while (!finished && done[turn_of]);
		pthread_cond_broadcast(&cv);
		if (done[me])
			break;
	}
	wl_sink = last;
	pthread_mutex_unlock(&mu);
	return NULL;
}

/*
 * VmSize once it has not changed for 200 ms (at most 5 s): a preloaded
 * tool's start-up mappings (a control thread's first sample, done at a
 * moment that depends on the machine's load) then count in the current
 * size rather than eating the headroom at some turn or other, which
 * would move where glibc's failed-sbrk retry sets errno.
 */
static long settled_vm_kib(void)
{
	long prev = wl_vm_kib(), v;
	int stable = 0, i;

	for (i = 0; i < 100 && stable < 4; i++) {
		usleep(50000);
		v = wl_vm_kib();
		stable = v == prev ? stable + 1 : 0;
		prev = v;
	}
	return prev;
}

int main(int argc, char **argv)
{
	long headroom = argc > 2 ? atol(argv[2]) : 2048, vm;
	pthread_t th[MAX_THREADS];
	pthread_attr_t attr;
	struct rlimit rl;
	char line[64];
	size_t len;
	int i;

	nthreads = argc > 1 ? atoi(argv[1]) : 1;
	WL_CHECK(nthreads >= 1 && nthreads <= MAX_THREADS, "threads: 1..%d", MAX_THREADS);
	live_threads = nthreads;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	for (i = 0; i < nthreads && nthreads > 1; i++)
		WL_CHECK(pthread_create(&th[i], &attr, worker, (void *)(long)i) == 0,
			 "pthread_create");
	vm = settled_vm_kib();
	WL_CHECK(vm > 0, "no VmSize");
	rl.rlim_cur = rl.rlim_max = (rlim_t)(vm + headroom) * 1024;
	WL_CHECK(setrlimit(RLIMIT_AS, &rl) == 0, "setrlimit: %d", errno);
	pthread_mutex_lock(&mu);
	started = 1;
	pthread_cond_broadcast(&cv);
	pthread_mutex_unlock(&mu);
	if (nthreads == 1)
		worker(0);
	for (i = 0; i < nthreads && nthreads > 1; i++)
		pthread_join(th[i], NULL);
	wl_say(1, "ok %ld changed %ld failed %ld\n", made, changed, first_failed);
	for (i = 0; i <= nshown; i++) {
		len = i == nshown ? (size_t)snprintf(line, sizeof(line), "\n") :
		      (size_t)snprintf(line, sizeof(line), "%s%ld%c", i ? " " : "",
				       shown[i], shown_fn[i]);
		WL_CHECK(write(1, line, len) == (ssize_t)len, "write");
	}
	return 0;
}
