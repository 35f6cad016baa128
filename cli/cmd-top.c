/*
 * cmd-top.c - `leakscope top PID|FILE`: a refreshing view of the fastest
 * growing sites, labelled from the agent's own growth history, so that
 * it is meaningful from the first screen.
 */
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <unistd.h>
#include "../lib/json.h"
#include "../lib/trend.h"
#include "cmds.h"
#include "refresh.h"

#define A(field) LS_ARG(struct ls_watch_args, field)

static const struct ls_option own[] = {
	LS_OPT__INTERVAL(struct ls_watch_args, interval_ns, 'i',
			 " (refreshes; default 2)"),
	LS_OPT__COUNT(struct ls_watch_args, count, 'n', 0,
		      " (refreshes; default: until q)"),
	LS_OPT__FORMAT(struct ls_watch_args, r.ropts.format, LS_OPTF_STATS,
		       " (default text; json: one object per refresh, a\n"
		       "line each, no screen control)"),
	LS_OPT__OUTPUT(struct ls_watch_args, r.output, 'o', ""),
	{ .kind = LS_OPT_UINT,
	  .short_name = 'r',
	  .long_name = "rows",
	  .offset = A(rows),
	  .argh = "N",
	  .help = "sites shown (default 20)",
	  .flags = LS_OPTF_NONZERO,
	  .want = "a positive number" },
	{ .kind = LS_OPT_END },
};

const struct ls_usage ls_top_usage = {
	"top", "[OPTIONS] PID|FILE",
	"a live view of the fastest growing sites",
	"A view of the target's sites, the fastest growing first, with their\n"
	"trend label, rate and live bytes, refreshed every SECONDS.  q quits.",
	(const struct ls_option *const[]){ own, ls_ropt_options, NULL },
	NULL, LS_RO_TOP,
};

void ls_top_defaults(void *args)
{
	struct ls_watch_args *a = args;

	a->interval_ns = 2000000000u;
	a->rows = 20;
}

static struct termios saved_tty;
static int tty_raw;

static void tty_restore(void)
{
	if (tty_raw)
		tcsetattr(0, TCSANOW, &saved_tty);
	tty_raw = 0;
}

static void tty_setup(void)
{
	struct termios t;

	if (!isatty(0) || tcgetattr(0, &saved_tty))
		return;
	t = saved_tty;
	t.c_lflag &= ~(tcflag_t)(ICANON | ECHO);
	t.c_cc[VMIN] = 0;
	t.c_cc[VTIME] = 0;
	if (!tcsetattr(0, TCSANOW, &t)) {
		tty_raw = 1;
		atexit(tty_restore);
	}
}

/* Wait up to ms for a key; 1 when it was 'q'. */
static int wait_key(int ms)
{
	struct pollfd p = { .fd = 0, .events = POLLIN };
	char ch;

	if (!tty_raw) {
		ls_refresh_sleep((uint64_t)ms * 1000000u);
		return 0;
	}
	while (poll(&p, 1, ms) > 0 && !ls_refresh_stop) {
		if (read(0, &ch, 1) != 1)
			return 0;
		if (ch == 'q' || ch == 'Q')
			return 1;
	}
	return 0;
}

struct row {
	const struct ls_site *site;
	struct ls_trend t;
};

static int row_by_rate(const void *a, const void *b)
{
	const struct row *x = a, *y = b;

	if (x->t.bytes_per_second != y->t.bytes_per_second)
		return x->t.bytes_per_second > y->t.bytes_per_second ? -1 : 1;
	return x->site->live_bytes > y->site->live_bytes ? -1 :
	       x->site->live_bytes < y->site->live_bytes;
}

/* The sites holding or gaining memory, fastest growing first. */
static size_t rank(const struct ls_snapshot *snap, struct row *v)
{
	double period = snap->history.period_ms / 1000.0;
	size_t i, k = 0;

	for (i = 0; i < snap->nsites; i++) {
		const struct ls_site *s = &snap->sites[i];

		v[k].site = s;
		if (!s->history || ls_trend_classify(s->history, s->nhistory,
						     period, &v[k].t))
			v[k].t.label = LS_TREND_UNKNOWN;
		if (s->live_bytes > 0 || v[k].t.bytes_per_second > 0)
			k++;
		else
			memset(&v[k], 0, sizeof(v[k]));
	}
	qsort(v, k, sizeof(*v), row_by_rate);
	return k;
}

