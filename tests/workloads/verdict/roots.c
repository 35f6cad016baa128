/*
 * roots.c MODE - pointers kept only in memory that is not the heap, the
 * stacks or the globals.
 *   0  a 200-byte block whose only pointer lies in an anonymous private
 *      mmap (memcheck scans the program's mappings: still reachable)
 *   1  a 210-byte block whose only pointer lies in a System V shared
 *      memory segment (shmat), removed at once (IPC_RMID) and left
 *      attached
 *   2  a signal handler running on a malloc'ed alternate stack (kept in a
 *      global) stores a 220-byte block only in its frame and returns; a
 *      230-byte block is kept in a global
 *   3  makecontext coroutines on malloc'ed stacks kept in globals: one
 *      suspended, holding a 240-byte block in its frame (reachable), one
 *      ended (its stack freed) having dropped a 250-byte block (lost)
 *   4  a thread stores a 260-byte block as a pthread_key value (no
 *      destructor) and ends, joined: glibc clears the value as the thread
 *      exits (definitely lost); main's own value, 270 bytes, is reachable
 *   5  a 280-byte block whose only pointer lies in a shared anonymous
 *      mapping (MAP_SHARED | MAP_ANONYMOUS): still reachable
 *   6  a 290-byte block whose only pointer lies in a writable shared
 *      mapping of a file (a memfd)
 *   7  modes 1, 5 and 6, then "ready" on stdout, and main returns when
 *      stdin closes (for `leakscope check` meanwhile): 780 bytes in 3
 *      blocks still reachable
 *   8  as 7 with mode 5's shared anonymous mapping 64 MiB large, written
 *      whole: 280 bytes in 1 block still reachable
 */
#define _GNU_SOURCE	/* memfd_create */
#include <pthread.h>
#include <sys/ipc.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include <unistd.h>
#include "vstack.h"

void *keep;	/* external: stores to it stay */
void *altstack, *costack[2];
static ucontext_t main_uc, co_uc[2];
static pthread_key_t key;

__attribute__((noinline)) static void in_mmap(void)
{
	void **m = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (m == MAP_FAILED)
		abort();
	m[7] = v_alloc(200);
}

__attribute__((noinline)) static void in_shm(void)
{
	int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	void **m;

	if (id < 0)
		abort();
	m = shmat(id, NULL, 0);
	shmctl(id, IPC_RMID, NULL);
	if (m == (void *)-1)
		abort();
	m[9] = v_alloc(210);
}

static void on_usr1(int sig)
{
	void *volatile p = v_alloc(220);

	v_use(p);
}

__attribute__((noinline)) static void on_altstack(void)
{
	v_altstack_raise(on_usr1, &altstack);
	keep = v_alloc(230);
}

static void co_body(int i)
{
	void *volatile p = v_alloc(240 + 10 * i);

	v_use(p);
	if (i == 0)
		swapcontext(&co_uc[0], &main_uc);
}

__attribute__((noinline)) static void coroutines(void)
{
	int i;

	for (i = 0; i < 2; i++)
		v_coroutine(&co_uc[i], &main_uc, co_body, i, &costack[i]);
	free(costack[1]);
	costack[1] = NULL;
}

__attribute__((noinline)) static void in_shared(int file, size_t size)
{
	int fd = file ? memfd_create("roots", 0) : -1;
	void **m;

	if (file && (fd < 0 || ftruncate(fd, 4096)))
		abort();
	m = mmap(NULL, size, PROT_READ | PROT_WRITE,
		 MAP_SHARED | (file ? 0 : MAP_ANONYMOUS), fd, 0);
	if (m == MAP_FAILED)
		abort();
	memset(m, 0, size);
	m[11] = v_alloc(file ? 290 : 280);
}

static void *setter(void *arg)
{
	pthread_setspecific(key, v_alloc(260));
	return arg;
}

__attribute__((noinline)) static void keys(void)
{
	pthread_t t;

	pthread_key_create(&key, NULL);
	pthread_create(&t, NULL, setter, NULL);
	pthread_join(t, NULL);
	pthread_setspecific(key, v_alloc(270));
}

int main(int argc, char **argv)
{
	int mode = v_mode(argc, argv);

	switch (mode) {
	case 0: in_mmap(); break;
	case 1: in_shm(); break;
	case 2: on_altstack(); break;
	case 3: coroutines(); break;
	case 4: keys(); break;
	case 5: in_shared(0, 4096); break;
	case 6: in_shared(1, 4096); break;
	case 7:
	case 8:
		if (mode == 7) {
			in_shm();
			in_shared(1, 4096);
		}
		in_shared(0, mode == 7 ? 4096 : 64u << 20);
		(void)!write(1, "ready\n", 6);
		while (read(0, &key, sizeof(key)) > 0)
			;
		break;
	}
	return 0;
}
