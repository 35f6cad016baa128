/*
 * attach.c - the agent loaded into a process that is already running
 * (`leakscope attach`, common/attach.h, docs/ATTACH.md).
 *
 * Loaded with dlopen (RTLD_LOCAL), the agent's exported hooks interpose
 * nothing: the program's calls still go through each object's GOT to the
 * allocator it was bound to.  So the agent redirects them: every GOT
 * slot (JMPREL, RELA and REL tables: JUMP_SLOT and GLOB_DAT) that names
 * an interposed function is made to point at the agent's hook, in every
 * loaded object except the agent itself, ld.so and the vDSO.  The first
 * switch is written by the injector while the program's threads are
 * stopped (leakscope_attach only lists the slots); objects loaded later
 * are patched here, by the dlopen hook and by the control thread's
 * periodic rescan.  Detaching writes the original values back.
 *
 * None of this runs in an allocation hook except attach_dlopen, which
 * runs after the real dlopen returned, with the guard held.
 */
#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <link.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>
#include "../common/attach.h"
#include "../common/contract.h"
#include "arena.h"
#include "attach.h"
#include "dynamic.h"
#include "guard.h"
#include "real.h"
#include "state.h"
#include "sys.h"

#define MAX_SLOTS 16384

static void *attach_dlopen(const char *file, int mode);

/* The functions redirected; hook filled at attach from the agent's own
 * definitions (dlopen's is local: it is never interposed by preload). */
static struct {
	const char *name;
	void *hook;
	void *real;
} fns[] = {
#define LS_INTERPOSE(sym, NAME, field, ret, params, attr, kind, real, got, export) \
	LS_IP_GOT_##got({ #sym, NULL, NULL },)
#include "../common/interpose.def"
};
#define NFNS (sizeof(fns) / sizeof(fns[0]))

static struct ls_attach_result result __attribute__((aligned(8)));
static struct ls_attach_slot *slots;	/* every slot ever patched */
static uint32_t nslots;
static ls_lock_t slot_lock = LS_LOCK_INIT;
static uint64_t self_base, vdso_base, ldso_base;
static void *(*real_dlopen)(const char *, int);
static void (*modules_changed)(void);	/* agent.c's, after a dlopen */

/*
 * Drop the reference dlopen(RTLD_NOLOAD) took on the agent itself, with
 * the real dlclose: never the agent's own hook, which a call by name
 * would reach when the agent is preloaded.
 */
static void close_self(void *h)
{
	ls_real_init();
	if (ls_real.dlclose)
		ls_real.dlclose(h);
}

