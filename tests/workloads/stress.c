/*
 * stress.c - patterns that have broken memory tracers, one per mode, each
 * printing a checksum of what it did so that a run under leakscope can be
 * compared byte for byte with a native one (tests/stress/run-stress):
 *
 *   signals    malloc/free in a SIGALRM handler firing every 100 us while
 *              the main thread maps and unmaps pages through the agent
 *   forks      four threads allocating while the main thread forks 200
 *              children that allocate, free and _exit
 *   dlopen     2000 dlopen/dlclose of libleaky.so (argument: its path)
 *   longjmp    longjmp out of 20-deep allocating recursion, 5000 times
 *   spawn      posix_spawn and vfork+exec of /bin/true, 200 times each
 *   xthread    blocks allocated by one thread and freed by another,
 *              200000 through a bounded queue
 *
 * Exit status 0 and "MODE ok CHECKSUM" on stdout.  No leak is asserted:
 * the point is that the program behaves the same, whatever the tracer.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/time.h>
#include <sys/wait.h>
#include "wl.h"

extern char **environ;
static volatile sig_atomic_t in_handler_allocs;
static volatile int stop_threads;

static void on_alarm(int sig)
{
	void *p = malloc(64);

	if (p) {
		memset(p, sig, 64);
		free(p);
		in_handler_allocs = in_handler_allocs + 1;
	}
}

/*
 * The handler allocates while the main thread is inside the agent's
 * mmap/munmap bookkeeping (the agent interposes both).  The main thread
 * itself never calls malloc: natively, malloc in a handler that
 * interrupts malloc is undefined and does crash now and then, so the
 * native run this is compared with would not be a reference.
 */
static uint64_t mode_signals(void)
{
	struct itimerval it = { { 0, 100 }, { 0, 100 } };
	uint64_t sum = 0;

	WL_CHECK(signal(SIGALRM, on_alarm) != SIG_ERR, "signal");
	WL_CHECK(setitimer(ITIMER_REAL, &it, NULL) == 0, "setitimer");
	for (int i = 0; i < wl_n(100000); i++) {
		unsigned char *p = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
					MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

		WL_CHECK(p != MAP_FAILED, "mmap");
		p[0] = (unsigned char)i;
		sum += p[0];
		WL_CHECK(munmap(p, 4096) == 0, "munmap");
	}
	memset(&it, 0, sizeof(it));
	setitimer(ITIMER_REAL, &it, NULL);
	return sum;
}

static void *churner(void *arg)
{
	while (!stop_threads) {
		void *p = malloc(128);

		wl_sink = p;
		free(p);
	}
	return arg;
}

static uint64_t mode_forks(void)
{
	pthread_t th[4];
	uint64_t sum = 0;

	for (int i = 0; i < 4; i++)
		WL_CHECK(pthread_create(&th[i], NULL, churner, NULL) == 0, "thread");
	for (int i = 0; i < wl_n(200); i++) {
		int status;
		pid_t pid = fork();

		WL_CHECK(pid >= 0, "fork");
		if (!pid) {
			void *p = malloc(4096);

			free(p);
			_exit(p ? i % 7 : 99);
		}
		WL_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
		sum += WEXITSTATUS(status);
	}
	stop_threads = 1;
	for (int i = 0; i < 4; i++)
		pthread_join(th[i], NULL);
	return sum;
}

static uint64_t mode_dlopen(const char *lib)
{
	uint64_t sum = 0;

	for (int i = 0; i < wl_n(2000); i++) {
		void *h = dlopen(lib, RTLD_NOW | RTLD_LOCAL);

		WL_CHECK(h != NULL, "dlopen %s", lib);
		sum += dlsym(h, "libleaky_run") != NULL;
		WL_CHECK(dlclose(h) == 0, "dlclose");
	}
	return sum;
}

static jmp_buf jb;

WL_HELPER static void deep(int n)
{
	void *p;

	if (n < 0)
		return;
	p = malloc(32);
	wl_sink = p;
	if (!n) {
		free(p);
		longjmp(jb, 1);
	}
	deep(n - 1);
	WL_BARRIER();
	free(p);
}

static uint64_t mode_longjmp(void)
{
	volatile uint64_t sum = 0;

	for (volatile int i = 0; i < wl_n(5000); i++)
		if (!setjmp(jb))
			deep(20);
		else
			sum += 1;
	return sum;
}

static uint64_t mode_spawn(void)
{
	char *argv[] = { "true", NULL };
	uint64_t sum = 0;
	int status;

	for (int i = 0; i < wl_n(200); i++) {
		pid_t pid;

		WL_CHECK(posix_spawn(&pid, "/bin/true", NULL, NULL, argv,
				     environ) == 0, "posix_spawn");
		WL_CHECK(waitpid(pid, &status, 0) == pid, "waitpid");
		sum += WEXITSTATUS(status) == 0;
		pid = vfork();
		if (!pid) {
			execve("/bin/true", argv, environ);
			_exit(127);
		}
		WL_CHECK(pid > 0 && waitpid(pid, &status, 0) == pid, "vfork");
		sum += WEXITSTATUS(status) == 0;
	}
	return sum;
}

#define QN 64
static void *queue[QN];
static unsigned qhead, qtail;
static pthread_mutex_t qlock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t qcond = PTHREAD_COND_INITIALIZER;

static void *consumer(void *arg)
{
	uint64_t *sum = arg;

	for (;;) {
		unsigned char *p;

		pthread_mutex_lock(&qlock);
		while (qhead == qtail)
			pthread_cond_wait(&qcond, &qlock);
		p = queue[qtail++ % QN];
		pthread_cond_broadcast(&qcond);
		pthread_mutex_unlock(&qlock);
		if (!p)
			return NULL;
		*sum += p[0];
		free(p);
	}
}

static uint64_t mode_xthread(void)
{
	uint64_t sum = 0;
	pthread_t th;

	WL_CHECK(pthread_create(&th, NULL, consumer, &sum) == 0, "thread");
	for (int i = 0; i <= wl_n(200000); i++) {
		unsigned char *p = i < 200000 ? malloc((size_t)(i % 100) + 1) : NULL;

		if (p)
			p[0] = (unsigned char)i;
		pthread_mutex_lock(&qlock);
		while (qhead - qtail == QN)
			pthread_cond_wait(&qcond, &qlock);
		queue[qhead++ % QN] = p;
		pthread_cond_broadcast(&qcond);
		pthread_mutex_unlock(&qlock);
	}
	pthread_join(th, NULL);
	return sum;
}

int main(int argc, char **argv)
{
	const char *mode = argc > 1 ? argv[1] : "";
	uint64_t sum;

	if (!strcmp(mode, "signals"))
		sum = mode_signals();
	else if (!strcmp(mode, "forks"))
		sum = mode_forks();
	else if (!strcmp(mode, "dlopen") && argc > 2)
		sum = mode_dlopen(argv[2]);
	else if (!strcmp(mode, "longjmp"))
		sum = mode_longjmp();
	else if (!strcmp(mode, "spawn"))
		sum = mode_spawn();
	else if (!strcmp(mode, "xthread"))
		sum = mode_xthread();
	else {
		wl_say(2, "usage: stress signals|forks|dlopen LIB|longjmp|spawn|xthread\n");
		return 2;
	}
	wl_say(1, "%s ok %llu\n", mode, (unsigned long long)sum);
	return 0;
}
