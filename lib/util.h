/*
 * util.h - small helpers of the command-line tool: number parsing, error
 * printing, files written whole or not at all.
 */
#ifndef LEAKSCOPE_UTIL_H
#define LEAKSCOPE_UTIL_H

#include <stdint.h>
#include <stdio.h>

/* Exit statuses of leakscope's own failures (as env(1) and timeout(1)). */
#define LS_EXIT_FAILURE 125	/* usage, agent, output, untraceable */
#define LS_EXIT_NOEXEC 126	/* command found but not executable */
#define LS_EXIT_NOTFOUND 127	/* command not found */
#define LS_EXIT_LEAK 99		/* --fail-on-leak tripped */

/* "leakscope: <message>\n" on stderr. */
void ls_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/*
 * "4096", "512K", "512KiB", "64M", "1G" (binary multiples) -> bytes.
 * Returns 0 or -EINVAL (junk, empty, negative) or -ERANGE.
 */
int ls_parse_size(const char *s, uint64_t *out);
/* A decimal count, no suffix. */
int ls_parse_count(const char *s, uint64_t *out);
/* Seconds, decimals allowed ("0.5") -> nanoseconds; must be > 0. */
int ls_parse_seconds(const char *s, uint64_t *ns);

/*
 * A report file written whole or not at all: opened as PATH.tmp.PID,
 * renamed to PATH on commit, removed on abort.  Opening early is how
 * `run` proves the output is writable before starting the command.  A
 * PATH that exists and is not a regular file (/dev/null, a FIFO) is
 * written in place.
 */
struct ls_outfile {
	char *path;
	char *tmp;
	FILE *fp;
};

int ls_outfile_open(struct ls_outfile *of, const char *path);
/* Close and rename; 0 or -errno (then the tmp file is removed). */
int ls_outfile_commit(struct ls_outfile *of);
/* Close and remove; accepts a never-opened (zeroed) outfile. */
void ls_outfile_abort(struct ls_outfile *of);

#endif
