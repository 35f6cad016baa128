/*
 * contract.h - the agent/CLI contract, written once: the environment
 * settings `leakscope run` passes and the agent reads (names, defaults,
 * limits), the control socket's verbs and replies
 * (docs/CONTROL-PROTOCOL.md), the names of runtime files, and how the
 * agent is spliced into LD_PRELOAD.
 *
 * Included by both halves (agent/, lib/, cli/).  Everything here is a
 * constant or a small inline function that neither allocates nor calls
 * stdio, so the agent may use it anywhere outside allocation hooks (and
 * in an interposed exec function, which may run in a vfork child).
 */
#ifndef LEAKSCOPE_CONTRACT_H
#define LEAKSCOPE_CONTRACT_H

#include <errno.h>
#include <stddef.h>
#include <string.h>

/* --- environment ------------------------------------------------------ */

#define LS_ENV_PREFIX "LEAKSCOPE_"

/* Set by `leakscope run`: the agent takes every run setting out of the
 * environment at start (unless follow-exec), so programs the command
 * starts are not traced and see the environment they would natively. */
#define LS_ENV_RUN "LEAKSCOPE_RUN"
#define LS_ENV_OUT_DIR "LEAKSCOPE_OUT_DIR"	/* exit snapshots go here */
#define LS_ENV_DEPTH "LEAKSCOPE_DEPTH"		/* frames per stack */
#define LS_ENV_FOLLOW_EXEC "LEAKSCOPE_FOLLOW_EXEC"	/* 0/1 */
/* Test hook of a concurrent check: "W,R" fds (docs/REACHABILITY.md). */
#define LS_ENV_CHECK_PHASE_FDS "LEAKSCOPE_CHECK_PHASE_FDS"
#define LS_ENV_EXIT_BLOCKS "LEAKSCOPE_EXIT_BLOCKS"	/* block list at exit */
#define LS_ENV_LEAK_CHECK "LEAKSCOPE_LEAK_CHECK"	/* 0/1: reachability
							   check at exit */
#define LS_ENV_SAMPLE_RATE "LEAKSCOPE_SAMPLE_RATE"	/* bytes; 0 = full */
#define LS_ENV_SAMPLE_SEED "LEAKSCOPE_SAMPLE_SEED"
#define LS_ENV_CONTROL "LEAKSCOPE_CONTROL"	/* 0: no control thread */
#define LS_ENV_KEEP "LEAKSCOPE_KEEP"		/* keep the .pm at exit */
#define LS_ENV_PERIOD_MS "LEAKSCOPE_PERIOD_MS"	/* growth sample period */
#define LS_ENV_HISTORY "LEAKSCOPE_HISTORY"	/* samples kept per site */
/* 1: every forked child writes its exit snapshot, even one that lived
 * less than LS_CHILD_MIN_LIFE_NS (a shell's subshell). */
#define LS_ENV_ALL_CHILDREN "LEAKSCOPE_ALL_CHILDREN"
/* LD_PRELOAD as it was before `leakscope run` put the agent first. */
#define LS_ENV_PRELOAD_ORIG "LEAKSCOPE_PRELOAD_ORIG"

/* Settings the user sets, which `leakscope run` passes through (with
 * PERIOD_MS, HISTORY and KEEP above: ls_env_passes_through). */
#define LS_ENV_UNWIND "LEAKSCOPE_UNWIND"	/* libunwind | check | none */
#define LS_ENV_RUNTIME_DIR "LEAKSCOPE_RUNTIME_DIR"	/* common/runtime.h */
#define LS_ENV_AGENT "LEAKSCOPE_AGENT"		/* the CLI's agent path */

/* `leakscope serve --push-*` credentials when no file is given
 * (docs/FLEET.md): "user:password" for HTTP Basic, else a Bearer token. */
#define LS_ENV_PUSH_BASIC_AUTH "LEAKSCOPE_PUSH_BASIC_AUTH"
#define LS_ENV_PUSH_TOKEN "LEAKSCOPE_PUSH_TOKEN"

/* Every setting `leakscope run` may put in the command's environment:
 * X(name) for each. */
#define LS_RUN_SETTINGS(X) \
	X(LS_ENV_RUN) X(LS_ENV_OUT_DIR) X(LS_ENV_DEPTH) X(LS_ENV_FOLLOW_EXEC) \
	X(LS_ENV_EXIT_BLOCKS) X(LS_ENV_SAMPLE_RATE) X(LS_ENV_CONTROL) \
	X(LS_ENV_PRELOAD_ORIG) X(LS_ENV_SAMPLE_SEED) X(LS_ENV_KEEP) \
	X(LS_ENV_PERIOD_MS) X(LS_ENV_HISTORY) X(LS_ENV_ALL_CHILDREN) \
	X(LS_ENV_LEAK_CHECK)

/* Defaults and limits.  A value out of its limits is clamped (depth) or
 * replaced by the default (period, history) by the agent; the CLI refuses
 * it with a usage error. */
