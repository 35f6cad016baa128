/*
 * trace.c - `leakscope trace`: memleak's command line on leakscope's
 * eBPF tracer (bpf/trace.bpf.c, bpf/trace.c, bpf/tracemodel.c).
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
#include "cli.h"
#include "cmds.h"

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
#include "../bpf/tracer.h"
#include "../lib/stackcopy.h"
#include "../bpf/tracemodel.h"
#include "../lib/util.h"

#ifdef LS_HAVE_BPF
struct trace {
	struct ls_tracer_opts t;
	struct ls_trace_args *a;
	char **argv;		/* -- CMD ARGS, or -c split */
	wordexp_t words;
	int have_words;
	uint64_t interval_ns, count;

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

#endif

#define TA(field) LS_ARG(struct ls_trace_args, field)

/* --event's values: bpf/trace-kinds.h's LS_TRACE_EVENT rows. */
static const char *const trace_events[] = {
#define LS_TRACE_EVENT(id, name, help) name,
#include "../bpf/trace-kinds.h"
#undef LS_TRACE_EVENT
	NULL
};

/* memleak's options (short names, -o in milliseconds) and the report
 * options trace shares with the other commands. */
static const struct ls_option trace_options[] = {
	{ .kind = LS_OPT_UINT, .short_name = 'p', .long_name = "pid",
	  .offset = TA(pid), .argh = "PID",
	  .help = "the process to trace (started without leakscope)",
	  .flags = LS_OPTF_NONZERO, .max = INT_MAX, .want = "a process id" },
	{ .kind = LS_OPT_STRING, .short_name = 'c', .long_name = "command",
	  .offset = TA(command), .argh = "CMD",
	  .help = "run CMD (split as a shell would, no expansion) and trace it",
	  .want = "a command" },
	{ .kind = LS_OPT_CHOICE, .long_name = "event", .offset = TA(event),
	  .argh = "WHAT", .help = "what to trace (below; default alloc)",
	  .choices = trace_events },
	{ .kind = LS_OPT_FLAG, .short_name = 't', .long_name = "trace",
	  .offset = TA(print_trace),
	  .help = "print every recorded call on stderr" },
	LS_OPT__SAMPLE_RATE(struct ls_trace_args, sample_rate, 's',
			    " (docs/SAMPLING.md)"),
	{ .kind = LS_OPT_STRING, .short_name = 'O', .long_name = "obj",
	  .offset = TA(obj), .argh = "OBJ",
	  .help = "the allocator's object (default: the process's libc)",
	  .want = "a file" },
	{ .kind = LS_OPT_STRING, .long_name = "symbols-prefix",
	  .offset = TA(prefix), .argh = "PREFIX",
	  .help = "the allocator's functions are PREFIXmalloc... (je_)",
	  .want = "a prefix" },
	{ .kind = LS_OPT_FLAG, .long_name = "combined-only",
	  .offset = TA(combined_only),
	  .help = "per-stack totals only, no block list; with --stack-mode\n"
		  "fp (and no sampling) counted in the kernel, no record\n"
		  "per block" },
	{ .kind = LS_OPT_FLAG, .long_name = "wa-missing-free",
	  .offset = TA(wa_missing_free),
	  .help = "accepted for memleak: a block allocated again at an\n"
		  "address replaces the one whose free was missed, always" },
	{ .kind = LS_OPT_FLAG, .long_name = "percpu", .offset = TA(percpu),
	  .help = "--event kernel: percpu allocations too" },
	{ .kind = LS_OPT_STRING, .long_name = "stack-mode",
	  .offset = TA(stack_mode), .argh = "MODE",
	  .help = "copy (default: the stack is copied and unwound with\n"
		  "CFI in user space) or fp (frame pointers, in the kernel)",
	  .want = "copy or fp" },
	{ .kind = LS_OPT_SIZE, .long_name = "stack-bytes",
	  .offset = TA(stack_bytes), .argh = "BYTES",
	  .help = "user stack copied per event (default 8192)",
	  .min = 64, .max = LS_TRACE_MAX_STACK, .want = "64 to 16384" },
	{ .kind = LS_OPT_FLAG, .short_name = 'v', .long_name = "verbose",
	  .offset = TA(verbose),
	  .help = "libbpf's messages, and the tracer's counters at the end" },
	{ .kind = LS_OPT_END },
};

