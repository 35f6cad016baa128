/*
 * t-agent-dynamic.c - an object's own dynamic symbol table read in place
 * (agent/dynamic.h): definitions found at their default version, mere
 * references and data not taken for functions.
 */
#include <dlfcn.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include "../../agent/dynamic.h"
#include "tap.h"

struct found {
	const char *object;	/* "" for the program */
	const char *name;
	int seen;
	void *addr;		/* NULL: not defined there */
};

static int find_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct found *f = arg;
	const ElfW(Sym) *s;
	struct ls_dyn d;

	(void)size;
	if (f->object[0] ? !strstr(info->dlpi_name, f->object) :
			   info->dlpi_name[0] != 0)
		return 0;
	f->seen = !ls_dyn_read(info, &d);
	s = f->seen ? ls_dyn_lookup(&d, f->name) : NULL;
	f->addr = s ? (void *)(info->dlpi_addr + s->st_value) : NULL;
	return 1;
}

static void *in(const char *object, const char *name)
{
	struct found f = { .object = object, .name = name };

	dl_iterate_phdr(find_cb, &f);
	return f.addr;
}

static void *dflt(const char *name)
{
	return dlsym(RTLD_DEFAULT, name);
}

int main(void)
{
	const char *libc = "libc.so.6";
	void *old = dlvsym(RTLD_DEFAULT, "realpath", "GLIBC_2.2.5");

	ok(in(libc, "malloc") && in(libc, "malloc") == dflt("malloc"),
	   "libc's malloc found where dlsym finds it");
	ok(in(libc, "free") == dflt("free") && in(libc, "calloc") == dflt("calloc") &&
	   in(libc, "realloc") == dflt("realloc") && in(libc, "mmap") == dflt("mmap"),
	   "free, calloc, realloc and mmap too");
	ok(in(libc, "realpath") == dflt("realpath") && old &&
	   in(libc, "realpath") != old, "realpath at its default version, not GLIBC_2.2.5");
	ok(in(libc, "sched_getaffinity") == dflt("sched_getaffinity"),
	   "sched_getaffinity, whose old version comes first in the table");
	ok(!in(libc, "stdout"), "data (stdout) is no function");
	ok(!in(libc, "ls_no_such_function"), "a name libc lacks: none");
	ok(!in("", "malloc"), "the program only refers to malloc: no definition there");
	return tap_done();
}
