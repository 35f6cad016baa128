/*
 * store.c - the files the web server reads and writes: snapshots saved
 * through the API (one directory of the user's, named by the server) and
 * the post-mortem files of dead processes (in the runtime dirs).
 *
 * No path ever comes from a request: a saved snapshot is named by a
 * validated file name inside the snapshot dir, opened without following
 * links; a post-mortem file by a pid.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <glob.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "../common/contract.h"
#include "../common/runtime.h"
#include "../lib/client.h"
#include "../lib/json.h"
#include "../lib/container.h"
#include "../lib/postmortem.h"
#include "../lib/procinfo.h"
#include "internal.h"
#include "agents.h"
#include "store.h"
#include "reply.h"

#define NAME_MAX_LEN 128
#define SUFFIX LS_SUFFIX_SNAP

char *ls_web_store_default_dir(void)
{
	const char *state = getenv("XDG_STATE_HOME"), *home = getenv("HOME");
	char *dir = NULL;

	if (state && *state == '/') {
		if (asprintf(&dir, "%s/leakscope/snapshots", state) < 0)
			dir = NULL;
	} else if (home && *home == '/') {
		if (asprintf(&dir, "%s/.local/state/leakscope/snapshots", home) < 0)
			dir = NULL;
	}
	return dir;
}

int ls_web_store_mkdir(const char *dir)
{
	char *p, *copy = strdup(dir);
	int r = 0;

	if (!copy)
		return -ENOMEM;
	for (p = copy + 1; ; p++) {
		if (*p && *p != '/')
			continue;
		char c = *p;

		*p = 0;
		if (mkdir(copy, 0700) && errno != EEXIST) {
			r = -errno;
			break;
		}
		if (!(*p = c))
			break;
	}
	free(copy);
	return r;
}

int ls_web_store_name_ok(const char *name)
{
	size_t n = strlen(name), i;

	if (n <= strlen(SUFFIX) || n > NAME_MAX_LEN ||
	    strcmp(name + n - strlen(SUFFIX), SUFFIX) || strstr(name, ".."))
		return 0;
	for (i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || (i && strchr("._-", c))))
			return 0;
	}
	return 1;
}

/* ------------------------------------------------------------- saving */

/* A new file "PID-YYYYmmddTHHMMSSZ[-N].lsnap.tmp" opened O_EXCL, whose
 * final name is free too; the lock keeps two requests off one name. */
static int create_name(struct ls_web *w, pid_t pid, char *name, size_t cap,
		       char *path, size_t pcap)
{
	char stamp[32];
	time_t now = time(NULL);
	struct tm tm;
	int fd = -1, k;

	gmtime_r(&now, &tm);
	strftime(stamp, sizeof(stamp), "%Y%m%dT%H%M%SZ", &tm);
	pthread_mutex_lock(&w->store_lock);
	for (k = 0; k < 100 && fd < 0; k++) {
		if (k)
			snprintf(name, cap, "%d-%s-%d" SUFFIX, (int)pid, stamp, k);
		else
			snprintf(name, cap, "%d-%s" SUFFIX, (int)pid, stamp);
		snprintf(path, pcap, "%s/%s", w->snapdir, name);
		if (!access(path, F_OK))
			continue;
		snprintf(path, pcap, "%s/%s" LS_SUFFIX_TMP, w->snapdir, name);
		fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC |
			  O_NOFOLLOW, 0600);
		if (fd < 0 && errno != EEXIST)
			break;
	}
	pthread_mutex_unlock(&w->store_lock);
	return fd;
}

/* Bytes the snapshot dir's files take (their blocks), or -errno. */
static int64_t dir_usage(const char *dir)
{
	int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct dirent *de;
	struct stat st;
	int64_t sum = 0;
	DIR *d;

	if (dfd < 0 || !(d = fdopendir(dfd))) {
		if (dfd >= 0)
			close(dfd);
		return -errno;
	}
	while ((de = readdir(d)))
		if (!fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) &&
		    S_ISREG(st.st_mode))
			sum += (int64_t)st.st_blocks * 512;
	closedir(d);
	return sum;
}

int ls_web_store_save(struct ls_web *w, pid_t pid, char *name, size_t cap,
		      struct ls_web_reply *rep)
{
	char tmp[4400], final[4400], err[5000];
	struct ls_snapshot check;
	int64_t used = dir_usage(w->snapdir);
	int fd, r;

