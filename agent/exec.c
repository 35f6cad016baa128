/*
 * exec.c - the agent's settings put back into an exec'd program's
 * environment.
 */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "agent.h"
#include "arena.h"
#include "exec.h"

#define MAX_SAVED 16

static const char *saved[MAX_SAVED];	/* "LEAKSCOPE_X=..." as we started */
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

	if (!getenv("LEAKSCOPE_RUN") || !dladdr((void *)ls_exec_init, &info) ||
	    !info.dli_fname || strlen(info.dli_fname) >= sizeof(agent_path))
		return;
	strcpy(agent_path, info.dli_fname);
	for (e = environ; *e && nsaved < MAX_SAVED; e++)
		if (!strncmp(*e, "LEAKSCOPE_", 10) &&
		    strncmp(*e, "LEAKSCOPE_PRELOAD_ORIG=", 23))
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
	return !strncmp(e, "LEAKSCOPE_PRELOAD_ORIG=", 23);
}

/* "LD_PRELOAD=agent:theirs" and the ORIG record of theirs, or just ours. */
static int put_preload(char **out, int k, const char *theirs)
{
	size_t la = strlen(agent_path), lt = theirs ? strlen(theirs) : 0;
	char *p = ls_arena_alloc(11 + la + 1 + lt + 1);

	if (!p)
		return k;
	memcpy(p, "LD_PRELOAD=", 11);
	memcpy(p + 11, agent_path, la + 1);
	if (theirs && *theirs) {
		p[11 + la] = ':';
		memcpy(p + 12 + la, theirs, lt + 1);
	}
	out[k++] = p;
	if (theirs) {
		char *o = ls_arena_alloc(23 + lt + 1);

		if (o) {
			memcpy(o, "LEAKSCOPE_PRELOAD_ORIG=", 23);
			memcpy(o + 23, theirs, lt + 1);
			out[k++] = o;
		}
	}
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
		if (!strncmp(envp[i], "LD_PRELOAD=", 11)) {
			/* Already ours (--follow-exec keeps it): leave it. */
			if (strstr(envp[i] + 11, agent_path))
				return envp;
			theirs = envp[i] + 11;
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
