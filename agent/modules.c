/*
 * modules.c - the module registry.
 */
#include <elf.h>
#include <link.h>
#include <string.h>
#include <unistd.h>
#include "arena.h"
#include "dllock.h"
#include "lockrank.h"
#include "modules.h"
#include "sys.h"

#define MAX_MODULES 8192

static struct ls_module_rec mods[MAX_MODULES];
static unsigned nmods;
static uint32_t gen = 1;
static ls_lock_t mod_lock = LS_LOCK_INIT;
static char exe_path[LSNAP_MAX_PATH];
static uint64_t self_lo, self_hi;

/* Each refresh marks what it saw; what was loaded and is not seen has
 * been unloaded. */
static unsigned char seen[MAX_MODULES];
static int changed;

/* The last walk done, and the refreshes refused since (ls_modules_stale):
 * written under mod_lock, read without (a frozen image reads them). */
static uint64_t walked_ns;
static uint32_t refused_n;
static pid_t refused_by;

uint32_t ls_modules_gen(void)
{
	return __atomic_load_n(&gen, __ATOMIC_ACQUIRE);
}

static void read_build_id(const struct dl_phdr_info *info, struct lsnap_module *m)
{
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p, *end;

		if (ph->p_type != PT_NOTE)
			continue;
		p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		end = p + ph->p_memsz;
		while (p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *n = (const void *)p;
			const char *name = p + sizeof(*n);
			const char *desc = name + ((n->n_namesz + 3) & ~3u);

			if (n->n_type == NT_GNU_BUILD_ID && n->n_namesz == 4 &&
			    !memcmp(name, "GNU", 4) &&
			    n->n_descsz <= LSNAP_BUILD_ID_MAX) {
				memcpy(m->build_id, desc, n->n_descsz);
				m->build_id_len = n->n_descsz;
				return;
			}
			p = desc + ((n->n_descsz + 3) & ~3u);
		}
	}
}

static void range_of(const struct dl_phdr_info *info, uint64_t *lo, uint64_t *hi)
{
	int i;

	*lo = UINT64_MAX;
	*hi = 0;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t a = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		if (a < *lo)
			*lo = a;
		if (a + ph->p_memsz > *hi)
			*hi = a + ph->p_memsz;
	}
	if (*lo > *hi)
		*lo = *hi = 0;
}

static int find(const char *path, uint64_t bias, uint64_t lo)
{
	unsigned i;

	for (i = 0; i < nmods; i++)
		if (mods[i].m.gen_to == LSNAP_GEN_LOADED &&
		    mods[i].m.bias == bias && mods[i].m.lo == lo &&
		    !strcmp(mods[i].path, path))
			return (int)i;
	return -1;
}

static int add(const struct dl_phdr_info *info, const char *path,
	       uint64_t lo, uint64_t hi)
{
	struct ls_module_rec *mod;
	size_t len = strlen(path);

	if (nmods >= MAX_MODULES)
		return -1;
	mod = &mods[nmods];
	memset(mod, 0, sizeof(*mod));
	mod->path = ls_arena_alloc(len + 1);
	if (!mod->path)
		return -1;
	memcpy(mod->path, path, len + 1);
	mod->m.bias = info->dlpi_addr;
	mod->m.lo = lo;
	mod->m.hi = hi;
	mod->m.gen_from = gen + 1;
	mod->m.gen_to = LSNAP_GEN_LOADED;
	mod->m.path_len = len;
	read_build_id(info, &mod->m);
	changed = 1;
	return (int)nmods++;
}

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
	const char *path = info->dlpi_name;
	uint64_t lo, hi;
	int i;

	range_of(info, &lo, &hi);
	if (!path || !*path)
		path = exe_path;
	if (lo == hi)
		return 0;
	/* The agent itself, loaded by attach from a memfd by the name of
	 * its descriptor, closed since: the name the mapping has. */
	if (!strncmp(path, "/proc/self/fd/", 14) &&
	    (uint64_t)(uintptr_t)&visit >= lo && (uint64_t)(uintptr_t)&visit < hi)
		path = "/memfd:libleakscope.so";
	i = find(path, info->dlpi_addr, lo);
	if (i < 0)
		i = add(info, path, lo, hi);
	if (i >= 0)
		seen[i] = 1;
	return 0;
}

unsigned ls_modules_count(void)
{
	return nmods;
}

unsigned ls_modules_refresh(void)
{
	unsigned i, n;
	pid_t holder = 0;

	ls_lock_ranked(&mod_lock, LS_RANK_MODULES);
	if (!exe_path[0]) {
		ssize_t r = readlink("/proc/self/exe", exe_path,
				     sizeof(exe_path) - 1);

		exe_path[r > 0 ? r : 0] = 0;
	}
	memset(seen, 0, nmods);
	changed = 0;
	/* Another thread in the loader: the table stays as it was, and
	 * the snapshot that asked says so. */
	if (ls_dl_iterate_held(visit, NULL, &holder) < 0) {
		__atomic_store_n(&refused_n, refused_n + 1, __ATOMIC_RELAXED);
		__atomic_store_n(&refused_by, holder, __ATOMIC_RELEASE);
		n = nmods;
		ls_unlock_ranked(&mod_lock, LS_RANK_MODULES);
		return n;
	}
	__atomic_store_n(&walked_ns, ls_now_ns(CLOCK_MONOTONIC),
			 __ATOMIC_RELAXED);
	__atomic_store_n(&refused_n, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&refused_by, 0, __ATOMIC_RELEASE);
	for (i = 0; i < nmods; i++)
		if (mods[i].m.gen_to == LSNAP_GEN_LOADED && !seen[i]) {
			mods[i].m.gen_to = gen + 1;
			changed = 1;
		}
	if (changed)
		__atomic_store_n(&gen, gen + 1, __ATOMIC_RELEASE);
	n = nmods;
	ls_unlock_ranked(&mod_lock, LS_RANK_MODULES);
	return n;
}

pid_t ls_modules_stale(uint64_t *walk_mono_ns, uint32_t *refused)
{
	pid_t by = __atomic_load_n(&refused_by, __ATOMIC_ACQUIRE);

	*walk_mono_ns = __atomic_load_n(&walked_ns, __ATOMIC_RELAXED);
	*refused = __atomic_load_n(&refused_n, __ATOMIC_RELAXED);
	return by;
}

const struct ls_module_rec *ls_modules_get(unsigned i)
{
	return i < nmods ? &mods[i] : NULL;
}

static int find_self(struct dl_phdr_info *info, size_t size, void *arg)
{
	uint64_t lo, hi, me = (uint64_t)(uintptr_t)arg;

	range_of(info, &lo, &hi);
	if (me >= lo && me < hi) {
		self_lo = lo;
		self_hi = hi;
		return 1;
	}
	return 0;
}

void ls_modules_self_range(uint64_t *lo, uint64_t *hi)
{
	if (!self_hi)
		ls_dl_iterate(find_self, (void *)(uintptr_t)&ls_modules_self_range);
	*lo = self_lo;
	*hi = self_hi;
}

void ls_modules_lock_all(void)
{
	ls_lock_ranked(&mod_lock, LS_RANK_MODULES);
}

void ls_modules_unlock_all(void)
{
	ls_unlock_ranked(&mod_lock, LS_RANK_MODULES);
}

void ls_modules_reset_child(void)
{
	ls_lock_reset(&mod_lock);
}
