/*
 * trace.c - `leakscope trace`: memleak's command line on leakscope's
 * eBPF tracer (bpf/trace.bpf.c, bpf/trace.c, lib/tracemodel.c).
 *
 *   leakscope trace [-p PID | -c "CMD" | -- CMD ARGS] [--event WHAT]
 *                   [-t] [-a] [-o MS] [-s BYTES] [-T TOP] [-z MIN] [-Z MAX]
 *                   [-O OBJ] [--symbols-prefix P] [--combined-only]
 *                   [--wa-missing-free] [--percpu] [--stack-mode copy|fp]
 *                   [--stack-bytes N] [--format F] [--output FILE] [-v]
 *                   [interval [count]]
 *
 * Nothing is injected into the process: it works on a process started
 * without leakscope, on any allocator, and on the kernel.  A command (-c,
 * --) is started under ptrace only to hold it at its exec and at its exit,
 * so that the probes are in place before its first instruction and its
 * module map is read before it is gone; its exit status becomes ours.
 */
#include "cmd.h"
#include "../lib/util.h"

#ifndef LS_HAVE_BPF
int ls_cmd_trace(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	ls_error("this leakscope was built without eBPF tracing (clang, "
		 "bpftool, libbpf-dev or the kernel's BTF were missing at "
		 "build time)");
	return LS_EXIT_FAILURE;
}
#else
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <wordexp.h>
#include "cmd.h"
#include "../bpf/tracer.h"
#include "../lib/stackcopy.h"
#include "../lib/tracemodel.h"
#include "../lib/util.h"

struct trace {
	struct ls_tracer_opts t;
	struct ls_report_opts ropts;
	const char *output;
	const char *command;	/* -c */
	char **argv;		/* -- CMD ARGS, or -c split */
	wordexp_t words;
	int have_words;
	uint64_t interval_ns, count;
	int print_trace;	/* -t */
	int interval_given;

	pid_t child;		/* -c / --: ours, under ptrace */
	int child_status;
	int child_gone;
	char *const *snap_argv;
	struct ls_stackcopy *sc;
	struct ls_tmodel *model;
	struct ls_tracer *tracer;
	int err;		/* -ENOMEM while folding records */
};

static volatile sig_atomic_t stop_requested;

static void on_stop(int sig)
{
	(void)sig;
	stop_requested = 1;
}

enum {
	OPT_EVENT = LS_OPT_REPORT_END,
	OPT_COMBINED,
	OPT_WA_MISSING_FREE,
	OPT_PREFIX,
	OPT_PERCPU,
	OPT_STACK_MODE,
	OPT_STACK_BYTES,
	OPT_SAMPLE_RATE,
	OPT_HELP,
};

