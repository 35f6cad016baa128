/*
 * real.c - finding the real allocator behind the agent.
 */
#include <dlfcn.h>
#include <link.h>
#include <errno.h>
#include <gnu/libc-version.h>
#include <stdint.h>
#include <string.h>
#include <sys/auxv.h>
#include "dynamic.h"
#include "real.h"
#include "sys.h"

struct ls_real ls_real;

static int resolving;
static ls_lock_t resolve_lock = LS_LOCK_INIT;

/* dlsym() needs a few hundred bytes at most; glibc's dlerror state is the
 * usual customer. */
char ls_boot_pool[LS_BOOT_POOL] __attribute__((aligned(64)));
static size_t boot_used;

struct boot_hdr {
	size_t size;
	size_t pad;
};

void *ls_boot_alloc(size_t size, size_t align)
{
	size_t used = __atomic_load_n(&boot_used, __ATOMIC_RELAXED);
	size_t start, end;
	struct boot_hdr *h;

	if (align < 16)
		align = 16;
	do {
		start = (used + sizeof(*h) + align - 1) & ~(align - 1);
		end = start + size;
		if (end > sizeof(ls_boot_pool) || end < start)
			return NULL;
	} while (!__atomic_compare_exchange_n(&boot_used, &used, end, 1,
					      __ATOMIC_RELAXED,
					      __ATOMIC_RELAXED));
	h = (struct boot_hdr *)(ls_boot_pool + start) - 1;
	h->size = size;
	return ls_boot_pool + start;
}

size_t ls_boot_size(const void *p)
{
	return ((const struct boot_hdr *)p - 1)->size;
}

int ls_real_resolving(void)
{
	return __atomic_load_n(&resolving, __ATOMIC_ACQUIRE);
}

/* RTLD_NEXT when preloaded; RTLD_DEFAULT once attached (real.h). */
static void *lookup = RTLD_NEXT;

/*
 * Does some object define a function starting at p?  A non-PIE program
 * that takes a function's address (python3 does &malloc, &free) has a
 * canonical PLT stub for it, and the global lookup answers with that
 * stub: an address with no symbol of its own, which only jumps through
 * the program's GOT slot, the very slot attach redirects to the hook.
 */
static int is_definition(void *p)
{
	const ElfW(Sym) *sym = NULL;
	Dl_info info;

	return dladdr1(p, &info, (void **)&sym, RTLD_DL_SYMENT) &&
	       info.dli_saddr == p && sym && sym->st_shndx != SHN_UNDEF;
}

/* --- a definition from the objects' own symbol tables ---------------------- */

struct def_find {
	const char *name;
	uintptr_t self, ldso, vdso;	/* objects never searched */
	int seen_program;
	void *found;
};

/*
 * dl_iterate_phdr's order is the link map's: the program, then what it
 * loaded at start in the global scope's order, then later dlopens.  The
 * first object after the program that defines the name itself is where
 * the program's PLT stub leads.  An IFUNC would need resolving: none of
 * the interposed functions is one, and finding one stops the search.
 */
static int def_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct def_find *f = arg;
	uintptr_t a = info->dlpi_addr;
	const ElfW(Sym) *s;
	struct ls_dyn d;

	(void)size;
	if (!f->seen_program) {
		f->seen_program = 1;
		return 0;
	}
	if (a == f->self || (a && (a == f->ldso || a == f->vdso)) ||
	    ls_dyn_read(info, &d) || !(s = ls_dyn_lookup(&d, f->name)))
		return 0;
	if (ELF64_ST_TYPE(s->st_info) == STT_FUNC)
		f->found = (void *)(a + s->st_value);
	return 1;
}

/* *arg, an address of the agent, becomes the agent's load address: no
 * dladdr, which a glibc before 2.34 keeps in libdl.so.2. */
static int self_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	uintptr_t *at = arg;

	(void)size;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && *at >= lo && *at - lo < ph->p_memsz) {
			*at = info->dlpi_addr;
			return 1;
		}
	}
	return 0;
}

/*
 * The definition that the program's PLT stub leads to, read from the
 * objects' own dynamic symbol tables: no dlsym (a dependency's link map
 * is no valid handle), nothing written to the loader's state.  The agent,
 * ld.so and the vDSO are skipped.
 * NEEDSWORK: an object dlopen'd RTLD_LOCAL before the allocator's object
 * would count as if global; allocators load at start in practice.
 */
static void *definition_after_program(const char *name)
{
	struct def_find f = {
		.name = name,
		.ldso = (uintptr_t)getauxval(AT_BASE),
		.vdso = (uintptr_t)getauxval(AT_SYSINFO_EHDR),
	};
	uintptr_t here = (uintptr_t)definition_after_program;

	if (!dl_iterate_phdr(self_cb, &here))
		return NULL;
	f.self = here;
	dl_iterate_phdr(def_cb, &f);
	return f.found;
}

static void *lookup_in(void *scope, const char *name)
{
	void *p;

	/* A glibc before 2.34 whose program did not load libdl.so.2: the
	 * objects' own tables still say where the program's calls lead,
	 * and the agent turns itself off (glibcver.h) but forwards. */
	if (!dlsym || !dladdr1)
		return definition_after_program(name);
	p = dlsym(scope, name);

	/* RTLD_NEXT from the preloaded agent never sees the program. */
	if (scope == RTLD_NEXT || !p || is_definition(p))
		return p;
	return definition_after_program(name);
}

void *ls_real_lookup(const char *name)
{
	return lookup_in(RTLD_DEFAULT, name);
}

