/*
 * watch.c - `leakscope watch` (timed slices, then a trend summary) and
 * `leakscope top` (a refreshing terminal view of the fastest growing
 * sites).
 *
 * watch runs its own slices: it asks the agent for a snapshot every
 * interval, prints the sites whose live bytes changed, and at the end
 * labels each site from the series it collected.  top labels sites from
 * the agent's own growth history, so it is meaningful from the first
 * screen.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>
#include "../lib/client.h"
#include "cmd.h"
#include "../lib/symbolize.h"
#include "target.h"
#include "../lib/trend.h"
#include "../lib/util.h"

#define FAIL 1

/* Symbolizes against a snapshot kept alive for the purpose; replaced
 * when the target's module map changes. */
struct namer {
	struct ls_snapshot base;
	struct ls_symbolizer *sym;
	int have;
};

static void namer_update(struct namer *n, struct ls_snapshot *snap)
{
	if (n->have && n->base.hdr.module_gen == snap->hdr.module_gen) {
		ls_snapshot_release(snap);
		return;
	}
	if (n->have) {
		ls_symbolizer_free(n->sym);
		ls_snapshot_release(&n->base);
	}
	n->base = *snap;
	memset(snap, 0, sizeof(*snap));
	n->sym = ls_symbolizer_new(&n->base);
	n->have = 1;
}

static void namer_release(struct namer *n)
{
	if (!n->have)
		return;
	ls_symbolizer_free(n->sym);
	ls_snapshot_release(&n->base);
	n->have = 0;
}

/* "alloc_fn < caller < caller's caller" into buf: the first frames
 * outside the allocator's own library code, which say most. */
static void describe(struct namer *n, const struct ls_site *site, char *buf,
		     size_t cap)
{
	struct ls_symframe f[LS_SYM_MAX_FRAMES];
	size_t len = 0, k, got;
	uint32_t i;
	int shown = 0;

	buf[0] = 0;
	for (i = 0; i < site->nframes && shown < 3 && len < cap; i++) {
		if (!n->sym || ls_symbolize_frame(n->sym, site->gen, site->frames[i],
						  f, LS_SYM_MAX_FRAMES, &got))
			got = 0;
		for (k = 0; k < got && shown < 3 && len < cap; k++, shown++)
			len += (size_t)snprintf(buf + len, cap - len, "%s%s",
						shown ? " < " : "",
						f[k].function ? f[k].function : "?");
		if (!got && len < cap) {
			len += (size_t)snprintf(buf + len, cap - len, "%s0x%" PRIx64,
						shown ? " < " : "", site->frames[i]);
			shown++;
		}
	}
}

static int fetch(pid_t pid, struct ls_snapshot *snap)
{
	char err[1024];

	if (ls_client_snapshot(pid, 0, snap, err, sizeof(err))) {
		ls_error("%s", err);
		return -1;
	}
	return 0;
}

static volatile sig_atomic_t stop;

static void on_stop(int sig)
{
	stop = 1;
}

static void sleep_ns(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
			       .tv_nsec = (long)(ns % 1000000000u) };

	while (!stop && nanosleep(&ts, &ts) && errno == EINTR)
		;
}

/* --- watch ------------------------------------------------------------------ */

struct series {
	uint32_t id;
	int64_t *v;		/* one value per slice, 0 before the site existed */
};

struct watch {
	pid_t pid;
	uint64_t interval_ns;
	uint64_t slices;
	struct series *s;
	size_t ns;
	struct namer names;
};

static struct series *series_of(struct watch *w, uint32_t id)
{
	size_t i;
	struct series *grown;

	for (i = 0; i < w->ns; i++)
		if (w->s[i].id == id)
			return &w->s[i];
	grown = realloc(w->s, (w->ns + 1) * sizeof(*grown));
	if (!grown)
		return NULL;
	w->s = grown;
	grown = &w->s[w->ns];
	grown->id = id;
	grown->v = calloc(w->slices + 1, sizeof(*grown->v));
	if (!grown->v)
		return NULL;
	w->ns++;
	return grown;
}

static int64_t value_at(const struct series *s, uint64_t k)
{
	return s->v[k];
}

