/*
 * exec.h - carrying the agent across exec() of the traced command itself.
 *
 * Under `leakscope run` the agent takes LD_PRELOAD and its settings out of
 * the environment at start, so the programs the command starts are not
 * traced (unless --follow-exec).  But when the command's own process
 * executes another program (a shell's `exec`, /usr/bin/env, a pyenv or
 * rbenv shim), that program is still the command: the exec family is
 * interposed to put the agent back into the environment it passes, in
 * that process only.  With --follow-exec it is put back for every
 * process, so a program passing its own environment cannot drop it.
 *
 * Not for allocation hooks: called from the interposed exec functions.
 */
#ifndef LEAKSCOPE_AGENT_EXEC_H
#define LEAKSCOPE_AGENT_EXEC_H

/* Remember what to put back; at start, before the environment is
 * cleaned. */
void ls_exec_init(void);

/* envp with the agent's settings merged in, or envp itself when this
 * process's execs are not to be traced.  The new array lives in agent
 * memory (an exec that fails leaks it, once). */
char *const *ls_exec_env(char *const envp[]);

#endif
