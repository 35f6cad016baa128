/*
 * kallsyms.c - /proc/kallsyms, sorted once, searched by address (see
 * kallsyms.h).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "kallsyms.h"

struct ksym {
	uint64_t addr;
	char *name, *mod;
};

struct ls_kallsyms {
	struct ksym *syms;
	size_t n, cap;
};

static int by_addr(const void *a, const void *b)
{
	const struct ksym *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

static int ks_add(struct ls_kallsyms *k, uint64_t addr, const char *name,
		  const char *mod)
{
	struct ksym *s;

	if (k->n == k->cap) {
		size_t cap = k->cap ? 2 * k->cap : 65536;

		s = realloc(k->syms, cap * sizeof(*s));
		if (!s)
			return -ENOMEM;
		k->syms = s;
		k->cap = cap;
	}
	s = &k->syms[k->n];
	s->addr = addr;
	s->name = strdup(name);
	s->mod = strdup(mod);
	if (!s->name || !s->mod) {
		free(s->name);
		free(s->mod);
		return -ENOMEM;
	}
	k->n++;
	return 0;
}

struct ls_kallsyms *ls_kallsyms_load(const char *path)
{
	struct ls_kallsyms *k = calloc(1, sizeof(*k));
	char line[512], name[256], mod[128];
	unsigned long long addr;
	FILE *f = fopen(path ? path : "/proc/kallsyms", "re");
	char type;
	int err = 0;

	if (!k || !f) {
		err = errno ? errno : ENOMEM;
		goto fail;
	}
	while (fgets(line, sizeof(line), f)) {
		mod[0] = 0;
		if (sscanf(line, "%llx %c %255s [%127[^]]]", &addr, &type, name,
			   mod) < 3 || !addr)
			continue;
		if (type != 't' && type != 'T' && type != 'w' && type != 'W')
			continue;
		if (ks_add(k, addr, name, mod)) {
			err = ENOMEM;
			goto fail;
		}
	}
	fclose(f);
	qsort(k->syms, k->n, sizeof(*k->syms), by_addr);
	return k;
fail:
	if (f)
		fclose(f);
	ls_kallsyms_free(k);
	errno = err;
	return NULL;
}

void ls_kallsyms_free(struct ls_kallsyms *k)
{
	size_t i;

	if (!k)
		return;
	for (i = 0; i < k->n; i++) {
		free(k->syms[i].name);
		free(k->syms[i].mod);
	}
	free(k->syms);
	free(k);
}

const char *ls_kallsyms_find(const struct ls_kallsyms *k, uint64_t addr,
			     uint64_t *off, const char **mod)
{
	size_t lo = 0, hi = k ? k->n : 0, mid;

	if (!hi || addr < k->syms[0].addr)
		return NULL;
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		if (k->syms[mid].addr <= addr)
			lo = mid;
		else
			hi = mid;
	}
	*off = addr - k->syms[lo].addr;
	*mod = k->syms[lo].mod;
	return k->syms[lo].name;
}
