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

/*
 * The recording of a new block p and of a freed one, called by the hooks
 * without the guard, out of line (the hooks' fast paths save no
 * register): each takes the guard and keeps errno itself.  ls_track_alloc
 * records p: in sampled mode the hook has already decided to.
 * ls_track_free takes p out of the table and then frees it (the real
 * free): the hook returns at once.
 */
void ls_track_alloc(struct ls_thread *t, void *p, size_t size);
void ls_track_free(void *p, struct ls_thread *t);
/*
 * malloc and calloc's common case whole, for a thread t that hooks.c's
 * common_case() cleared: count the call, call the real function, and
 * record the block (in sampled mode when a sample point falls in it).
 * One frame instead of the hook's slow path and ls_track_alloc's.  Must
 * be reached by tail calls only from the interposed function, so that
 * its caller is the program's frame (LS_UNWIND_HERE() inside).
 */
void *ls_track_malloc(size_t n, struct ls_thread *t);
void *ls_track_calloc(size_t n, size_t m, struct ls_thread *t);
/* With the guard held: remove p before a realloc; fills *saved, returns
 * nonzero if tracked. */
int ls_track_take(struct ls_thread *t, void *p, void *saved);
/* Put back what ls_track_take() removed (the realloc failed). */
void ls_track_restore(struct ls_thread *t, const void *saved);
/*
 * Around a call that needs a single-threaded process: end the agent's
 * threads (the fork child's waker, the control thread), returning what
 * ls_agent_threads_resume() needs to start them again.  Not in a hook.
 */
int ls_agent_threads_pause(void);
void ls_agent_threads_resume(int paused);
/* Before the process becomes another user: create the exit snapshot's
 * file while the out dir is still writable.  Not in a hook. */
void ls_agent_open_exit_report(void);

/* kind: LSNAP_KIND_MMAP, _ALLOCATOR or _RESERVED, as the hook chose. */
void ls_track_mmap(struct ls_thread *t, void *p, size_t len, uint32_t kind);
void ls_track_munmap(struct ls_thread *t, void *p, size_t len);
/* Returns nonzero if [old, old+len) held tracked anonymous memory. */
int ls_track_mremap(struct ls_thread *t, void *old, size_t oldlen, void *p,
		    size_t newlen, uint32_t kind);
/* A successful mprotect(p, len, prot): reserved <-> program mapping. */
void ls_track_mprotect(struct ls_thread *t, void *p, size_t len, int prot);

/*
 * Start tracking, if nothing has yet: real functions, settings, tables,
 * unwinder; no thread, no environment change, no file (the constructor
 * adds those).  Called by the constructor and by the first hook that
 * finds the agent off, so that allocations made by other libraries'
 * constructors, which ld.so runs first, are seen.  Returns whether the
 * agent is on.  Hook-safe: guards itself and keeps errno.
 */
int ls_agent_core_start(void);

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
 * from a hook once the child has lived LS_CHILD_MIN_LIFE_NS
 * (common/contract.h): children that exec or exit at once never create
 * files, a pre-fork worker becomes queryable.  Called with no guard
 * held, outside the real allocator.
 */
void ls_agent_child_control(void);

/*
 * Attach (agent/attach.c): ls_agent_setting() takes one setting of the
 * injector's (common/attach.h keys); ls_agent_start_attached() starts
 * tracking, the control thread and the post-mortem file from them, a
 * second time after a detach forgetting what the first session saw;
 * ls_agent_detach() puts the GOT back, stops tracking, removes the
 * socket and post-mortem file (the control thread ends after answering).
 * Return 0 or a negative errno with a reason in err.  Never in a hook.
 * An attached agent rests in LS_DISABLED between sessions, so that no
 * hook call ever starts it the preloaded way (ls_agent_core_start).
 */
void ls_agent_setting(const char *key, size_t klen, const char *value);
int ls_agent_start_attached(char *err, size_t errlen);
int ls_agent_detach(char *err, size_t errlen);

/* After dlclose(). */
void ls_agent_modules_changed(void);

/* Size of a live-table entry passed through ls_track_take(). */
#define LS_TRACK_SAVED 24

#endif