static const struct option trace_longopts[] = {
	LS_REPORT_LONGOPTS,
	{ "pid", required_argument, NULL, 'p' },
	{ "trace", no_argument, NULL, 't' },
	{ "older", required_argument, NULL, 'o' },
	{ "command", required_argument, NULL, 'c' },
	{ "sample-rate", required_argument, NULL, 's' },
	{ "obj", required_argument, NULL, 'O' },
	{ "event", required_argument, NULL, OPT_EVENT },
	{ "combined-only", no_argument, NULL, OPT_COMBINED },
	{ "wa-missing-free", no_argument, NULL, OPT_WA_MISSING_FREE },
	{ "symbols-prefix", required_argument, NULL, OPT_PREFIX },
	{ "percpu", no_argument, NULL, OPT_PERCPU },
	{ "stack-mode", required_argument, NULL, OPT_STACK_MODE },
	{ "stack-bytes", required_argument, NULL, OPT_STACK_BYTES },
	{ "verbose", no_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void usage(FILE *out)
{
	fputs("usage: leakscope trace [-p PID | -c \"CMD\" | -- CMD [ARGS...]] "
	      "[options] [interval [count]]\n\n"
	      "Trace outstanding allocations (or growth) with eBPF, from "
	      "outside the process.\n\n"
	      "  -p, --pid PID          the process to trace (started without "
	      "leakscope)\n"
	      "  -c, --command CMD      run CMD and trace it (also: -- CMD ARGS)\n"
	      "      --event WHAT       alloc (default), brk, mmap, page-fault, "
	      "kernel\n"
	      "  -t, --trace            print every allocation and free\n"
	      "  -a, --show-allocs      list outstanding blocks with each stack\n"
	      "  -o, --older MS         only blocks at least MS milliseconds old\n"
	      "  -s, --sample-rate B    sample blocks by bytes, mean B "
	      "(estimates, unbiased)\n"
	      "  -T, --top N            the N stacks holding most (default 10)\n"
	      "  -z, --min-size B       only blocks of at least B bytes\n"
	      "  -Z, --max-size B       only blocks of at most B bytes\n"
	      "  -O, --obj OBJ          the allocator's object (default: the "
	      "process's libc)\n"
	      "      --symbols-prefix P allocator names start with P (je_)\n"
	      "      --combined-only    per-stack totals only (no block list)\n"
	      "      --wa-missing-free  accepted for memleak (always on)\n"
	      "      --percpu           kernel: percpu allocations too\n"
	      "      --stack-mode M     copy (CFI in user space, default) or fp\n"
	      "      --stack-bytes N    user stack bytes copied per event "
	      "(default 8192, max 16384)\n"
	      "      --format F         memleak (default), text, json, folded\n"
	      "      --output FILE      write the report there (rewritten at "
	      "each interval)\n"
	      "  -v, --verbose          show libbpf's messages\n\n"
	      "interval: seconds between reports (default 5 for memleak's "
	      "format,\nelse one report at the end); count: reports before "
	      "exiting.\nNeeds root (or CAP_BPF and CAP_PERFMON) and a kernel "
	      "with BTF.\n", out);
}

static int bad(const char *opt, const char *arg, const char *want)
{
	ls_error("invalid value '%s' for %s: expected %s", arg, opt, want);
	return -1;
}

static int parse_event(struct trace *tr, const char *arg)
{
	static const char *const names[] = { "alloc", "brk", "mmap",
					     "page-fault", "kernel" };
	size_t i;

	for (i = 0; i < sizeof(names) / sizeof(names[0]); i++)
		if (!strcmp(arg, names[i])) {
			tr->t.what = (enum ls_tracer_what)i;
			return 0;
		}
	return bad("--event", arg, "alloc, brk, mmap, page-fault or kernel");
}

static int parse_pid(struct trace *tr, const char *arg)
{
	uint64_t v;

	if (ls_parse_count(arg, &v) || !v || v > INT_MAX)
		return bad("--pid", arg, "a process id");
	tr->t.pid = (int)v;
	return 0;
}

static int parse_short(struct trace *tr, int c, const char *arg)
{
	uint64_t v;

	switch (c) {
	case 'p':
		return parse_pid(tr, arg);
	case 't':
		tr->print_trace = 1;
		return 0;
	case 'a':
		tr->ropts.show_allocs = 1;
		return 0;
	case 'o':
		if (ls_parse_count(arg, &v) || v > UINT64_MAX / 1000000)
			return bad("--older", arg, "milliseconds");
		tr->ropts.min_age_ns = v * 1000000;
		return 0;
	case 'c':
		tr->command = arg;
		return 0;
	case 's':
		if (ls_parse_size(arg, &v) || !v)
			return bad("--sample-rate", arg, "a size such as 512KiB");
		tr->t.sample_rate = v;
		return 0;
	case 'T':
		if (ls_parse_count(arg, &v) || !v)
			return bad("--top", arg, "a positive number of stacks");
		tr->ropts.top = (size_t)v;
		return 0;
	case 'z':
		if (ls_parse_size(arg, &v))
			return bad("--min-size", arg, "a size");
		tr->t.min_size = tr->ropts.min_size = v;
		return 0;
	case 'Z':
		if (ls_parse_size(arg, &v) || !v)
			return bad("--max-size", arg, "a positive size");
		tr->t.max_size = tr->ropts.max_size = v;
		return 0;
	case 'O':
		tr->t.obj = arg;
		return 0;
	case 'v':
		tr->t.verbose = 1;
		return 0;
	}
	return 1;
}

static int parse_long(struct trace *tr, int c, const char *arg)
{
	uint64_t v;

	switch (c) {
	case OPT_EVENT:
		return parse_event(tr, arg);
	case OPT_COMBINED:
		tr->ropts.show_allocs = 0;
		return 0;
	case OPT_WA_MISSING_FREE:
		return 0;	/* a block allocated again replaces the old */
	case OPT_PREFIX:
		tr->t.prefix = arg;
		return 0;
	case OPT_PERCPU:
		tr->t.percpu = 1;
		return 0;
	case OPT_STACK_MODE:
		if (!strcmp(arg, "copy"))
			tr->t.stack_mode = LS_STACK_COPY;
		else if (!strcmp(arg, "fp"))
			tr->t.stack_mode = LS_STACK_FP;
		else
			return bad("--stack-mode", arg, "copy or fp");
		return 0;
	case OPT_STACK_BYTES:
		if (ls_parse_size(arg, &v) || v < 64 || v > LS_TRACE_MAX_STACK)
			return bad("--stack-bytes", arg, "64 to 16384");
		tr->t.stack_bytes = (uint32_t)v;
		return 0;
	}
	return 1;
}

static int parse_format(struct trace *tr, const char *arg)
{
	if (!strcmp(arg, "memleak")) {
		tr->ropts.format = LS_FORMAT_MEMLEAK;
		return 1;
	}
	return ls_report_option(LS_OPT_FORMAT, arg, &tr->ropts, &tr->output);
}

static int parse_positional(struct trace *tr, int argc, char **argv, int i)
{
	uint64_t v;

	if (i < argc && strcmp(argv[i - 1], "--")) {
		if (ls_parse_seconds(argv[i], &tr->interval_ns))
			return bad("interval", argv[i], "seconds");
		tr->interval_given = 1;
		if (++i < argc) {
			if (ls_parse_count(argv[i], &v) || !v)
				return bad("count", argv[i], "a positive count");
			tr->count = v;
			i++;
		}
		if (i < argc) {
			ls_error("unexpected argument '%s' (see 'leakscope trace "
				 "--help')", argv[i]);
			return -1;
		}
	} else if (i < argc) {
		tr->argv = argv + i;
	}
	return 0;
}

static int parse(struct trace *tr, int argc, char **argv)
{
	int c, r;

	while ((c = getopt_long(argc, argv, "+p:tao:c:s:T:z:Z:O:vh",
				trace_longopts, NULL)) != -1) {
		if (c == 'h') {
			usage(stdout);
			return 1;
		}
		if (c == '?')
			return -1;
		if (c == LS_OPT_FORMAT)
			r = parse_format(tr, optarg) == 1 ? 0 : -1;
		else if ((r = ls_report_option(c, optarg, &tr->ropts,
					       &tr->output)) == 1)
			r = 0;
		else if (r == 0 && (r = parse_short(tr, c, optarg)) == 1)
			r = parse_long(tr, c, optarg);
		if (r)
			return -1;
	}
	tr->t.min_size = tr->ropts.min_size;
	tr->t.max_size = tr->ropts.max_size;
	return parse_positional(tr, argc, argv, optind);
}

static int check_target(struct trace *tr)
{
	int targets = !!tr->t.pid + !!tr->command + !!tr->argv;

	if (targets > 1) {
		ls_error("give one of -p, -c and -- CMD");
		return -1;
	}
	if (!targets && tr->t.what != LS_TRACE_KERNEL) {
		ls_error("no process to trace: give -p PID, -c \"CMD\" or "
			 "-- CMD ARGS (only --event kernel traces the whole "
			 "system)");
		return -1;
	}
	if (tr->t.pid && kill(tr->t.pid, 0) && errno == ESRCH) {
		ls_error("no such process: %d", tr->t.pid);
		return -1;
	}
	if (tr->command) {
		if (wordexp(tr->command, &tr->words, WRDE_NOCMD) ||
		    !tr->words.we_wordc) {
			ls_error("cannot parse the command '%s'", tr->command);
			return -1;
		}
		tr->have_words = 1;
		tr->argv = tr->words.we_wordv;
	}
	return 0;
}

/* ------------------------------------------------------------------ */
/* The command: started under ptrace, held at exec and at exit.        */

static int start_child(struct trace *tr)
{
	int status;

	tr->child = fork();
	if (tr->child < 0) {
		ls_error("cannot fork: %s", strerror(errno));
		return -1;
	}
	if (tr->child == 0) {
		ptrace(PTRACE_TRACEME, 0, NULL, NULL);
		execvp(tr->argv[0], tr->argv);
		ls_error("cannot run '%s': %s", tr->argv[0], strerror(errno));
		_exit(errno == ENOENT ? LS_EXIT_NOTFOUND : LS_EXIT_NOEXEC);
	}
	if (waitpid(tr->child, &status, 0) < 0 || !WIFSTOPPED(status)) {
		tr->child_gone = 1;
		tr->child_status = status;
		return -1;	/* exec failed: the child said why */
	}
	ptrace(PTRACE_SETOPTIONS, tr->child, NULL,
	       (void *)(long)(PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL));
	tr->t.pid = tr->child;
	return 0;
}

/* Let the held child go on, passing on a signal it received. */
static void child_resume(struct trace *tr, int sig)
{
	ptrace(PTRACE_CONT, tr->child, NULL, (void *)(long)sig);
}

static void drain(struct trace *tr);

/* Reap or resume the child without blocking; 1 once it has exited. */
static int child_poll(struct trace *tr)
{
	int status, sig;
	pid_t p;

	while (tr->child && !tr->child_gone &&
	       (p = waitpid(tr->child, &status, WNOHANG)) > 0) {
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			tr->child_gone = 1;
			tr->child_status = status;
			break;
		}
		sig = WSTOPSIG(status);
		if (sig == SIGTRAP && (status >> 16) == PTRACE_EVENT_EXIT) {
			/* Still whole: take its last records and modules. */
			drain(tr);
			ls_stackcopy_refresh(tr->sc);
			sig = 0;
		} else if (sig == SIGTRAP) {
			sig = 0;
		}
		child_resume(tr, sig);
	}
	return tr->child_gone;
}

/* ------------------------------------------------------------------ */
/* Records.                                                            */

static void print_record(const struct ls_trace_event *e)
{
	const char *fn = ls_trace_fn_name(e->fn);

	switch (e->type) {
	case LS_TEV_FREE:
	case LS_TEV_KFREE:
		fprintf(stderr, "%s(0x%" PRIx64 ") tid %u\n", fn,
			(uint64_t)e->addr, e->tid);
		break;
	case LS_TEV_REALLOC:
		fprintf(stderr, "%s(0x%" PRIx64 ", %" PRIu64 ") = 0x%" PRIx64
			" tid %u\n", fn, (uint64_t)e->old, (uint64_t)e->size,
			(uint64_t)e->addr, e->tid);
		break;
	default:
		fprintf(stderr, "%s(%" PRIu64 ") = 0x%" PRIx64 " tid %u\n",
			e->type == LS_TEV_BRK ? "brk" : e->type == LS_TEV_FAULT ?
			"fault" : fn, (uint64_t)e->size, (uint64_t)e->addr, e->tid);
	}
}

static int on_record(void *arg, const struct ls_trace_event *e, size_t len)
{
	struct trace *tr = arg;
	int ret;

	if (tr->print_trace)
		print_record(e);
	ret = ls_tmodel_event(tr->model, e, len);
	if (ret)
		tr->err = ret;
	return 0;
}

static void drain(struct trace *tr)
{
	while (ls_tracer_poll(tr->tracer, 0) > 0)
		;
}

/* ------------------------------------------------------------------ */
/* Reports.                                                            */

static uint64_t mono_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

static int render(struct trace *tr, FILE *fp)
{
	struct ls_snapshot snap;
	struct ls_report rep;
	int ret = ls_tmodel_snapshot(tr->model, mono_now(), tr->snap_argv, &snap);

	if (ret)
		return ret;
	ret = ls_report_build(&snap, &tr->ropts, &rep);
	if (!ret) {
		ret = ls_report_render(fp, &rep, &tr->ropts);
		ls_report_release(&rep);
	}
	ls_snapshot_release(&snap);
	return ret;
}

static int report(struct trace *tr)
{
	struct ls_outfile of = { 0 };
	int ret;

	if (tr->err) {
		ls_error("out of memory while tracing");
		return -1;
	}
	if (!tr->output)
		ret = render(tr, stdout);
	else if (!(ret = ls_outfile_open(&of, tr->output))) {
		ret = render(tr, of.fp);
		ret = ret ? (ls_outfile_abort(&of), ret) : ls_outfile_commit(&of);
	}
	if (ret) {
		ls_error("cannot write the report%s%s: %s", tr->output ? " to " : "",
			 tr->output ? tr->output : "", strerror(-ret));
		return -1;
	}
	if (tr->ropts.format == LS_FORMAT_MEMLEAK && !tr->output)
		putchar('\n');
	fflush(stdout);
	return 0;
}

static void note_losses(struct trace *tr)
{
	uint64_t st[LS_STAT_COUNT], unknown, nostack;

	ls_tracer_stats(tr->tracer, st);
	ls_tmodel_counts(tr->model, &unknown, &nostack);
	if (st[LS_STAT_LOST])
		ls_error("warning: %" PRIu64 " records lost (ring buffer full): "
			 "figures are incomplete", st[LS_STAT_LOST]);
	if (st[LS_STAT_LIVE_FULL])
		ls_error("warning: %" PRIu64 " allocations not recorded (live "
			 "table full)", st[LS_STAT_LIVE_FULL]);
	if (tr->t.verbose)
		fprintf(stderr, "leakscope: %" PRIu64 " records, %" PRIu64
			" frees of unknown blocks, %" PRIu64 " without stack, %"
			PRIu64 " unmatched returns\n", st[LS_STAT_EVENTS],
			unknown, nostack, st[LS_STAT_NEST_LOST]);
}

/* ------------------------------------------------------------------ */
/* Setup and the loop.                                                 */

/* The libc the process maps (what memleak probes without -O). */
static int find_libc(int pid, char *out, size_t len)
{
	char buf[4400], path[4200];
	FILE *f;
	int found = 0;

	snprintf(buf, sizeof(buf), "/proc/%d/maps", pid ? pid : getpid());
	f = fopen(buf, "re");
	if (!f)
		return -1;
	while (!found && fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "%*s %*s %*s %*s %*s %4199s", path) == 1 &&
		    strstr(ls_sym_basename(path), "libc.so"))
			found = snprintf(out, len, "%s", path) > 0;
	fclose(f);
	return found ? 0 : -1;
}

