/*
 * output.c - files written whole or not at all.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "output.h"

/* Fallback temporary names still on disk, for ls_output_remove_temps(). */
#define MAX_TEMPS 16
static char *volatile temps[MAX_TEMPS];

static void temp_add(char *name)
{
	int i;

	for (i = 0; i < MAX_TEMPS; i++)
		if (!temps[i]) {
			temps[i] = name;
			return;
		}
}

static void temp_drop(const char *name)
{
	int i;

	for (i = 0; i < MAX_TEMPS; i++)
		if (temps[i] == name)
			temps[i] = NULL;
}

void ls_output_remove_temps(void)
{
	int i;

	for (i = 0; i < MAX_TEMPS; i++)
		if (temps[i])
			unlink(temps[i]);
}

#define OUTPUT_BUF (1 << 20)

static void reset(struct ls_output *o)
{
	free(o->path);
	free(o->target);
	free(o->tmp);
	free(o->buf);
	memset(o, 0, sizeof(*o));
	o->fd = -1;
}

/* The regular file a path names: a symbolic link is followed, so that
 * it stays a link to the new file.  NULL with errno set. */
static char *resolve_target(const char *path)
{
	struct stat st;
	char *real;

	if (lstat(path, &st) || !S_ISLNK(st.st_mode))
		return strdup(path);
	real = realpath(path, NULL);
	/* A dangling link: replaced by the file, as a plain name would be. */
	return real ? real : strdup(path);
}

static char *dir_of(const char *path)
{
	const char *slash = strrchr(path, '/');

	if (!slash)
		return strdup(".");
	if (slash == path)
		return strdup("/");
	return strndup(path, (size_t)(slash - path));
}

/* An unnamed file beside the target; -errno when the file system cannot
 * make one (then a named temporary is used). */
static int open_unnamed(const char *target)
{
	char *dir = dir_of(target);
	int fd;

	if (!dir)
		return -ENOMEM;
	fd = open(dir, O_TMPFILE | O_WRONLY | O_CLOEXEC, 0600);
	free(dir);
	return fd < 0 ? -errno : fd;
}

static int open_named_tmp(struct ls_output *o)
{
	int fd;

	if (asprintf(&o->tmp, "%s.tmp.%d", o->target, (int)getpid()) < 0) {
		o->tmp = NULL;
		return -ENOMEM;
	}
	fd = open(o->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	if (fd < 0)
		return -errno;
	temp_add(o->tmp);
	return fd;
}

static int open_in_place(struct ls_output *o)
{
	o->in_place = 1;
	if (!strcmp(o->path, "-")) {
		o->fp = stdout;
		return 0;
	}
	o->fp = fopen(o->path, "we");
	return o->fp ? 0 : -errno;
}

static int open_replacing(struct ls_output *o)
{
	int fd;

	o->target = resolve_target(o->path);
	if (!o->target)
		return -ENOMEM;
	fd = open_unnamed(o->target);
	if (fd == -EOPNOTSUPP || fd == -EISDIR || fd == -EINVAL)
		fd = open_named_tmp(o);
	else if (fd >= 0)
		o->fd = fd;
	if (fd < 0)
		return fd;
	o->fp = fdopen(fd, "w");
	if (!o->fp) {
		close(fd);
		return -ENOMEM;
	}
	/* A report of 100k stacks is hundreds of MB: written a MiB a call,
	 * not a block (without the memory, stdio's own buffer does). */
	o->buf = malloc(OUTPUT_BUF);
	if (o->buf)
		setvbuf(o->fp, o->buf, _IOFBF, OUTPUT_BUF);
	return 0;
}

int ls_output_open(struct ls_output *o, const char *path)
{
	struct stat st;
	int err;

	memset(o, 0, sizeof(*o));
	o->fd = -1;
	o->path = strdup(path);
	if (!o->path)
		return -ENOMEM;
	/* stat() follows links: a link to a device is a device. */
	if (!strcmp(path, "-") || (!stat(path, &st) && !S_ISREG(st.st_mode)))
		err = open_in_place(o);
	else
		err = open_replacing(o);
	if (err)
		ls_output_abort(o);
	return err;
}

/* Name the unnamed file: link it under a temporary name, then rename
 * that over the target (link cannot replace a file). */
static int name_unnamed(struct ls_output *o)
{
	char proc[64];
	int err = 0;

	if (asprintf(&o->tmp, "%s.tmp.%d", o->target, (int)getpid()) < 0) {
		o->tmp = NULL;
		return -ENOMEM;
	}
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", o->fd);
	unlink(o->tmp);
	temp_add(o->tmp);
	if (linkat(AT_FDCWD, proc, AT_FDCWD, o->tmp, AT_SYMLINK_FOLLOW))
		return -errno;
	if (rename(o->tmp, o->target))
		err = -errno;
	return err;
}

static int flush_error(FILE *fp)
{
	errno = 0;
	if (fflush(fp) == EOF || ferror(fp))
		return -(errno ? errno : EIO);
	return 0;
}

int ls_output_commit(struct ls_output *o)
{
	int err;

	if (!o->fp)
		return -EBADF;
	err = flush_error(o->fp);
	if (o->fp == stdout) {
		reset(o);
		return err;
	}
	if (!err && o->fd >= 0)
		err = name_unnamed(o);
	if (fclose(o->fp) && !err)
		err = -errno;
	o->fp = NULL;
	if (!err && o->tmp && o->fd < 0 && rename(o->tmp, o->target))
		err = -errno;
	if (o->tmp) {
		if (err)
			unlink(o->tmp);
		temp_drop(o->tmp);
	}
	reset(o);
	return err;
}

void ls_output_abort(struct ls_output *o)
{
	if (o->fp && o->fp != stdout)
		fclose(o->fp);
	else if (o->fp)
		fflush(stdout);
	if (o->tmp) {
		unlink(o->tmp);
		temp_drop(o->tmp);
	}
	reset(o);
}
