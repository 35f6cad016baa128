/*
 * elfsym.h - the few facts about an ELF file that `leakscope attach`
 * needs before it touches the target: its class and machine, whether it
 * asks for a dynamic loader, and where a dynamic symbol lies.
 *
 * Reads the file with plain reads (no libelf: these are looked up before
 * anything else is set up, and the target's files are opened through
 * /proc/PID/root).  Not for use in the agent.
 */
#ifndef LEAKSCOPE_ELFSYM_H
#define LEAKSCOPE_ELFSYM_H

#include <stdint.h>

struct ls_elf_kind {
	int is_elf;
	int is_64;		/* ELFCLASS64 */
	int is_x86_64;		/* EM_X86_64 */
	int has_interp;		/* PT_INTERP: dynamically linked */
	uint64_t first_load;	/* p_vaddr of the first PT_LOAD, page aligned */
};

/* 0 or -errno (-ENOEXEC: not an ELF file). */
int ls_elf_kind(const char *path, struct ls_elf_kind *k);

/*
 * The st_value of the defined dynamic symbol `name` (the default version
 * when there are several) into *value.  0, -ENOENT (not defined), or
 * another negative errno.
 */
int ls_elf_dynsym(const char *path, const char *name, uint64_t *value);

/* The same, with its st_size into *size. */
int ls_elf_dynsym_sized(const char *path, const char *name, uint64_t *value,
			uint64_t *size);

#endif
