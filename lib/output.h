/*
 * output.h - the output writer: a report or snapshot file written whole
 * or not at all, used by every command that writes a file.
 *
 *  - "-" is standard output;
 *  - a path that is, or is a symbolic link to, something other than a
 *    regular file (/dev/null, /dev/full, a terminal, a FIFO, a socket) is
 *    written in place: renaming a file over it would replace it;
 *  - a regular file (or a symbolic link to one, which is kept: the file
 *    it points to is replaced) is written to an unnamed file in the same
 *    directory (O_TMPFILE) and given its name only when complete, so that
 *    a writer killed at any point, even by SIGKILL, leaves nothing behind
 *    and readers never see half a file.  Where the file system cannot
 *    make unnamed files, PATH.tmp.PID is used instead, and
 *    ls_output_remove_temps() (async-signal-safe) removes it from a
 *    signal handler.  Either way the new file is created mode 0600: a
 *    report holds the program's command line (a password given there)
 *    and addresses.
 *
 * Opening early is how `run` proves the output is writable before it
 * starts the command.  Not thread-safe; no printing: errors are returned
 * as a negative errno, for the caller to word.
 */
#ifndef LEAKSCOPE_OUTPUT_H
#define LEAKSCOPE_OUTPUT_H

#include <stdio.h>

struct ls_output {
	FILE *fp;		/* write here */
	char *path;		/* as given; "-" for stdout */
	char *target;		/* the file that gets replaced (symlinks
				   resolved); NULL when written in place */
	char *tmp;		/* fallback PATH.tmp.PID, or NULL */
	int fd;			/* the unnamed file, or -1 */
	int in_place;		/* stdout, a device, a FIFO ... */
	char *buf;		/* fp's buffer for a file replaced, or NULL */
};

/* Open; 0 or a negative errno (-ENOENT: no such directory, -EACCES ...).
 * On failure *o is left closed and nothing is created. */
int ls_output_open(struct ls_output *o, const char *path);

/* Flush, check, and give the file its name.  Returns 0 or a negative
 * errno (the write error: -ENOSPC on /dev/full); on error a regular
 * file is left as it was before.  Closes o either way. */
int ls_output_commit(struct ls_output *o);

/* Close and drop what was written (a regular file is left as it was);
 * accepts a closed or zeroed output. */
void ls_output_abort(struct ls_output *o);

/* Remove every fallback temporary file still open (from a signal
 * handler: async-signal-safe). */
void ls_output_remove_temps(void);

#endif
