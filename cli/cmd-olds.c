/*
 * cmd-olds.c - `leakscope olds PID|FILE [N]`: the oldest live blocks.
 */
#include <errno.h>
#include <string.h>
#include "../lib/util.h"
#include "cmds.h"

const struct ls_usage ls_olds_usage = {
	"olds", "[OPTIONS] PID|FILE [N]",
	"the oldest live blocks of a running process",
	"The N (default 10) oldest live blocks of a running process or of a\n"
	"snapshot saved with its blocks, with age, size, address, thread and\n"
	"stack.",
	(const struct ls_option *const[]){ ls_stack_options, NULL },
	NULL,
};

int ls_cmd_olds(struct ls_invocation *inv)
{
	struct ls_olds_args *a = inv->args;
	struct ls_symbolizer *sym;
	uint64_t n = 10;
	int err;

	if (inv->argc == 2 && (ls_parse_count(inv->argv[1], &n) || !n)) {
		ls_usage_error(&ls_olds_usage, "N must be a positive number");
		return LS_EXIT_USAGE;
	}
	if (!inv->snap.has_blocks) {
		ls_error("'%s' has no block list", inv->argv[0]);
		return LS_EXIT_ERROR;
	}
	sym = ls_symbolizer_new(&inv->snap);
	err = ls_render_olds(stdout, &inv->snap, &a->r.ropts, sym, (size_t)n);
	ls_symbolizer_free(sym);
	if (!err && (fflush(stdout) || ferror(stdout)))
		err = -EIO;
	if (err) {
		ls_error("cannot write the blocks: %s", strerror(-err));
		return LS_EXIT_ERROR;
	}
	return LS_EXIT_OK;
}
