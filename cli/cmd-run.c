/*
 * cmd-run.c - `leakscope run [OPTIONS] [--] COMMAND [ARGS...]`
 *
 * Starts COMMAND with the agent preloaded (spawn.c) and gets out of its
 * way: stdin, stdout and stderr are the command's, its exit status
 * becomes ours, a signal that kills it kills us the same way.  Every
 * traced process writes a snapshot into a private directory as it exits;
 * once the command has ended they are rendered, the command's own first.
 * With --interval the agent is asked for a snapshot over its control
 * socket every period while the command runs.
 */
#include <errno.h>
#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "../common/contract.h"
#include "../lib/client.h"
#include "../lib/postmortem.h"
#include "../lib/util.h"
#include "cmds.h"
#include "spawn.h"

#define A(field) LS_ARG(struct ls_run_args, field)

/* --count is the number of periodic reports; bytes or blocks, what a
 * flame graph's widths measure, is --widths's older spelling, kept for
 * scripts. */
static int parse_count(const struct ls_option *o, const char *arg, void *args)
{
	struct ls_run_args *a = args;

	if (!strcmp(arg, "bytes") || !strcmp(arg, "blocks")) {
		a->r.ropts.svg.count = !strcmp(arg, "blocks") ?
			LS_FLAME_COUNT_BLOCKS : LS_FLAME_COUNT_BYTES;
		return 0;
	}
	return ls_parse_count(arg, &a->count) || !a->count ? -1 : 0;
}

static const struct ls_option own[] = {
	LS_OPT__INTERVAL(struct ls_run_args, interval_ns, 0,
			 " (periodic, while the command runs;\n"
			 "default: one report, at exit)"),
	{ .kind = LS_OPT_CALLBACK,
	  .long_name = "count",
	  .argh = "N",
	  .help = LS_OPT__COUNT_HELP " (periodic reports, at most; default: no\n"
		  "limit; also --count bytes|blocks, the older spelling of --widths)",
	  .want = "a positive number",
	  .cb = parse_count },
	{ .kind = LS_OPT_FLAG,
	  .long_name = "follow-exec",
	  .offset = A(follow_exec),
	  .help = "also trace the programs the command executes" },
	{ .kind = LS_OPT_FLAG,
	  .long_name = "all-children",
	  .offset = A(all_children),
	  .help = "a report for every forked child, even one that lived less\n"
		  "than a second (a shell's subshell)" },
	LS_OPT__SAMPLE_RATE(struct ls_run_args, sample_rate, 0, ""),
	{ .kind = LS_OPT_UINT,
	  .long_name = "sample-seed",
	  .offset = A(sample_seed),
	  .argh = "N",
	  .help = "seed the sampling (reproducible runs)",
	  .flags = LS_OPTF_NONZERO,
	  .want = "a positive number" },
	LS_OPT__FAIL_ON_LEAK(struct ls_run_args, leak_limit, fail_on_leak,
			     " (outstanding\nwhen a process ends)"),
	{ .kind = LS_OPT_FLAG,
	  .long_name = "leak-check",
	  .offset = A(leak_check),
	  .help = "at exit, sort the blocks as valgrind does (definitely,\n"
	  "indirectly, possibly lost, still reachable); --fail-on-leak then\n"
	  "counts definitely and indirectly lost bytes" },
	{ .kind = LS_OPT_STRING,
	  .long_name = "fail-on",
	  .offset = A(fail_on),
	  .argh = "KINDS",
	  .help = "what --fail-on-leak counts (implies it and --leak-check):\n"
	  "definite, indirect, possible, reachable or all",
	  .want = "definite, indirect, possible, reachable or all" },
	{ .kind = LS_OPT_END },
};

