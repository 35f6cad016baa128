/*
 * t-agent-rootmaps.c - which mappings of /proc/self/maps are roots
 * (ls_scan_parse_maps, ls_scan_root_region: agent/reachroots.c,
 * agent/reachint.h), on mappings this process makes: a private anonymous
 * one, a System V segment, a shared anonymous one and a memfd are
 * (valgrind scans them), a shared mapping of a file on disk and a
 * read-only one are not.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/mman.h>
#include <sys/shm.h>
#include "../../agent/reachint.h"
#include "tap.h"

static struct scan sc;

/* The region holding p, or NULL. */
static const struct region *region_of(const void *p)
{
	const struct region *g = sc.regions.p;
	uint64_t a = (uint64_t)(uintptr_t)p;
	size_t i;

	for (i = 0; i < sc.regions.len; i++)
		if (a >= g[i].start && a < g[i].end)
			return &g[i];
	return NULL;
}

static void expect(const void *p, int root, const char *what)
{
	const struct region *g = region_of(p);

	ok(g && ls_scan_root_region(g) == root, "%s: %s", what,
	   root ? "a root" : "not a root");
}

int main(void)
{
	char path[] = "rootmaps-XXXXXX";
	int id = shmget(IPC_PRIVATE, 4096, IPC_CREAT | 0600);
	int mfd = memfd_create("rootmaps", 0), ffd = mkstemp(path);
	void *shm = id >= 0 ? shmat(id, NULL, 0) : (void *)-1;
	void *anon = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			  MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	void *sanon = mmap(NULL, 4096, PROT_READ | PROT_WRITE,
			   MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	void *mem = MAP_FAILED, *file = MAP_FAILED, *ro;

	if (id >= 0)
		shmctl(id, IPC_RMID, NULL);
	if (ffd >= 0)
		unlink(path);
	if (mfd >= 0 && !ftruncate(mfd, 4096))
		mem = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, mfd,
			   0);
	if (ffd >= 0 && !ftruncate(ffd, 4096))
		file = mmap(NULL, 4096, PROT_READ | PROT_WRITE, MAP_SHARED, ffd,
			    0);
	ro = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (shm == (void *)-1 || anon == MAP_FAILED || sanon == MAP_FAILED ||
	    mem == MAP_FAILED || file == MAP_FAILED || ro == MAP_FAILED) {
		fprintf(stderr, "t-agent-rootmaps: a mapping failed\n");
		return 2;
	}
	ok(ls_scan_parse_maps(&sc) == 0, "the maps parsed");
	expect(anon, 1, "a private anonymous mapping");
	expect(shm, 1, "a System V segment");
	expect(sanon, 1, "a shared anonymous mapping");
	expect(mem, 1, "a memfd mapped shared");
	expect(file, 0, "a file in the working directory mapped shared");
	expect(ro, 0, "a read-only mapping");
	expect(&sc, 1, "this program's .bss");
	return tap_done();
}
