/*
 * cmd-snapshot.c - `leakscope snapshot PID -o FILE`: save a running
 * process's state, with every live block, for `leakscope report FILE`.
 *
 * The agent's bytes are received into memory first and kept only if they
 * read back as a whole snapshot: a bad or cut transfer never reaches
 * FILE.  The names of the JIT code its stacks run through, from the
 * process's perf map, are added to it (LSNAP_JIT, docs/SYMBOLS.md): the
 * map is gone, or another process's, by the time FILE is reported.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../lib/client.h"
#include "../lib/perfmap.h"
#include "cmds.h"

#define A(field) LS_ARG(struct ls_snapshot_args, field)

static const struct ls_option own[] = {
	LS_OPT__OUTPUT(struct ls_snapshot_args, output, 'o', " (the snapshot)"),
	{ .kind = LS_OPT_END },
};

const struct ls_usage ls_snapshot_usage = {
	"snapshot", "PID -o FILE",
	"save a running process's state to a file",
	"Save the state of PID's agent, with every live block, to FILE; render\n"
	"it later with 'leakscope report FILE'.",
	(const struct ls_option *const[]){ own, NULL },
	NULL,
	0,	/* no report options */
};

/* The whole memory file fd, malloc()ed, or NULL. */
static uint8_t *slurp(int fd, size_t *len)
{
	struct stat st;
	uint8_t *buf;

	if (fstat(fd, &st) || st.st_size <= 0 ||
	    !(buf = malloc((size_t)st.st_size)))
		return NULL;
	*len = (size_t)st.st_size;
	if (pread(fd, buf, *len, 0) != (ssize_t)*len) {
		free(buf);
		return NULL;
	}
	return buf;
}

/* Add to the snapshot in fd the JIT names pid's perf map gives its
 * stacks, if the process wrote a map; fd then holds the new bytes. */
static int keep_jit(pid_t pid, int fd, const struct ls_snapshot *snap)
{
	struct ls_perfmap *m = ls_perfmap_load_pid(pid);
	uint8_t *in = NULL, *out = NULL;
	size_t len = 0, outlen = 0;
	int ret = 0;

	if (!m)
		return 0;	/* no map, or not one we may read */
	if (!(in = slurp(fd, &len)) ||
	    ls_perfmap_keep(m, snap, in, len, &out, &outlen) ||
	    (out && (ftruncate(fd, 0) ||
		     pwrite(fd, out, outlen, 0) != (ssize_t)outlen))) {
		ls_error("cannot add pid %d's JIT names to its snapshot",
			 (int)pid);
		ret = -1;
	}
	free(out);
	free(in);
	ls_perfmap_free(m);
	return ret;
}

/* Receive pid's snapshot into a memory file, with its JIT names, and
 * check it reads back. */
static int receive(pid_t pid, int fd)
{
	struct ls_snapshot check;
	char err[1024];
	int pass, ret;

	if (ls_client_fetch(pid, 1, fd, err, sizeof(err))) {
		ls_error("%s", err);
		return -1;
	}
	for (pass = 0; pass < 2; pass++) {
		if (lseek(fd, 0, SEEK_SET) ||
		    ls_snapshot_read_fd(fd, &check, err, sizeof(err))) {
			ls_error("pid %d sent a bad snapshot: %s", (int)pid,
				 err);
			return -1;
		}
		ret = pass ? 0 : keep_jit(pid, fd, &check);
		ls_snapshot_release(&check);
		if (ret)
			return -1;
	}
	return lseek(fd, 0, SEEK_SET) ? -1 : 0;
}

static int copy(int from, FILE *to)
{
	char buf[65536];
	ssize_t n;

	while ((n = read(from, buf, sizeof(buf))) > 0)
		if (fwrite(buf, 1, (size_t)n, to) != (size_t)n)
			return -1;
	return n < 0 ? -1 : 0;
}

int ls_cmd_snapshot(struct ls_invocation *inv)
{
	struct ls_snapshot_args *a = inv->args;
	struct ls_output out;
	pid_t pid;
	int fd, ret = LS_EXIT_ERROR;

	if (inv->argc != 1 || !a->output) {
		ls_usage_error(&ls_snapshot_usage, "expected PID and -o FILE");
		return LS_EXIT_USAGE;
	}
	if (!ls_source_is_pid(inv->argv[0], &pid)) {
		ls_usage_error(&ls_snapshot_usage, "expected a pid");
		return LS_EXIT_USAGE;
	}
	fd = memfd_create("leakscope-snapshot", MFD_CLOEXEC);
	if (fd < 0) {
		ls_error("cannot make a memory file: %s", strerror(errno));
		return LS_EXIT_ERROR;
	}
	if (receive(pid, fd) || ls_open_output(&out, a->output))
		goto out;
	if (copy(fd, out.fp)) {
		ls_error("cannot write '%s': %s", a->output, strerror(errno));
		ls_output_abort(&out);
		goto out;
	}
	ret = ls_commit_output(&out) ? LS_EXIT_ERROR : LS_EXIT_OK;
out:
	close(fd);
	return ret;
}