const struct ls_usage ls_run_usage = {
	"run", "[OPTIONS] [--] COMMAND [ARGS...]",
	"run a command under the agent and report its leaks",
	"Run COMMAND with the leakscope agent and report, when it exits, the\n"
	"call stacks holding memory it never freed.  The report goes to stderr\n"
	"or --output FILE; other traced processes (forked children that live\n"
	"on, --follow-exec) go after it, or to FILE.PID.",
	(const struct ls_option *const[]){ ls_report_options,
		ls_ropt_options, ls_reach_options, own, NULL },
	"Options come before COMMAND.  --fail-on-leak gates on the report as\n"
	"shown (its filters and suppressions), never counts the C and C++\n"
	"runtimes' own one-time allocations, and says why in one line on\n"
	"stderr.  Exit status: the command's; 99 when\n"
	"--fail-on-leak trips; 125 when leakscope itself fails; 126 command not\n"
	"executable; 127 not found.",
	LS_RO_RUN,
};

void ls_run_defaults(void *args)
{
	struct ls_run_args *a = args;

	a->r.ropts.depth = LS_DEPTH_DEFAULT;
	a->r.default_supp = 1;
	a->fail_kinds = LS_GATE_DEFAULT;
}

struct run {
	const struct ls_run_args *a;
	char cmd_path[PATH_MAX];
	char agent[PATH_MAX];
	char tmpdir[PATH_MAX];
	struct ls_output out;	/* with --output */
	FILE *fp;		/* where the root's reports go */
	pid_t child;
	struct ls_sympool *pool;	/* shared by every report of the run */
	struct ls_supp *gate_supp;	/* what --fail-on-leak leaves out: the
					   files and the built-in list */
};

/* --fail-on KINDS: what the gate counts; it implies the gate and the
 * check at exit. */
static int fail_on_arg(struct ls_run_args *a)
{
	char err[256];

	if (!a->fail_on)
		return 0;
	if (ls_reach_parse_kinds(a->fail_on, &a->fail_kinds, err, sizeof(err))) {
		ls_usage_error(&ls_run_usage, "--fail-on: %s", err);
		return -1;
	}
	a->fail_on_leak = a->leak_check = 1;
	return 0;
}