static void print_slice(struct watch *w, const struct ls_snapshot *snap,
			uint64_t k)
{
	char desc[512];
	size_t i;
	int any = 0;

	printf("[slice %" PRIu64 "/%" PRIu64 ", +%.1fs] %" PRIu64 " bytes live "
	       "in %" PRIu64 " blocks\n", k, w->slices,
	       (double)(k * w->interval_ns) / 1e9, snap->totals.live_bytes,
	       snap->totals.live_blocks);
	for (i = 0; i < snap->nsites; i++) {
		const struct ls_site *site = &snap->sites[i];
		struct series *s = series_of(w, site->id);
		int64_t before;

		if (!s)
			continue;
		s->v[k] = site->live_bytes;
		before = value_at(s, k - 1);
		if (site->live_bytes == before)
			continue;
		describe(&w->names, site, desc, sizeof(desc));
		printf("\t%+" PRId64 " bytes, now %" PRId64 " in %" PRId64
		       " blocks: %s\n", site->live_bytes - before,
		       site->live_bytes, site->live_blocks, desc);
		any = 1;
	}
	if (!any)
		puts("\tno site changed");
	fflush(stdout);
}

struct verdict {
	const struct series *s;
	struct ls_trend t;
};

static int by_rate(const void *a, const void *b)
{
	const struct verdict *x = a, *y = b;

	return x->t.bytes_per_second > y->t.bytes_per_second ? -1 :
	       x->t.bytes_per_second < y->t.bytes_per_second;
}

static void summary(struct watch *w, const struct ls_snapshot *last)
{
	struct verdict *v = calloc(w->ns + 1, sizeof(*v));
	size_t i, n = 0;
	char desc[512];

	if (!v)
		return;
	for (i = 0; i < w->ns; i++) {
		if (ls_trend_classify(w->s[i].v, w->slices + 1,
				      (double)w->interval_ns / 1e9, &v[n].t))
			continue;
		v[n++].s = &w->s[i];
	}
	qsort(v, n, sizeof(*v), by_rate);
	printf("\nTrend over %" PRIu64 " slices of %.1fs (growing sites are "
	       "leak suspects; saturating ones look like caches):\n",
	       w->slices, (double)w->interval_ns / 1e9);
	for (i = 0; i < n; i++) {
		const struct ls_site *site = ls_snapshot_site(last, v[i].s->id);
		int grows = v[i].t.label == LS_TREND_LINEAR ||
			    v[i].t.label == LS_TREND_EXPONENTIAL;

		if (!site || (!grows && !v[i].s->v[w->slices]))
			continue;
		describe(&w->names, site, desc, sizeof(desc));
		printf("\t%-11s %+12.0f B/s  %12" PRId64 " bytes  %s%s\n",
		       ls_trend_name(v[i].t.label), v[i].t.bytes_per_second,
		       v[i].s->v[w->slices], desc, grows ? "  <- growing" : "");
	}
	free(v);
}

static const char watch_usage[] =
"usage: leakscope watch PID [--interval SECONDS] [--slices N]\n"
"\n"
"Take a snapshot every SECONDS (default 1) for N slices (default 10),\n"
"print the sites whose live bytes changed in each, then label every site's\n"
"growth: constant, saturating (a cache filling), linear or exponential.\n";

int ls_cmd_watch(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "slices", required_argument, NULL, 'n' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	struct watch w = { .interval_ns = 1000000000u, .slices = 10 };
	struct ls_snapshot snap, last = { 0 };
	uint64_t k;
	size_t i;
	int c, ret = FAIL;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "hi:n:", longopts, NULL)) != -1) {
		if (c == 'i' && !ls_parse_seconds(optarg, &w.interval_ns))
			continue;
		if (c == 'n' && !ls_parse_count(optarg, &w.slices) && w.slices &&
		    w.slices <= 100000)
			continue;
		if (c == 'h')
			return fputs(watch_usage, stdout), 0;
		if (c == 'i' || c == 'n')
			ls_error("invalid value '%s' for %s", optarg, argv[optind - 1]);
		else
			ls_error("unknown option '%s' (see 'leakscope watch --help')",
				 argv[optind - 1]);
		return FAIL;
	}
	if (optind != argc - 1 || !ls_target_is_pid(argv[optind], &w.pid)) {
		ls_error("expected one PID (see 'leakscope watch --help')");
		return FAIL;
	}
	signal(SIGINT, on_stop);
	if (fetch(w.pid, &snap))
		return FAIL;
	for (i = 0; i < snap.nsites; i++) {
		struct series *s = series_of(&w, snap.sites[i].id);

		if (s)
			s->v[0] = snap.sites[i].live_bytes;
	}
	namer_update(&w.names, &snap);
	for (k = 1; k <= w.slices && !stop; k++) {
		sleep_ns(w.interval_ns);
		if (stop || fetch(w.pid, &snap))
			break;
		print_slice(&w, &snap, k);
		ls_snapshot_release(&last);
		last = snap;
		/* A copy for the names: the last one is kept for the summary. */
		if (w.names.base.hdr.module_gen != last.hdr.module_gen &&
		    !fetch(w.pid, &snap))
			namer_update(&w.names, &snap);
	}
	if (k > w.slices) {
		summary(&w, &last);
		ret = 0;
	} else if (stop) {
		ret = 0;
	}
	ls_snapshot_release(&last);
	namer_release(&w.names);
	for (i = 0; i < w.ns; i++)
		free(w.s[i].v);
	free(w.s);
	return ret;
}

