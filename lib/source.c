/*
 * source.c - the table of sources and the ones that need no file of
 * their own (the control socket's client is client.c, the post-mortem
 * reader postmortem.c, the snapshot reader snapshot.c).
 */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../common/lspm.h"
#include "client.h"
#include "postmortem.h"
#include "source.h"

int ls_source_is_pid(const char *s, pid_t *pid)
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

static int probe_pid(const char *target, const struct ls_source_opts *o)
{
	pid_t pid;

	return !o->postmortem && ls_source_is_pid(target, &pid);
}

static int load_pid(const char *target, const struct ls_source_opts *o,
		    struct ls_snapshot *snap, char *err, size_t errlen)
{
	pid_t pid;

	ls_source_is_pid(target, &pid);
	return ls_client_snapshot(pid, o->blocks, snap, err, errlen);
}

static int probe_pm_pid(const char *target, const struct ls_source_opts *o)
{
	pid_t pid;

	return o->postmortem && ls_source_is_pid(target, &pid);
}

static int load_pm_pid(const char *target, const struct ls_source_opts *o,
		       struct ls_snapshot *snap, char *err, size_t errlen)
{
	pid_t pid;

	ls_source_is_pid(target, &pid);
	if (o->beside)
		return ls_postmortem_load_in(o->beside, pid, snap, err, errlen);
	return ls_postmortem_load_pid(pid, snap, err, errlen);
}

/* A regular file starting with the post-mortem magic (which is read at
 * offsets, never streamed: a pipe or a terminal is left unread for the
 * snapshot reader, which reads a stream once). */
static int probe_pm_file(const char *target, const struct ls_source_opts *o)
{
	char magic[8] = { 0 };
	struct stat st;
	ssize_t n;
	int fd;

	if (!strcmp(target, "-") || stat(target, &st) || !S_ISREG(st.st_mode))
		return 0;
	fd = open(target, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, magic, sizeof(magic));
	close(fd);
	return n == sizeof(magic) &&
	       !memcmp(magic, LSPM_MAGIC, sizeof(LSPM_MAGIC));
}

static int load_pm_file(const char *target, const struct ls_source_opts *o,
			struct ls_snapshot *snap, char *err, size_t errlen)
{
	return ls_postmortem_load(target, snap, err, errlen);
}

/* Anything else is read as a snapshot file, which says what is wrong. */
static int probe_any(const char *target, const struct ls_source_opts *o)
{
	return 1;
}

static int load_snapshot(const char *target, const struct ls_source_opts *o,
			 struct ls_snapshot *snap, char *err, size_t errlen)
{
	int r;

	if (strcmp(target, "-"))
		return ls_snapshot_load(target, snap, err, errlen);
	r = ls_snapshot_read_fd(STDIN_FILENO, snap, err, errlen);
	if (r) {		/* the reader's reason names no file */
		char why[1024];

		snprintf(why, sizeof(why), "%s", err);
		snprintf(err, errlen, "standard input: %s", why);
	}
	return r;
}

const struct ls_source ls_sources[] = {
	{ "post-mortem of a pid", "PID with --postmortem: the post-mortem "
	  "file a dead process left", probe_pm_pid, load_pm_pid },
	{ "pid", "PID: a running process, asked over its agent's control "
	  "socket", probe_pid, load_pid },
	{ "post-mortem file", "FILE: a post-mortem file (<runtime "
	  "dir>/PID.pm)", probe_pm_file, load_pm_file },
	{ "snapshot", "FILE: a snapshot saved by 'leakscope snapshot' ('-': "
	  "standard input)",
	  probe_any, load_snapshot },
	{ NULL, NULL, NULL, NULL },
};

int ls_source_load(const char *target, const struct ls_source_opts *o,
		   struct ls_snapshot *snap, char *err, size_t errlen)
{
	const struct ls_source *s;

	memset(snap, 0, sizeof(*snap));
	for (s = ls_sources; s->name; s++)
		if (s->probe(target, o))
			return s->load(target, o, snap, err, errlen);
	snprintf(err, errlen, "'%s' is no pid and no file leakscope reads",
		 target);
	return -EINVAL;
}