/* --format and --output as every reporting command has them (no -o:
 * memleak's --older). */
static const struct ls_option trace_report_options[] = {
	LS_OPT__FORMAT(struct ls_trace_args, r.ropts.format, 0,
		       " (default memleak)"),
	LS_OPT__OUTPUT(struct ls_trace_args, r.output, 0,
		       " (each report replaces the last)"),
	{ .kind = LS_OPT_END },
};

#define TRACE_MEMLEAK_NOTE \
	"The short options -p -c -t -a -o -s -T -z -Z -O -v are bcc memleak's\n" \
	"and mean what they mean there, under trace only: -o is --min-age\n" \
	"(memleak's --older, also accepted), so the report's file is --output\n" \
	"FILE.  --min-size and --max-size are filtered in the kernel; --top\n" \
	"is 10 by default.\n\n"

const struct ls_usage ls_trace_usage = {
	"trace", "[OPTIONS] [-p PID | -c CMD | -- CMD [ARGS...]] [INTERVAL [COUNT]]",
	"trace allocations or growth with eBPF, from outside the process",
	"Trace a process started without leakscope (-p), or a command it\n"
	"starts, from outside with eBPF: nothing is injected, any allocator\n"
	"works, and stacks are whole without frame pointers.  bcc memleak's\n"
	"command line works unchanged and its report shape is the default.\n"
	"--event brk, mmap and page-fault give Gregg's growth views (with\n"
	"--format svg, his flame graphs); --event kernel traces the kernel's\n"
	"allocators, system-wide or for -p.  A report is printed every\n"
	"INTERVAL seconds (default 5 in memleak's format, else only at the\n"
	"end), COUNT times at most, and when the process ends or on Ctrl+C.\n"
	"Needs root, or CAP_BPF and CAP_PERFMON, and a kernel with BTF.",
	(const struct ls_option *const[]){ trace_options, trace_report_options,
					   ls_ropt_options, NULL },
	"--event WHAT:\n"
#define LS_TRACE_EVENT(id, name, help) "  " name ": " help "\n"
#include "../bpf/trace-kinds.h"
#undef LS_TRACE_EVENT
	"\n" TRACE_MEMLEAK_NOTE
#ifdef LS_HAVE_BPF
	"docs/EBPF.md describes the design and its costs.",
#else
	"Not available in this build: clang, bpftool, libbpf-dev or the\n"
	"kernel's BTF were missing when leakscope was built.",
#endif
	LS_RO_TRACE | LS_RO_MEMLEAK,
};

void ls_trace_defaults(void *args)
{
	struct ls_trace_args *a = args;

	a->r.ropts.top = 10;
	a->stack_bytes = 8192;
}

#ifndef LS_HAVE_BPF
int ls_cmd_trace(struct ls_invocation *inv)
{
	(void)inv;
	ls_error("this leakscope was built without eBPF tracing (clang, "
		 "bpftool, libbpf-dev or the kernel's BTF were missing at "
		 "build time)");
	return LS_EXIT_ERROR;
}
#else
static int bad(const char *opt, const char *arg, const char *want)
{
	ls_usage_error(&ls_trace_usage, "invalid value '%s' for %s: expected %s",
		       arg, opt, want);
	return -1;
}

