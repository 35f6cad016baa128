/*
 * state.c - the agent's settings, from the environment `leakscope run`
 * (or the user) gave it.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <unistd.h>
#include "../common/contract.h"
#include "../common/lsnap.h"
#include "../common/runtime.h"
#include "arena.h"
#include "sys.h"
#include "state.h"

struct ls_agent ls_agent = { .depth = LS_DEPTH_DEFAULT, .control = 1 };
uint64_t ls_agent_dropped;

extern char **environ;

/*
 * The agent reads and edits the environment array itself.  A program may
 * define its own getenv/setenv/unsetenv, and the agent's calls would
 * reach them: bash's work on its variable table and, before bash's main
 * has built it, unsetenv did nothing, so `bash -c 'echo $LD_PRELOAD'`
 * printed the agent.  Edits are made in place, in the array main() will
 * receive as envp, and allocate nothing through the program's allocator.
 */
static char **env_slot(const char *name)
{
	char **e;

	for (e = environ; e && *e; e++)
		if (ls_env_is(*e, name))
			return e;
	return NULL;
}

/*
 * In a program run with more privileges than its caller's (set-user-ID,
 * set-group-ID, file capabilities: AT_SECURE, as secure_getenv() knows),
 * the agent can only be there by a system-wide preload, and the caller
 * wrote the environment: our settings and paths from it are ignored, as
 * if unset.
 */
static int secure_exec(void)
{
	static int secure = -1;

	if (secure < 0)
		secure = getauxval(AT_SECURE) != 0;
	return secure;
}

static int untrusted(const char *name)
{
	return secure_exec() && (!strncmp(name, LS_ENV_PREFIX, sizeof(LS_ENV_PREFIX) - 1) ||
			  !strcmp(name, "XDG_RUNTIME_DIR"));
}

const char *ls_state_getenv(const char *name)
{
	char **e = untrusted(name) ? NULL : env_slot(name);

	return e ? *e + strlen(name) + 1 : NULL;
}

static void env_remove(const char *name)
{
	char **e, **d;

	while ((e = env_slot(name)))
		for (d = e; (d[0] = d[1]); d++)
			;
}

/* NAME=value in agent memory, in name's slot (or removed if none can be
 * had: leaving the agent in LD_PRELOAD would trace every child). */
static void env_replace(const char *name, const char *value)
{
	size_t n = strlen(name), v = strlen(value);
	char **e = env_slot(name);
	char *entry;

	if (!e)
		return;
	entry = ls_arena_alloc(n + v + 2);
	if (!entry) {
		env_remove(name);
		return;
	}
	memcpy(entry, name, n);
	entry[n] = '=';
	memcpy(entry + n + 1, value, v + 1);
	*e = entry;
}

static char notes[LSNAP_NOTES_MAX];
static size_t notes_len;
static ls_lock_t notes_lock = LS_LOCK_INIT;

void ls_state_note(const char *fmt, ...)
{
	char line[512];
	va_list ap;
	ssize_t w;
	int n, k, prefix;

	n = prefix = snprintf(line, sizeof(line), "leakscope: agent in pid %d: ",
			      (int)getpid());
	va_start(ap, fmt);
	k = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
	va_end(ap);
	if (k < 0)
		return;
	n += k;
	if ((size_t)n > sizeof(line) - 2)
		n = sizeof(line) - 2;
	line[n++] = '\n';
	/* Without a stderr the snapshots still carry it. */
	w = write(STDERR_FILENO, line, (size_t)n);
	(void)w;
	/* Kept without the prefix: the snapshot says whose they are. */
	n -= prefix;
	ls_lock(&notes_lock);
	if (notes_len + (size_t)n <= sizeof(notes)) {
		memcpy(notes + notes_len, line + prefix, (size_t)n);
		__atomic_store_n(&notes_len, notes_len + (size_t)n,
				 __ATOMIC_RELEASE);
	}
	ls_unlock(&notes_lock);
}

const char *ls_state_notes(size_t *len)
{
	*len = __atomic_load_n(&notes_len, __ATOMIC_ACQUIRE);
	return notes;
}

/* name's value as a number: dflt when unset; when it is not a number,
 * dflt and a note. */
uint64_t ls_state_env_u64(const char *name, uint64_t dflt)
{
	const char *v = ls_state_getenv(name);
	char *end;
	unsigned long long n;

	if (!v || !*v)
		return dflt;
	errno = 0;
	n = strtoull(v, &end, 10);
	if (errno || *end || *v == '-') {
		ls_state_note("%s='%s' is not a number: %llu used", name, v,
			      (unsigned long long)dflt);
		return dflt;
	}
	return n;
}

static void env_copy(const char *name, char *dst, size_t cap)
{
	const char *v = ls_state_getenv(name);

	dst[0] = 0;
	if (v && strlen(v) < cap)
		strcpy(dst, v);
}

