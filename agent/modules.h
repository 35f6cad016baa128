/*
 * modules.h - every object ever mapped into the process, with the
 * module-map generations during which it was there.
 *
 * Stacks are symbolized outside the process, possibly after it exited, so
 * the agent keeps the map (path, load bias, address range, build id) of
 * every module it has seen, including ones dlclose()d since.  The map is
 * refreshed at start, around each dlclose() and before each snapshot; a
 * module loaded between refreshes is found by the next one (the CLI then
 * matches a site to the first module that appeared at or after the site's
 * generation).
 *
 * ls_modules_gen() is safe inside allocation hooks; the rest is not (it
 * walks dl_iterate_phdr) and runs outside them.
 */
#ifndef LEAKSCOPE_AGENT_MODULES_H
#define LEAKSCOPE_AGENT_MODULES_H

#include <stdint.h>
#include <sys/types.h>
#include "../common/lsnap.h"

struct ls_module_rec {
	struct lsnap_module m;
	char *path;		/* arena memory, NUL-terminated */
};

/* Current generation; increases whenever the map changes. */
uint32_t ls_modules_gen(void);

/* Re-read the loaded objects; returns the number of modules known. */
unsigned ls_modules_refresh(void);

/*
 * Whether the last refresh was refused because another thread held the
 * loader's lock (agent/dllock.h): that thread's id, else 0.  Either way
 * *walk_mono_ns is when the table was last walked (CLOCK_MONOTONIC) and
 * *refused how many refreshes were refused since.  Takes no lock: a
 * frozen image may call it.
 */
pid_t ls_modules_stale(uint64_t *walk_mono_ns, uint32_t *refused);

/* Modules known, without refreshing (a frozen image: no loader lock). */
unsigned ls_modules_count(void);

/* The i-th module known, i < the count from ls_modules_refresh(). */
const struct ls_module_rec *ls_modules_get(unsigned i);

/* Our own text range, to cut the agent's frames from stacks. */
void ls_modules_self_range(uint64_t *lo, uint64_t *hi);

void ls_modules_lock_all(void);
void ls_modules_unlock_all(void);
void ls_modules_reset_child(void);

#endif
