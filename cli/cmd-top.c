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
#include "../lib/trend.h"
#include "cmds.h"
#include "refresh.h"

#define A(field) LS_ARG(struct ls_watch_args, field)

static const struct ls_option own[] = {
	{ .kind = LS_OPT_SECONDS,
	  .short_name = 'i',
	  .long_name = "interval",
	  .offset = A(interval_ns),
	  .argh = "SECONDS",
	  .help = "time between refreshes (default 2)",
	  .want = "seconds" },
	{ .kind = LS_OPT_UINT,
	  .short_name = 'n',
	  .long_name = "count",
	  .offset = A(count),
	  .argh = "N",
	  .help = "stop after N refreshes",
	  .flags = LS_OPTF_NONZERO,
	  .want = "a positive number" },
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
	(const struct ls_option *const[]){ own, ls_stack_options, NULL },
	NULL,
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

static void header(const struct ls_snapshot *snap)
{
	printf("%s", tty_raw ? "\033[H\033[2J" : "\n");
	printf("leakscope top - pid %u - %" PRIu64 " bytes live in %" PRIu64
	       " blocks, peak %" PRIu64 " - %zu sites - %" PRIu64 " samples of "
	       "%ums%s\n\n", snap->hdr.pid, snap->totals.live_bytes,
	       snap->totals.live_blocks, snap->totals.peak_live_bytes, snap->nsites,
	       snap->history.ticks, snap->history.period_ms,
	       tty_raw ? "   (q quits)" : "");
	printf("%12s  %-11s %14s %10s  %s\n", "B/s", "TREND", "LIVE BYTES",
	       "BLOCKS", "STACK");
}

static void draw(struct ls_namer *n, const struct ls_watch_args *a,
		 const struct ls_snapshot *snap)
{
	struct row *v = calloc(snap->nsites + 1, sizeof(*v));
	char desc[512];
	size_t i, k;

	if (!v)
		return;
	k = rank(snap, v);
	header(snap);
	for (i = 0; i < k && i < a->rows; i++) {
		ls_namer_describe(n, &a->r.ropts, v[i].site, desc, sizeof(desc));
		printf("%+12.0f  %-11s %14" PRId64 " %10" PRId64 "  %.70s\n",
		       v[i].t.bytes_per_second, ls_trend_name(v[i].t.label),
		       v[i].site->live_bytes, v[i].site->live_blocks, desc);
	}
	fflush(stdout);
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
	uint64_t done = 0;
	int ret = LS_EXIT_OK;

	ls_refresh_catch_signals();
	if (ls_refresh_load(target, &snap))
		return LS_EXIT_ERROR;
	ls_namer_update(&names, &snap);	/* the names come from this one */
	tty_setup();
	for (;;) {
		if (ls_refresh_load(target, &snap)) {
			ret = gone(target) ? LS_EXIT_OK : LS_EXIT_ERROR;
			break;
		}
		draw(&names, a, &snap);
		ls_namer_update(&names, &snap);
		if (++done == a->count || ls_refresh_stop ||
		    wait_key((int)(a->interval_ns / 1000000)))
			break;
	}
	tty_restore();
	ls_namer_release(&names);
	return ret;
}
