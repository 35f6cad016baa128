/*
 * t-agent-dynamic.c - an object's own dynamic symbol table read in place
 * (agent/dynamic.h): definitions found at their default version, mere
 * references and data not taken for functions; an object's relocations
 * by symbol name.
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

struct refers {
	const char *name;
	int refers;
};

static int is_name(const char *name, void *arg)
{
	return !strcmp(name, arg);
}

/* The program's relocations. */
static int refers_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct refers *r = arg;
	struct ls_dyn d;

	(void)size;
	if (info->dlpi_name[0] || ls_dyn_read(info, &d))
		return 0;
	r->refers = ls_dyn_refers(&d, is_name, (void *)r->name);
	return 1;
}

static struct refers program(const char *name)
{
	struct refers r = { .name = name };

	dl_iterate_phdr(refers_cb, &r);
	return r;
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
	ok(program("dlvsym").refers,
	   "the program's relocations name dlvsym, which it calls");
	ok(!program("mallocx").refers, "nor mallocx, which it never calls");
	return tap_done();
}
