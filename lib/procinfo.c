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
#include "container.h"
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
	return ls_container_read(open(path, O_RDONLY | O_CLOEXEC), buf, cap);
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

/* Whether dir (a path in root, -1: ours) is a directory, and its owner
 * (stat(2): symlinks followed inside root). */
static int dir_owner(int root, const char *dir, uid_t *owner)
{
	struct stat st;
	int fd = ls_container_open(root, dir, O_PATH | O_DIRECTORY);

	if (fd < 0)
		return 0;
	if (fstat(fd, &st)) {
		close(fd);
		return 0;
	}
	close(fd);
	*owner = st.st_uid;
	return 1;
}

/* Whether the directory that would hold dir exists in root: an agent
 * can make dir there. */
static int parent_exists(int root, const char *dir)
{
	char parent[4096];
	const char *slash = strrchr(dir, '/');
	uid_t owner;

	if (!slash || slash == dir)
		return 1;
	snprintf(parent, sizeof(parent), "%.*s", (int)(slash - dir), dir);
	return dir_owner(root, parent, &owner);
}

/*
 * The runtime dir of c's agent as c sees it (a path in root, its root
 * dir's fd, -1 when its files are ours): from its environment, its uid in
 * its own user namespace and its file system; for a dir chosen before a
 * switch to another user, that user's default (ls_runtime_dir_owned()),
 * and the same for a dir it could not make (its parent is not in its
 * mount namespace: a dir of ours named in the environment it inherited).
 */
static int runtime_dir_in(const struct ls_container *c, int root, char *buf,
			  size_t cap)
{
	size_t len;
	char *env;
	uid_t uid, inner, owner;
	int r, shm;

	if (ls_proc_uid(c->pid, &uid) || !(env = read_environ(c->pid, &len)))
		return ls_runtime_dir(buf, cap);
	inner = ls_container_inner_uid(c->pid, uid);
	if (inner == (uid_t)-1)
		inner = uid;
	shm = dir_owner(root, "/dev/shm", &owner);
	r = ls_runtime_dir_pick(env_value(env, len, LS_ENV_RUNTIME_DIR),
				env_value(env, len, "XDG_RUNTIME_DIR"),
				(unsigned)inner, shm, buf, cap);
	free(env);
	if (!r && (dir_owner(root, buf, &owner) ? owner != uid :
		   !parent_exists(root, buf)))
		r = ls_runtime_dir_pick(NULL, NULL, (unsigned)inner, shm, buf,
					cap);
	return r;
}

int ls_proc_runtime_dir(pid_t pid, char *buf, size_t cap)
{
	struct ls_container c;
	int root, r;

	ls_container_of(pid, &c);
	root = ls_container_root(&c);
	r = runtime_dir_in(&c, root, buf, cap);
	if (root >= 0)
		close(root);
	return r;
}

/* dir (a path in root) opened when it is safe for uid
 * (ls_runtime_dir_safe()): its fd, -ENOENT, or -EPERM. */
static int safe_dir_open(int root, const char *dir, unsigned uid)
{
	int fd = ls_container_open(root, dir, O_RDONLY | O_DIRECTORY |
				   O_NOFOLLOW);
	int r;

	if (fd < 0)
		return fd == -ELOOP || fd == -ENOTDIR ? -EPERM : fd;
	r = ls_runtime_dir_fd_safe(fd, uid);
	if (r) {
		close(fd);
		return r;
	}
	return fd;
}

/* A safe fallback of dir (common/runtime.h) for uid holding name: its
 * fd, its path in out; or -ENOENT. */
static int open_fallback(int root, const char *dir, unsigned uid,
			 const char *name, char *out, size_t cap)
{
	char parent[4096];
	const char *slash = strrchr(dir, '/');
	struct dirent *de;
	struct stat st;
	int fd = -ENOENT, pfd;
	DIR *d;

	if (!slash || (size_t)(slash - dir) >= sizeof(parent))
		return -ENOENT;
	snprintf(parent, sizeof(parent), "%.*s", slash == dir ? 1 :
		 (int)(slash - dir), dir);
	pfd = ls_container_open(root, parent, O_RDONLY | O_DIRECTORY);
	d = pfd >= 0 ? fdopendir(pfd) : NULL;
	if (pfd >= 0 && !d)
		close(pfd);
	while (d && fd < 0 && (de = readdir(d))) {
		if (!ls_runtime_is_fallback(slash + 1, de->d_name))
			continue;
		fd = openat(dirfd(d), de->d_name, O_RDONLY | O_DIRECTORY |
			    O_NOFOLLOW | O_CLOEXEC);
		if (fd >= 0 && (ls_runtime_dir_fd_safe(fd, uid) ||
				fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW))) {
			close(fd);
			fd = -ENOENT;
		}
		if (fd >= 0 && (size_t)snprintf(out, cap, "%s/%s", parent,
						de->d_name) >= cap) {
			close(fd);
			fd = -ENOENT;
		}
	}
	if (d)
		closedir(d);
	return fd;
}

/* Whose runtime dir to look in: pid's owner, or ours when pid is gone. */
static unsigned runtime_uid(pid_t pid)
{
	uid_t uid;

	return ls_proc_uid(pid, &uid) ? (unsigned)getuid() : (unsigned)uid;
}

