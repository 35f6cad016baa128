/*
 * attach-target.c - a program started WITHOUT the agent, for `leakscope
 * attach` (tests/integration/t_attach.py).
 *
 * It reads one-letter commands on stdin and answers each with one line
 * on stdout, so the test drives it step by step without sleeping:
 *
 *   p  before attach: 40 blocks of 1000 bytes and one anonymous mapping
 *      of 2 pages (pre_blocks, pre_map), unknown to the agent
 *   l  after attach, one leak per interposed function (each its own site):
 *        site_malloc          10 x 1000   = 10000 bytes
 *        site_calloc           5 x 20*30  =  3000
 *        site_realloc_new      1 x  777   =   777  realloc(NULL, 777)
 *        site_reallocarray     1 x 10*50  =   500
 *        site_posix_memalign   1 x  256   =   256
 *        site_aligned_alloc    1 x 1024   =  1024
 *        site_memalign         1 x  333   =   333
 *        site_valloc           1 x  100   =   100
 *        site_pvalloc          1 x  100   =  4096  (rounded to a page)
 *        site_strdup           1 x   12   =    12  (inside libc)
 *        site_mmap             1 x 3 pages = 12288 (kind mmap)
 *      and temporaries freed at once (tmp_churn): nothing left
 *   t  a thread created now leaks site_thread: 1 x 2222
 *   d  dlopen libleaky.so (beside this program), call it: site_in_libleaky
 *      4321 x 1 (tests/workloads/libleaky.c); kept loaded
 *   f  frees 20 pre-attach blocks, reallocs 10 others to 3000 bytes
 *      (site_realloc_pre: 10 x 3000 = 30000), unmaps the pre-attach
 *      mapping: nothing goes negative, the reallocs are new blocks
 *   h N  start N threads that malloc and free without pause (hammer);
 *      "H" stops and joins them
 *   s  spin without allocating nor entering the kernel until SIGUSR1:
 *      no safe point for `attach` (it must time out, target unharmed)
 *   q  exit 0 after printing "bye <checksum>"
 *
 * Output is deterministic: the same bytes whether or not anybody
 * attached, which the test compares.
 */
#include <dlfcn.h>
#include <limits.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "wl.h"

#define PRE 40

static void *pre_blocks[PRE];
static void *pre_map;
static unsigned long checksum;

WL_SITE static void site_malloc(void) { wl_sink = malloc(1000); }
WL_SITE static void site_calloc(void) { wl_sink = calloc(20, 30); }
WL_SITE static void site_realloc_new(void) { wl_sink = realloc(NULL, 777); }
WL_SITE static void site_reallocarray(void) { wl_sink = reallocarray(NULL, 10, 50); }

WL_SITE static void site_posix_memalign(void)
{
	void *p = NULL;

	WL_CHECK(!posix_memalign(&p, 64, 256), "posix_memalign");
	wl_sink = p;
}

WL_SITE static void site_aligned_alloc(void) { wl_sink = aligned_alloc(128, 1024); }
WL_SITE static void site_memalign(void) { wl_sink = memalign(32, 333); }
WL_SITE static void site_valloc(void) { wl_sink = valloc(100); }
WL_SITE static void site_pvalloc(void) { wl_sink = pvalloc(100); }
WL_SITE static void site_strdup(void) { wl_sink = strdup("hello world"); }