static int check_args(struct run *r, struct ls_invocation *inv)
{
	const struct ls_renderer *fmt = ls_renderer_of(&r->a->r.ropts);

	if (r->a->count && !r->a->interval_ns) {
		ls_error("--count needs --interval");
		return -1;
	}
	if (r->a->leak_check && r->a->sample_rate) {
		ls_error("--leak-check needs full tracking: it cannot be "
			 "combined with --sample-rate");
		return -1;
	}
	if (r->a->r.ropts.only && !r->a->leak_check) {
		ls_error("--only needs --leak-check (the kinds come from the "
			 "check at exit)");
		return -1;
	}
	if (!inv->argc) {
		ls_error("no command to run (usage: leakscope run [OPTIONS] -- "
			 "COMMAND [ARGS...])");
		return -1;
	}
	/* One whole document per file: periodic ones would pile up. */
	if ((fmt->needs & LS_NEEDS_OWN_FILE) && r->a->interval_ns) {
		ls_error("--format %s writes one %s per file: it cannot take "
			 "--interval", fmt->name, fmt->noun);
		return -1;
	}
	/* Periodic reports for machines must not be mixed into what the
	 * command itself writes on stderr while it runs. */
	if (r->a->interval_ns && fmt != &ls_renderers[0] && !r->a->r.output) {
		ls_error("--format %s with --interval needs --output FILE (or "
			 "--output - for stdout): on stderr the reports would be "
			 "mixed with the command's own output", fmt->name);
		return -1;
	}
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* One report, to fp (named path, NULL for stderr), symbolized through
 * the run's pool: the reports of one run open each library once. */
static int render(struct run *r, FILE *fp, const char *path,
		  const struct ls_snapshot *snap,
		  const struct ls_report_opts *opts, int *tripped)
{
	struct ls_symbolizer *sym = NULL;
	struct ls_report_opts gopts = *opts;
	struct ls_gate gate;
	int err, gated = tripped && r->a->fail_on_leak;

	if (!r->pool)
		r->pool = ls_sympool_new();
	if (r->pool)
		sym = ls_symbolizer_new_shared(snap, r->pool);
	/* --fail-on-leak gates on this report as filtered, and never counts
	 * the runtimes' own allocations; one line says why it tripped,
	 * whatever --output is. */
	gopts.supp = r->gate_supp;
	err = ls_write_report_gate(fp, path, snap, opts, sym, r->a->fail_kinds,
				   &gopts, gated ? &gate : NULL);
	ls_symbolizer_free(sym);
	if (!err)
		fflush(fp);
	if (!err && gated && ls_gate_trips(&gate, r->a->leak_limit)) {
		*tripped = 1;
		ls_gate_reason((pid_t)snap->hdr.pid, &gate, r->a->fail_kinds);
	}
	return err;
}

/* A post-mortem file has no block list: filters that need one are
 * dropped, and the report says so. */
static void render_plain(struct run *r, const struct ls_snapshot *snap,
			 const struct ls_report_opts *opts, int *tripped)
{
	struct ls_report_opts plain = *opts;

	plain.min_age_ns = plain.min_size = plain.max_size = 0;
	plain.show_allocs = 0;
	ls_report_opts_finish(&plain);
	ls_error("the post-mortem file of pid %u has no block list: "
		 "block filters ignored", snap->hdr.pid);
	render(r, r->fp, r->a->r.output, snap, &plain, tripped);
}

static void periodic_report(struct run *r)
{
	struct ls_snapshot snap;
	char err[512];

	if (ls_client_snapshot(r->child, r->a->r.ropts.need_blocks, &snap, err,
			       sizeof(err))) {
		ls_error("periodic report skipped: %s", err);
		return;
	}
	render(r, r->fp, r->a->r.output, &snap, &r->a->r.ropts, NULL);
	ls_snapshot_release(&snap);
}

static int wait_child(struct run *r, int *status)
{
	int pidfd = -1;
	uint64_t next = 0, done = 0;

	if (r->a->interval_ns) {
		pidfd = (int)syscall(SYS_pidfd_open, r->child, 0);
		next = mono_ns() + r->a->interval_ns;
	}
	for (;;) {
		pid_t w;

		if (pidfd >= 0 && (!r->a->count || done < r->a->count)) {
			uint64_t now = mono_ns();
			struct pollfd p = { .fd = pidfd, .events = POLLIN };
			int ms = now >= next ? 0 : (int)((next - now + 999999) / 1000000);

			if (poll(&p, 1, ms) == 0) {
				periodic_report(r);
				done++;
				next += r->a->interval_ns;
				continue;
			}
		}
		w = waitpid(r->child, status, 0);
		if (w == r->child)
			break;
		if (w < 0 && errno != EINTR) {
			ls_error("cannot wait for pid %d: %s", (int)r->child,
				 strerror(errno));
			if (pidfd >= 0)
				close(pidfd);
			return -1;
		}
	}
	if (pidfd >= 0)
		close(pidfd);
	ls_forward_done();
	return 0;
}

/* --- collecting the reports ----------------------------------------------- */

struct collected {
	struct ls_snapshot *snaps;
	size_t n, cap;
};

static int by_start(const void *a, const void *b)
{
	const struct ls_snapshot *x = a, *y = b;

	return x->hdr.start_mono_ns < y->hdr.start_mono_ns ? -1 :
	       x->hdr.start_mono_ns > y->hdr.start_mono_ns;
}

static void collect(const char *dir, struct collected *c)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	memset(c, 0, sizeof(*c));
	while (d && (de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char path[PATH_MAX + 256], err[512];
		struct ls_snapshot snap;
		struct stat st;

		if (len <= strlen(LS_SUFFIX_SNAP) ||
		    strcmp(de->d_name + len - strlen(LS_SUFFIX_SNAP), LS_SUFFIX_SNAP))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		/* Empty: made by a worker before it setuid()ed, for a report
		 * it never wrote (killed, or too short-lived). */
		if (!stat(path, &st) && st.st_size == 0)
			continue;
		if (ls_snapshot_load(path, &snap, err, sizeof(err))) {
			ls_error("%s", err);
			continue;
		}
		if (LS_GROW(c->snaps, c->n + 1, c->cap)) {
			ls_snapshot_release(&snap);
			break;
		}
		c->snaps[c->n++] = snap;
	}
	if (d)
		closedir(d);
	qsort(c->snaps, c->n, sizeof(*c->snaps), by_start);
}

static void remove_tmpdir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *de;

	while (d && (de = readdir(d))) {
		char path[PATH_MAX + 256];

		if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		unlink(path);
	}
	if (d)
		closedir(d);
	rmdir(dir);
}

