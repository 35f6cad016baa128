/*
 * exec.c - the agent's settings put back into an exec'd program's
 * environment.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../common/contract.h"
#include "arena.h"
#include "exec.h"
#include "state.h"

#define MAX_SAVED 16

static const char *saved[MAX_SAVED];	/* our settings, "NAME=value", as we started */
static int nsaved;
static char agent_path[PATH_MAX];
static pid_t root_pid;			/* the command's own process */
static int active;

extern char **environ;

static char *dup_str(const char *s)
{
	size_t n = strlen(s) + 1;
	char *d = ls_arena_alloc(n);

	if (d)
		memcpy(d, s, n);
	return d;
}

void ls_exec_init(void)
{
	Dl_info info;
	char **e;

	if (!ls_state_getenv(LS_ENV_RUN) || !dladdr((void *)ls_exec_init, &info) ||
	    !info.dli_fname || strlen(info.dli_fname) >= sizeof(agent_path))
		return;
	strcpy(agent_path, info.dli_fname);
	for (e = environ; *e && nsaved < MAX_SAVED; e++)
		if (!strncmp(*e, LS_ENV_PREFIX, sizeof(LS_ENV_PREFIX) - 1) &&
		    !ls_env_is(*e, LS_ENV_PRELOAD_ORIG))
			saved[nsaved++] = dup_str(*e);
	root_pid = getpid();
	active = 1;
}

static int is_ours(const char *e)
{
	int i;

	for (i = 0; i < nsaved; i++) {
		size_t k = strcspn(saved[i], "=") + 1;

		if (saved[i] && !strncmp(e, saved[i], k))
			return 1;
	}
	return ls_env_is(e, LS_ENV_PRELOAD_ORIG);
}

/* "NAME=value" in agent memory, or NULL. */
static char *env_entry(const char *name, const char *value)
{
	size_t ln = strlen(name), lv = strlen(value);
	char *p = ls_arena_alloc(ln + 1 + lv + 1);

	if (p) {
		memcpy(p, name, ln);
		p[ln] = '=';
		memcpy(p + ln + 1, value, lv + 1);
	}
	return p;
}

/* LD_PRELOAD with the agent first, and the ORIG record of theirs. */
static int put_preload(char **out, int k, const char *theirs)
{
	size_t cap = sizeof(LS_ENV_PRELOAD "=") + ls_preload_len(agent_path,
								   theirs);
	char *p = ls_arena_alloc(cap);

	if (!p || ls_preload_splice(p, cap, agent_path, theirs))
		return k;
	out[k++] = p;
	if (theirs && (p = env_entry(LS_ENV_PRELOAD_ORIG, theirs)))
		out[k++] = p;
	return k;
}

char *const *ls_exec_env(char *const envp[])
{
	const char *theirs = NULL;
	char **out;
	int n = 0, k = 0, i;

	if (!active || !envp || (!ls_agent.follow_exec && getpid() != root_pid))
		return envp;
	while (envp[n])
		n++;
	out = ls_arena_alloc((size_t)(n + nsaved + 3) * sizeof(*out));
	if (!out)
		return envp;
	for (i = 0; i < n; i++) {
		if (ls_env_is(envp[i], LS_ENV_PRELOAD)) {
			const char *v = envp[i] + sizeof(LS_ENV_PRELOAD);

			/* Already ours (--follow-exec keeps it): leave it. */
			if (strstr(v, agent_path))
				return envp;
			theirs = v;
			continue;
		}
		if (!is_ours(envp[i]))
			out[k++] = envp[i];
	}
	for (i = 0; i < nsaved; i++)
		if (saved[i])
			out[k++] = (char *)saved[i];
	k = put_preload(out, k, theirs);
	out[k] = NULL;
	return out;
}
