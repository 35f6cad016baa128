/*
 * cmd-snapshot.c - `leakscope snapshot PID -o FILE`: save a running
 * process's state, with every live block, for `leakscope report FILE`.
 *
 * The agent's bytes are received into memory first and kept only if they
 * read back as a whole snapshot: a bad or cut transfer never reaches
 * FILE.
 */
#include <errno.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "../lib/client.h"
#include "cmds.h"

#define A(field) LS_ARG(struct ls_snapshot_args, field)

static const struct ls_option own[] = {
	{ .kind = LS_OPT_STRING,
	  .short_name = 'o',
	  .long_name = "output",
	  .offset = A(output),
	  .argh = "FILE",
	  .help = "where to save it ('-': stdout)",
	  .want = "a file name" },
	{ .kind = LS_OPT_END },
};

const struct ls_usage ls_snapshot_usage = {
	"snapshot", "PID -o FILE",
	"save a running process's state to a file",
	"Save the state of PID's agent, with every live block, to FILE; render\n"
	"it later with 'leakscope report FILE'.",
	(const struct ls_option *const[]){ own, NULL },
	NULL,
};

/* Receive pid's snapshot into a memory file and check it reads back. */
static int receive(pid_t pid, int fd)
{
	struct ls_snapshot check;
	char err[1024];

	if (ls_client_fetch(pid, 1, fd, err, sizeof(err))) {
		ls_error("%s", err);
		return -1;
	}
	if (lseek(fd, 0, SEEK_SET) ||
	    ls_snapshot_read_fd(fd, &check, err, sizeof(err))) {
		ls_error("pid %d sent a bad snapshot: %s", (int)pid, err);
		return -1;
	}
	ls_snapshot_release(&check);
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
