/*
 * target.c - loading what a live command works on.
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "../common/lspm.h"
#include "../lib/client.h"
#include "../lib/postmortem.h"
#include "target.h"
#include "../lib/util.h"

int ls_target_is_pid(const char *s, pid_t *pid)
{
	long v = 0;
	const char *p;

	if (!*s)
		return 0;
	for (p = s; *p; p++) {
		if (!isdigit((unsigned char)*p) || v > 4194304)
			return 0;
		v = v * 10 + (*p - '0');
	}
	if (v <= 0)
		return 0;
	*pid = (pid_t)v;
	return 1;
}

static int load_file(const char *path, struct ls_snapshot *snap, char *err,
		     size_t errlen)
{
	char magic[8] = { 0 };
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0) {
		snprintf(err, errlen, "cannot open '%s': %s", path, strerror(errno));
		return -errno;
	}
	n = read(fd, magic, sizeof(magic));
	close(fd);
	if (n == sizeof(magic) && !memcmp(magic, LSPM_MAGIC, sizeof(LSPM_MAGIC)))
		return ls_postmortem_load(path, snap, err, errlen);
	return ls_snapshot_load(path, snap, err, errlen);
}

int ls_target_load(const char *target, int postmortem, int blocks,
		   struct ls_snapshot *snap)
{
	char err[5000], path[4200];
	pid_t pid;
	int r;

	if (ls_target_is_pid(target, &pid)) {
		if (postmortem) {
			if (ls_postmortem_path(pid, path, sizeof(path))) {
				ls_error("post-mortem path too long");
				return -ENAMETOOLONG;
			}
			r = ls_postmortem_load(path, snap, err, sizeof(err));
			if (r == -ENOENT)
				snprintf(err, sizeof(err), "no post-mortem file "
					 "for pid %d ('%s')", (int)pid, path);
		} else {
			r = ls_client_snapshot(pid, blocks, snap, err, sizeof(err));
		}
	} else {
		r = load_file(target, snap, err, sizeof(err));
	}
	if (r)
		ls_error("%s", err);
	return r;
}

int ls_target_request(pid_t pid, const char *req, char *buf, size_t cap)
{
	char err[1024];
	int r = ls_client_request(pid, req, buf, cap, err, sizeof(err));

	if (r)
		ls_error("%s", err);
	return r;
}