	/* Each snapshot is capped (LS_WEB_REPLY_MAX), and none is taken
	 * once the dir holds the quota: an agent cannot fill the disk. */
	if (used >= (int64_t)LS_WEB_STORE_QUOTA)
		return ls_web_error(rep, 507, "the snapshot dir '%s' holds %lld "
				    "MiB, its quota is %llu MiB: delete some",
				    w->snapdir, (long long)(used >> 20),
				    (unsigned long long)(LS_WEB_STORE_QUOTA >> 20));
	fd = create_name(w, pid, name, cap, tmp, sizeof(tmp));
	if (fd < 0)
		return ls_web_error(rep, 500, "cannot write in '%s': %s",
				    w->snapdir, strerror(errno));
	r = ls_client_fetch(pid, 1, fd, err, sizeof(err));
	if (close(fd) && !r) {
		r = -errno;
		snprintf(err, sizeof(err), "cannot write '%s': %s", tmp,
			 strerror(errno));
	}
	/* Only a snapshot that reads back whole is kept. */
	if (!r && !(r = ls_snapshot_load(tmp, &check, err, sizeof(err))))
		ls_snapshot_release(&check);
	else if (!r)
		r = -EINVAL;
	snprintf(final, sizeof(final), "%s/%s", w->snapdir, name);
	if (!r && rename(tmp, final)) {
		r = -errno;
		snprintf(err, sizeof(err), "cannot write '%s': %s", final,
			 strerror(errno));
	}
	if (r) {
		unlink(tmp);
		return ls_web_error(rep, ls_web_status_of(r), "%s", err);
	}
	return 0;
}

/* ------------------------------------------------------------ reading */

/* Open a saved snapshot: a regular file, no link followed. */
static int open_saved(struct ls_web *w, const char *name,
		      struct ls_web_reply *rep)
{
	int dfd = open(w->snapdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC), fd;
	struct stat st;

	if (dfd < 0)
		return -ls_web_error(rep, 500, "cannot open '%s': %s",
				     w->snapdir, strerror(errno));
	fd = openat(dfd, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NONBLOCK);
	close(dfd);
	if (fd < 0 || fstat(fd, &st) || !S_ISREG(st.st_mode)) {
		if (fd >= 0)
			close(fd);
		return -ls_web_error(rep, 404, "no saved snapshot '%s'", name);
	}
	return fd;
}

int ls_web_store_load(struct ls_web *w, const char *name,
		      struct ls_snapshot *snap, struct ls_web_reply *rep)
{
	char err[1024];
	int fd = open_saved(w, name, rep), r;

	memset(snap, 0, sizeof(*snap));
	if (fd < 0)
		return -fd;
	r = ls_snapshot_read_fd(fd, snap, err, sizeof(err));
	close(fd);
	if (r)
		return ls_web_error(rep, r == -ENOBUFS ? 503 : 422, "'%s': %s",
				    name, err);
	return 0;
}

int ls_web_store_remove(struct ls_web *w, const char *name,
			struct ls_web_reply *rep)
{
	int fd = open_saved(w, name, rep), dfd;

	if (fd < 0)
		return -fd;
	close(fd);
	dfd = open(w->snapdir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0 || unlinkat(dfd, name, 0)) {
		int e = errno;

		if (dfd >= 0)
			close(dfd);
		return ls_web_error(rep, 500, "cannot remove '%s': %s", name,
				    strerror(e));
	}
	close(dfd);
	return 0;
}

static int by_name(const struct dirent **a, const struct dirent **b)
{
	return strcmp((*a)->d_name, (*b)->d_name);
}

static int valid_entry(const struct dirent *d)
{
	return ls_web_store_name_ok(d->d_name);
}

int ls_web_store_list(struct ls_web *w, struct ls_json *j)
{
	struct dirent **names = NULL;
	char path[4400];
	struct stat st;
	int n, i;

	n = scandir(w->snapdir, &names, valid_entry, by_name);
	ls_json_str(j, "dir", w->snapdir);
	ls_json_array(j, "snapshots");
	for (i = 0; i < n; i++) {
		snprintf(path, sizeof(path), "%s/%s", w->snapdir,
			 names[i]->d_name);
		if (!lstat(path, &st) && S_ISREG(st.st_mode)) {
			ls_json_object(j, NULL);
			ls_json_str(j, "name", names[i]->d_name);
			ls_json_u64(j, "pid", strtoul(names[i]->d_name, NULL, 10));
			ls_json_u64(j, "bytes", (uint64_t)st.st_size);
			ls_json_u64(j, "mtime", (uint64_t)st.st_mtime);
			ls_json_end(j);
		}
		free(names[i]);
	}
	free(names);
	ls_json_end(j);
	return n < 0 && errno != ENOENT ? -errno : 0;
}

