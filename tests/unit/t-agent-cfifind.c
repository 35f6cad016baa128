/*
 * t-agent-cfifind.c - the module lookup behind ls_cfi_rule (common/cfi.c)
 * where glibc has no _dl_find_object (before 2.35): dl_iterate_phdr's
 * answer gives the same rule as _dl_find_object's, the oracle, at every
 * address of the program, libc and the loader, and nothing where
 * nothing is mapped.
 */
#include <dlfcn.h>
#include <link.h>
#include <stdlib.h>
#include <string.h>
#include "../../common/cfi.h"
#include "tap.h"

struct span {
	uint64_t lo, hi;
};

static struct span spans[64];
static unsigned nspans;

/* Executable segments of every loaded object. */
static int collect(struct dl_phdr_info *info, size_t size, void *arg)
{
	(void)size;
	(void)arg;
	for (unsigned i = 0; i < info->dlpi_phnum && nspans < 64; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];

		if (ph->p_type == PT_LOAD && (ph->p_flags & PF_X))
			spans[nspans++] = (struct span){
				info->dlpi_addr + ph->p_vaddr,
				info->dlpi_addr + ph->p_vaddr + ph->p_memsz };
	}
	return 0;
}

int main(void)
{
	void *real = dlsym(RTLD_DEFAULT, "_dl_find_object");
	unsigned long checked = 0, differ = 0, uncached = 0;
	int c1, c2;

	ok(real != NULL, "this glibc has _dl_find_object (the oracle)");
	if (!real)
		return tap_done();
	dl_iterate_phdr(collect, NULL);
	ok(nspans >= 3, "executable segments of %u objects (program, libc, "
	   "loader at least)", nspans);
	for (unsigned s = 0; s < nspans; s++) {
		uint64_t step = (spans[s].hi - spans[s].lo) / 4000 + 1;

		for (uint64_t pc = spans[s].lo + 1; pc < spans[s].hi; pc += step) {
			uint64_t a, b;

			ls_cfi_set_finder(real);
			a = ls_cfi_rule(pc, 0, &c1);
			ls_cfi_set_finder(NULL);
			b = ls_cfi_rule(pc, 0, &c2);
			differ += a != b || c1 != c2;
			uncached += !c2;
			checked++;
		}
	}
	ok(!differ && checked > 10000, "%lu addresses: the fallback's rule "
	   "equals _dl_find_object's at every one (%lu differ)", checked,
	   differ);
	ok(!uncached, "every address found in its module (%lu not)", uncached);
	ls_cfi_set_finder(NULL);
	ls_cfi_rule(16, 1, &c2);
	ok(!c2, "an unmapped address: no module, not cacheable");
	return tap_done();
}
