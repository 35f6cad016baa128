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
 * Keep the writer's working memory (per-site sums, a shard's copy) mapped
 * and grown to what the process holds now.  Called with every growth
 * sample, under the snapshot lock: when the program later exhausts its
 * address space (RLIMIT_AS), the exit snapshot still has room, at worst
 * that of the last sample (what does not fit is counted as dropped).
 */
void ls_snapwrite_prepare(void);

void ls_snapwrite_lock(void);
void ls_snapwrite_unlock(void);
void ls_snapwrite_reset_child(void);

#endif