WL_SITE static void site_mmap(void)
{
	void *p = mmap(NULL, 3 * 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	WL_CHECK(p != MAP_FAILED, "mmap");
	wl_sink = p;
}

WL_SITE static void tmp_churn(void)
{
	int i;

	for (i = 0; i < wl_n(100); i++) {
		void *p = malloc(64 + (size_t)i);

		wl_sink = p;
		free(p);
	}
}

WL_HELPER static void leak_all(void)
{
	int i;

	for (i = 0; i < wl_n(10); i++)
		site_malloc();
	for (i = 0; i < wl_n(5); i++)
		site_calloc();
	site_realloc_new();
	site_reallocarray();
	site_posix_memalign();
	site_aligned_alloc();
	site_memalign();
	site_valloc();
	site_pvalloc();
	site_strdup();
	site_mmap();
	tmp_churn();
	WL_BARRIER();
}

WL_SITE static void site_thread(void) { wl_sink = malloc(2222); }

static void *thread_main(void *arg)
{
	site_thread();
	WL_BARRIER();
	return arg;
}

WL_HELPER static void dl_stage(void)
{
	char dir[PATH_MAX];
	ssize_t n = readlink("/proc/self/exe", dir, sizeof(dir) - 64);
	void *h;
	void (*fn)(void);

	WL_CHECK(n > 0, "readlink");
	dir[n] = 0;
	strcpy(strrchr(dir, '/') + 1, "libleaky.so");
	h = dlopen(dir, RTLD_NOW);
	WL_CHECK(h != NULL, "dlopen %s", dir);
	fn = (void (*)(void))dlsym(h, "libleaky_run");
	WL_CHECK(fn != NULL, "dlsym");
	fn();
	WL_BARRIER();
}

WL_SITE static void site_realloc_pre(int i)
{
	pre_blocks[i] = realloc(pre_blocks[i], 3000);
	WL_CHECK(pre_blocks[i] != NULL, "realloc");
}

static void free_pre(void)
{
	int i;

	for (i = 0; i < 20; i++) {
		free(pre_blocks[i]);
		pre_blocks[i] = NULL;
	}
	for (i = 20; i < 30; i++)
		site_realloc_pre(i);
	WL_CHECK(!munmap(pre_map, 2 * 4096), "munmap");
}

static void allocate_pre(void)
{
	int i;

	for (i = 0; i < PRE; i++) {
		pre_blocks[i] = malloc(1000);
		memset(pre_blocks[i], i, 1000);
	}
	pre_map = mmap(NULL, 2 * 4096, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	WL_CHECK(pre_map != MAP_FAILED, "mmap");
}

/* --- hammer: every thread allocating all the time ------------------------- */

#define MAX_HAMMER 16
static pthread_t hammers[MAX_HAMMER];
static int nhammers;
static atomic_int hammer_stop;

static void *hammer_main(void *arg)
{
	unsigned long sum = 0, i = 0;
	void *keep[64] = { 0 };

	while (!atomic_load_explicit(&hammer_stop, memory_order_relaxed)) {
		size_t k = i % 64;

		free(keep[k]);
		keep[k] = malloc(16 + (i * 7) % 2000);
		sum += (uintptr_t)keep[k] & 1;
		i++;
	}
	for (i = 0; i < 64; i++)
		free(keep[i]);
	return (void *)sum;
}

static void hammer(int n)
{
	for (nhammers = 0; nhammers < n && nhammers < MAX_HAMMER; nhammers++)
		pthread_create(&hammers[nhammers], NULL, hammer_main, NULL);
}

static void hammer_join(void)
{
	int i;

	atomic_store(&hammer_stop, 1);
	for (i = 0; i < nhammers; i++)
		pthread_join(hammers[i], NULL);
	nhammers = 0;
	atomic_store(&hammer_stop, 0);
}

static volatile sig_atomic_t spin_stop;

static void on_usr1(int sig)
{
	(void)sig;
	spin_stop = 1;
}

static void spin(void)
{
	wl_say(1, "spinning\n");
	while (!spin_stop)
		checksum++;
	spin_stop = 0;
	checksum = 0;
}

static int read_cmd(char *c, int *arg)
{
	char line[64];
	size_t n = 0;

	while (n + 1 < sizeof(line)) {
		ssize_t r = read(0, line + n, 1);

		if (r <= 0)
			return -1;
		if (line[n++] == '\n')
			break;
	}
	line[n] = 0;
	*c = line[0];
	*arg = n > 2 ? atoi(line + 2) : 0;
	return 0;
}

int main(void)
{
	pthread_t th;
	char c;
	int arg;

	signal(SIGUSR1, on_usr1);
	while (!read_cmd(&c, &arg)) {
		switch (c) {
		case 'p': allocate_pre(); break;
		case 'l': leak_all(); break;
		case 't':
			pthread_create(&th, NULL, thread_main, NULL);
			pthread_join(th, NULL);
			break;
		case 'd': dl_stage(); break;
		case 'f': free_pre(); break;
		case 'h': hammer(arg); break;
		case 'H': hammer_join(); break;
		case 's': spin(); break;
		case 'q':
			wl_say(1, "bye %lu\n", checksum);
			return 0;
		default:
			wl_say(1, "unknown %c\n", c);
			continue;
		}
		checksum = checksum * 31 + (unsigned char)c;
		wl_say(1, "ok %c %lu\n", c, checksum);
	}
	return 0;
}
