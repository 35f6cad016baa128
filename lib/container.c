/*
 * container.c - pids, roots and names of processes in other namespaces.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/openat2.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>
#include "container.h"

/* The inode of /proc/PID/ns/NAME (PID 0: ours), 0 when unreadable. */
static uint64_t ns_inode(pid_t pid, const char *name)
{
	char path[64];
	struct stat st;

	if (pid)
		snprintf(path, sizeof(path), "/proc/%d/ns/%s", (int)pid, name);
	else
		snprintf(path, sizeof(path), "/proc/self/ns/%s", name);
	return stat(path, &st) ? 0 : (uint64_t)st.st_ino;
}

ssize_t ls_container_read(int fd, char *buf, size_t cap)
{
	ssize_t n, len = 0;

	if (fd < 0)
		return -1;
	while ((size_t)len < cap - 1 &&
	       (n = read(fd, buf + len, cap - 1 - (size_t)len)) > 0)
		len += n;
	close(fd);
	buf[len] = 0;
	return len;
}

static ssize_t read_proc(pid_t pid, const char *name, char *buf, size_t cap)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/%s", (int)pid, name);
	return ls_container_read(open(path, O_RDONLY | O_CLOEXEC), buf, cap);
}

/* NSpid's last entry in a status file (name, in /proc): the pid as its
 * own PID namespace numbers it; dflt when there is none. */
static pid_t inner_pid_of(const char *name, pid_t dflt)
{
	char path[96], buf[4096], *line, *p, *end;
	long v = dflt;

	snprintf(path, sizeof(path), "/proc/%s/status", name);
	if (ls_container_read(open(path, O_RDONLY | O_CLOEXEC), buf, sizeof(buf)) <= 0 ||
	    !(line = strstr(buf, "\nNSpid:")))
		return dflt;
	p = line + 7;
	for (;;) {
		long x = strtol(p, &end, 10);

		if (end == p)
			break;
		v = x;
		p = end;
	}
	return (pid_t)v;
}

static pid_t inner_pid(pid_t pid)
{
	char name[16];

	snprintf(name, sizeof(name), "%d", (int)pid);
	return inner_pid_of(name, pid);
}

pid_t ls_container_tid(pid_t pid, pid_t tid, int inward)
{
	char name[320];
	struct dirent *de;
	pid_t found = 0;
	DIR *d;

	if (inward) {
		snprintf(name, sizeof(name), "%d/task/%d", (int)pid, (int)tid);
		return inner_pid_of(name, 0);
	}
	snprintf(name, sizeof(name), "/proc/%d/task", (int)pid);
	d = opendir(name);
	while (d && !found && (de = readdir(d))) {
		if (atoi(de->d_name) <= 0)
			continue;
		snprintf(name, sizeof(name), "%d/task/%s", (int)pid, de->d_name);
		if (inner_pid_of(name, 0) == tid)
			found = (pid_t)atoi(de->d_name);
	}
	if (d)
		closedir(d);
	return found;
}

/* Whether pid's root is not ours (chroot, pivot_root, --root=DIR). */
static int other_root(pid_t pid)
{
	char path[64];
	struct stat a, b;

	snprintf(path, sizeof(path), "/proc/%d/root", (int)pid);
	if (stat(path, &a) || stat("/", &b))
		return 1;
	return a.st_dev != b.st_dev || a.st_ino != b.st_ino;
}

/* The hostname of pid's UTS namespace, read by a child that joins it
 * (setns: CAP_SYS_ADMIN over that namespace's owner).  0 or -errno. */
static int uts_hostname(pid_t pid, char *out, size_t cap)
{
	char path[64];
	struct utsname u;
	int fds[2], ns, status;
	ssize_t n;
	pid_t child;

	snprintf(path, sizeof(path), "/proc/%d/ns/uts", (int)pid);
	ns = open(path, O_RDONLY | O_CLOEXEC);
	if (ns < 0)
		return -errno;
	if (pipe2(fds, O_CLOEXEC)) {
		close(ns);
		return -errno;
	}
	child = fork();
	if (child == 0) {
		/* Only async-signal-safe calls: the parent may be threaded. */
		if (!setns(ns, CLONE_NEWUTS) && !uname(&u))
			n = write(fds[1], u.nodename, strnlen(u.nodename,
							      sizeof(u.nodename)));
		_exit(0);
	}
	close(ns);
	close(fds[1]);
	n = child < 0 ? -1 : ls_container_read(fds[0], out, cap);
	if (child < 0)
		close(fds[0]);
	else
		while (waitpid(child, &status, 0) < 0 && errno == EINTR)
			;
	return n > 0 ? 0 : -EPERM;
}

