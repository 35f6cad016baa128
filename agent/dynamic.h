/*
 * dynamic.h - reading a loaded object's dynamic section in place: its
 * relocation tables (attach.c's GOT slots) and its own dynamic symbol
 * table (real.c's definitions behind a program's PLT stubs).
 *
 * Reads only memory ld.so mapped and relocated; no allocation, no lock,
 * no dlsym.  Call from a dl_iterate_phdr callback (the object stays
 * loaded meanwhile), never from a hook.
 */
#ifndef LEAKSCOPE_AGENT_DYNAMIC_H
#define LEAKSCOPE_AGENT_DYNAMIC_H

#include <link.h>
#include <stdint.h>

struct ls_dyn {
	const ElfW(Sym) *symtab;
	const char *strtab;
	const uint32_t *gnu_hash, *sysv_hash;	/* DT_GNU_HASH, DT_HASH */
	const ElfW(Half) *versym;		/* NULL: unversioned */
	uint64_t tab[3], sz[3];	/* JMPREL, RELA, REL */
	int jmprel_rela;
	uint64_t relro_lo, relro_hi;
};

/* 0 with d filled; -1 when the object has no symbol or string table. */
int ls_dyn_read(const struct dl_phdr_info *info, struct ls_dyn *d);

/*
 * The symbol defining the function name (STT_FUNC or STT_GNU_IFUNC) in
 * the object itself, at its default version; NULL when it only refers
 * to it, or not at all.
 */
const ElfW(Sym) *ls_dyn_lookup(const struct ls_dyn *d, const char *name);

/* Does a relocation of the object (its PLT's, its data's) name a symbol
 * want() accepts?  1 at the first, else 0. */
int ls_dyn_refers(const struct ls_dyn *d, int (*want)(const char *name, void *arg),
		  void *arg);

#endif
