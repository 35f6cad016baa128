/*
 * live.c - commands on a running process, a saved snapshot or a
 * post-mortem file: report, snapshot, reset, stats, olds.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../lib/client.h"
#include "cmd.h"
#include "../lib/json.h"
#include "../lib/render.h"
#include "../lib/symbolize.h"
#include "target.h"
#include "../lib/util.h"

enum {
	OPT_POSTMORTEM = LS_OPT_REPORT_END,
	OPT_GROWING,
	OPT_HELP,
};

/* Status of the live commands' own failures. */
#define FAIL 1

static int usage_error(const char *cmd, const char *what)
{
	ls_error("%s (see 'leakscope %s --help')", what, cmd);
	return FAIL;
}

static int unknown_option(const char *cmd, char **argv)
{
	char msg[256];

	snprintf(msg, sizeof(msg), "unknown option '%s'", argv[optind - 1]);
	return usage_error(cmd, msg);
}

/* Render snap to --output FILE (whole or not at all) or stdout. */
static int render_to(const struct ls_snapshot *snap,
		     const struct ls_report_opts *opts, const char *output)
{
	return ls_cli_render(snap, opts, output, 0, NULL);
}

int ls_cli_render(const struct ls_snapshot *snap,
		  const struct ls_report_opts *opts, const char *output,
		  unsigned gate_kinds, struct ls_gate *gate)
{
	struct ls_outfile of = { 0 };
	struct ls_report rep;
	FILE *fp = stdout;
	int r;

	r = ls_report_build(snap, opts, &rep);
	if (r == -ENODATA) {
		ls_error("this snapshot has no block list: --min-age, --min-size, "
			 "--max-size and --show-allocs need a live pid or a "
			 "snapshot saved with blocks");
		return FAIL;
	}
	if (r) {
		ls_error("cannot build the report: %s", strerror(-r));
		return FAIL;
	}
	if (output && (r = ls_outfile_open(&of, output))) {
		ls_error("cannot write '%s': %s", output, strerror(-r));
		ls_report_release(&rep);
		return FAIL;
	}
	if (output)
		fp = of.fp;
	r = ls_report_render(fp, &rep, opts);
	if (gate)
		ls_report_gate(&rep, gate_kinds, gate);
	ls_report_release(&rep);
	if (output) {
		if (r)
			ls_outfile_abort(&of);
		else
			r = ls_outfile_commit(&of);
	} else {
		fflush(stdout);
	}
	if (r) {
		ls_error("cannot write the report: %s", strerror(-r));
		return FAIL;
	}
	return 0;
}

static const char report_usage[] =
"usage: leakscope report [OPTIONS] PID|FILE\n"
"\n"
"Report the outstanding allocations of a running process (PID, whose agent\n"
"is asked over its control socket), of a snapshot saved by 'leakscope\n"
"snapshot', or of a post-mortem file.\n"
"\n"
"  --postmortem     PID names a dead process: read its post-mortem file\n"
"  --growing        only sites whose growth is linear or exponential\n"
"  --format, --output, --top, --min-age, --min-size, --max-size,\n"
"  --show-allocs    as for 'leakscope run'\n";

int ls_cmd_report(int argc, char **argv)
{
	static const struct option longopts[] = {
		LS_REPORT_LONGOPTS,
		{ "postmortem", no_argument, NULL, OPT_POSTMORTEM },
		{ "growing", no_argument, NULL, OPT_GROWING },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct ls_report_opts opts = { 0 };
	struct ls_snapshot snap;
	const char *output = NULL;
	int c, k, postmortem = 0, r;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
		k = ls_report_option(c, optarg, &opts, &output);
		if (k < 0)
			return FAIL;
		if (k)
			continue;
		if (c == OPT_POSTMORTEM)
			postmortem = 1;
		else if (c == OPT_GROWING)
			opts.growing = 1;
		else if (c == OPT_HELP || c == 'h')
			return fputs(report_usage, stdout), 0;
		else
			return unknown_option("report", argv);
	}
	if (optind != argc - 1)
		return usage_error("report", "expected one PID or FILE");
	ls_report_opts_finish(&opts);
	if (ls_target_load(argv[optind], postmortem, opts.need_blocks, &snap))
		return FAIL;
	r = render_to(&snap, &opts, output);
	ls_snapshot_release(&snap);
	return r;
}

/* --- snapshot ---------------------------------------------------------------- */

static const char snapshot_usage[] =
"usage: leakscope snapshot PID -o FILE\n"
"\n"
"Save the state of PID's agent, with every live block, to FILE; render it\n"
"later with 'leakscope report FILE'.\n";