/* A report of another process: to FILE.PID with --output, else after
 * the root's on the same stream. */
static int render_other(struct run *r, const struct ls_snapshot *snap,
			int *tripped)
{
	struct ls_output of;
	char *path;
	int err;

	if (!r->a->r.output)
		return render(r, r->fp, NULL, snap, &r->a->r.ropts, tripped);
	if (asprintf(&path, "%s.%u", r->a->r.output, snap->hdr.pid) < 0)
		return -ENOMEM;
	err = ls_open_output(&of, path);
	if (!err) {
		err = render(r, of.fp, path, snap, &r->a->r.ropts, tripped);
		if (err)
			ls_output_abort(&of);
		else
			err = ls_commit_output(&of);
	}
	free(path);
	return err;
}

/*
 * The command died without writing its exit snapshot (a signal, or
 * _exit through a path the agent does not see): report what its
 * post-mortem file held at the last growth sample, and remove the file.
 * Returns 0, or -1 when there is none.
 */
static int postmortem_report(struct run *r, int *tripped)
{
	struct ls_snapshot snap;
	char path[4200], err[1024];

	/* The dead agent's socket is stale: nothing will answer it. */
	if (!ls_client_socket_path(r->child, path, sizeof(path)))
		unlink(path);
	if (ls_postmortem_load_pid(r->child, &snap, err, sizeof(err)) ||
	    ls_postmortem_path(r->child, path, sizeof(path)))
		return -1;
	unlink(path);
	if (render(r, r->fp, r->a->r.output, &snap, &r->a->r.ropts,
		   tripped) == -ENODATA)
		render_plain(r, &snap, &r->a->r.ropts, tripped);
	ls_snapshot_release(&snap);
	return 0;
}

/*
 * Render everything; returns 0, 1 when --fail-on-leak tripped, or -1
 * when a report could not be produced.
 */
static int report_all(struct run *r, int status)
{
	struct collected c;
	int root_seen = 0, tripped = 0, failed = 0;
	size_t i;

	collect(r->tmpdir, &c);
	for (i = 0; i < c.n; i++) {
		const struct ls_snapshot *s = &c.snaps[i];

		if (s->hdr.pid == (uint32_t)r->child) {
			root_seen = 1;
			failed |= render(r, r->fp, r->a->r.output, s,
					 &r->a->r.ropts, &tripped) != 0;
		}
	}
	for (i = 0; i < c.n; i++) {
		const struct ls_snapshot *s = &c.snaps[i];

		if (s->hdr.pid != (uint32_t)r->child)
			failed |= render_other(r, s, &tripped) != 0;
	}
	for (i = 0; i < c.n; i++)
		ls_snapshot_release(&c.snaps[i]);
	free(c.snaps);
	if (!root_seen) {
		int pm = postmortem_report(r, &tripped);

		if (pm < 0 && WIFSIGNALED(status))
			ls_error("pid %d was killed by signal %d (%s) and left "
				 "no post-mortem file", (int)r->child,
				 WTERMSIG(status), strsignal(WTERMSIG(status)));
		else if (pm < 0)
			ls_error("pid %d ended without writing its report (was "
				 "the agent loaded?)", (int)r->child);
		failed |= pm < 0;
	}
	return failed ? -1 : tripped;
}