int ls_attach_preloaded(void)
{
	static int answer = -1;
	const char *pre = ls_state_getenv(LS_ENV_PRELOAD);
	Dl_info self;
	void *h;

	if (answer >= 0)
		return answer;
	/* Conservative: any sign of preloading keeps the preload path. */
	answer = 1;
	if (ls_state_getenv(LS_ENV_RUN) || (pre && strstr(pre, "libleakscope")))
		return answer;
	if (!dladdr((void *)ls_attach_preloaded, &self))
		return answer;
	h = dlopen(self.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
	if (h) {
		/* Interposing, our malloc is the one everybody gets. */
		answer = dlsym(RTLD_DEFAULT, "malloc") == dlsym(h, "malloc");
		close_self(h);
	}
	return answer;
}

/* --- relocation tables --------------------------------------------------- */

/* Can name be one of fns?  Most relocations are turned away by their
 * first three letters, without a string comparison: C++'s names all
 * start with "_Z", operator new's and delete's with "_Zn" and "_Zd".
 * Every name in fns has three letters at least, so a letter compared
 * equal is never the name's end. */
static int maybe_fn(const char *name)
{
	return 0
#define LS_INTERPOSE(sym, NAME, field, ret, params, attr, kind, real, got, export) \
	LS_IP_GOT_##got(|| (name[0] == #sym[0] && name[1] == #sym[1] && \
			    name[2] == #sym[2]))
#include "../common/interpose.def"
		;
}

/* Index in fns of the function a relocation names, or -1. */
static int fn_of(const struct ls_dyn *d, uint64_t info)
{
	uint32_t type = ELF64_R_TYPE(info), sym = ELF64_R_SYM(info);
	const char *name;
	size_t i;

	if (!sym || (type != R_X86_64_JUMP_SLOT && type != R_X86_64_GLOB_DAT))
		return -1;
	name = d->strtab + d->symtab[sym].st_name;
	if (!maybe_fn(name))
		return -1;
	for (i = 0; i < NFNS; i++)
		if (!strcmp(name, fns[i].name))
			return (int)i;
	return -1;
}

typedef void (*slot_fn)(uint64_t addr, int fn, const struct ls_dyn *d);

static void walk_table(const struct ls_dyn *d, int t, uint64_t base, slot_fn cb)
{
	size_t ent = (t == 1 || (t == 0 && d->jmprel_rela)) ?
		     sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
	uint64_t off;

	if (!d->tab[t])
		return;
	for (off = 0; off + ent <= d->sz[t]; off += ent) {
		const ElfW(Rel) *r = (const void *)(d->tab[t] + off);
		int fn = fn_of(d, r->r_info);

		if (fn >= 0)
			cb(base + r->r_offset, fn, d);
	}
}

static int skipped(const struct dl_phdr_info *info)
{
	uint64_t a = info->dlpi_addr;

	return (a == self_base && a) || (a == vdso_base && a) ||
	       (a == ldso_base && a) ||
	       (info->dlpi_name && strstr(info->dlpi_name, "linux-vdso"));
}

static int walk_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct ls_dyn d;
	int t;

	(void)size;
	if (skipped(info) || ls_dyn_read(info, &d))
		return 0;
	/* Taken here, under the loader's lock: always in that order. */
	ls_lock(&slot_lock);
	for (t = 0; t < 3; t++)
		walk_table(&d, t, info->dlpi_addr, (slot_fn)arg);
	ls_unlock(&slot_lock);
	return 0;
}

/* --- the slot table -------------------------------------------------------- */

static struct ls_attach_slot *find_slot(uint64_t addr)
{
	uint32_t i;

	for (i = 0; i < nslots; i++)
		if (slots[i].addr == addr)
			return &slots[i];
	return NULL;
}

/* Remember what addr held before it was pointed at fn's hook. */
static struct ls_attach_slot *note_slot(uint64_t addr, int fn)
{
	uint64_t cur = *(volatile uint64_t *)addr;
	struct ls_attach_slot *s = find_slot(addr);

	if (cur == (uint64_t)(uintptr_t)fns[fn].hook)
		return s;	/* already ours */
	if (!s && nslots < MAX_SLOTS)
		s = &slots[nslots++];
	if (s) {
		s->addr = addr;
		s->orig = cur;
		s->hook = (uint64_t)(uintptr_t)fns[fn].hook;
	}
	return s;
}

static void list_slot(uint64_t addr, int fn, const struct ls_dyn *d)
{
	(void)d;
	note_slot(addr, fn);
}

/*
 * Store into a GOT slot, lifting RELRO's protection for the moment.  A
 * slot outside RELRO is writable already; mprotect makes sure of it (a
 * store into a read-only page would crash the program), and one that
 * fails (the page is gone) means no store.
 */
static void store_slot(uint64_t addr, uint64_t v, const struct ls_dyn *d)
{
	uint64_t pg = (uint64_t)sysconf(_SC_PAGESIZE), p = addr & ~(pg - 1);
	void *page = (void *)(uintptr_t)p;
	/* ld.so made read-only only the whole pages of the range (its end
	 * rounded down): the last, partial one stays writable. */
	int relro = p >= (d->relro_lo & ~(pg - 1)) && p < (d->relro_hi & ~(pg - 1));

	if (ls_real.mprotect(page, (size_t)pg, PROT_READ | PROT_WRITE))
		return;
	__atomic_store_n((uint64_t *)(uintptr_t)addr, v, __ATOMIC_RELEASE);
	if (relro)
		ls_real.mprotect(page, (size_t)pg, PROT_READ);
}

static void patch_slot(uint64_t addr, int fn, const struct ls_dyn *d)
{
	struct ls_attach_slot *s = note_slot(addr, fn);

	if (s && *(volatile uint64_t *)addr != s->hook)
		store_slot(addr, s->hook, d);
}