int ls_cmd_snapshot(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "output", required_argument, NULL, 'o' },
		{ "help", no_argument, NULL, OPT_HELP },
		{ NULL, 0, NULL, 0 },
	};
	struct ls_snapshot check;
	char err[1024], *tmp = NULL;
	const char *out = NULL;
	pid_t pid;
	int c, fd, r = FAIL;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "ho:", longopts, NULL)) != -1) {
		if (c == 'o')
			out = optarg;
		else if (c == OPT_HELP || c == 'h')
			return fputs(snapshot_usage, stdout), 0;
		else if (c == ':' || c == '?')
			return unknown_option("snapshot", argv);
	}
	if (optind != argc - 1 || !out)
		return usage_error("snapshot", "expected PID and -o FILE");
	if (!ls_target_is_pid(argv[optind], &pid))
		return usage_error("snapshot", "expected a pid");
	if (asprintf(&tmp, "%s.tmp.%d", out, (int)getpid()) < 0)
		return FAIL;
	fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0644);
	if (fd < 0) {
		ls_error("cannot write '%s': %s", out, strerror(errno));
		goto out;
	}
	if (ls_client_fetch(pid, 1, fd, err, sizeof(err))) {
		ls_error("%s", err);
		close(fd);
		goto drop;
	}
	if (close(fd)) {
		ls_error("cannot write '%s': %s", out, strerror(errno));
		goto drop;
	}
	/* Only a snapshot that reads back whole is kept. */
	if (ls_snapshot_load(tmp, &check, err, sizeof(err))) {
		ls_error("pid %d sent a bad snapshot: %s", (int)pid, err);
		goto drop;
	}
	ls_snapshot_release(&check);
	if (rename(tmp, out)) {
		ls_error("cannot write '%s': %s", out, strerror(errno));
		goto drop;
	}
	r = 0;
	goto out;
drop:
	unlink(tmp);
out:
	free(tmp);
	return r;
}

/* --- reset ------------------------------------------------------------------- */

int ls_cmd_reset(int argc, char **argv)
{
	char reply[256];
	pid_t pid;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return fputs("usage: leakscope reset PID\n\nForget the blocks "
			     "PID's agent has seen so far: later reports show "
			     "only newer ones.\n", stdout), 0;
	if (argc != 2 || !ls_target_is_pid(argv[1], &pid))
		return usage_error("reset", "expected one PID");
	if (ls_target_request(pid, "reset", reply, sizeof(reply)))
		return FAIL;
	if (strcmp(reply, "OK")) {
		ls_error("pid %d: unexpected answer '%s'", (int)pid, reply);
		return FAIL;
	}
	printf("pid %d: reset\n", (int)pid);
	return 0;
}

/* --- stats ------------------------------------------------------------------- */

static uint64_t live_sites(const struct ls_snapshot *s)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < s->nsites; i++)
		n += s->sites[i].live_blocks > 0;
	return n;
}

static void stats_text(FILE *fp, const struct ls_snapshot *s)
{
	const struct lsnap_totals *t = &s->totals;
	const struct lsnap_mallinfo *m = &s->mallinfo;
	size_t i;

	fprintf(fp, "pid %u, %s, %u threads seen, up %.1fs\n", s->hdr.pid,
		s->hdr.mode == LSNAP_MODE_SAMPLED ? "sampled (estimates)" :
		"full tracking", s->hdr.nthreads,
		(double)(s->hdr.mono_ns - s->hdr.start_mono_ns) / 1e9);
	fprintf(fp, "live:      %" PRIu64 " bytes in %" PRIu64 " blocks, peak %"
		PRIu64 " bytes\n", t->live_bytes, t->live_blocks,
		t->peak_live_bytes);
	fprintf(fp, "allocated: %" PRIu64 " bytes in %" PRIu64 " blocks\n",
		t->allocated_bytes, t->allocated_blocks);
	fprintf(fp, "sites:     %zu, %" PRIu64 " holding memory\n", s->nsites,
		live_sites(s));
	fputs("calls:    ", fp);
	for (i = 0; i < s->ncalls; i++)
		fprintf(fp, " %s %" PRIu64, s->calls[i].name, s->calls[i].count);
	fputc('\n', fp);
	if (s->has_mallinfo)
		fprintf(fp, "allocator: arena %" PRIu64 ", in use %" PRIu64
			", free %" PRIu64 ", mmapped %" PRIu64 " in %" PRIu64
			" blocks, releasable %" PRIu64 "\n", m->arena, m->uordblks,
			m->fordblks, m->hblkhd, m->hblks, m->keepcost);
	if (s->has_unwind) {
		const struct lsnap_unwind *u = &s->unwind;
		uint64_t all = u->walks + u->memo_hits;

		fprintf(fp, "stacks:    %" PRIu64 " captured, %" PRIu64
			" walked, %.1f%% from the walk memo", all, u->walks,
			all ? 100.0 * (double)u->memo_hits / (double)all : 0.0);
		if (u->unwinder == LSNAP_UNWINDER_CHECK)
			fprintf(fp, ", %" PRIu64 " differ from libunwind",
				u->check_mismatches);
		fputc('\n', fp);
	}
}

