/*
 * agent.h - the agent's global state and the bookkeeping the hooks call.
 *
 * The hooks (hooks.c) do: guard, call the real function, and on success
 * call one ls_track_* function.  Those capture the stack, intern the site,
 * update the live table and the thread's counters.  Nothing here does I/O
 * or symbolization; snapshots are written by the control thread or at
 * exit (snapwrite.h).
 */
#ifndef LEAKSCOPE_AGENT_AGENT_H
#define LEAKSCOPE_AGENT_AGENT_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include "thread.h"

enum ls_state {
	LS_OFF = 0,		/* not initialised: hooks pass through */
	LS_STARTING,		/* initialising: hooks pass through */
	LS_ON,			/* tracking */
	LS_DONE,		/* final report written: pass through */
	LS_DISABLED,		/* could not start: pass through */
};

struct ls_agent {
	int state;
	int depth;		/* frames captured at most */
	int follow_exec;
	int exit_blocks;	/* block list in the exit snapshot */
	int control;		/* serve the control socket */
	int keep_pm;		/* keep the post-mortem file after exit */
	uint32_t period_ms;	/* growth sampling period */
	uint32_t hist_len;	/* growth samples kept per site */
	int control_pending;	/* a fork child that will start its own
				   control thread (ls_agent_child_control) */
	uint64_t fork_mono;	/* when this child was forked */
	uint64_t sample_rate;	/* 0 = full tracking */
	pid_t pid;		/* whose state this is (changes at fork) */
	uint64_t start_mono;
	char out_dir[PATH_MAX];	/* where exit snapshots go; "" = none */
	char runtime_dir[PATH_MAX];
	uint64_t attach_wall_ns;	/* attached (not preloaded): when
					   tracking began, CLOCK_REALTIME;
					   0 when preloaded */
	char *cmdline;		/* /proc/self/cmdline, arena memory */
	size_t cmdline_len;
};

extern struct ls_agent ls_agent;

static inline int ls_agent_on(void)
{
	return __atomic_load_n(&ls_agent.state, __ATOMIC_RELAXED) == LS_ON;
}

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

/*
 * Attach (agent/attach.c): ls_agent_setting() takes one setting of the
 * injector's (common/attach.h keys); ls_agent_start_attached() starts
 * tracking, the control thread and the post-mortem file from them, a
 * second time after a detach forgetting what the first session saw;
 * ls_agent_detach() puts the GOT back, stops tracking, removes the
 * socket and post-mortem file (the control thread ends after answering).
 * Return 0 or a negative errno with a reason in err.  Never in a hook.
 */
void ls_agent_setting(const char *key, size_t klen, const char *value);
int ls_agent_start_attached(char *err, size_t errlen);
int ls_agent_detach(char *err, size_t errlen);

/* After dlclose(). */
void ls_agent_modules_changed(void);

/* Size of a live-table entry passed through ls_track_take(). */
#define LS_TRACK_SAVED 24

#endif
