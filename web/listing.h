/*
 * listing.h - many agents asked at once, by a deadline (listing.c).  Not a public interface.
 */
#ifndef LEAKSCOPE_WEB_LISTING_H
#define LEAKSCOPE_WEB_LISTING_H

#include <sys/types.h>
#include "internal.h"

/*
 * ls_web_snap_get() for n pids in parallel, without the block list: by
 * deadline_ms, snaps[i] is a reference (drop it with ls_web_snap_put())
 * or NULL with status[i] the error's status (504 when the agent had not
 * answered by then; it is left to finish on its own).  0 or -ENOMEM,
 * -EAGAIN (no thread).  Thread-safe.
 */
int ls_web_snap_get_many(struct ls_web_agents *a, const pid_t *pids, size_t n,
			 unsigned deadline_ms, struct ls_web_snap **snaps,
			 int *status);
/* Wait up to ms for the workers left running (before the cache goes). */
void ls_web_listing_wait(struct ls_web_agents *a, unsigned ms);

#endif