int ls_cmd_stats(int argc, char **argv)
{
	struct ls_snapshot snap;
	int json = 0;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return fputs("usage: leakscope stats [--format text|json] PID|FILE\n\n"
			     "Calls per function, live and total figures, and the "
			     "allocator's own statistics.\n", stdout), 0;
	if (argc == 4 && !strcmp(argv[1], "--format")) {
		if (strcmp(argv[2], "json") && strcmp(argv[2], "text"))
			return usage_error("stats", "--format is text or json");
		json = !strcmp(argv[2], "json");
		argv += 2;
		argc -= 2;
	}
	if (argc != 2)
		return usage_error("stats", "expected one PID or FILE");
	if (ls_target_load(argv[1], 0, 0, &snap))
		return FAIL;
	if (json)
		ls_render_stats_json(stdout, &snap);
	else
		stats_text(stdout, &snap);
	ls_snapshot_release(&snap);
	return 0;
}

/* --- olds -------------------------------------------------------------------- */

static int by_birth(const void *a, const void *b)
{
	const struct ls_block *x = a, *y = b;

	return x->birth_ns < y->birth_ns ? -1 : x->birth_ns > y->birth_ns ? 1 :
	       x->addr < y->addr ? -1 : x->addr > y->addr;
}

static void print_stack(FILE *fp, struct ls_symbolizer *sym,
			const struct ls_site *site)
{
	struct ls_symframe f[LS_SYM_MAX_FRAMES];
	size_t n, i, k;

	for (i = 0; i < site->nframes; i++) {
		if (ls_symbolize_frame(sym, site->gen, site->frames[i], f,
				       LS_SYM_MAX_FRAMES, &n) || !n)
			continue;
		for (k = 0; k < n; k++) {
			if (f[k].function)
				fprintf(fp, "\t\t%s%s", f[k].function,
					f[k].inlined ? " (inlined)" : "");
			else
				fprintf(fp, "\t\t0x%" PRIx64, f[k].addr);
			if (f[k].function && !f[k].inlined)
				fprintf(fp, "+0x%" PRIx64, f[k].offset);
			fprintf(fp, " [%s]", f[k].module ?
				ls_sym_basename(f[k].module) : "unknown");
			if (f[k].file)
				fprintf(fp, " %s:%d", ls_sym_basename(f[k].file),
					f[k].line);
			fputc('\n', fp);
		}
	}
}

int ls_cmd_olds(int argc, char **argv)
{
	struct ls_symbolizer *sym;
	struct ls_snapshot snap;
	uint64_t n = 10;
	size_t i;

	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return fputs("usage: leakscope olds PID|FILE [N]\n\nThe N (default "
			     "10) oldest live blocks, with age, size, address, "
			     "thread and stack.\n", stdout), 0;
	if (argc < 2 || argc > 3)
		return usage_error("olds", "expected PID [N]");
	if (argc == 3 && (ls_parse_count(argv[2], &n) || !n))
		return usage_error("olds", "N must be a positive number");
	if (ls_target_load(argv[1], 0, 1, &snap))
		return FAIL;
	if (!snap.has_blocks) {
		ls_error("'%s' has no block list", argv[1]);
		ls_snapshot_release(&snap);
		return FAIL;
	}
	qsort(snap.blocks, snap.nblocks, sizeof(*snap.blocks), by_birth);
	sym = ls_symbolizer_new(&snap);
	printf("pid %u: %" PRIu64 " oldest of %zu live blocks\n", snap.hdr.pid,
	       n < snap.nblocks ? n : (uint64_t)snap.nblocks, snap.nblocks);
	for (i = 0; i < snap.nblocks && i < n; i++) {
		const struct ls_block *b = &snap.blocks[i];
		const struct ls_site *site = ls_snapshot_site(&snap, b->site);

		printf("\tage %.3fs size %" PRIu64 " addr 0x%" PRIx64 " tid %u\n",
		       (double)(snap.hdr.mono_ns - b->birth_ns) / 1e9, b->size,
		       b->addr, b->tid);
		if (site && sym)
			print_stack(stdout, sym, site);
	}
	ls_symbolizer_free(sym);
	ls_snapshot_release(&snap);
	return 0;
}
