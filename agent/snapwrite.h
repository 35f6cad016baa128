/*
 * snapwrite.h - serialize the agent's state as a snapshot (common/lsnap.h).
 *
 * Runs outside allocation hooks, on the control thread or in the exiting
 * thread, with the recursion guard held.  Snapshots are serialized by one
 * lock; the tables are read shard by shard, so tracking goes on meanwhile
 * and a snapshot of a busy process is a close, not an atomic, picture.
 */
#ifndef LEAKSCOPE_AGENT_SNAPWRITE_H
#define LEAKSCOPE_AGENT_SNAPWRITE_H

#include "../common/lsnap.h"

/* Write a whole snapshot to fd (file, pipe or socket: never raises
 * SIGPIPE).  Returns 0 or a negative errno. */
int ls_snapwrite(int fd, enum lsnap_reason reason, int with_blocks);

/*
 * The same in the frozen image of a reachability check (reach.h): no
 * lock, no allocator call, the live tables read as they stood, the module
 * map and mallinfo as ls_reach_prepare() left them; the heap blocks are
 * res's, with their categories (LSNAP_REACH records).
 */
struct ls_reach_result;
int ls_snapwrite_reach(int fd, enum lsnap_reason reason, int with_blocks,
		       const struct ls_reach_result *res);

void ls_snapwrite_lock(void);
void ls_snapwrite_unlock(void);
void ls_snapwrite_reset_child(void);

#endif
