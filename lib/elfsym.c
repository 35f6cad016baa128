/*
 * elfsym.c - dynamic symbols and program headers of an ELF file.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "elfsym.h"

static int read_at(int fd, void *buf, size_t len, uint64_t off)
{
	ssize_t n = pread(fd, buf, len, (off_t)off);

	return n == (ssize_t)len ? 0 : -EIO;
}

static int read_ehdr(int fd, Elf64_Ehdr *eh)
{
	if (read_at(fd, eh, sizeof(*eh), 0))
		return -ENOEXEC;
	if (memcmp(eh->e_ident, ELFMAG, SELFMAG))
		return -ENOEXEC;
	return 0;
}

int ls_elf_kind(const char *path, struct ls_elf_kind *k)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r, i;
	Elf64_Ehdr eh;

	memset(k, 0, sizeof(*k));
	if (fd < 0)
		return -errno;
	r = read_ehdr(fd, &eh);
	if (r)
		goto out;
	k->is_elf = 1;
	k->is_64 = eh.e_ident[EI_CLASS] == ELFCLASS64;
	if (!k->is_64)
		goto out;
	k->is_x86_64 = eh.e_machine == EM_X86_64;
	k->first_load = UINT64_MAX;
	for (i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (read_at(fd, &ph, sizeof(ph), eh.e_phoff + (uint64_t)i * eh.e_phentsize))
			break;
		if (ph.p_type == PT_INTERP)
			k->has_interp = 1;
		if (ph.p_type == PT_LOAD && k->first_load == UINT64_MAX)
			k->first_load = ph.p_vaddr & ~(uint64_t)0xfff;
	}
	if (k->first_load == UINT64_MAX)
		k->first_load = 0;
out:
	close(fd);
	return r;
}

/* The section header of index i. */
static int shdr(int fd, const Elf64_Ehdr *eh, unsigned i, Elf64_Shdr *sh)
{
	if (i >= eh->e_shnum)
		return -EINVAL;
	return read_at(fd, sh, sizeof(*sh), eh->e_shoff + (uint64_t)i * eh->e_shentsize);
}

static int find_in(int fd, const Elf64_Shdr *sym, const Elf64_Shdr *str,
		   const char *name, uint64_t *value, uint64_t *size)
{
	size_t nl = strlen(name) + 1, n = sym->sh_size / sizeof(Elf64_Sym), i;
	char *strs = malloc(str->sh_size + 1);
	Elf64_Sym *syms = malloc(sym->sh_size ? sym->sh_size : 1);
	int r = -ENOENT;

	if (!strs || !syms || read_at(fd, strs, str->sh_size, str->sh_offset) ||
	    read_at(fd, syms, n * sizeof(Elf64_Sym), sym->sh_offset)) {
		r = -EIO;
		goto out;
	}
	strs[str->sh_size] = 0;
	for (i = 1; i < n; i++) {
		if (syms[i].st_name + nl > str->sh_size + 1 ||
		    memcmp(strs + syms[i].st_name, name, nl) ||
		    syms[i].st_shndx == SHN_UNDEF || !syms[i].st_value)
			continue;
		*value = syms[i].st_value;
		if (size)
			*size = syms[i].st_size;
		r = 0;
		break;
	}
out:
	free(strs);
	free(syms);
	return r;
}

int ls_elf_dynsym(const char *path, const char *name, uint64_t *value)
{
	return ls_elf_dynsym_sized(path, name, value, NULL);
}

int ls_elf_dynsym_sized(const char *path, const char *name, uint64_t *value,
			uint64_t *size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;
	Elf64_Ehdr eh;
	Elf64_Shdr sym, str;
	unsigned i;

	if (fd < 0)
		return -errno;
	r = read_ehdr(fd, &eh);
	if (r)
		goto out;
	r = -ENOENT;
	for (i = 0; i < eh.e_shnum; i++) {
		if (shdr(fd, &eh, i, &sym) || sym.sh_type != SHT_DYNSYM)
			continue;
		if (shdr(fd, &eh, sym.sh_link, &str))
			break;
		r = find_in(fd, &sym, &str, name, value, size);
		break;
	}
out:
	close(fd);
	return r;
}
