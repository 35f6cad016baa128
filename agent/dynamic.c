/*
 * dynamic.c - a loaded object's dynamic section (dynamic.h).
 */
#include <elf.h>
#include <string.h>
#include "dynamic.h"

/* glibc relocates d_ptr in place; a value below the base was not. */
static uint64_t fix(uint64_t v, uint64_t base)
{
	return v < base ? v + base : v;
}

static void read_phdrs(const struct dl_phdr_info *info, struct ls_dyn *d,
		       const ElfW(Dyn) **dyn)
{
	uint64_t base = info->dlpi_addr;
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_DYNAMIC)
			*dyn = (const void *)(base + ph->p_vaddr);
		if (ph->p_type == PT_GNU_RELRO) {
			d->relro_lo = base + ph->p_vaddr;
			d->relro_hi = d->relro_lo + ph->p_memsz;
		}
	}
}

int ls_dyn_read(const struct dl_phdr_info *info, struct ls_dyn *d)
{
	const ElfW(Dyn) *dyn = NULL;
	uint64_t base = info->dlpi_addr;

	memset(d, 0, sizeof(*d));
	d->jmprel_rela = 1;
	read_phdrs(info, d, &dyn);
	for (; dyn && dyn->d_tag != DT_NULL; dyn++) {
		const void *p = (const void *)fix(dyn->d_un.d_ptr, base);

		switch (dyn->d_tag) {
		case DT_SYMTAB: d->symtab = p; break;
		case DT_STRTAB: d->strtab = p; break;
		case DT_GNU_HASH: d->gnu_hash = p; break;
		case DT_HASH: d->sysv_hash = p; break;
		case DT_VERSYM: d->versym = p; break;
		case DT_JMPREL: d->tab[0] = (uint64_t)(uintptr_t)p; break;
		case DT_PLTRELSZ: d->sz[0] = dyn->d_un.d_val; break;
		case DT_PLTREL: d->jmprel_rela = dyn->d_un.d_val == DT_RELA; break;
		case DT_RELA: d->tab[1] = (uint64_t)(uintptr_t)p; break;
		case DT_RELASZ: d->sz[1] = dyn->d_un.d_val; break;
		case DT_REL: d->tab[2] = (uint64_t)(uintptr_t)p; break;
		case DT_RELSZ: d->sz[2] = dyn->d_un.d_val; break;
		}
	}
	return d->symtab && d->strtab ? 0 : -1;
}

/* Symbol i, when it defines name at its default version (not hidden). */
static const ElfW(Sym) *defines(const struct ls_dyn *d, uint32_t i,
				const char *name)
{
	const ElfW(Sym) *s = &d->symtab[i];
	int type = ELF64_ST_TYPE(s->st_info);

	if (s->st_shndx == SHN_UNDEF || s->st_value == 0 ||
	    (type != STT_FUNC && type != STT_GNU_IFUNC) ||
	    (d->versym && (d->versym[i] & 0x8000)) ||
	    strcmp(d->strtab + s->st_name, name))
		return NULL;
	return s;
}

static uint32_t gnu_hash(const char *s)
{
	uint32_t h = 5381;

	for (; *s; s++)
		h = h * 33 + (unsigned char)*s;
	return h;
}

static uint32_t sysv_hash(const char *s)
{
	uint32_t h = 0, g;

	for (; *s; s++) {
		h = (h << 4) + (unsigned char)*s;
		g = h & 0xf0000000u;
		h ^= g >> 24;
		h &= ~g;
	}
	return h;
}

/* DT_GNU_HASH: buckets and chains after a Bloom filter the lookup can do
 * without; a chain ends at a hash with its low bit set. */
static const ElfW(Sym) *gnu_lookup(const struct ls_dyn *d, const char *name)
{
	const uint32_t *g = d->gnu_hash, *buckets, *chain;
	uint32_t nbuckets = g[0], symoffset = g[1], h = gnu_hash(name), i, c;
	const ElfW(Sym) *s;

	if (!nbuckets)
		return NULL;
	buckets = (const uint32_t *)((const ElfW(Addr) *)(g + 4) + g[2]);
	chain = buckets + nbuckets;
	i = buckets[h % nbuckets];
	if (i < symoffset)
		return NULL;
	do {
		c = chain[i - symoffset];
		if ((c | 1) == (h | 1) && (s = defines(d, i, name)))
			return s;
		i++;
	} while (!(c & 1));
	return NULL;
}

static const ElfW(Sym) *sysv_lookup(const struct ls_dyn *d, const char *name)
{
	const uint32_t *t = d->sysv_hash, *chain = t + 2 + t[0];
	uint32_t i;
	const ElfW(Sym) *s;

	if (!t[0])
		return NULL;
	for (i = t[2 + sysv_hash(name) % t[0]]; i; i = chain[i])
		if ((s = defines(d, i, name)))
			return s;
	return NULL;
}

const ElfW(Sym) *ls_dyn_lookup(const struct ls_dyn *d, const char *name)
{
	if (d->gnu_hash)
		return gnu_lookup(d, name);
	return d->sysv_hash ? sysv_lookup(d, name) : NULL;
}

int ls_dyn_refers(const struct ls_dyn *d, int (*want)(const char *name, void *arg),
		  void *arg)
{
	int t;

	for (t = 0; t < 3; t++) {
		size_t ent = (t == 1 || (t == 0 && d->jmprel_rela)) ?
			     sizeof(ElfW(Rela)) : sizeof(ElfW(Rel));
		uint64_t off;

		for (off = 0; d->tab[t] && off + ent <= d->sz[t]; off += ent) {
			const ElfW(Rel) *r = (const void *)(d->tab[t] + off);
			uint32_t sym = ELF64_R_SYM(r->r_info);

			if (sym && want(d->strtab + d->symtab[sym].st_name, arg))
				return 1;
		}
	}
	return 0;
}