/* -------------------------------------------------------- post-mortem */

/*
 * The runtime dirs whose post-mortem files this user may read: its own
 * (as the agents compute it) and its fallbacks; for root also every
 * user's default dirs and theirs.
 * NEEDSWORK: a dead process whose agent had its own LEAKSCOPE_RUNTIME_DIR
 * elsewhere is not found; the CLI's `report --postmortem` has the same
 * limit once the process is gone.
 */
static int runtime_dirs(glob_t *g)
{
	static const char *const patterns[] = {
		"/dev/shm/leakscope-*", "/run/user/*/leakscope",
		"/tmp/leakscope-*",
	};
	char own[4096], fallbacks[4200];
	size_t i;
	int flags = 0;

	memset(g, 0, sizeof(*g));
	if (ls_runtime_dir(own, sizeof(own)))
		return -ENAMETOOLONG;
	if (glob(own, GLOB_NOCHECK | GLOB_NOESCAPE, NULL, g))
		return -ENOMEM;
	flags = GLOB_APPEND | GLOB_NOESCAPE;
	/* A squatted dir's fallbacks (common/runtime.h). */
	snprintf(fallbacks, sizeof(fallbacks), "%s.??????", own);
	glob(fallbacks, flags, NULL, g);
	for (i = 0; getuid() == 0 && i < sizeof(patterns) / sizeof(*patterns); i++)
		glob(patterns[i], flags, NULL, g);
	return 0;
}

/* A "<pid>.pm" regular file this user owns (any for root), of a pid
 * that no longer runs. */
static int dead_pm(const char *dir, const char *name, pid_t *pid,
		   struct stat *st)
{
	char path[4400], num[16];
	size_t n = strlen(name), sl = strlen(LS_SUFFIX_PM);

	if (n <= sl || n - sl >= sizeof(num) ||
	    strcmp(name + n - sl, LS_SUFFIX_PM))
		return 0;
	memcpy(num, name, n - sl);
	num[n - sl] = 0;
	if (!ls_web_parse_pid(num, pid))
		return 0;
	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (lstat(path, st) || !S_ISREG(st->st_mode) ||
	    (getuid() != 0 && st->st_uid != getuid()))
		return 0;
	return kill(*pid, 0) && errno == ESRCH;
}

/* The rest of a listing's entry, and its end. */
static void put_pm_file(struct ls_json *j, const char *dir,
			const struct stat *st)
{
	ls_json_str(j, "dir", dir);
	ls_json_u64(j, "uid", (uint64_t)st->st_uid);
	ls_json_u64(j, "bytes", (uint64_t)st->st_blocks * 512);
	ls_json_u64(j, "mtime", (uint64_t)st->st_mtime);
	ls_json_end(j);
}

static void list_dir(struct ls_json *j, const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct stat st;
	pid_t pid;

	while (d && (de = readdir(d))) {
		if (!dead_pm(dir, de->d_name, &pid, &st))
			continue;
		ls_json_object(j, NULL);
		ls_json_u64(j, "pid", (uint64_t)pid);
		put_pm_file(j, dir, &st);
	}
	if (d)
		closedir(d);
}

/* The own dir may match root's patterns too (a LEAKSCOPE_RUNTIME_DIR
 * under /tmp): list each dir once. */
static int seen_before(const glob_t *g, size_t i)
{
	size_t k;

	for (k = 0; k < i; k++)
		if (!strcmp(g->gl_pathv[k], g->gl_pathv[i]))
			return 1;
	return 0;
}

/* ------------------------------------- post-mortem files in containers */

#define CONTAINERS_MAX 256

/* Whether a process of PID namespace ns is pid n there. */
static int alive_in(uint64_t ns, pid_t n)
{
	struct ls_container c;
	struct dirent *de;
	DIR *d = opendir("/proc");
	pid_t pid;
	int found = 0;

	while (d && !found && (de = readdir(d)))
		found = ls_web_parse_pid(de->d_name, &pid) &&
			!ls_container_of(pid, &c) && c.ns_pid == ns &&
			c.nspid == n;
	if (d)
		closedir(d);
	return found;
}

/* The dead processes' post-mortem files in the runtime dir of beside's
 * agent, in beside's container (c). */
