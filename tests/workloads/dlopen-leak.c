/*
 * dlopen-leak.c - leaks from a dlopen()ed library that is unloaded before
 * exit, then from a second library that reuses the address space.
 *
 * The libraries are found next to this program (libleaky.so, libother.so).
 * Expected outstanding sites of the libraries at exit:
 *
 *   site                bytes  blocks  module
 *   site_in_libleaky     4321     1    libleaky.so (dlclose()d: frames
 *                                      must still carry their names)
 *   site_in_libother     1234     1    libother.so (still loaded)
 *
 * Both stacks continue into this program: call_lib -> dl_stage -> main.
 * dlopen/dlclose themselves allocate through malloc; whatever the dynamic
 * loader keeps for libother.so is a libc/ld.so site, not the program's.
 * Exits 2 if libleaky.so is still loaded after dlclose().
 */
#include <dlfcn.h>
#include <limits.h>
#include <string.h>
#include <unistd.h>
#include "wl.h"

static char libdir[PATH_MAX];

WL_HELPER static void find_libdir(void)
{
	ssize_t n = readlink("/proc/self/exe", libdir, sizeof(libdir) - 64);
	WL_CHECK(n > 0, "readlink /proc/self/exe failed");
	libdir[n] = '\0';
	char *slash = strrchr(libdir, '/');
	WL_CHECK(slash != NULL, "no directory in %s", libdir);
	slash[1] = '\0';
}

WL_HELPER static void call_lib(void (*fn)(void))
{
	fn();
	WL_BARRIER();
}

WL_HELPER static void *open_lib(const char *name, int flags)
{
	char path[PATH_MAX];
	snprintf(path, sizeof(path), "%s%s", libdir, name);
	return dlopen(path, flags);
}

WL_HELPER static void dl_stage(void)
{
	void *h = open_lib("libleaky.so", RTLD_NOW | RTLD_LOCAL);
	WL_CHECK(h != NULL, "dlopen libleaky.so: %s", dlerror());
	void (*run)(void) = (void (*)(void))dlsym(h, "libleaky_run");
	WL_CHECK(run != NULL, "dlsym libleaky_run: %s", dlerror());
	call_lib(run);
	WL_CHECK(dlclose(h) == 0, "dlclose: %s", dlerror());
	WL_CHECK(open_lib("libleaky.so", RTLD_NOW | RTLD_NOLOAD) == NULL,
		 "libleaky.so is still loaded after dlclose");

	void *o = open_lib("libother.so", RTLD_NOW | RTLD_LOCAL);
	WL_CHECK(o != NULL, "dlopen libother.so: %s", dlerror());
	run = (void (*)(void))dlsym(o, "libother_run");
	WL_CHECK(run != NULL, "dlsym libother_run: %s", dlerror());
	call_lib(run);
	WL_BARRIER();
}

int main(void)
{
	find_libdir();
	dl_stage();
	WL_BARRIER();
	return 0;
}