/* The first line of /etc/hostname in pid's root, "" when none. */
static void file_hostname(const struct ls_container *c, char *out, size_t cap)
{
	int root = ls_container_root(c);
	int fd = root >= 0 || root == -1 ? ls_container_open(root,
				"/etc/hostname", O_RDONLY | O_NOFOLLOW) : -1;
	struct stat st;

	out[0] = 0;
	if (fd >= 0 && (fstat(fd, &st) || !S_ISREG(st.st_mode))) {
		close(fd);
		fd = -1;
	}
	if (fd >= 0 && ls_container_read(fd, out, cap) > 0)
		out[strcspn(out, "\n")] = 0;
	if (root >= 0)
		close(root);
}

/* The "0::PATH" line of /proc/PID/cgroup (cgroup v2). */
static void cgroup_path(pid_t pid, char *out, size_t cap)
{
	char buf[4096], *line;

	out[0] = 0;
	if (read_proc(pid, "cgroup", buf, sizeof(buf)) <= 0)
		return;
	line = !strncmp(buf, "0::", 3) ? buf : strstr(buf, "\n0::");
	if (!line)
		return;
	line += line == buf ? 3 : 4;
	snprintf(out, cap, "%.*s", (int)strcspn(line, "\n"), line);
}

int ls_container_of(pid_t pid, struct ls_container *c)
{
	char path[64];
	struct stat st;

	memset(c, 0, sizeof(*c));
	c->pid = c->nspid = pid;
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	if (stat(path, &st))
		return -ESRCH;
	c->ns_pid = ns_inode(pid, "pid");
	c->ns_mnt = ns_inode(pid, "mnt");
	c->ns_user = ns_inode(pid, "user");
	c->ns_uts = ns_inode(pid, "uts");
	c->ns_cgroup = ns_inode(pid, "cgroup");
	if (!c->ns_pid || !c->ns_mnt)
		return kill(pid, 0) && errno == ESRCH ? -ESRCH : -EACCES;
	c->nspid = inner_pid(pid);
	c->other_pid_ns = c->ns_pid != ns_inode(0, "pid");
	c->other_user_ns = c->ns_user != ns_inode(0, "user");
	c->other_root = c->ns_mnt != ns_inode(0, "mnt") || other_root(pid);
	return 0;
}

void ls_container_describe(struct ls_container *c)
{
	if (c->ns_uts && c->ns_uts != ns_inode(0, "uts"))
		uts_hostname(c->pid, c->hostname, sizeof(c->hostname));
	if (!c->hostname[0] && c->other_root)
		file_hostname(c, c->hostname, sizeof(c->hostname));
	cgroup_path(c->pid, c->cgroup, sizeof(c->cgroup));
}

int ls_container_is(const struct ls_container *c)
{
	return c->other_pid_ns || c->other_root || c->other_user_ns;
}

const char *ls_container_name(const struct ls_container *c, char *buf,
			      size_t cap)
{
	const char *slash = strrchr(c->cgroup, '/');

	if (c->hostname[0])
		snprintf(buf, cap, "%s", c->hostname);
	else if (slash && slash[1])
		snprintf(buf, cap, "%s", slash + 1);
	else
		snprintf(buf, cap, "pidns:[%llu]", (unsigned long long)c->ns_pid);
	return buf;
}

int ls_container_root(const struct ls_container *c)
{
	char path[64];
	int fd;

	if (!c->other_root)
		return -1;
	snprintf(path, sizeof(path), "/proc/%d/root", (int)c->pid);
	fd = open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
	return fd < 0 ? -errno : fd;
}

int ls_container_open(int rootfd, const char *path, int flags)
{
	struct open_how how = {
		.flags = (uint64_t)(flags | O_CLOEXEC),
		.resolve = RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS,
	};
	long fd;

	if (rootfd < 0)
		fd = open(path, flags | O_CLOEXEC);
	else
		fd = syscall(SYS_openat2, rootfd, path, &how, sizeof(how));
	return fd < 0 ? -errno : (int)fd;
}

uid_t ls_container_inner_uid(pid_t pid, uid_t uid)
{
	char buf[4096], *line = buf;
	unsigned long in, out, count;

	/* A process of our own namespace shows the map to its parent. */
	if (ns_inode(pid, "user") == ns_inode(0, "user") ||
	    read_proc(pid, "uid_map", buf, sizeof(buf)) <= 0)
		return uid;
	while (line && *line) {
		if (sscanf(line, "%lu %lu %lu", &in, &out, &count) == 3 &&
		    uid >= out && uid - out < count)
			return (uid_t)(in + (uid - out));
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	return (uid_t)-1;
}

int ls_container_userns_root(void)
{
	char buf[256];
	unsigned long in, out, count;

	if (geteuid() != 0 || ls_container_read(open("/proc/self/uid_map",
				O_RDONLY | O_CLOEXEC), buf, sizeof(buf)) <= 0)
		return 0;
	/* The initial namespace maps every uid to itself. */
	return !(sscanf(buf, "%lu %lu %lu", &in, &out, &count) == 3 &&
		 in == 0 && out == 0 && count == 4294967295ul);
}
