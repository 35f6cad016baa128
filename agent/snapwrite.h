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

#include <stddef.h>
#include <sys/types.h>
#include "../common/lsnap.h"
#include "live.h"

/* Write a whole snapshot to fd (file, pipe or socket: never raises
 * SIGPIPE).  Returns 0 or a negative errno. */
int ls_snapwrite(int fd, enum lsnap_reason reason, int with_blocks);
/* The most time a snapshot may spend blocked in send() (a reader that
 * does not read) before it is abandoned with -ETIMEDOUT; 0: no limit.
 * Set by the control thread for its requests. */
extern uint64_t ls_snapwrite_send_budget_ns;

/*
 * The same in the frozen image of a reachability check (reach.h): no
 * lock, no allocator call, the live tables read as they stood, the module
 * map and mallinfo as ls_reach_prepare() left them; the heap blocks are
 * res's, with their categories (LSNAP_REACH records).
 */
/* Per-block categories and sums of a check (reach.h), for the writer. */
struct ls_reach_result {
	struct ls_live_entry *blocks;	/* heap blocks sorted by address */
	uint8_t *cat;		/* enum lsnap_reach_kind per block */
	size_t nblocks;
	struct lsnap_reach_site *sites;	/* indexed by site id */
	uint32_t nsites;
	struct lsnap_reach totals;
	struct lsnap_reach_heur heur;	/* reached by valgrind's heuristics */
	struct lsnap_reach_held *held;	/* an open hash, held_mask + 1
					   slots, blocks 0 = empty */
	size_t held_mask;
	struct lsnap_reach_how how;	/* the method, the heap model */
	int torn;		/* tables caught mid-update */
	int live;		/* written from the live process (a concurrent
				   check), not from a frozen image */
	pid_t pid, ppid;	/* of the process the image is of */
	struct lsnap_mallinfo mallinfo;	/* taken before the stop */
};

int ls_snapwrite_reach(int fd, enum lsnap_reason reason, int with_blocks,
		       const struct ls_reach_result *res);

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