static void restore_slot(uint64_t addr, int fn, const struct ls_dyn *d)
{
	struct ls_attach_slot *s;
	uint64_t orig;

	if (*(volatile uint64_t *)addr != (uint64_t)(uintptr_t)fns[fn].hook)
		return;
	s = find_slot(addr);
	orig = s ? s->orig : (uint64_t)(uintptr_t)fns[fn].real;
	store_slot(addr, orig, d);
}

/* --- hooks only attach needs ----------------------------------------------- */

/*
 * dlopen through the agent: glibc takes the caller's object from the
 * return address, so a bare name is searched with the agent's (empty)
 * RUNPATH instead of the calling library's (docs/ATTACH.md).
 */
static void *attach_dlopen(const char *file, int mode)
{
	void *h = real_dlopen(file, mode);

	if (h && ls_agent_on() && !ls_guard_held()) {
		int e = errno;

		ls_guard_enter();
		ls_attach_rescan();
		modules_changed();
		ls_guard_leave();
		errno = e;
	}
	return h;
}

static int resolve_fns(void)
{
	Dl_info self;
	void *h;
	size_t i;

	if (!dladdr((void *)resolve_fns, &self))
		return -ENOENT;
	self_base = (uint64_t)(uintptr_t)self.dli_fbase;
	vdso_base = getauxval(AT_SYSINFO_EHDR);
	ldso_base = getauxval(AT_BASE);
	h = dlopen(self.dli_fname, RTLD_NOLOAD | RTLD_LAZY);
	if (!h)
		return -ENOENT;
	for (i = 0; i < NFNS; i++) {
		fns[i].hook = strcmp(fns[i].name, "dlopen") ?
			      dlsym(h, fns[i].name) : (void *)attach_dlopen;
		/* Not dlsym(RTLD_DEFAULT): a PLT stub of the program's
		 * would lead back to the hook (real.h). */
		fns[i].real = ls_real_lookup(fns[i].name);
	}
	close_self(h);
	real_dlopen = ls_real_lookup("dlopen");
	return real_dlopen ? 0 : -ENOENT;
}

/* --- entry, rescan, detach ------------------------------------------------- */

void ls_attach_parse(const char *s,
		     void (*set)(const char *key, size_t klen, const char *value))
{
	while (s && *s) {
		const char *nl = strchr(s, '\n'), *eq = strchr(s, '=');
		size_t len = nl ? (size_t)(nl - s) : strlen(s);

		if (eq && eq < s + len) {
			size_t kl = (size_t)(eq - s), vl = len - kl - 1;
			char v[PATH_MAX];

			if (vl < sizeof(v)) {
				memcpy(v, eq + 1, vl);
				v[vl] = 0;
				set(s, kl, v);
			}
		}
		s = nl ? nl + 1 : NULL;
	}
}

struct ls_attach_result *ls_attach_result(void)
{
	return &result;
}

int ls_attach_prepare(void (*changed)(void))
{
	modules_changed = changed;
	if (!slots && !(slots = ls_arena_alloc(MAX_SLOTS * sizeof(*slots))))
		return -ENOMEM;
	return resolve_fns();
}

void ls_attach_list(void)
{
	dl_iterate_phdr(walk_cb, (void *)list_slot);
	result.slots = (uint64_t)(uintptr_t)slots;
	result.nslots = nslots;
}

/* The injector's switched flag.  result is packed and aligned to 8, so
 * the flag is an aligned uint32_t (LS_PACKED_WORD). */
static int switched(void)
{
	return __atomic_load_n(LS_PACKED_WORD(uint32_t, &result, switched),
			       __ATOMIC_ACQUIRE) != 0;
}

void ls_attach_rescan(void)
{
	/* Before the injector's switch, writing here would race with it. */
	if (!slots || !ls_agent_on() || !switched())
		return;
	dl_iterate_phdr(walk_cb, (void *)patch_slot);
}

void ls_attach_restore(void)
{
	if (!slots)
		return;
	dl_iterate_phdr(walk_cb, (void *)restore_slot);
}

void ls_attach_reset_child(void)
{
	ls_lock_reset(&slot_lock);
}
