/*
 * spawn.h - starting the command of `leakscope run` under the agent.
 */
#ifndef LEAKSCOPE_SPAWN_H
#define LEAKSCOPE_SPAWN_H

#include <stddef.h>
#include <sys/types.h>
#include "cmds.h"

/* As execvp would: a name with a slash is a path, else search $PATH.
 * Returns 0, -ENOENT or -EACCES (found but not executable). */
int ls_resolve_command(const char *name, char *out, size_t cap);

/* Why LD_PRELOAD cannot reach the program at path (static, 32-bit,
 * setuid or setgid to someone else; a script judged by its
 * interpreter), or NULL. */
const char *ls_untraceable(const char *path);

/* The agent: $LEAKSCOPE_AGENT, beside the binary, ../lib/leakscope/,
 * the configured libdir.  0, or -1 after printing why not. */
int ls_find_agent(char *out, size_t cap);

/* The command's environment: ours, the agent first in LD_PRELOAD, the
 * run's settings (common/contract.h) last; NULL on ENOMEM.  Free the
 * array (not its strings) with free(). */
char **ls_child_env(const struct ls_run_args *a, const char *agent,
		    const char *tmpdir);

/* Fork and exec path; an exec failure comes back as its negative
 * errno.  Signals sent to leakscope itself are then passed on to the
 * child (ls_forward_signals) until ls_forward_done(). */
int ls_spawn(const char *path, char **argv, char **envp, pid_t *child);
void ls_forward_signals(void);
void ls_forward_done(void);

/* Die of sig as the command did, without dumping our own core. */
void ls_die_like(int sig) __attribute__((noreturn));

#endif
