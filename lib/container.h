/*
 * container.h - where a process lives when it is not beside us: its pid in
 * its own PID namespace, its root file system, its namespaces, hostname
 * and cgroup (docs/CONTAINERS.md).
 *
 * A process in a container is named by the pid our /proc shows (the
 * host's pid from the host, the pod's from a sidecar); its agent names
 * its socket and post-mortem file after the pid it sees itself, and its
 * files are paths of its own root, reached through /proc/PID/root by fd
 * (openat2 with RESOLVE_IN_ROOT: a symlink in the container resolves
 * inside the container, never to a file of ours).
 *
 * Thread-safe: no static state.
 */
#ifndef LEAKSCOPE_CONTAINER_H
#define LEAKSCOPE_CONTAINER_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct ls_container {
	pid_t pid;		/* as our /proc shows it */
	pid_t nspid;		/* as it sees itself (NSpid's last entry) */
	int other_pid_ns;	/* 1: its PID namespace is not ours */
	int other_root;		/* 1: its mount namespace or root is not
				   ours: its paths go through its root */
	int other_user_ns;	/* 1: its user namespace is not ours */
	uint64_t ns_pid, ns_mnt, ns_user, ns_uts, ns_cgroup;	/* inodes */
	char hostname[65];	/* its UTS namespace's, else its
				   /etc/hostname; "" when it is ours */
	char cgroup[256];	/* its cgroup v2 path ("0::" line), "" */
};

/*
 * Fill c for pid, but for hostname and cgroup.  Returns 0, or -ESRCH when
 * pid is gone (c: pid, as if beside us), -EACCES when its namespaces
 * cannot be read (another user's process).
 */
int ls_container_of(pid_t pid, struct ls_container *c);

/*
 * Fill c's hostname and cgroup (left "" when they cannot be read).  The
 * hostname of another UTS namespace is read by a child process that
 * joins it (fork, setns): call this once per listing, not per request.
 */
void ls_container_describe(struct ls_container *c);

/* Whether c is in a PID, mount or user namespace or a root not ours
 * (a container). */
int ls_container_is(const struct ls_container *c);

/*
 * A name for c's container: its hostname, else its cgroup's last
 * component, else "pidns:[INODE]".  Into buf (cap bytes); returns buf.
 */
const char *ls_container_name(const struct ls_container *c, char *buf,
			      size_t cap);

/*
 * pid's root directory when its files are not ours (c->other_root): an
 * O_PATH fd of /proc/PID/root (O_CLOEXEC, the caller closes it); -1 when
 * they are ours; a negative errno when it cannot be opened (-EACCES: we
 * may not look into that process).  The caller checks afterwards that
 * pid is still the same process (ls_container_same()) when it matters.
 */
int ls_container_root(const struct ls_container *c);

/*
 * Open path as the process whose root is rootfd sees it: openat2() with
 * RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS (symlinks resolve inside that
 * root); a plain open() when rootfd is -1.  flags as open(2) (O_NOFOLLOW
 * applies to the last component).  The fd, or a negative errno (-ENOSYS:
 * the kernel has no openat2, before Linux 5.6).
 */
int ls_container_open(int rootfd, const char *path, int flags);

/*
 * A thread of pid: inward, our tid to the tid it sees itself; else its
 * own tid to ours.  0 when there is no such thread.
 */
pid_t ls_container_tid(pid_t pid, pid_t tid, int inward);

/*
 * Map uid as our user namespace sees it to the uid pid sees in its own
 * (/proc/PID/uid_map); the same uid when pid shares ours, (uid_t)-1 when
 * the map has no such uid.
 */
uid_t ls_container_inner_uid(pid_t pid, uid_t uid);

/*
 * Whether we run as root of a user namespace that is not the initial
 * one (a rootless container's root): the kernel refuses it what the
 * host's root may do to processes outside that namespace.
 */
int ls_container_userns_root(void);

/* Up to cap - 1 bytes of fd (a /proc file: small), NUL-terminated; the
 * length, or -1 when fd is negative.  Closes fd. */
ssize_t ls_container_read(int fd, char *buf, size_t cap);

#endif
