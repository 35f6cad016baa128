/*
 * real.h - the functions the agent interposes, as the next object in the
 * lookup order (normally glibc) provides them.
 *
 * Resolved with dlsym(RTLD_NEXT) so that a program linked with another
 * allocator (jemalloc, tcmalloc) keeps it.  dlsym itself may allocate;
 * while resolution runs, allocations are served from a small static pool
 * that is never freed (ls_boot_*).
 */
#ifndef LEAKSCOPE_AGENT_REAL_H
#define LEAKSCOPE_AGENT_REAL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <ucontext.h>
#include "../common/interpose.h"

/* Every function of common/interpose.def whose real column is not NONE,
 * as its field. */
struct ls_real {
#define LS_INTERPOSE(sym, NAME, field, ret, params, attr, kind, real, got, export) \
	LS_IP_REAL_##real(ret (*field) params LS_IP_ATTR_##attr;)
#include "../common/interpose.def"
};

extern struct ls_real ls_real;

/* Resolve everything; idempotent, safe to call from a hook (reentrant
 * calls during resolution are served by the boot pool). */
void ls_real_init(void);
/*
 * Attached to a running process (attach.h), the agent is not in the
 * global scope, and RTLD_NEXT would name the libc it depends on even in
 * a program linked with another allocator: resolve again, as the
 * program's own references were bound (RTLD_DEFAULT).  Called before the
 * GOT switch; each pointer is replaced only by a checked one, never
 * cleared, so a hook still running from an earlier attach is safe.
 */
void ls_real_rebind_default(void);
/*
 * The function name as the program's own references bind to it
 * (RTLD_DEFAULT), but always a definition: where the global lookup
 * answers with a non-PIE program's canonical PLT stub (the program takes
 * the function's address: python3 does for malloc and free), a stub that
 * jumps through the GOT slot attach redirects to the hook, the
 * definition behind it.  NULL when there is none.  Not for hooks: dlsym
 * and dladdr take ld.so's lock.  ls_real_rebind_default() resolves so.
 */
void *ls_real_lookup(const char *name);
/*
 * Resolve name into *field now, for a function that had no definition
 * when ls_real_init() ran (libstdc++ loaded later by dlopen, maybe
 * RTLD_LOCAL): the lookup's answer, else the first definition in the
 * loaded objects' own tables.  NULL when none.  May run in a hook (a C++
 * hook's first call): the loader's lock, no agent lock held.
 */
void *ls_real_late(void **field, const char *name);
/*
 * Is fn in a C++ runtime's object (libstdc++, libc++, libc++abi)?  Their
 * operator new and delete call malloc and free, which are hooked.  Takes
 * the loader's lock (dl_iterate_phdr); may run in a hook.
 */
int ls_real_cxx_runtime(const void *fn);
/* Nonzero while ls_real_init() is resolving. */
int ls_real_resolving(void);

/*
 * The object behind ls_real.malloc, when it is not libc (jemalloc,
 * tcmalloc, a program's own allocator): the span of its PT_LOAD segments,
 * found once by ls_real_find_allocator() after ls_real_init() (and again
 * after ls_real_rebind_default()).  Both 0 when malloc is libc's: its
 * internal mmaps never reach the hooks.  Read without a lock from the
 * mmap hooks: set before the agent is on.
 */
extern uintptr_t ls_real_alloc_lo, ls_real_alloc_hi;

void ls_real_find_allocator(void);

/* Did the return address pc come from the allocator's own code? */
static inline int ls_real_by_allocator(uintptr_t pc)
{
	return pc - ls_real_alloc_lo < ls_real_alloc_hi - ls_real_alloc_lo;
}

#define LS_BOOT_POOL (64 << 10)
extern char ls_boot_pool[LS_BOOT_POOL];

void *ls_boot_alloc(size_t size, size_t align);

/* Was p served by the boot pool?  Inline: free() asks it every time. */
static inline int ls_boot_owns(const void *p)
{
	return (size_t)((const char *)p - ls_boot_pool) < LS_BOOT_POOL;
}

size_t ls_boot_size(const void *p);

#endif