void *ls_real_late(void **field, const char *name)
{
	void *p = lookup_in(lookup, name);

	/* A library loaded RTLD_LOCAL (a C++ plugin's libstdc++) is in no
	 * global lookup; the objects' own tables still have it. */
	if (!p)
		p = definition_after_program(name);
	if (p)
		__atomic_store_n(field, p, __ATOMIC_RELEASE);
	return p;
}

struct runtime_find {
	uintptr_t pc;
	int found;
};

/* The C++ runtimes by file name: libstdc++.so.6, libc++.so.1 and
 * libc++abi.so.1 (LLVM's, which may hold operator new). */
static int runtime_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	static const char *const names[] = {
		"libstdc++.so", "libc++.so", "libc++abi.so"
	};
	struct runtime_find *f = arg;
	const char *base;
	size_t i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t lo = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type == PT_LOAD && f->pc - lo < ph->p_memsz)
			break;
	}
	if (i == info->dlpi_phnum)
		return 0;
	base = info->dlpi_name ? strrchr(info->dlpi_name, '/') : NULL;
	base = base ? base + 1 : info->dlpi_name ? info->dlpi_name : "";
	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		f->found |= !strncmp(base, names[i], strlen(names[i]));
	return 1;
}

int ls_real_cxx_runtime(const void *fn)
{
	struct runtime_find f = { .pc = (uintptr_t)fn };

	dl_iterate_phdr(runtime_cb, &f);
	return f.found;
}

#define RESOLVE(field, name) \
	__atomic_store_n((void **)&ls_real.field, lookup_in(lookup, name), \
			 __ATOMIC_RELAXED)

/* Every function a hook calls without looking first (real REQUIRED in
 * common/interpose.def). */
static int complete(void)
{
	return 1
#define LS_INTERPOSE(sym, NAME, field, ret, params, attr, kind, real, got, export) \
	LS_IP_REQUIRED_##real(&& ls_real.field)
#include "../common/interpose.def"
		;
}

/* Under resolve_lock.  Every pointer is stored only once validated, so
 * that a hook already running (a re-attach) never calls a wrong one. */
static void resolve_locked(void)
{
	__atomic_store_n(&resolving, 1, __ATOMIC_RELEASE);
#define LS_INTERPOSE(sym, NAME, field, ret, params, attr, kind, real, got, export) \
	LS_IP_EARLY_##real(RESOLVE(field, #sym);)
#include "../common/interpose.def"
	/* free last: its being set is what says resolution is complete.
	 * Attached, a function left unfound (its stub's definition not
	 * found) must not reach a hook, which would call NULL: the attach
	 * fails instead.  Preloaded, RTLD_NEXT keeps its old answers. */
	if (lookup == RTLD_NEXT || complete()) {
#define LS_INTERPOSE(sym, NAME, field, ret, params, attr, kind, real, got, export) \
	LS_IP_LAST_##real(__atomic_store_n((void **)&ls_real.field, \
					   lookup_in(lookup, #sym), \
					   __ATOMIC_RELEASE);)
#include "../common/interpose.def"
	}
	__atomic_store_n(&resolving, 0, __ATOMIC_RELEASE);
}

void ls_real_init(void)
{
	int saved = errno;

	if (__atomic_load_n(&ls_real.free, __ATOMIC_ACQUIRE))
		return;
	ls_lock(&resolve_lock);
	if (!ls_real.free)
		resolve_locked();
	ls_unlock(&resolve_lock);
	errno = saved;
}

uintptr_t ls_real_alloc_lo, ls_real_alloc_hi;

struct alloc_find {
	uintptr_t malloc_pc, libc_pc;	/* what to look for */
	uintptr_t lo, hi;		/* the span of the object holding malloc */
	int malloc_in, libc_in;
};

static int find_object(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct alloc_find *f = arg;
	uintptr_t lo = UINTPTR_MAX, hi = 0;
	int has_malloc = 0, has_libc = 0;
	size_t i;

	(void)size;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uintptr_t a = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		lo = a < lo ? a : lo;
		hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
		has_malloc |= f->malloc_pc - a < ph->p_memsz;
		has_libc |= f->libc_pc - a < ph->p_memsz;
	}
	if (!has_malloc)
		return 0;
	f->lo = lo;
	f->hi = hi;
	f->malloc_in = 1;
	f->libc_in = has_libc;
	return 1;
}

/*
 * Where does malloc live?  A function only glibc defines tells libc
 * apart without matching a name: if malloc shares its object, the
 * allocator is libc's and there is nothing to tell apart.  Not mmap:
 * tcmalloc defines its own, to call its hooks.
 */
void ls_real_find_allocator(void)
{
	struct alloc_find f = {
		.malloc_pc = (uintptr_t)ls_real.malloc,
		.libc_pc = (uintptr_t)&gnu_get_libc_version,
	};

	ls_real_alloc_lo = ls_real_alloc_hi = 0;
	if (!f.malloc_pc || !f.libc_pc)
		return;
	dl_iterate_phdr(find_object, &f);
	if (!f.malloc_in || f.libc_in)
		return;
	ls_real_alloc_lo = f.lo;
	ls_real_alloc_hi = f.hi;
}

void ls_real_rebind_default(void)
{
	int saved = errno;

	ls_lock(&resolve_lock);
	lookup = RTLD_DEFAULT;
	resolve_locked();
	ls_unlock(&resolve_lock);
	errno = saved;
	ls_real_find_allocator();
}
