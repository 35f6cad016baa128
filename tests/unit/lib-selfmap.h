/*
 * lib-selfmap.h - for the report library's unit tests: the module map of the running
 * test process, as the agent would record it (dl_iterate_phdr, PT_LOAD
 * range, GNU build id from PT_NOTE), so that real addresses of the test
 * can be symbolized against known ground truth.
 */
#ifndef LEAKSCOPE_TESTS_LIB_SELFMAP_H
#define LEAKSCOPE_TESTS_LIB_SELFMAP_H

#include <elf.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../../lib/snapshot.h"

struct selfmap {
	struct ls_module *m;
	size_t n, cap;
	char exe[4096];
};

static void selfmap_build_id(const struct dl_phdr_info *info,
			     struct ls_module *m)
{
	int i;

	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		const char *p = (const char *)(info->dlpi_addr + ph->p_vaddr);
		const char *end = p + ph->p_memsz;

		while (ph->p_type == PT_NOTE && p + sizeof(ElfW(Nhdr)) <= end) {
			const ElfW(Nhdr) *nh = (const void *)p;
			const char *desc = p + sizeof(*nh) +
				((nh->n_namesz + 3) & ~3u);

			if (nh->n_type == NT_GNU_BUILD_ID &&
			    nh->n_descsz <= LSNAP_BUILD_ID_MAX) {
				memcpy(m->build_id, desc, nh->n_descsz);
				m->build_id_len = nh->n_descsz;
				return;
			}
			p = desc + ((nh->n_descsz + 3) & ~3u);
		}
	}
}

static int selfmap_add(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct selfmap *l = arg;
	struct ls_module *m;
	int i;

	if (l->n == l->cap) {
		l->cap = l->cap ? 2 * l->cap : 16;
		l->m = realloc(l->m, l->cap * sizeof(*l->m));
		if (!l->m)
			abort();
	}
	m = &l->m[l->n++];
	memset(m, 0, sizeof(*m));
	m->bias = info->dlpi_addr;
	m->lo = UINT64_MAX;
	for (i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t a = info->dlpi_addr + ph->p_vaddr;

		if (ph->p_type != PT_LOAD)
			continue;
		if (a < m->lo)
			m->lo = a;
		if (a + ph->p_memsz > m->hi)
			m->hi = a + ph->p_memsz;
	}
	m->gen_from = 1;
	m->gen_to = LSNAP_GEN_LOADED;
	m->path = strdup(info->dlpi_name && *info->dlpi_name ?
			 info->dlpi_name : l->exe);
	selfmap_build_id(info, m);
	return 0;
}

/* Fill l with this process's modules, all loaded at generation 1. */
static void selfmap_read(struct selfmap *l)
{
	ssize_t r = readlink("/proc/self/exe", l->exe, sizeof(l->exe) - 1);

	l->exe[r > 0 ? r : 0] = 0;
	dl_iterate_phdr(selfmap_add, l);
}

static const struct ls_module *selfmap_find(const struct selfmap *l,
					    uintptr_t addr)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		if (addr >= l->m[i].lo && addr < l->m[i].hi)
			return &l->m[i];
	return NULL;
}

static void selfmap_free(struct selfmap *l)
{
	size_t i;

	for (i = 0; i < l->n; i++)
		free(l->m[i].path);
	free(l->m);
	memset(l, 0, sizeof(*l));
}

#endif
