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
 *   lazybind   a SIGUSR1 handler that allocates (4242 bytes, kept, from
 *              site_lazy_signal) runs while the program is inside
 *              glibc's lazy binding of a function of liblazy.so
 *              (argument: its path; the library says how)
 *   longjmp    longjmp out of 20-deep allocating recursion, 5000 times
 *   spawn      posix_spawn and vfork+exec of /bin/true, 200 times each
 *   xthread    blocks allocated by one thread and freed by another,
 *              200000 through a bounded queue
 *   threads    20000 short-lived threads (8 at a time), each allocating
 *              and freeing; 2000 with "threads quick"
 *   nomem      allocation failure under RLIMIT_AS: malloc, calloc,
 *              realloc and posix_memalign refused (NULL / ENOMEM, the
 *              old block intact), then 1 MiB blocks until malloc returns
 *              NULL, all freed, and malloc works again.  The number of
 *              blocks that fit is not printed: the agent's own memory
 *              counts against the limit too.
 *
 * C++ exceptions through 50 frames are stress-cxx.cc's.
 *
 * Exit status 0 and "MODE ok CHECKSUM" on stdout.  No leak is asserted:
 * the point is that the program behaves the same, whatever the tracer.
 */
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/time.h>
#include <sys/wait.h>
#include "wl.h"

extern char **environ;

/* VmSize in bytes, from /proc/self/statm (no stdio). */
static size_t wl_vm_size(void)
{
	char buf[128];
	int fd = open("/proc/self/statm", O_RDONLY);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	WL_CHECK(n > 0, "read /proc/self/statm");
	buf[n] = 0;
	return (size_t)strtoull(buf, NULL, 10) * (size_t)sysconf(_SC_PAGESIZE);
}
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

static volatile sig_atomic_t lazy_signals;
static void *lazy_kept;

WL_SITE static void site_lazy_signal(void)
{
	lazy_kept = malloc(4242); /* @site_lazy_signal */
}

static void on_usr1(int sig)
{
	site_lazy_signal();
	lazy_signals = lazy_signals + 1;
}

static uint64_t mode_lazybind(const char *lib)
{
	int (*run)(int);
	void *h;
	int r;

	WL_CHECK(signal(SIGUSR1, on_usr1) != SIG_ERR, "signal");
	h = dlopen(lib, RTLD_LAZY | RTLD_LOCAL);
	WL_CHECK(h != NULL, "dlopen %s", lib);
	run = (int (*)(int))dlsym(h, "liblazy_run");
	WL_CHECK(run != NULL, "dlsym liblazy_run");
	r = run(41);
	WL_CHECK(lazy_signals == 1 && lazy_kept, "one signal, one block");
	return (uint64_t)r + (uint64_t)lazy_signals;
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

static void *short_thread(void *arg)
{
	uintptr_t i = (uintptr_t)arg;
	unsigned char *p = malloc(32 + i % 64);

	if (!p)
		return NULL;
	memset(p, (int)(i & 0xff), 32 + i % 64);
	i = p[i % 32] + 1;
	free(p);
	return (void *)i;
}

static uint64_t mode_threads(int n)
{
	pthread_t th[8];
	uint64_t sum = 0;
	void *ret;
	int i, k;

	for (i = 0; i < n; i += 8) {
		for (k = 0; k < 8; k++)
			WL_CHECK(!pthread_create(&th[k], NULL, short_thread,
						 (void *)(uintptr_t)(i + k)),
				 "pthread_create");
		for (k = 0; k < 8; k++) {
			WL_CHECK(!pthread_join(th[k], &ret), "pthread_join");
			sum += (uintptr_t)ret;
		}
	}
	return sum;
}

#define MIB (1024u * 1024u)

/* Sizes no allocator can give, through volatiles so that the compiler
 * neither warns about them nor folds the calls away. */
static volatile size_t huge = (size_t)-1 / 2, huge_n = (size_t)-1 / 4;

/* Each refused call must say ENOMEM and change nothing. */
static uint64_t refused_calls(void)
{
	char *keep = malloc(100), *q;
	void *al = NULL;
	uint64_t sum = 0;

	WL_CHECK(keep != NULL, "malloc(100)");
	memset(keep, 7, 100);
	errno = 0;
	sum += !malloc(huge) && errno == ENOMEM;
	errno = 0;
	sum += !calloc(huge_n, 4) && errno == ENOMEM;
	errno = 0;
	q = realloc(keep, huge);
	if (q)		/* cannot be: keep it freeable either way */
		keep = q;
	else
		sum += errno == ENOMEM && keep[99] == 7;
	sum += posix_memalign(&al, 64, huge) == ENOMEM && !al;
	free(keep);
	return sum;
}

static uint64_t mode_nomem(void)
{
	struct rlimit rl;
	char *blocks[4096];
	uint64_t sum = refused_calls();
	int n = 0, i, intact = 1;

	/* 256 MiB above what is mapped now. */
	rl.rlim_cur = rl.rlim_max = RLIM_INFINITY;
	WL_CHECK(!getrlimit(RLIMIT_AS, &rl), "getrlimit");
	rl.rlim_cur = wl_vm_size() + 256ul * MIB;
	WL_CHECK(!setrlimit(RLIMIT_AS, &rl), "setrlimit");
	errno = 0;
	while (n < 4096 && (blocks[n] = malloc(MIB))) {
		memset(blocks[n], n & 0xff, MIB);
		n++;
	}
	sum += n < 4096 && errno == ENOMEM;	/* it did run out */
	sum += refused_calls();
	for (i = 0; i < n; i++) {
		intact &= blocks[i][MIB - 1] == (char)(i & 0xff);
		free(blocks[i]);
	}
	sum += intact;
	blocks[0] = malloc(MIB);
	sum += blocks[0] != NULL;
	free(blocks[0]);
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
	else if (!strcmp(mode, "lazybind") && argc > 2)
		sum = mode_lazybind(argv[2]);
	else if (!strcmp(mode, "longjmp"))
		sum = mode_longjmp();
	else if (!strcmp(mode, "spawn"))
		sum = mode_spawn();
	else if (!strcmp(mode, "xthread"))
		sum = mode_xthread();
	else if (!strcmp(mode, "threads"))
		sum = mode_threads(argc > 2 && !strcmp(argv[2], "quick") ?
				   2000 : 20000);
	else if (!strcmp(mode, "nomem"))
		sum = mode_nomem();
	else {
		wl_say(2, "usage: stress signals|forks|dlopen LIB|lazybind LIB|"
		       "longjmp|spawn|"
		       "xthread|threads [quick]|nomem\n");
		return 2;
	}
	wl_say(1, "%s ok %llu\n", mode, (unsigned long long)sum);
	return 0;
}