static int parse_stack_mode(struct trace *tr, const char *arg)
{
	if (!arg || !strcmp(arg, "copy"))
		tr->t.stack_mode = LS_STACK_COPY;
	else if (!strcmp(arg, "fp"))
		tr->t.stack_mode = LS_STACK_FP;
	else
		return bad("--stack-mode", arg, "copy or fp");
	return 0;
}

/* INTERVAL [COUNT] (a number first), else the command to run. */
static int parse_args(struct trace *tr, int argc, char **argv)
{
	uint64_t v;

	if (!argc)
		return 0;
	if (ls_parse_seconds(argv[0], &tr->interval_ns)) {
		tr->argv = argv;
		return 0;
	}
	if (argc > 2) {
		ls_usage_error(&ls_trace_usage, "unexpected argument '%s'", argv[2]);
		return -1;
	}
	if (argc == 2 && (ls_parse_count(argv[1], &v) || !v))
		return bad("COUNT", argv[1], "a positive count");
	tr->count = argc == 2 ? v : 0;
	return 0;
}

static int parse(struct trace *tr, struct ls_invocation *inv)
{
	struct ls_trace_args *a = inv->args;

	tr->a = a;
	tr->t.pid = (int)a->pid;
	tr->t.obj = a->obj;
	tr->t.prefix = a->prefix;
	tr->t.sample_rate = a->sample_rate;
	tr->t.stack_bytes = (uint32_t)a->stack_bytes;
	tr->t.min_size = a->r.ropts.min_size;
	tr->t.max_size = a->r.ropts.max_size;
	tr->t.percpu = a->percpu;
	tr->t.verbose = a->verbose;
	if (a->combined_only)
		a->r.ropts.show_allocs = 0;
	if (!a->r.ropts.format)
		a->r.ropts.format = ls_renderer_find("memleak");
	tr->t.what = (enum ls_tracer_what)a->event;
	if (parse_stack_mode(tr, a->stack_mode) ||
	    parse_args(tr, inv->argc, inv->argv))
		return -1;
	/* Weights of sampled blocks depend on each block's size: totals
	 * summed in the kernel could not be scaled back. */
	tr->t.combined = a->combined_only && !a->sample_rate &&
			 tr->t.stack_mode == LS_STACK_FP;
	if (!tr->interval_ns && !strcmp(a->r.ropts.format->name, "memleak"))
		tr->interval_ns = 5000000000ULL;
	return 0;
}

static int check_target(struct trace *tr)
{
	const char *command = tr->a->command;
	int targets = !!tr->t.pid + !!command + !!tr->argv;

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
		return -2;	/* not a usage error: the command failed */
	}
	if (command) {
		if (wordexp(command, &tr->words, WRDE_NOCMD) ||
		    !tr->words.we_wordc) {
			ls_error("cannot parse the command '%s'", command);
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

/* The records' names: bpf/trace-kinds.h's LS_TRACE_RECORD rows. */
static const char *const record_names[LS_TEV_KINDS] = {
#define LS_TRACE_RECORD(id, name, meaning) [LS_TEV_##id] = name,
#include "../bpf/trace-kinds.h"
#undef LS_TRACE_RECORD
};

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
			e->type == LS_TEV_BRK || e->type == LS_TEV_FAULT ?
			record_names[e->type] : fn, (uint64_t)e->size,
			(uint64_t)e->addr, e->tid);
	}
}

