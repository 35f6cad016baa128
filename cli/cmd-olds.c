/*
 * cmd-olds.c - `leakscope olds PID|FILE [N]`: the oldest live blocks.
 */
#include <errno.h>
#include <string.h>
#include "../lib/json.h"
#include "../lib/util.h"
#include "cmds.h"

static const struct ls_option olds_options[] = {
	LS_OPT__FORMAT(struct ls_olds_args, r.ropts.format, LS_OPTF_STATS,
		       " (default text; json: the web API's olds document)"),
	LS_OPT__OUTPUT(struct ls_olds_args, r.output, 'o', ""),
	{ .kind = LS_OPT_END },
};

const struct ls_usage ls_olds_usage = {
	"olds", "[OPTIONS] PID|FILE [N]",
	"the oldest live blocks of a running process",
	"The N (default 10) oldest live blocks of a running process or of a\n"
	"snapshot saved with its blocks, with age, size, address, thread and\n"
	"stack.",
	(const struct ls_option *const[]){ olds_options, ls_ropt_options,
		NULL },
	NULL, LS_RO_OLDS,
};

/* --format json: {"format":"leakscope-olds","version":1,"pid":N,
 * "blocks_total":N,"blocks":[...]}, as the web API's olds. */
static int write_json(FILE *out, const struct ls_snapshot *snap,
		      const struct ls_report_opts *opts,
		      struct ls_symbolizer *sym, size_t n)
{
	struct ls_json j;
	int err;

	ls_json_init(&j, out);
	ls_json_object(&j, NULL);
	ls_json_str(&j, "format", "leakscope-olds");
	ls_json_u64(&j, "version", 1);
	ls_json_u64(&j, "pid", snap->hdr.pid);
	err = ls_json_olds(&j, snap, opts, sym, n);
	ls_json_end(&j);
	fputc('\n', out);
	return err ? err : ls_json_finish(&j);
}

int ls_cmd_olds(struct ls_invocation *inv)
{
	struct ls_olds_args *a = inv->args;
	struct ls_symbolizer *sym;
	struct ls_output out;
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
	if (ls_open_output(&out, a->r.output ? a->r.output : "-"))
		return LS_EXIT_ERROR;
	sym = ls_symbolizer_new(&inv->snap);
	if (ls_renderer_of(&a->r.ropts) == ls_renderer_find("json"))
		err = write_json(out.fp, &inv->snap, &a->r.ropts, sym, (size_t)n);
	else
		err = ls_render_olds(out.fp, &inv->snap, &a->r.ropts, sym,
				     (size_t)n);
	ls_symbolizer_free(sym);
	if (err) {
		ls_error("cannot write the blocks: %s", strerror(-err));
		ls_output_abort(&out);
		return LS_EXIT_ERROR;
	}
	return ls_commit_output(&out) ? LS_EXIT_ERROR : LS_EXIT_OK;
}