static int resolve_obj(struct trace *tr, char *buf, size_t len)
{
	char tmp[4300];

	if (tr->t.what != LS_TRACE_ALLOC)
		return 0;
	if (tr->t.obj) {
		if (access(tr->t.obj, R_OK)) {
			ls_error("cannot read the allocator object '%s': %s",
				 tr->t.obj, strerror(errno));
			return -1;
		}
		return 0;
	}
	/* A command is held before its libc is mapped: probe ours, which
	 * is the one its loader will map. */
	if (find_libc(tr->argv ? 0 : tr->t.pid, tmp, sizeof(tmp))) {
		ls_error("no libc in pid %d: give the allocator with -O",
			 tr->t.pid);
		return -1;
	}
	if (tr->argv)
		snprintf(buf, len, "%s", tmp);
	else
		snprintf(buf, len, "/proc/%d/root%s", tr->t.pid, tmp);
	tr->t.obj = buf;
	return 0;
}

static int setup(struct trace *tr)
{
	static char obj[4400];
	char err[512];
	struct ls_tmodel_opts mo = { 0 };
	int ret;

	if ((ret = ls_tracer_check(tr->t.what, err, sizeof(err)))) {
		ls_error("%s", err);
		return -1;
	}
	if (tr->argv && start_child(tr))
		return -1;
	if (resolve_obj(tr, obj, sizeof(obj)))
		return -1;
	if (tr->t.pid && tr->t.what != LS_TRACE_KERNEL &&
	    ls_stackcopy_new(tr->t.pid, &tr->sc, err, sizeof(err))) {
		ls_error("%s", err);
		return -1;
	}
	mo.pid = tr->t.pid;
	mo.sample_rate = tr->t.sample_rate;
	mo.max_frames = LSNAP_MAX_FRAMES;
	if (ls_tmodel_new(&mo, tr->sc, &tr->model)) {
		ls_error("out of memory");
		return -1;
	}
	ret = ls_tracer_start(&tr->t, on_record, tr, &tr->tracer, err,
			      sizeof(err));
	if (ret) {
		ls_error("%s", err);
		return -1;
	}
	return 0;
}