/* The runtime entry's fd and path (below) in c's root (root). */
static int runtime_open_in(const struct ls_container *c, int root,
			   pid_t inner, const char *suffix, uid_t uid,
			   char *path, size_t cap)
{
	char dir[4096], name[32], fb[4096];
	struct stat st;
	int fd, n, r;

	snprintf(name, sizeof(name), "%d%s", (int)inner, suffix);
	if (runtime_dir_in(c, root, dir, sizeof(dir)))
		return -ENAMETOOLONG;
	fd = safe_dir_open(root, dir, (unsigned)uid);
	if (fd >= 0 && fstatat(fd, name, &st, AT_SYMLINK_NOFOLLOW)) {
		close(fd);
		fd = -ENOENT;
	}
	r = fd;
	if (fd < 0 && (fd = open_fallback(root, dir, (unsigned)uid, name, fb,
					  sizeof(fb))) >= 0)
		snprintf(dir, sizeof(dir), "%s", fb);
	if (root >= 0)
		n = snprintf(path, cap, "/proc/%d/root%s/%s", (int)c->pid, dir,
			     name);
	else
		n = snprintf(path, cap, "%s/%s", dir, name);
	if (n < 0 || (size_t)n >= cap) {
		if (fd >= 0)
			close(fd);
		return -ENAMETOOLONG;
	}
	return fd >= 0 ? fd : r == -EPERM ? -EPERM : -ENOENT;
}

int ls_proc_runtime_dir_open(pid_t pid, uid_t *uid, char *path, size_t cap)
{
	struct ls_container c;
	char dir[4096];
	int root, fd, n;

	if (ls_proc_uid(pid, uid) || ls_container_of(pid, &c))
		return -ESRCH;
	root = ls_container_root(&c);
	if (root < -1)
		return root;
	fd = runtime_dir_in(&c, root, dir, sizeof(dir)) ? -ENAMETOOLONG :
	     safe_dir_open(root, dir, (unsigned)*uid);
	if (root >= 0) {
		close(root);
		n = snprintf(path, cap, "/proc/%d/root%s", (int)pid, dir);
	} else {
		n = snprintf(path, cap, "%s", dir);
	}
	if (fd >= 0 && (n < 0 || (size_t)n >= cap)) {
		close(fd);
		return -ENAMETOOLONG;
	}
	return fd;
}

int ls_proc_runtime_open(pid_t pid, const char *suffix, uid_t *uid,
			 char *path, size_t cap)
{
	return ls_proc_runtime_open_in(pid, 0, suffix, uid, path, cap);
}

int ls_proc_runtime_open_in(pid_t pid, pid_t inner, const char *suffix,
			    uid_t *uid, char *path, size_t cap)
{
	struct ls_container c;
	int root, fd;

	*uid = (uid_t)runtime_uid(pid);
	/* Its namespaces unreadable: we may not look into it (ptrace's
	 * read access).  Our own process that made itself non-dumpable is
	 * taken as beside us, as it always was; for another's, or as root
	 * of a user namespace, a guess would name a wrong file. */
	if (ls_container_of(pid, &c) == -EACCES &&
	    (*uid != getuid() || ls_container_userns_root())) {
		snprintf(path, cap, "/proc/%d/root", (int)pid);
		return -EACCES;
	}
	root = ls_container_root(&c);
	if (root < -1) {
		snprintf(path, cap, "/proc/%d/root", (int)pid);
		return root;
	}
	fd = runtime_open_in(&c, root, inner ? inner : c.nspid, suffix, *uid,
			     path, cap);
	if (root >= 0)
		close(root);
	return fd;
}

int ls_proc_runtime_file(pid_t pid, const char *suffix, char *buf, size_t cap)
{
	uid_t uid;
	int fd = ls_proc_runtime_open(pid, suffix, &uid, buf, cap);

	if (fd >= 0)
		close(fd);
	return fd == -ENOENT ? 0 : fd < 0 ? fd : 0;
}

/* The inode of the socket listening on path in pid's network namespace
 * (/proc/PID/net/unix), or 0. */
static unsigned long listener_inode(pid_t pid, const char *path)
{
	char file[64], line[4200];
	unsigned long flags, ino, found = 0;
	int at;
	FILE *fp;

	snprintf(file, sizeof(file), "/proc/%d/net/unix", (int)pid);
	fp = fopen(file, "re");
	while (fp && !found && fgets(line, sizeof(line), fp)) {
		line[strcspn(line, "\n")] = 0;
		if (sscanf(line, "%*s %*s %*s %lx %*s %*s %lu %n", &flags, &ino,
			   &at) == 2 && (flags & 0x10000) && !strcmp(line + at, path))
			found = ino;
	}
	if (fp)
		fclose(fp);
	return found;
}

int ls_proc_listens_on(pid_t pid, const char *path)
{
	char dir[64], link[64], want[64];
	unsigned long ino = listener_inode(pid, path);
	struct dirent *de;
	int found = 0;
	ssize_t n;
	DIR *d;

	if (!ino)
		return 0;
	snprintf(want, sizeof(want), "socket:[%lu]", ino);
	snprintf(dir, sizeof(dir), "/proc/%d/fd", (int)pid);
	d = opendir(dir);
	while (d && !found && (de = readdir(d))) {
		n = readlinkat(dirfd(d), de->d_name, link, sizeof(link) - 1);
		if (n > 0) {
			link[n] = 0;
			found = !strcmp(link, want);
		}
	}
	if (d)
		closedir(d);
	return found;
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
