/*
 * lockrank.h - the order of the agent's locks, as code.
 *
 * Every lock that the fork handlers take (agent.c) has a rank; a thread
 * takes locks in increasing rank only (several of one rank at once is
 * fine: the live table's shards).  The fork handlers follow the ranks:
 * prepare takes every rank's locks in rank order, parent releases them in
 * the reverse order, child resets them in the reverse order.  Adding a
 * lock the fork handlers must hold = a rank here, its row in agent.c's
 * table, and ls_lock_ranked() at its sites.
 *
 * Built with LS_LOCK_CHECK defined (make AGENT_OPT=-DLS_LOCK_CHECK), each
 * ranked lock and unlock also keeps a count per rank for its thread, and
 * taking a lock of lower rank than one held calls ls_rank_violation():
 * a message on stderr and abort(), or the test's hook.  Without it the
 * ranked calls are the plain ones (sys.h), the same code.
 */
#ifndef LEAKSCOPE_AGENT_LOCKRANK_H
#define LEAKSCOPE_AGENT_LOCKRANK_H

#include "sys.h"

enum ls_lock_rank {
	LS_RANK_MODULES,	/* modules.c: the module list */
	LS_RANK_MMAPS,		/* mmaps.c: the mapping table */
	LS_RANK_SITE,		/* site.c: site creation */
	LS_RANK_THREAD,		/* thread.c: the registry and its stripes */
	LS_RANK_ARENA,		/* arena.c */
	LS_RANK_LIVE,		/* live.c: the shards, the tick index */
	LS_RANK_SAMPLE,		/* sample.c: a leaf, taken under a shard lock */
	LS_RANK_COUNT
};

/* Locks of each rank the calling thread holds (LS_LOCK_CHECK builds). */
extern __thread unsigned short ls_rank_held[LS_RANK_COUNT];
/* Called when a thread holding a lock of rank held takes one of rank
 * want < held; NULL: print and abort. */
extern void (*ls_rank_on_violation)(int want, int held);
void ls_rank_violation(int want, int held);
/* In a fork child: the forking thread's locks were reset, not released. */
void ls_rank_forget_all(void);

#ifdef LS_LOCK_CHECK
static inline void ls_rank_enter(enum ls_lock_rank r)
{
	int i;

	for (i = LS_RANK_COUNT - 1; i > (int)r; i--)
		if (ls_rank_held[i]) {
			ls_rank_violation((int)r, i);
			break;
		}
	ls_rank_held[r]++;
}

static inline void ls_rank_leave(enum ls_lock_rank r)
{
	ls_rank_held[r]--;
}
#else
static inline void ls_rank_enter(enum ls_lock_rank r)
{
	(void)r;
}

static inline void ls_rank_leave(enum ls_lock_rank r)
{
	(void)r;
}
#endif

static inline void ls_lock_ranked(ls_lock_t *l, enum ls_lock_rank r)
{
	ls_rank_enter(r);
	ls_lock(l);
}

static inline void ls_unlock_ranked(ls_lock_t *l, enum ls_lock_rank r)
{
	ls_unlock(l);
	ls_rank_leave(r);
}

#endif
