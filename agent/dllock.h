/*
 * dllock.h - the loader's lock, read before walking the loaded objects.
 *
 * dl_iterate_phdr takes glibc's loader lock (_dl_load_write_lock in
 * ld.so's _rtld_global).  A thread of the program inside a
 * dl_iterate_phdr callback holds it, possibly for ever; a check that
 * called dl_iterate_phdr then would wait with it, and the program's exit
 * with the check.  The lock is found once, at start, by what it looks
 * like while our own callback runs; every walk on the check and exit
 * paths goes through ls_dl_iterate(), which does not walk while another
 * thread holds it, and the caller keeps what it learned last time.
 */
#ifndef LEAKSCOPE_AGENT_DLLOCK_H
#define LEAKSCOPE_AGENT_DLLOCK_H

#include <link.h>
#include <pthread.h>
#include <stddef.h>
#include <sys/types.h>

typedef int (*ls_dl_cb)(struct dl_phdr_info *, size_t, void *);

/* Find the lock (outside hooks, with dlsym and dladdr usable): 1 if
 * found, 0 if not (then ls_dl_iterate always walks, as
 * dl_iterate_phdr). */
int ls_dllock_learn(void);

/*
 * The mutex in [base, base + size) that a callback running on thread
 * tid sees held by tid (common/loaderlock.h; the injector, lib/inject.c,
 * looks for any holder but its own thread instead) and that is free
 * again after, in two steps.  ls_dllock_collect(), inside the callback:
 * the candidates, how many (0 when more than 16: not telling).
 * ls_dllock_pick(), after the callback returned: of the candidates at
 * the same base, those free again; the offset of the only one left, or
 * -1; the candidates are forgotten.  Exposed for the unit test.
 */
unsigned ls_dllock_collect(const void *base, size_t size, pid_t tid);
ptrdiff_t ls_dllock_pick(const void *base);

/* Walk the loaded objects as dl_iterate_phdr(cb, arg), unless another
 * thread holds the loader's lock: then -EBUSY, cb not called, the
 * holder in *holder (when holder is not NULL) and noted for
 * ls_dllock_missed(). */
int ls_dl_iterate_held(ls_dl_cb cb, void *arg, pid_t *holder);

static inline int ls_dl_iterate(ls_dl_cb cb, void *arg)
{
	return ls_dl_iterate_held(cb, arg, NULL);
}

/* The thread seen holding the lock since ls_dllock_clear(), or 0. */
pid_t ls_dllock_missed(void);
void ls_dllock_clear(void);

#endif
