/*
 * fuzz-snapshot.c - the snapshot reader (lib/snapshot.c,
 * docs/SNAPSHOT-FORMAT.md), from a file and from a stream.
 *
 * The same input is read twice: from a memory file (a regular file: the
 * reader buffers freely) and from a pipe (a stream: it must never read
 * past the END record).  Both must agree, byte for byte of what they
 * accepted; a refusal must be a negative errno and one line.  What is
 * accepted then goes through every report, renderer and diff
 * (fuzz_use_snapshot), as `leakscope report FILE` would.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "fuzz.h"

/* Pipes this large take an input whole without a writer thread. */
#define PIPE_BYTES (1 << 20)

static int read_file(const uint8_t *data, size_t size,
		     struct ls_snapshot *snap, char *err, size_t errlen)
{
	int fd = fuzz_memfd(data, size), r;

	r = ls_snapshot_read_fd(fd, snap, err, errlen);
	close(fd);
	return r;
}

/* -1 when the input does not fit in a pipe (the file reading stands
 * alone), else the reader's result. */
static int read_stream(const uint8_t *data, size_t size,
		       struct ls_snapshot *snap, char *err, size_t errlen)
{
	int p[2], r;

	if (size > PIPE_BYTES || pipe2(p, O_CLOEXEC))
		return -1;
	if (fcntl(p[1], F_SETPIPE_SZ, PIPE_BYTES) < PIPE_BYTES ||
	    (size && write(p[1], data, size) != (ssize_t)size)) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	close(p[1]);
	r = ls_snapshot_read_fd(p[0], snap, err, errlen);
	close(p[0]);
	return r;
}

/* The input as it is: a refusal is one line, a success goes on. */
static void read_raw(const uint8_t *data, size_t size)
{
	struct ls_snapshot s;
	char err[512];
	int r = read_file(data, size, &s, err, sizeof(err));

	if (r)
		fuzz_check_error("snapshot file", r, err);
	else
		ls_snapshot_release(&s);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *fixed = fuzz_fix_snapshot(data, size);
	struct ls_snapshot a, b;
	char ea[512], eb[512];
	int ra, rb;

	read_raw(data, size);
	ra = read_file(fixed, size, &a, ea, sizeof(ea));
	rb = read_stream(fixed, size, &b, eb, sizeof(eb));
	free(fixed);
	if (ra)
		fuzz_check_error("snapshot file", ra, ea);
	if (rb != -1 && rb != ra)
		fuzz_fail("the file gives %d (%s), the stream %d (%s)", ra, ea,
			  rb, eb);
	if (rb != -1 && !ra && (a.nsites != b.nsites || a.nblocks != b.nblocks ||
				a.nmodules != b.nmodules || a.argc != b.argc))
		fuzz_fail("the file and the stream give different snapshots");
	if (rb == 0)
		ls_snapshot_release(&b);
	if (!ra) {
		fuzz_use_snapshot(&a, fuzz_seed(data, size));
		ls_snapshot_release(&a);
	}
	return 0;
}
