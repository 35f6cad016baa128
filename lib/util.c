/*
 * util.c - helpers of the command-line tool.
 */
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>
#include "util.h"

void ls_error(const char *fmt, ...)
{
	va_list ap;

	fflush(stdout);
	fputs("leakscope: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

int ls_parse_count(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long n;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	if (*end)
		return -EINVAL;
	*out = n;
	return 0;
}

static const struct {
	const char *suffix;
	unsigned shift;
} size_suffixes[] = {
	{ "", 0 }, { "B", 0 },
	{ "K", 10 }, { "KB", 10 }, { "KiB", 10 },
	{ "M", 20 }, { "MB", 20 }, { "MiB", 20 },
	{ "G", 30 }, { "GB", 30 }, { "GiB", 30 },
	{ "T", 40 }, { "TB", 40 }, { "TiB", 40 },
};

int ls_parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long n;
	size_t i;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	n = strtoull(s, &end, 10);
	if (errno)
		return -ERANGE;
	if (end == s)
		return -EINVAL;
	for (i = 0; i < sizeof(size_suffixes) / sizeof(size_suffixes[0]); i++) {
		unsigned sh = size_suffixes[i].shift;

		if (strcasecmp(end, size_suffixes[i].suffix))
			continue;
		if (sh && n > (UINT64_MAX >> sh))
			return -ERANGE;
		*out = (uint64_t)n << sh;
		return 0;
	}
	return -EINVAL;
}

int ls_parse_seconds(const char *s, uint64_t *ns)
{
	char *end;
	double d;

	if (!s || !*s || *s == '-' || *s == '+' || *s == ' ')
		return -EINVAL;
	errno = 0;
	d = strtod(s, &end);
	if (errno || *end || end == s || !(d > 0) || d > 1e9)
		return -EINVAL;
	*ns = (uint64_t)(d * 1e9);
	return *ns ? 0 : -EINVAL;
}

int ls_outfile_open(struct ls_outfile *of, const char *path)
{
	size_t len = strlen(path) + 32;
	struct stat st;
	int err;

	memset(of, 0, sizeof(*of));
	of->path = strdup(path);
	of->tmp = malloc(len);
	if (!of->path || !of->tmp) {
		err = -ENOMEM;
		goto fail;
	}
	/* A device, FIFO or socket (/dev/null, /dev/stdout, a pipe) is
	 * written in place: renaming a file over it would replace it. */
	if (!stat(path, &st) && !S_ISREG(st.st_mode)) {
		free(of->tmp);
		of->tmp = NULL;
		of->fp = fopen(path, "we");
		if (!of->fp) {
			err = -errno;
			goto fail;
		}
		return 0;
	}
	snprintf(of->tmp, len, "%s.tmp.%d", path, (int)getpid());
	of->fp = fopen(of->tmp, "wxe");
	if (!of->fp) {
		err = -errno;
		goto fail;
	}
	return 0;
fail:
	free(of->path);
	free(of->tmp);
	memset(of, 0, sizeof(*of));
	return err;
}

int ls_outfile_commit(struct ls_outfile *of)
{
	int err = 0;

	if (!of->fp)
		return -EBADF;
	if (fflush(of->fp) || ferror(of->fp))
		err = -(errno ? errno : EIO);
	if (fclose(of->fp) && !err)
		err = -errno;
	of->fp = NULL;
	if (of->tmp && !err && rename(of->tmp, of->path))
		err = -errno;
	if (of->tmp && err)
		unlink(of->tmp);
	free(of->path);
	free(of->tmp);
	memset(of, 0, sizeof(*of));
	return err;
}

void ls_outfile_abort(struct ls_outfile *of)
{
	if (of->fp) {
		fclose(of->fp);
		if (of->tmp)
			unlink(of->tmp);
	}
	free(of->path);
	free(of->tmp);
	memset(of, 0, sizeof(*of));
}