/* Die of the same signal as the command, without dumping our own core. */
static int open_output(struct run *r)
{
	r->fp = stderr;
	if (!r->a->r.output)
		return 0;
	if (ls_open_output(&r->out, r->a->r.output))
		return -1;
	r->fp = r->out.fp;
	return 0;
}

static int prepare(struct run *r, const char *cmd)
{
	const char *why;
	const char *tmp = getenv("TMPDIR");
	int err = ls_resolve_command(cmd, r->cmd_path, sizeof(r->cmd_path));

	if (err == -ENOENT) {
		ls_error("cannot run '%s': command not found", cmd);
		return LS_EXIT_NOTFOUND;
	}
	if (err) {
		ls_error("cannot run '%s': %s", cmd, strerror(-err));
		return LS_EXIT_NOEXEC;
	}
	why = ls_untraceable(r->cmd_path);
	if (why) {
		ls_error("cannot trace '%s': %s", cmd, why);
		return LS_EXIT_FAILURE;
	}
	if (ls_find_agent(r->agent, sizeof(r->agent)))
		return LS_EXIT_FAILURE;
	snprintf(r->tmpdir, sizeof(r->tmpdir), "%s/leakscope-run.XXXXXX",
		 tmp && *tmp ? tmp : "/tmp");
	if (!mkdtemp(r->tmpdir)) {
		ls_error("cannot create a directory in '%s': %s",
			 tmp && *tmp ? tmp : "/tmp", strerror(errno));
		return LS_EXIT_FAILURE;
	}
	if (open_output(r)) {
		rmdir(r->tmpdir);
		return LS_EXIT_FAILURE;
	}
	return 0;
}

static int finish(struct run *r, int status, int rep)
{
	if (r->a->r.output && rep < 0)
		ls_output_abort(&r->out);	/* no half report */
	else if (r->a->r.output && ls_commit_output(&r->out))
		rep = -1;
	if (WIFSIGNALED(status))
		ls_die_like(WTERMSIG(status));
	if (WEXITSTATUS(status))
		return WEXITSTATUS(status);
	if (rep < 0)
		return LS_EXIT_FAILURE;
	return rep ? LS_EXIT_LEAK : LS_EXIT_OK;
}

int ls_cmd_run(struct ls_invocation *inv)
{
	struct ls_run_args *a = inv->args;
	struct run r = { .a = a };
	char **envp;
	int err, status = 0, rep;

	if (fail_on_arg(a) || check_args(&r, inv))
		return LS_EXIT_USAGE;
	/* Without a check, the report shows what it always showed: the
	 * built-in list only keeps the runtimes' own allocations out of the
	 * gate.  With one, they are suppressed as valgrind suppresses its. */
	r.gate_supp = a->r.supp_all.n ? &a->r.supp_all : NULL;
	if (!a->leak_check)
		a->r.ropts.supp = a->r.supp.n ? &a->r.supp : NULL;
	err = prepare(&r, inv->argv[0]);
	if (err)
		return err;
	envp = ls_child_env(r.a, r.agent, r.tmpdir);
	if (!envp) {
		ls_error("out of memory");
		goto fail;
	}
	ls_forward_signals();
	err = ls_spawn(r.cmd_path, inv->argv, envp, &r.child);
	free(envp);
	if (err) {
		ls_error("cannot run '%s': %s", inv->argv[0], strerror(-err));
		ls_output_abort(&r.out);
		remove_tmpdir(r.tmpdir);
		return err == -ENOENT ? LS_EXIT_NOTFOUND : LS_EXIT_NOEXEC;
	}
	if (wait_child(&r, &status))
		goto fail;
	rep = report_all(&r, status);
	ls_sympool_free(r.pool);
	remove_tmpdir(r.tmpdir);
	return finish(&r, status, rep);
fail:
	ls_output_abort(&r.out);
	remove_tmpdir(r.tmpdir);
	return LS_EXIT_FAILURE;
}
