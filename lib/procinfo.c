/*
 * procinfo.c - reading /proc for the live commands.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../common/runtime.h"
#include "procinfo.h"

int ls_proc_uid(pid_t pid, uid_t *uid)
{
	char path[64];
	struct stat st;

	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st))
		return -ESRCH;
	*uid = st.st_uid;
	return 0;
}

/* The value of name in an environ block, or NULL. */
static const char *env_value(const char *env, size_t len, const char *name)
{
	size_t nl = strlen(name), i = 0;

	while (i < len) {
		const char *e = env + i;
		size_t el = strnlen(e, len - i);

		if (el > nl && !memcmp(e, name, nl) && e[nl] == '=')
			return e + nl + 1;
		i += el + 1;
	}
	return NULL;
}

/* An environ block is at most this long (the kernel's ARG_MAX is shared
 * by argv and envp); read into the heap, not a static buffer, so that the
 * web server's threads can call this at once. */
#define ENV_MAX (1 << 20)

/* Up to cap - 1 bytes of path, NUL-terminated: the length, or -1. */
static ssize_t read_whole(const char *path, char *buf, size_t cap)
{
	ssize_t n, len = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return -1;
	while ((size_t)len < cap - 1 &&
	       (n = read(fd, buf + len, cap - 1 - (size_t)len)) > 0)
		len += n;
	close(fd);
	buf[len] = 0;
	return len;
}

/* pid's initial environment (malloc()ed, *len bytes), or NULL. */
static char *read_environ(pid_t pid, size_t *len)
{
	char path[64], *env = malloc(ENV_MAX);
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/environ", (int)pid);
	if (!env || (n = read_whole(path, env, ENV_MAX)) < 0) {
		free(env);
		return NULL;
	}
	*len = (size_t)n;
	return env;
}

int ls_proc_runtime_dir(pid_t pid, char *buf, size_t cap)
{
	size_t len;
	char *env;
	uid_t uid;
	int r;

	if (ls_proc_uid(pid, &uid) || !(env = read_environ(pid, &len)))
		return ls_runtime_dir(buf, cap);
	r = ls_runtime_dir_from(env_value(env, len, LS_ENV_RUNTIME_DIR),
				env_value(env, len, "XDG_RUNTIME_DIR"),
				(unsigned)uid, buf, cap);
	free(env);
	if (!r && ls_runtime_dir_owned((unsigned)uid, buf, cap) < 0)
		r = -ENAMETOOLONG;
	return r;
}

int ls_proc_runtime_file(pid_t pid, const char *suffix, char *buf, size_t cap)
{
	char dir[4096];
	int n;

	if (ls_proc_runtime_dir(pid, dir, sizeof(dir)))
		return -ENAMETOOLONG;
	n = snprintf(buf, cap, "%s/%d%s", dir, (int)pid, suffix);
	return n < 0 || (size_t)n >= cap ? -ENAMETOOLONG : 0;
}

long ls_proc_status_long(pid_t pid, const char *key)
{
	char path[64], line[256];
	size_t kl = strlen(key);
	long v = -1;
	FILE *fp;

	snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
	fp = fopen(path, "re");
	if (!fp)
		return -1;
	while (fgets(line, sizeof(line), fp)) {
		if (!strncmp(line, key, kl) && line[kl] == ':') {
			v = strtol(line + kl + 1, NULL, 10);
			break;
		}
	}
	fclose(fp);
	return v;
}

char ls_proc_state(pid_t pid, pid_t tid)
{
	char path[80], buf[512], *p;

	snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)tid);
	if (read_whole(path, buf, sizeof(buf)) <= 0)
		return 0;
	p = strrchr(buf, ')');	/* the name may hold spaces and parens */
	return p && p[1] == ' ' ? p[2] : 0;
}

int ls_proc_thread_gone(pid_t pid, pid_t tid)
{
	char st = ls_proc_state(pid, tid);

	return !st || st == 'Z' || st == 'X';
}

int ls_proc_gone(pid_t pid)
{
	char path[64];
	struct dirent *de;
	int gone = 1;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
	d = opendir(path);
	if (!d)
		return 1;
	while (gone && (de = readdir(d)))
		if (atoi(de->d_name) > 0 && !ls_proc_thread_gone(pid, (pid_t)atoi(de->d_name)))
			gone = 0;
	closedir(d);
	return gone;
}

int ls_proc_has_agent(pid_t pid)
{
	char path[64], line[4096];
	FILE *f;
	int found = 0;

	snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, "/libleakscope.so") != NULL ||
			strstr(line, "/memfd:libleakscope.so") != NULL;
	fclose(f);
	return found;
}

int ls_proc_preloaded(pid_t pid)
{
	size_t len;
	char *env = read_environ(pid, &len);
	const char *v = env ? env_value(env, len, "LD_PRELOAD") : NULL;
	int found = v && strstr(v, "libleakscope") != NULL;

	free(env);
	return found;
}