/* name's value v if lo <= v <= hi, else dflt and a note. */
static uint32_t within(const char *name, uint64_t v, uint32_t lo, uint32_t hi,
		       uint32_t dflt)
{
	if (v >= lo && v <= hi)
		return (uint32_t)v;
	ls_state_note("%s=%llu is outside %u-%u: %u used", name,
		      (unsigned long long)v, lo, hi, dflt);
	return dflt;
}

/* LEAKSCOPE_OUT_DIR must be a directory the agent can write into, or
 * the exit snapshot would vanish and `leakscope run` blame the program. */
static void check_out_dir(void)
{
	if (ls_agent.out_dir[0] && access(ls_agent.out_dir, W_OK | X_OK))
		ls_state_note("no exit snapshot: %s='%s': %s", LS_ENV_OUT_DIR,
			      ls_agent.out_dir, strerror(errno));
}

void ls_state_read_config(void)
{
	uint64_t d = ls_state_env_u64(LS_ENV_DEPTH, LS_DEPTH_DEFAULT);

	if (d < LS_DEPTH_MIN || d > LS_DEPTH_MAX)
		ls_state_note("%s=%llu is outside %d-%d: %d used", LS_ENV_DEPTH,
			      (unsigned long long)d, LS_DEPTH_MIN, LS_DEPTH_MAX,
			      d < LS_DEPTH_MIN ? LS_DEPTH_MIN : LS_DEPTH_MAX);
	ls_agent.depth = d < LS_DEPTH_MIN ? LS_DEPTH_MIN :
			 d > LS_DEPTH_MAX ? LS_DEPTH_MAX : (int)d;
	ls_agent.follow_exec = ls_state_env_u64(LS_ENV_FOLLOW_EXEC, 0) != 0;
	ls_agent.exit_blocks = ls_state_env_u64(LS_ENV_EXIT_BLOCKS, 0) != 0;
	ls_agent.leak_check = ls_state_env_u64(LS_ENV_LEAK_CHECK, 0) != 0;
	ls_agent.control = ls_state_env_u64(LS_ENV_CONTROL, 1) != 0;
	ls_agent.sample_rate = ls_state_env_u64(LS_ENV_SAMPLE_RATE, 0);
	ls_agent.keep_pm = ls_state_env_u64(LS_ENV_KEEP, 0) != 0;
	ls_agent.all_children = ls_state_env_u64(LS_ENV_ALL_CHILDREN, 0) != 0;
	ls_agent.period_ms = within(LS_ENV_PERIOD_MS,
				    ls_state_env_u64(LS_ENV_PERIOD_MS,
						     LS_PERIOD_MS_DEFAULT),
				    LS_PERIOD_MS_MIN, LS_PERIOD_MS_MAX,
				    LS_PERIOD_MS_DEFAULT);
	ls_agent.hist_len = within(LS_ENV_HISTORY,
				   ls_state_env_u64(LS_ENV_HISTORY,
						    LS_HISTORY_DEFAULT),
				   LS_HISTORY_MIN, LS_HISTORY_MAX,
				   LS_HISTORY_DEFAULT);
	env_copy(LS_ENV_OUT_DIR, ls_agent.out_dir, sizeof(ls_agent.out_dir));
	check_out_dir();
	if (ls_runtime_dir_from(ls_state_getenv(LS_ENV_RUNTIME_DIR),
				ls_state_getenv("XDG_RUNTIME_DIR"),
				/* set-user-ID: its own user's, not its caller's */
				(unsigned)(secure_exec() ? geteuid() : getuid()),
				ls_agent.runtime_dir,
				sizeof(ls_agent.runtime_dir)))
		ls_agent.runtime_dir[0] = 0;
}

void ls_state_restore_environment(void)
{
	const char *orig = ls_state_getenv(LS_ENV_PRELOAD_ORIG);

	if (!ls_state_getenv(LS_ENV_RUN) || ls_agent.follow_exec)
		return;
	if (orig)
		env_replace(LS_ENV_PRELOAD, orig);
	else
		env_remove(LS_ENV_PRELOAD);
#define UNSET(name) env_remove(name);
	LS_RUN_SETTINGS(UNSET)
#undef UNSET
}

void ls_state_read_cmdline(void)
{
	int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
	char *buf = ls_arena_alloc(LSNAP_MAX_PATH * 4);
	ssize_t n, len = 0;

	if (fd < 0 || !buf)
		goto out;
	while (len < LSNAP_MAX_PATH * 4 &&
	       (n = read(fd, buf + len, LSNAP_MAX_PATH * 4 - len)) > 0)
		len += n;
	ls_agent.cmdline = buf;
	ls_agent.cmdline_len = (size_t)len;
out:
	if (fd >= 0)
		close(fd);
}
