/*
 * mmaps.h - anonymous mappings the program made itself, as sorted ranges.
 *
 * munmap() may remove any part of a mapping, so these are kept as ranges
 * rather than in the live-block hash table.  mmap calls are rare and cost
 * a syscall anyway: one spinlock guards the array.
 *
 * Safe inside hooks.
 */
#ifndef LEAKSCOPE_AGENT_MMAPS_H
#define LEAKSCOPE_AGENT_MMAPS_H

#include <stddef.h>
#include <stdint.h>
#include "live.h"

/* Called for every change of a range's site: dbytes and dblocks. */
typedef void (*ls_mmaps_fn)(uint32_t site, int64_t dbytes, int64_t dblocks,
			    void *arg);

int ls_mmaps_add(const struct ls_live_entry *e);
/* Remove [start, start+len); returns the bytes that were tracked. */
uint64_t ls_mmaps_remove(uint64_t start, uint64_t len, ls_mmaps_fn fn,
			 void *arg);
/*
 * Remove the first tracked piece of [start, start+len) whose site want()
 * accepts (fn is told, as by ls_mmaps_remove()) and give its bounds in
 * *lo, *hi.  Returns 1, or 0 when no piece is wanted.  want() runs under
 * the lock: it must not call back into this module.
 */
int ls_mmaps_take(uint64_t start, uint64_t len, int (*want)(uint32_t site),
		  ls_mmaps_fn fn, void *arg, uint64_t *lo, uint64_t *hi);
/* The site of the range holding addr: 1, or 0 when none does. */
int ls_mmaps_site_at(uint64_t addr, uint32_t *site);
/* Copy the ranges as entries (addr, size = length); see
 * ls_live_copy_shard() for the cap protocol. */
size_t ls_mmaps_copy(struct ls_live_entry *buf, size_t cap);

/* The same without the lock, in a frozen image (see
 * ls_live_copy_shard_frozen()). */
size_t ls_mmaps_copy_frozen(struct ls_live_entry *buf, size_t cap, int *torn);

/* Forget every range; fn is called for each first. */
void ls_mmaps_clear(void (*fn)(const struct ls_live_entry *, void *), void *arg);

void ls_mmaps_lock_all(void);
void ls_mmaps_unlock_all(void);
void ls_mmaps_reset_child(void);

#endif
