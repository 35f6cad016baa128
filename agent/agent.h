/*
 * agent.h - the bookkeeping the hooks call, fork and exit.
 *
 * The hooks (hooks.c) do: guard, call the real function, and on success
 * call one ls_track_* function.  Those capture the stack, intern the site,
 * update the live table and the thread's counters.  Nothing here does I/O
 * or symbolization; snapshots are written by the control thread or at
 * exit (snapwrite.h).
 */
#ifndef LEAKSCOPE_AGENT_AGENT_H
#define LEAKSCOPE_AGENT_AGENT_H

#include <stddef.h>
#include <stdint.h>
#include "state.h"
#include "thread.h"

/* Bookkeeping, called by hooks with the guard held.  ls_track_alloc
 * records p: in sampled mode the hook has already decided to. */
void ls_track_alloc(struct ls_thread *t, void *p, size_t size);
void ls_track_free(struct ls_thread *t, void *p);
/* Remove p before a realloc; fills *saved, returns nonzero if tracked. */
int ls_track_take(struct ls_thread *t, void *p, void *saved);
/* Put back what ls_track_take() removed (the realloc failed). */
void ls_track_restore(struct ls_thread *t, const void *saved);
void ls_track_mmap(struct ls_thread *t, void *p, size_t len);
void ls_track_munmap(struct ls_thread *t, void *p, size_t len);
/* Returns nonzero if [old, old+len) held tracked anonymous memory. */
int ls_track_mremap(struct ls_thread *t, void *old, size_t oldlen, void *p,
		    size_t newlen);

/* The process is ending: take a last growth sample, close the post-mortem
 * file, write the exit snapshot (under `leakscope run`), remove the
 * control socket.  Once per process; called from the destructor and from
 * _exit(). */
void ls_agent_exit_report(void);
/* Forget every live block (the control socket's "reset"); allocated
 * totals and call counts keep counting. */
void ls_agent_reset(void);
/*
 * In a fork child, the control thread and post-mortem file are started
 * from a hook once the child has lived LS_CHILD_CONTROL_DELAY_NS: children
 * that exec or exit at once never create files, a pre-fork worker becomes
 * queryable.  Called with no guard held, outside the real allocator.
 */
#define LS_CHILD_CONTROL_DELAY_NS 1000000000ull
void ls_agent_child_control(void);

/* After dlclose(). */
void ls_agent_modules_changed(void);

/* Size of a live-table entry passed through ls_track_take(). */
#define LS_TRACK_SAVED 24

#endif