static void header(FILE *out, const struct ls_snapshot *snap)
{
	fprintf(out, "%s", tty_raw ? "\033[H\033[2J" : "\n");
	fprintf(out, "leakscope top - pid %u - %" PRIu64 " bytes live in %"
		PRIu64 " blocks, peak %" PRIu64 " - %zu sites - %" PRIu64
		" samples of %ums%s\n\n", snap->hdr.pid, snap->totals.live_bytes,
		snap->totals.live_blocks, snap->totals.peak_live_bytes,
		snap->nsites, snap->history.ticks, snap->history.period_ms,
		tty_raw ? "   (q quits)" : "");
	fprintf(out, "%12s  %-11s %14s %10s  %s\n", "B/s", "TREND",
		"LIVE BYTES", "BLOCKS", "STACK");
}

/* --format json: the screen as one object on one line. */
static void json_head(struct ls_json *j, const struct ls_snapshot *snap)
{
	ls_json_object(j, NULL);
	ls_json_str(j, "type", "refresh");
	ls_json_u64(j, "pid", snap->hdr.pid);
	ls_json_u64(j, "live_bytes", snap->totals.live_bytes);
	ls_json_u64(j, "live_blocks", snap->totals.live_blocks);
	ls_json_u64(j, "peak_live_bytes", snap->totals.peak_live_bytes);
	ls_json_u64(j, "sites_total", snap->nsites);
	ls_json_array(j, "sites");
}

static void json_row(struct ls_json *j, const struct row *r, const char *desc)
{
	ls_json_object(j, NULL);
	ls_json_u64(j, "site", r->site->id);
	ls_json_str(j, "where", desc);
	ls_json_str(j, "trend", ls_trend_name(r->t.label));
	ls_json_f64(j, "bytes_per_second", r->t.bytes_per_second, 1);
	ls_json_i64(j, "live_bytes", r->site->live_bytes);
	ls_json_i64(j, "live_blocks", r->site->live_blocks);
	ls_json_end(j);
}

static void draw(struct ls_namer *n, const struct ls_watch_args *a,
		 const struct ls_snapshot *snap, FILE *out, int json)
{
	struct row *v = calloc(snap->nsites + 1, sizeof(*v));
	struct ls_json j;
	char desc[512];
	size_t i, k;

	if (!v)
		return;
	k = rank(snap, v);
	ls_json_init(&j, out);
	if (json)
		json_head(&j, snap);
	else
		header(out, snap);
	for (i = 0; i < k && i < a->rows; i++) {
		ls_namer_describe(n, &a->r.ropts, v[i].site, desc, sizeof(desc));
		if (json)
			json_row(&j, &v[i], desc);
		else
			fprintf(out, "%+12.0f  %-11s %14" PRId64 " %10" PRId64
				"  %.70s\n", v[i].t.bytes_per_second,
				ls_trend_name(v[i].t.label),
				v[i].site->live_bytes, v[i].site->live_blocks,
				desc);
	}
	if (json) {
		ls_json_end(&j);
		ls_json_end(&j);
		fputc('\n', out);
	}
	fflush(out);
	free(v);
}

/* The target is gone: a pid that exited ends top normally. */
static int gone(const char *target)
{
	pid_t pid;

	return ls_source_is_pid(target, &pid) && kill(pid, 0);
}

int ls_cmd_top(struct ls_invocation *inv)
{
	const struct ls_watch_args *a = inv->args;
	const char *target = inv->argv[0];
	struct ls_namer names = { 0 };
	struct ls_snapshot snap;
	struct ls_output out;
	uint64_t done = 0;
	int ret = LS_EXIT_OK;
	int json = ls_renderer_of(&a->r.ropts) == ls_renderer_find("json");

	ls_refresh_catch_signals();
	if (ls_refresh_load(target, &snap))
		return LS_EXIT_ERROR;
	ls_namer_update(&names, &snap);	/* the names come from this one */
	if (ls_open_output(&out, a->r.output ? a->r.output : "-")) {
		ls_namer_release(&names);
		return LS_EXIT_ERROR;
	}
	/* A screen only on the terminal: q quits it. */
	if (!json && !a->r.output)
		tty_setup();
	for (;;) {
		if (ls_refresh_load(target, &snap)) {
			ret = gone(target) ? LS_EXIT_OK : LS_EXIT_ERROR;
			break;
		}
		draw(&names, a, &snap, out.fp, json);
		ls_namer_update(&names, &snap);
		if (++done == a->count || ls_refresh_stop ||
		    wait_key((int)(a->interval_ns / 1000000)))
			break;
	}
	tty_restore();
	ls_namer_release(&names);
	if (ret != LS_EXIT_OK)
		ls_output_abort(&out);
	else if (ls_commit_output(&out))
		ret = LS_EXIT_ERROR;
	return ret;
}