/* --- top ---------------------------------------------------------------------- */

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
		sleep_ns((uint64_t)ms * 1000000u);
		return 0;
	}
	while (poll(&p, 1, ms) > 0 && !stop) {
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

static void draw(struct namer *n, const struct ls_snapshot *snap, int rows)
{
	struct row *v = calloc(snap->nsites + 1, sizeof(*v));
	double period = snap->history.period_ms / 1000.0;
	char desc[512];
	size_t i, k = 0;

	if (!v)
		return;
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
	printf("%s", tty_raw ? "\033[H\033[2J" : "\n");
	printf("leakscope top - pid %u - %" PRIu64 " bytes live in %" PRIu64
	       " blocks, peak %" PRIu64 " - %zu sites - %" PRIu64 " samples of "
	       "%ums%s\n\n", snap->hdr.pid, snap->totals.live_bytes,
	       snap->totals.live_blocks, snap->totals.peak_live_bytes, snap->nsites,
	       snap->history.ticks, snap->history.period_ms,
	       tty_raw ? "   (q quits)" : "");
	printf("%12s  %-11s %14s %10s  %s\n", "B/s", "TREND", "LIVE BYTES",
	       "BLOCKS", "STACK");
	for (i = 0; i < k && (int)i < rows; i++) {
		describe(n, v[i].site, desc, sizeof(desc));
		printf("%+12.0f  %-11s %14" PRId64 " %10" PRId64 "  %.70s\n",
		       v[i].t.bytes_per_second, ls_trend_name(v[i].t.label),
		       v[i].site->live_bytes, v[i].site->live_blocks, desc);
	}
	fflush(stdout);
	free(v);
}

static const char top_usage[] =
"usage: leakscope top PID [--interval SECONDS] [--count N] [--rows N]\n"
"\n"
"A view of PID's sites, the fastest growing first, with their trend label,\n"
"rate and live bytes, refreshed every SECONDS (default 2).  q quits.\n";

int ls_cmd_top(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "interval", required_argument, NULL, 'i' },
		{ "count", required_argument, NULL, 'n' },
		{ "rows", required_argument, NULL, 'r' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t interval = 2000000000u, count = 0, rows = 20, done = 0;
	struct namer names = { 0 };
	struct ls_snapshot snap;
	pid_t pid;
	int c;

	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "hi:n:r:", longopts, NULL)) != -1) {
		if ((c == 'i' && !ls_parse_seconds(optarg, &interval)) ||
		    (c == 'n' && !ls_parse_count(optarg, &count) && count) ||
		    (c == 'r' && !ls_parse_count(optarg, &rows) && rows))
			continue;
		if (c == 'h')
			return fputs(top_usage, stdout), 0;
		if (c == 'i' || c == 'n' || c == 'r')
			ls_error("invalid value '%s' for %s", optarg, argv[optind - 1]);
		else
			ls_error("unknown option '%s' (see 'leakscope top --help')",
				 argv[optind - 1]);
		return FAIL;
	}
	if (optind != argc - 1 || !ls_target_is_pid(argv[optind], &pid)) {
		ls_error("expected one PID (see 'leakscope top --help')");
		return FAIL;
	}
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
	if (fetch(pid, &snap))
		return FAIL;
	namer_update(&names, &snap);	/* the names come from this one */
	tty_setup();
	for (;;) {
		if (fetch(pid, &snap)) {
			tty_restore();
			namer_release(&names);
			return kill(pid, 0) ? 0 : FAIL;	/* it exited: done */
		}
		draw(&names, &snap, (int)rows);
		namer_update(&names, &snap);
		if (++done == count || stop || wait_key((int)(interval / 1000000)))
			break;
	}
	tty_restore();
	namer_release(&names);
	return 0;
}