static void announce(const struct trace *tr)
{
	if (tr->t.what == LS_TRACE_KERNEL && !tr->t.pid)
		fputs("Attaching to kernel allocators, Ctrl+C to quit.\n", stderr);
	else
		fprintf(stderr, "Attaching to pid %d, Ctrl+C to quit.\n",
			tr->t.pid);
	fflush(stderr);
}

/* Gone, or a zombie its parent has not reaped yet (nothing left to
 * trace then either). */
static int pid_gone(int pid)
{
	char path[64], buf[512], *p;
	FILE *f;
	int gone = 0;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	f = fopen(path, "re");
	if (!f)
		return errno == ENOENT;
	if (fgets(buf, sizeof(buf), f) && (p = strrchr(buf, ')')))
		gone = p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
	fclose(f);
	return gone;
}

static int target_gone(struct trace *tr)
{
	if (tr->child)
		return child_poll(tr);
	return tr->t.pid && pid_gone(tr->t.pid);
}

static int loop(struct trace *tr)
{
	uint64_t next = mono_now() + tr->interval_ns;
	uint64_t reports = 0;
	int r;

	for (;;) {
		if (stop_requested || target_gone(tr))
			break;
		r = ls_tracer_poll(tr->tracer, 50);
		if (r < 0 && r != -EINTR) {
			ls_error("cannot read the ring buffer: %s", strerror(-r));
			return -1;
		}
		if (!tr->interval_ns || mono_now() < next)
			continue;
		next += tr->interval_ns;
		if (report(tr))
			return -1;
		if (tr->count && ++reports == tr->count)
			return 0;
	}
	drain(tr);
	return report(tr);
}

