/*
 * kallsyms.h - kernel addresses to function names, from /proc/kallsyms.
 *
 * Addresses are only readable as root (kptr_restrict); others see zeros
 * and get no names.  Not thread-safe.  Never prints.
 */
#ifndef LEAKSCOPE_KALLSYMS_H
#define LEAKSCOPE_KALLSYMS_H

#include <stdint.h>

struct ls_kallsyms;

/* Read path (NULL: /proc/kallsyms).  NULL with errno set on failure. */
struct ls_kallsyms *ls_kallsyms_load(const char *path);
void ls_kallsyms_free(struct ls_kallsyms *k);

/* The text symbol holding addr: its name (owned by k), *off = addr minus
 * its start, *mod its module ("" for the kernel proper).  NULL if none. */
const char *ls_kallsyms_find(const struct ls_kallsyms *k, uint64_t addr,
			     uint64_t *off, const char **mod);

#endif