static void list_container(struct ls_json *j, struct ls_container *c)
{
	char dir[4200], name[300];
	struct dirent *de;
	struct stat st;
	uid_t uid;
	pid_t n;
	int fd = ls_proc_runtime_dir_open(c->pid, &uid, dir, sizeof(dir));
	DIR *d = fd >= 0 ? fdopendir(fd) : NULL;

	if (fd >= 0 && !d)
		close(fd);
	if (d)
		ls_container_describe(c);
	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name), sl = strlen(LS_SUFFIX_PM);

		if (len <= sl || strcmp(de->d_name + len - sl, LS_SUFFIX_PM) ||
		    len - sl >= 16)
			continue;
		snprintf(name, sizeof(name), "%.*s", (int)(len - sl), de->d_name);
		if (!ls_web_parse_pid(name, &n) ||
		    fstatat(dirfd(d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) ||
		    !S_ISREG(st.st_mode) || st.st_uid != uid ||
		    alive_in(c->ns_pid, n))
			continue;
		ls_json_object(j, NULL);
		ls_json_u64(j, "pid", (uint64_t)n);
		ls_json_u64(j, "in", (uint64_t)c->pid);
		ls_json_str(j, "container", ls_container_name(c, name,
							      sizeof(name)));
		put_pm_file(j, dir, &st);
	}
	if (d)
		closedir(d);
}

/*
 * The containers this user may look into (root: all; else its own
 * processes'), by one live process of each mount namespace not ours:
 * their runtime dirs hold the post-mortem files of processes that ran
 * there, named by the pids they had inside (docs/CONTAINERS.md).
 */
static void list_containers(struct ls_json *j)
{
	uint64_t seen[CONTAINERS_MAX];
	struct ls_container c;
	struct dirent *de;
	size_t n = 0, i;
	uid_t owner;
	pid_t pid;
	DIR *d = opendir("/proc");

	while (d && n < CONTAINERS_MAX && (de = readdir(d))) {
		if (!ls_web_parse_pid(de->d_name, &pid) ||
		    ls_proc_uid(pid, &owner) ||
		    (getuid() != 0 && owner != getuid()) ||
		    ls_container_of(pid, &c) || !c.other_root)
			continue;
		for (i = 0; i < n && seen[i] != c.ns_mnt; i++)
			;
		if (i < n)
			continue;
		seen[n++] = c.ns_mnt;
		list_container(j, &c);
	}
	if (d)
		closedir(d);
}

int ls_web_postmortem_list(struct ls_json *j)
{
	glob_t g;
	size_t i;
	int r = runtime_dirs(&g);

	ls_json_array(j, "postmortem");
	for (i = 0; !r && i < g.gl_pathc; i++)
		if (!seen_before(&g, i))
			list_dir(j, g.gl_pathv[i]);
	if (!r)
		list_containers(j);
	ls_json_end(j);
	if (!r)
		globfree(&g);
	return r;
}

int ls_web_postmortem_load_in(pid_t beside, pid_t pid,
			      struct ls_snapshot *snap, struct ls_web_reply *rep)
{
	char err[1024];
	int r = ls_postmortem_load_in(beside, pid, snap, err, sizeof(err));

	if (r == -ENOENT)
		return ls_web_error(rep, 404, "%s", err);
	if (r == -EACCES || r == -EPERM)
		return ls_web_error(rep, 403, "%s", err);
	if (r)
		return ls_web_error(rep, 422, "%s", err);
	return 0;
}

int ls_web_postmortem_load(pid_t pid, struct ls_snapshot *snap,
			   struct ls_web_reply *rep)
{
	char name[32], path[4400], err[1024];
	struct stat st;
	pid_t got;
	glob_t g;
	size_t i;
	int r = -ENOENT;

	memset(snap, 0, sizeof(*snap));
	if (runtime_dirs(&g))
		return ls_web_error(rep, 500, "no runtime dir");
	snprintf(name, sizeof(name), "%d" LS_SUFFIX_PM, (int)pid);
	for (i = 0; i < g.gl_pathc && r == -ENOENT; i++) {
		int dfd;

		if (!dead_pm(g.gl_pathv[i], name, &got, &st))
			continue;
		/* Read only from a dir safe for the file's owner, a file of
		 * that owner's, never through a symlink or from a FIFO. */
		dfd = ls_runtime_dir_open(g.gl_pathv[i], (unsigned)st.st_uid);
		if (dfd < 0)
			continue;
		snprintf(path, sizeof(path), "%s/%s", g.gl_pathv[i], name);
		r = ls_postmortem_load_at(dfd, name, st.st_uid, path, snap, err,
					  sizeof(err));
		close(dfd);
	}
	globfree(&g);
	if (r == -ENOENT)
		return ls_web_error(rep, 404, "no post-mortem file of a dead "
				    "process %d", (int)pid);
	if (r)
		return ls_web_error(rep, r == -ENOBUFS ? 503 : 422, "%s", err);
	return 0;
}