static void cleanup(struct trace *tr)
{
	ls_tracer_stop(tr->tracer);
	ls_tmodel_free(tr->model);
	ls_stackcopy_free(tr->sc);
	if (tr->child && !tr->child_gone) {
		kill(tr->child, SIGKILL);
		waitpid(tr->child, NULL, 0);
	}
	if (tr->have_words)
		wordfree(&tr->words);
}

static int exit_status(const struct trace *tr, int failed)
{
	if (failed)
		return tr->child_gone && WIFEXITED(tr->child_status) &&
		       WEXITSTATUS(tr->child_status) >= LS_EXIT_FAILURE ?
		       WEXITSTATUS(tr->child_status) : LS_EXIT_FAILURE;
	if (tr->child_gone && WIFEXITED(tr->child_status))
		return WEXITSTATUS(tr->child_status);
	if (tr->child_gone && WIFSIGNALED(tr->child_status))
		return 128 + WTERMSIG(tr->child_status);
	return 0;
}

int ls_cmd_trace(int argc, char **argv)
{
	struct trace tr = { 0 };
	struct sigaction sa = { 0 };
	int r, failed;

	tr.ropts.format = LS_FORMAT_MEMLEAK;
	tr.ropts.top = 10;
	tr.t.stack_bytes = 8192;
	r = parse(&tr, argc, argv);
	if (r)
		return r > 0 ? 0 : LS_EXIT_FAILURE;
	if (!tr.interval_given && tr.ropts.format == LS_FORMAT_MEMLEAK)
		tr.interval_ns = 5000000000ULL;
	ls_report_opts_finish(&tr.ropts);
	if (check_target(&tr)) {
		cleanup(&tr);
		return LS_EXIT_FAILURE;
	}
	tr.snap_argv = tr.argv;
	sa.sa_handler = on_stop;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	failed = setup(&tr);
	if (!failed) {
		announce(&tr);
		if (tr.child)
			child_resume(&tr, 0);
		failed = loop(&tr);
		note_losses(&tr);
	}
	r = exit_status(&tr, failed);
	cleanup(&tr);
	return r;
}
#endif /* LS_HAVE_BPF */