static int on_record(void *arg, const struct ls_trace_event *e, size_t len)
{
	struct trace *tr = arg;
	int ret;

	if (tr->a->print_trace)
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

static int add_combined(void *arg, const uint64_t *ips, uint32_t n,
			const struct ls_trace_comb *c)
{
	struct trace *tr = arg;

	return ls_tmodel_combined(tr->model, ips, n, c);
}

static int report(struct trace *tr)
{
	const char *path = tr->a->r.output;
	struct ls_snapshot snap;
	struct ls_output out;
	int ret;

	if (tr->err) {
		ls_error("out of memory while tracing");
		return -1;
	}
	if (tr->t.combined) {
		ls_tmodel_combined_reset(tr->model);
		ret = ls_tracer_combined_each(tr->tracer, add_combined, tr);
		if (ret) {
			ls_error("cannot read the per-stack totals: %s",
				 strerror(-ret));
			return -1;
		}
	}
	ret = ls_tmodel_snapshot(tr->model, mono_now(), tr->snap_argv, &snap);
	if (ret) {
		ls_error("cannot build the report: %s", strerror(-ret));
		return -1;
	}
	ret = ls_open_output(&out, path ? path : "-");
	if (!ret) {
		ret = ls_write_report(out.fp, path, &snap, &tr->a->r.ropts, NULL);
		if (!ret && !path &&
		    !strcmp(tr->a->r.ropts.format->name, "memleak"))
			putchar('\n');
		ret = ret ? (ls_output_abort(&out), ret) : ls_commit_output(&out);
	}
	ls_snapshot_release(&snap);
	fflush(stdout);
	return ret ? -1 : 0;
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
	if (tr->a->verbose)
		fprintf(stderr, "leakscope: %" PRIu64 " records, %" PRIu64
			" frees of unknown blocks, %" PRIu64 " without stack, %"
			PRIu64 " unmatched returns\n", st[LS_STAT_EVENTS],
			unknown, nostack, st[LS_STAT_NEST_LOST]);
}

/* ------------------------------------------------------------------ */
/* Setup and the loop.                                                 */

/* The libc the process maps (what memleak probes without -O): its path
 * as the maps name it, and its first mapping's /proc/PID/map_files link
 * into file (pid not 0). */
static int find_libc(int pid, char *out, size_t len, char *file, size_t cap)
{
	char buf[4400], path[4200], range[64];
	FILE *f;
	int found = 0;

	snprintf(buf, sizeof(buf), "/proc/%d/maps", pid ? pid : getpid());
	f = fopen(buf, "re");
	if (!f)
		return -1;
	while (!found && fgets(buf, sizeof(buf), f))
		if (sscanf(buf, "%63s %*s %*s %*s %*s %4199s", range, path) == 2 &&
		    strstr(ls_sym_basename(path), "libc.so")) {
			found = snprintf(out, len, "%s", path) > 0;
			snprintf(file, cap, "/proc/%d/map_files/%s", pid, range);
		}
	fclose(f);
	return found ? 0 : -1;
}

static int resolve_obj(struct trace *tr, char *buf, size_t len)
{
	char tmp[4300], file[128];

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
	if (find_libc(tr->argv ? 0 : tr->t.pid, tmp, sizeof(tmp), file,
		      sizeof(file))) {
		ls_error("no libc in pid %d: give the allocator with -O",
			 tr->t.pid);
		return -1;
	}
	/* Another process's: the very file it mapped (map_files, found
	 * whatever mount namespace or chroot it lives in; the kernel places
	 * the probes on that inode), else its view of the path. */
	if (tr->argv)
		snprintf(buf, len, "%s", tmp);
	else if (!access(file, R_OK))
		snprintf(buf, len, "%s", file);
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
		       WEXITSTATUS(tr->child_status) >= LS_EXIT_NOEXEC ?
		       WEXITSTATUS(tr->child_status) : LS_EXIT_ERROR;
	if (tr->child_gone && WIFEXITED(tr->child_status))
		return WEXITSTATUS(tr->child_status);
	if (tr->child_gone && WIFSIGNALED(tr->child_status))
		return 128 + WTERMSIG(tr->child_status);
	return 0;
}

int ls_cmd_trace(struct ls_invocation *inv)
{
	struct trace tr = { 0 };
	struct sigaction sa = { 0 };
	int r, failed;

	r = parse(&tr, inv) ? -1 : check_target(&tr);
	if (r) {
		cleanup(&tr);
		return r == -2 ? LS_EXIT_ERROR : LS_EXIT_USAGE;
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
