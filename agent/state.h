/*
 * state.h - the agent's settings (read once at start from the
 * environment, common/contract.h) and its process-wide state.
 *
 * Data only, defined in state.c: every module reads it, agent.c writes
 * it at start, fork and exit.  ls_agent_on() is safe in allocation
 * hooks; the rest of this header's functions run at start only.
 */
#ifndef LEAKSCOPE_AGENT_STATE_H
#define LEAKSCOPE_AGENT_STATE_H

#include <limits.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

enum ls_state {
	LS_OFF = 0,		/* not initialised: hooks pass through */
	LS_STARTING,		/* initialising: hooks pass through */
	LS_ON,			/* tracking */
	LS_DONE,		/* final report written: pass through */
	LS_DISABLED,		/* could not start: pass through */
};

struct ls_agent {
	/* The state and a fork child's pending control thread, one word to
	 * the hooks: their common case (hooks.c, common_case) is "LS_ON and
	 * nothing pending", hook_word == LS_ON, one load and compare. */
	union {
		struct {
			int state;
			int control_pending;	/* a fork child that will
						   start its own control
						   thread
						   (ls_agent_child_control) */
		};
		uint64_t hook_word;
	};
	int depth;		/* frames captured at most */
	int follow_exec;
	int exit_blocks;	/* block list in the exit snapshot */
	int leak_check;		/* a reachability check at exit */
	int control;		/* serve the control socket */
	int keep_pm;		/* keep the post-mortem file after exit */
	int all_children;	/* every fork child writes an exit snapshot */
	uint32_t period_ms;	/* growth sampling period */
	uint32_t hist_len;	/* growth samples kept per site */
	uint64_t fork_mono;	/* when this child was forked; 0 in a process
				   that started (or exec'd) with the agent */
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

_Static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__ &&
	       offsetof(struct ls_agent, control_pending) == sizeof(int),
	       "hook_word: the state in its low half, control_pending high");

/*
 * Events the agent saw but could not record, because its own memory ran
 * out (a full address-space limit): each lost allocation leaves its site
 * low, each lost free leaves a block that looks live.  Never silent: the
 * count goes into every snapshot (LSNAP_DROPPED).  Hook-safe.
 */
extern uint64_t ls_agent_dropped;

static inline void ls_agent_drop(void)
{
	__atomic_add_fetch(&ls_agent_dropped, 1, __ATOMIC_RELAXED);
}

static inline int ls_agent_on(void)
{
	return __atomic_load_n(&ls_agent.state, __ATOMIC_RELAXED) == LS_ON;
}

/* Fill the settings from the environment (common/contract.h), clamping
 * what is out of its limits.  At start, guard held. */
void ls_state_read_config(void);
/* Under `leakscope run` without follow-exec, take the run's settings
 * and the agent out of the environment, as the command would have had
 * it.  At start. */
void ls_state_restore_environment(void);
/* Keep /proc/self/cmdline in agent memory for the snapshots. */
void ls_state_read_cmdline(void);
/* An unsigned setting, dflt when unset or not a number. */
uint64_t ls_state_env_u64(const char *name, uint64_t dflt);

/*
 * What the agent could not do as asked (a setting it could not use, a
 * runtime dir it could not create): said once on the program's stderr,
 * "leakscope: agent in pid N: ...", and kept (without that prefix) for
 * every snapshot
 * (LSNAP_NOTES) so that `leakscope stats` shows it.  At start or from
 * the control thread, never from a hook: formats with vsnprintf.
 */
void ls_state_note(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The notes so far, lines each ending with '\n'; *len bytes. */
const char *ls_state_notes(size_t *len);
/* The value of name in the environment, read without the program's
 * getenv (which it may have replaced); NULL when unset. */
const char *ls_state_getenv(const char *name);

#endif