#define LS_DEPTH_DEFAULT 64
#define LS_DEPTH_MIN 1
#define LS_DEPTH_MAX 256
#define LS_PERIOD_MS_DEFAULT 1000
#define LS_PERIOD_MS_MIN 10
#define LS_PERIOD_MS_MAX 3600000
#define LS_HISTORY_DEFAULT 120
#define LS_HISTORY_MIN 8
#define LS_HISTORY_MAX 4096

/*
 * A forked child (without exec) that lives this long is a process of its
 * own, as a pre-fork server's worker: it gets a control socket, a
 * post-mortem file and, under `leakscope run`, an exit report.  One that
 * exits sooner (a shell's subshell) leaves nothing behind, unless
 * LS_ENV_ALL_CHILDREN.
 */
#define LS_CHILD_MIN_LIFE_NS 1000000000ull

/* Post-mortem files of dead processes are swept after this long. */
#define LS_PM_KEEP_DAYS 7

/* "NAME=..." is a setting called name? */
static inline int ls_env_is(const char *entry, const char *name)
{
	size_t n = strlen(name);

	return !strncmp(entry, name, n) && entry[n] == '=';
}

/* Is entry one of the user's settings that `leakscope run` passes on? */
static inline int ls_env_passes_through(const char *entry)
{
	return ls_env_is(entry, LS_ENV_RUNTIME_DIR) ||
	       ls_env_is(entry, LS_ENV_AGENT) ||
	       ls_env_is(entry, LS_ENV_UNWIND) ||
	       ls_env_is(entry, LS_ENV_PERIOD_MS) ||
	       ls_env_is(entry, LS_ENV_HISTORY) ||
	       ls_env_is(entry, LS_ENV_KEEP);
}

/* --- LD_PRELOAD ------------------------------------------------------- */

#define LS_ENV_PRELOAD "LD_PRELOAD"

/*
 * The agent goes first in LD_PRELOAD, so that its malloc is the one
 * found; whatever the user preloaded follows: "agent:theirs", or "agent"
 * when theirs is NULL or empty.  ls_preload_len() is the length of that
 * value without its NUL; ls_preload_splice() writes "LD_PRELOAD=" and the
 * value into buf (cap bytes) and returns 0 or -ENAMETOOLONG.
 */
static inline size_t ls_preload_len(const char *agent, const char *theirs)
{
	size_t n = strlen(agent);

	return theirs && *theirs ? n + 1 + strlen(theirs) : n;
}

static inline int ls_preload_splice(char *buf, size_t cap, const char *agent,
				    const char *theirs)
{
	size_t pre = sizeof(LS_ENV_PRELOAD "=") - 1, la = strlen(agent);

	if (cap < pre + ls_preload_len(agent, theirs) + 1)
		return -ENAMETOOLONG;
	memcpy(buf, LS_ENV_PRELOAD "=", pre);
	memcpy(buf + pre, agent, la + 1);
	if (theirs && *theirs) {
		buf[pre + la] = ':';
		memcpy(buf + pre + la + 1, theirs, strlen(theirs) + 1);
	}
	return 0;
}

/* --- control socket (docs/CONTROL-PROTOCOL.md) ------------------------ */

/* A request is one line of at most this many bytes, newline included. */
#define LS_CONTROL_MAX_REQUEST 4096

#define LS_VERB_SNAPSHOT "snapshot"
#define LS_VERB_SNAPSHOT_BLOCKS "snapshot blocks"
#define LS_VERB_RESET "reset"
#define LS_VERB_PING "ping"
#define LS_VERB_DETACH "detach"	/* only in an attached process */
#define LS_VERB_CHECK "check"	/* reachability, docs/REACHABILITY.md */
#define LS_VERB_CHECK_BLOCKS "check blocks"
#define LS_VERB_CHECK_FORK "check fork"	/* the same by the fork method */
#define LS_VERB_CHECK_FORK_BLOCKS "check fork blocks"
/* "check[ blocks] budget=US": the concurrent method's pause budget, in
 * microseconds (0: none); without it, LS_CHECK_BUDGET_US. */
#define LS_CHECK_BUDGET_ARG " budget="
#define LS_CHECK_BUDGET_US 10000ull
#define LS_CHECK_BUDGET_MAX_US 60000000ull
#define LS_REPLY_READY "READY"	/* check: "READY <control thread tid>" */
#define LS_REPLY_CLONED "CLONED"	/* check: "CLONED <child pid>" */
#define LS_REPLY_MARKED "MARKED"	/* concurrent check: marked, let go */

#define LS_REPLY_OK "OK"
#define LS_REPLY_PING "OK leakscope 1"
#define LS_REPLY_ERR "ERR "	/* followed by the reason */

/* --- runtime files (common/runtime.h gives the directory) ------------- */

#define LS_SUFFIX_SOCKET ".sock"	/* <pid>.sock */
#define LS_SUFFIX_PM ".pm"		/* <pid>.pm, common/lspm.h */
#define LS_SUFFIX_SNAP ".lsnap"		/* <pid>-<start>.lsnap exit snapshot */
#define LS_SUFFIX_TMP ".tmp"		/* a file not yet complete */

#endif
