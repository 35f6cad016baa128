/*
 * run.c - `leakscope run [OPTIONS] -- COMMAND [ARGS...]`
 *
 * Starts COMMAND with the agent preloaded and gets out of its way: stdin,
 * stdout and stderr are the command's, its exit status becomes ours, a
 * signal that kills it kills us the same way.  Every traced process
 * writes a snapshot into a private directory as it exits; once the
 * command has ended they are rendered, the command's own first.  With
 * --interval the agent is asked for a snapshot over its control socket
 * every period while the command runs.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "../common/contract.h"
#include "../lib/client.h"
#include "../lib/postmortem.h"
#include "cmd.h"
#include "../lib/render.h"
#include "../lib/snapshot.h"
#include "../lib/util.h"

#ifndef LS_LIBDIR
#define LS_LIBDIR "/usr/local/lib/leakscope"
#endif

extern char **environ;

struct run {
	struct ls_report_opts ropts;
	const char *output;
	uint64_t depth;
	uint64_t interval_ns;
	uint64_t count;		/* periodic reports; 0 = no limit */
	int follow_exec;
	int fail_on_leak;
	uint64_t leak_limit;
	int leak_check;		/* reachability check at exit */
	unsigned fail_kinds;	/* what --fail-on-leak counts with it */
	uint64_t sample_rate;	/* 0 = full tracking */
	uint64_t sample_seed;

	char cmd_path[PATH_MAX];
	char agent[PATH_MAX];
	char tmpdir[PATH_MAX];
	struct ls_outfile out;	/* with --output */
	FILE *fp;		/* where the root's reports go */
	pid_t child;
};

enum {
	OPT_DEPTH = LS_OPT_REPORT_END,
	OPT_INTERVAL,
	OPT_COUNT,
	OPT_FOLLOW_EXEC,
	OPT_FAIL_ON_LEAK,
	OPT_LEAK_CHECK,
	OPT_FAIL_ON,
	OPT_SAMPLE_RATE,
	OPT_SAMPLE_SEED,
	OPT_HELP,
};

static const struct option run_longopts[] = {
	LS_REPORT_LONGOPTS,
	{ "depth", required_argument, NULL, OPT_DEPTH },
	{ "interval", required_argument, NULL, OPT_INTERVAL },
	{ "count", required_argument, NULL, OPT_COUNT },
	{ "follow-exec", no_argument, NULL, OPT_FOLLOW_EXEC },
	{ "fail-on-leak", optional_argument, NULL, OPT_FAIL_ON_LEAK },
	{ "leak-check", no_argument, NULL, OPT_LEAK_CHECK },
	{ "fail-on", required_argument, NULL, OPT_FAIL_ON },
	{ "sample-rate", required_argument, NULL, OPT_SAMPLE_RATE },
	{ "sample-seed", required_argument, NULL, OPT_SAMPLE_SEED },
	{ "help", no_argument, NULL, OPT_HELP },
	{ NULL, 0, NULL, 0 },
};

static const char run_usage[] =
"usage: leakscope run [OPTIONS] [--] COMMAND [ARGS...]\n"
"\n"
"Run COMMAND with the leakscope agent and report, when it exits, the call\n"
"stacks holding memory it never freed.\n"
"\n"
"  --format text|json|folded  report format (default text)\n"
"  --output FILE              write the report to FILE (default: stderr);\n"
"                             other traced processes go to FILE.PID\n"
"  --top N                    only the N stacks holding the most bytes\n"
"  --min-age MS               only blocks at least MS milliseconds old\n"
"  --min-size BYTES           only blocks of at least BYTES (K, M, G ok)\n"
"  --max-size BYTES           only blocks of at most BYTES\n"
"  --show-allocs              list every outstanding block\n"
"  --depth N                  frames per stack, 1-256 (default 64)\n"
"  --interval SECONDS         also report every SECONDS while it runs\n"
"  --count N                  at most N periodic reports\n"
"  --follow-exec              also trace programs the command executes\n"
"  --sample-rate BYTES        record a Poisson sample of the allocations,\n"
"                             one per BYTES on average (e.g. 512KiB):\n"
"                             nearly free; figures become estimates\n"
"  --sample-seed N            seed the sampling (reproducible runs)\n"
"  --fail-on-leak[=BYTES]     exit 99 if a process ends with more than\n"
"                             BYTES (default 0) outstanding, after the\n"
"                             filters and suppressions (the C and C++\n"
"                             runtimes' own allocations are suppressed),\n"
"                             with a one-line reason on stderr\n"
"  --leak-check               at exit, sort the blocks as valgrind does\n"
"                             (definitely, indirectly, possibly lost, still\n"
"                             reachable); --fail-on-leak then counts the\n"
"                             definitely and indirectly lost bytes\n"
"  --fail-on KINDS            what --fail-on-leak counts (implies both):\n"
"                             definite,indirect,possible,reachable or all\n"
"  --only KINDS               with --leak-check: report only these kinds\n"
"  --suppressions FILE        LeakSanitizer suppressions (leak:PATTERN),\n"
"                             several allowed; --no-default-suppressions,\n"
"                             --gen-suppressions as for 'leakscope check'\n"
"\n"
"Exit status: the command's; 99 when --fail-on-leak trips; 125 when\n"
"leakscope itself fails; 126 command not executable; 127 not found.\n";

static int parse(struct run *r, int argc, char **argv)
{
	uint64_t v;
	int c, k;

	r->depth = LS_DEPTH_DEFAULT;
	optind = 1;
	opterr = 0;
	while ((c = getopt_long(argc, argv, "+h", run_longopts, NULL)) != -1) {
		k = ls_report_option(c, optarg, &r->ropts, &r->output);
		if (k < 0)
			return -1;
		if (k)
			continue;
		switch (c) {
		case OPT_DEPTH:
			if (ls_parse_count(optarg, &v) || v < LS_DEPTH_MIN ||
			    v > LS_DEPTH_MAX) {
				ls_error("invalid value '%s' for --depth: expected 1 to 256", optarg);
				return -1;
			}
			r->depth = v;
			break;
		case OPT_INTERVAL:
			if (ls_parse_seconds(optarg, &r->interval_ns)) {
				ls_error("invalid value '%s' for --interval: expected seconds", optarg);
				return -1;
			}
			break;
		case OPT_COUNT:
			if (ls_parse_count(optarg, &r->count) || !r->count) {
				ls_error("invalid value '%s' for --count: expected a positive number", optarg);
				return -1;
			}
			break;
		case OPT_FOLLOW_EXEC:
			r->follow_exec = 1;
			break;
		case OPT_FAIL_ON_LEAK:
			r->fail_on_leak = 1;
			if (optarg && ls_parse_size(optarg, &r->leak_limit)) {
				ls_error("invalid value '%s' for --fail-on-leak: expected bytes", optarg);
				return -1;
			}
			break;
		case OPT_LEAK_CHECK:
			r->leak_check = 1;
			break;
		case OPT_FAIL_ON: {
			char err[256];

			if (ls_reach_parse_kinds(optarg, &r->fail_kinds, err,
						 sizeof(err))) {
				ls_error("--fail-on: %s", err);
				return -1;
			}
			r->fail_on_leak = r->leak_check = 1;
			break;
		}
		case OPT_SAMPLE_RATE:
			if (ls_parse_size(optarg, &r->sample_rate) || !r->sample_rate) {
				ls_error("invalid value '%s' for --sample-rate: expected a positive size such as 512KiB", optarg);
				return -1;
			}
			break;
		case OPT_SAMPLE_SEED:
			if (ls_parse_count(optarg, &r->sample_seed) || !r->sample_seed) {
				ls_error("invalid value '%s' for --sample-seed: expected a positive number", optarg);
				return -1;
			}
			break;
		case OPT_HELP:
		case 'h':
			fputs(run_usage, stdout);
			exit(0);
		case ':':
			ls_error("option '%s' needs a value", argv[optind - 1]);
			return -1;
		default:
			ls_error("unknown option '%s' (see 'leakscope run --help')",
				 argv[optind - 1]);
			return -1;
		}
	}
	if (r->count && !r->interval_ns) {
		ls_error("--count needs --interval");
		return -1;
	}
	if (r->leak_check && r->sample_rate) {
		ls_error("--leak-check needs full tracking: it cannot be "
			 "combined with --sample-rate");
		return -1;
	}
	if (r->ropts.only && !r->leak_check) {
		ls_error("--only needs --leak-check (the kinds come from the "
			 "check at exit)");
		return -1;
	}
	if (!r->fail_kinds)
		r->fail_kinds = 1u << LSNAP_REACH_DEFINITE |
				1u << LSNAP_REACH_INDIRECT;
	if (ls_report_supp_finish(&r->ropts, 1))
		return -1;
	if (optind >= argc) {
		ls_error("no command to run (usage: leakscope run [OPTIONS] -- COMMAND [ARGS...])");
		return -1;
	}
	ls_report_opts_finish(&r->ropts);
	return optind;
}

/* --- the command ----------------------------------------------------------- */

static int is_exec_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode) && !access(path, X_OK);
}

/* As execvp would: a name with a slash is a path, else search $PATH.
 * Returns 0, -ENOENT or -EACCES (found but not executable). */
static int resolve_command(const char *name, char *out, size_t cap)
{
	const char *path = getenv("PATH"), *p;
	int found_other = 0;

	if (strchr(name, '/')) {
		if (snprintf(out, cap, "%s", name) >= (int)cap)
			return -ENAMETOOLONG;
		if (access(out, F_OK))
			return -ENOENT;
		return is_exec_file(out) ? 0 : -EACCES;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	for (p = path; ; p = strchr(p, ':') + 1) {
		size_t len = strcspn(p, ":");

		if (snprintf(out, cap, "%.*s%s%s", (int)len, len ? p : ".",
			     "/", name) < (int)cap) {
			if (is_exec_file(out))
				return 0;
			if (!access(out, F_OK))
				found_other = 1;
		}
		if (!p[len])
			break;
	}
	return found_other ? -EACCES : -ENOENT;
}

/*
 * Can LD_PRELOAD reach this program?  Not if it is statically linked, of
 * another ELF class, or setuid/setgid to someone else (the loader then
 * runs in secure mode and ignores LD_PRELOAD).  A script is judged by its
 * interpreter.  Returns NULL or the reason.
 */
static const char *untraceable(const char *path, int depth)
{
	unsigned char buf[512];
	Elf64_Ehdr eh;
	struct stat st;
	ssize_t n;
	int fd, i;

	if (stat(path, &st))
		return NULL;	/* exec will say */
	if ((st.st_mode & S_ISUID) && st.st_uid != geteuid())
		return "it is setuid to another user, and the loader ignores LD_PRELOAD for such programs";
	if ((st.st_mode & S_ISGID) && st.st_gid != getegid())
		return "it is setgid to another group, and the loader ignores LD_PRELOAD for such programs";
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	n = pread(fd, buf, sizeof(buf) - 1, 0);
	if (n >= 2 && buf[0] == '#' && buf[1] == '!' && depth < 4) {
		char *interp = (char *)buf + 2, *end;

		close(fd);
		buf[n] = 0;
		interp += strspn(interp, " \t");
		end = interp + strcspn(interp, " \t\n");
		*end = 0;
		return *interp ? untraceable(interp, depth + 1) : NULL;
	}
	if (n < (ssize_t)sizeof(eh) || memcmp(buf, ELFMAG, SELFMAG)) {
		close(fd);
		return NULL;
	}
	if (buf[EI_CLASS] != ELFCLASS64) {
		close(fd);
		return "it is a 32-bit program and the agent is 64-bit";
	}
	memcpy(&eh, buf, sizeof(eh));
	for (i = 0; i < eh.e_phnum; i++) {
		Elf64_Phdr ph;

		if (pread(fd, &ph, sizeof(ph), eh.e_phoff + (off_t)i * eh.e_phentsize)
		    != sizeof(ph))
			break;
		if (ph.p_type == PT_INTERP) {
			close(fd);
			return NULL;
		}
	}
	close(fd);
	return "it is statically linked, and LD_PRELOAD only reaches dynamically linked programs";
}

static int find_agent(char *out, size_t cap)
{
	const char *env = getenv(LS_ENV_AGENT);
	char self[PATH_MAX], *slash;
	const char *tries[3];
	ssize_t n;
	int i;

	if (env && *env) {
		if (!realpath(env, out) || access(out, R_OK)) {
			ls_error("agent not found: '%s' (from LEAKSCOPE_AGENT)", env);
			return -1;
		}
		return 0;
	}
	n = readlink("/proc/self/exe", self, sizeof(self) - 1);
	self[n > 0 ? n : 0] = 0;
	slash = strrchr(self, '/');
	if (slash)
		*slash = 0;
	tries[0] = "%s/libleakscope.so";
	tries[1] = "%s/../lib/leakscope/libleakscope.so";
	tries[2] = NULL;
	for (i = 0; tries[i]; i++) {
		char cand[PATH_MAX + 64];

		snprintf(cand, sizeof(cand), tries[i], self);
		if (realpath(cand, out) && !access(out, R_OK))
			return 0;
	}
	if (realpath(LS_LIBDIR "/libleakscope.so", out) && !access(out, R_OK))
		return 0;
	ls_error("agent not found: no libleakscope.so beside '%s' nor in '%s' "
		 "(set LEAKSCOPE_AGENT)", self, LS_LIBDIR);
	return -1;
}

/* --- the child's environment --------------------------------------------- */

struct envbuf {
	char **v;
	size_t n, cap;
};

static int env_push(struct envbuf *e, char *s)
{
	if (e->n + 2 > e->cap) {
		size_t cap = e->cap ? e->cap * 2 : 64;
		char **v = realloc(e->v, cap * sizeof(*v));

		if (!v)
			return -ENOMEM;
		e->v = v;
		e->cap = cap;
	}
	e->v[e->n++] = s;
	e->v[e->n] = NULL;
	return 0;
}

static int env_pushf(struct envbuf *e, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));
static int env_pushf(struct envbuf *e, const char *fmt, ...)
{
	va_list ap;
	char *s;
	int n;

	va_start(ap, fmt);
	n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? -ENOMEM : env_push(e, s);
}

/* LD_PRELOAD with the agent first (common/contract.h). */
static int env_push_preload(struct envbuf *e, const char *agent,
			    const char *theirs)
{
	size_t cap = sizeof(LS_ENV_PRELOAD "=") + ls_preload_len(agent, theirs);
	char *s = malloc(cap);

	if (!s || ls_preload_splice(s, cap, agent, theirs)) {
		free(s);
		return -ENOMEM;
	}
	return env_push(e, s);
}

/*
 * The command's environment: ours, with the agent put first in
 * LD_PRELOAD (in place, if there was one) and our settings appended last,
 * so that the agent can remove them and leave it as it was.
 */
static char **child_env(const struct run *r)
{
	struct envbuf e = { 0 };
	const char *orig = getenv(LS_ENV_PRELOAD);
	char **p;
	int err = 0;

	for (p = environ; *p && !err; p++) {
		/* Our own settings come from the options; the runtime
		 * directory, the agent and the unwinder (a diagnostic:
		 * docs/UNWINDING.md) pass through. */
		if (!strncmp(*p, LS_ENV_PREFIX, sizeof(LS_ENV_PREFIX) - 1) &&
		    !ls_env_passes_through(*p))
			continue;
		if (ls_env_is(*p, LS_ENV_PRELOAD))
			err = env_push_preload(&e, r->agent, orig);
		else
			err = env_push(&e, *p);
	}
	err = err ? err : env_pushf(&e, LS_ENV_RUN "=1");
	err = err ? err : env_pushf(&e, LS_ENV_OUT_DIR "=%s", r->tmpdir);
	err = err ? err : env_pushf(&e, LS_ENV_DEPTH "=%llu",
				   (unsigned long long)r->depth);
	if (!err && r->follow_exec)
		err = env_pushf(&e, LS_ENV_FOLLOW_EXEC "=1");
	if (!err && r->sample_rate)
		err = env_pushf(&e, LS_ENV_SAMPLE_RATE "=%llu",
				(unsigned long long)r->sample_rate);
	if (!err && r->sample_seed)
		err = env_pushf(&e, LS_ENV_SAMPLE_SEED "=%llu",
				(unsigned long long)r->sample_seed);
	if (!err && r->ropts.need_blocks)
		err = env_pushf(&e, LS_ENV_EXIT_BLOCKS "=1");
	if (!err && r->leak_check)
		err = env_pushf(&e, LS_ENV_LEAK_CHECK "=1");
	if (!err && orig)
		err = env_pushf(&e, LS_ENV_PRELOAD_ORIG "=%s", orig);
	if (!err && !orig)
		err = env_push_preload(&e, r->agent, NULL);
	if (err) {
		free(e.v);
		return NULL;
	}
	return e.v;
}

/* --- starting and waiting -------------------------------------------------- */

static volatile sig_atomic_t child_pid;

/* Pass on a signal sent to us in particular.  One the terminal sent to
 * the whole foreground group has reached the command already. */
static void forward(int sig, siginfo_t *si, void *uc)
{
	if (child_pid > 0 && (si->si_code == SI_USER || si->si_code == SI_QUEUE))
		kill(child_pid, sig);
}

static const int forwarded[] = {
	SIGHUP, SIGINT, SIGQUIT, SIGTERM, SIGUSR1, SIGUSR2, SIGALRM,
	SIGWINCH, SIGCONT, SIGTSTP, SIGTTIN, SIGTTOU,
};

static void install_forwarding(void)
{
	struct sigaction sa = { .sa_sigaction = forward,
				.sa_flags = SA_SIGINFO | SA_RESTART };
	size_t i;

	sigemptyset(&sa.sa_mask);
	for (i = 0; i < sizeof(forwarded) / sizeof(forwarded[0]); i++)
		sigaction(forwarded[i], &sa, NULL);
}

/* Fork and exec; an exec failure comes back through a close-on-exec
 * pipe as the child's errno. */
static int spawn(struct run *r, char **argv, char **envp)
{
	int pfd[2], child_errno = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(pfd[0]);
		close(pfd[1]);
		return -errno;
	}
	if (!pid) {
		close(pfd[0]);
		execve(r->cmd_path, argv, envp);
		child_errno = errno;
		n = write(pfd[1], &child_errno, sizeof(child_errno));
		(void)n;
		_exit(LS_EXIT_NOEXEC);
	}
	close(pfd[1]);
	do
		n = read(pfd[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(pfd[0]);
	if (n == sizeof(child_errno)) {
		waitpid(pid, NULL, 0);
		return -child_errno;
	}
	r->child = pid;
	child_pid = pid;
	return 0;
}

static uint64_t mono_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Render snap; with tripped, also apply --fail-on-leak to the same report
 * (filters and suppressions included) and say why in one line on stderr,
 * whatever --output is.
 */
static int render(const struct run *r, FILE *fp, const struct ls_snapshot *snap,
		  const struct ls_report_opts *opts, int *tripped)
{
	struct ls_report rep;
	struct ls_gate gate;
	int err = ls_report_build(snap, opts, &rep);

	if (err == -ENODATA)
		return err;	/* no block list: the caller decides */
	if (err) {
		ls_error("cannot build the report of pid %u: %s", snap->hdr.pid,
			 strerror(-err));
		return err;
	}
	err = ls_report_render(fp, &rep, opts);
	if (tripped && r->fail_on_leak) {
		ls_report_gate(&rep, r->fail_kinds, &gate);
		if (gate.bytes > r->leak_limit) {
			*tripped = 1;
			ls_cli_gate_reason((pid_t)snap->hdr.pid, &gate,
					   r->fail_kinds);
		}
	}
	ls_report_release(&rep);
	if (!err)
		fflush(fp);
	return err;
}

/* A post-mortem file has no block list: filters that need one are
 * dropped, and the report says so. */
static void render_plain(const struct run *r, FILE *fp,
			 const struct ls_snapshot *snap,
			 const struct ls_report_opts *opts, int *tripped)
{
	struct ls_report_opts plain = *opts;

	plain.min_age_ns = plain.min_size = plain.max_size = 0;
	plain.show_allocs = 0;
	ls_report_opts_finish(&plain);
	ls_error("the post-mortem file of pid %u has no block list: "
		 "block filters ignored", snap->hdr.pid);
	render(r, fp, snap, &plain, tripped);
}

static void periodic_report(struct run *r)
{
	struct ls_snapshot snap;
	char err[512];

	if (ls_client_snapshot(r->child, r->ropts.need_blocks, &snap, err,
			       sizeof(err))) {
		ls_error("periodic report skipped: %s", err);
		return;
	}
	render(r, r->fp, &snap, &r->ropts, NULL);
	ls_snapshot_release(&snap);
}

static int wait_child(struct run *r, int *status)
{
	int pidfd = -1;
	uint64_t next = 0, done = 0;

	if (r->interval_ns) {
		pidfd = (int)syscall(SYS_pidfd_open, r->child, 0);
		next = mono_ns() + r->interval_ns;
	}
	for (;;) {
		pid_t w;

		if (pidfd >= 0 && (!r->count || done < r->count)) {
			uint64_t now = mono_ns();
			struct pollfd p = { .fd = pidfd, .events = POLLIN };
			int ms = now >= next ? 0 : (int)((next - now + 999999) / 1000000);

			if (poll(&p, 1, ms) == 0) {
				periodic_report(r);
				done++;
				next += r->interval_ns;
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
	child_pid = 0;
	return 0;
}

/* --- collecting the reports ----------------------------------------------- */

struct collected {
	struct ls_snapshot *snaps;
	size_t n;
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
		struct ls_snapshot snap, *grown;

		if (len <= strlen(LS_SUFFIX_SNAP) ||
		    strcmp(de->d_name + len - strlen(LS_SUFFIX_SNAP), LS_SUFFIX_SNAP))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (ls_snapshot_load(path, &snap, err, sizeof(err))) {
			ls_error("%s", err);
			continue;
		}
		grown = realloc(c->snaps, (c->n + 1) * sizeof(*grown));
		if (!grown) {
			ls_snapshot_release(&snap);
			break;
		}
		c->snaps = grown;
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
	struct ls_outfile of;
	char *path;
	int err;

	if (!r->output)
		return render(r, r->fp, snap, &r->ropts, tripped);
	if (asprintf(&path, "%s.%u", r->output, snap->hdr.pid) < 0)
		return -ENOMEM;
	err = ls_outfile_open(&of, path);
	if (err) {
		ls_error("cannot write '%s': %s", path, strerror(-err));
		free(path);
		return err;
	}
	err = render(r, of.fp, snap, &r->ropts, tripped);
	if (err)
		ls_outfile_abort(&of);
	else if ((err = ls_outfile_commit(&of)))
		ls_error("cannot write '%s': %s", path, strerror(-err));
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
	if (ls_postmortem_path(r->child, path, sizeof(path)) ||
	    ls_postmortem_load(path, &snap, err, sizeof(err)))
		return -1;
	unlink(path);
	if (render(r, r->fp, &snap, &r->ropts, tripped) == -ENODATA)
		render_plain(r, r->fp, &snap, &r->ropts, tripped);
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
			failed |= render(r, r->fp, s, &r->ropts, &tripped) != 0;
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
static void die_like(int sig)
{
	struct rlimit no_core = { 0, 0 };
	sigset_t set;

	setrlimit(RLIMIT_CORE, &no_core);
	signal(sig, SIG_DFL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	sigprocmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	exit(128 + sig);
}

static int open_output(struct run *r)
{
	int err;

	r->fp = stderr;
	if (!r->output)
		return 0;
	err = ls_outfile_open(&r->out, r->output);
	if (err) {
		ls_error("cannot write '%s': %s", r->output, strerror(-err));
		return -1;
	}
	r->fp = r->out.fp;
	return 0;
}

static int prepare(struct run *r, const char *cmd)
{
	const char *why;
	const char *tmp = getenv("TMPDIR");
	int err = resolve_command(cmd, r->cmd_path, sizeof(r->cmd_path));

	if (err == -ENOENT) {
		ls_error("cannot run '%s': command not found", cmd);
		return LS_EXIT_NOTFOUND;
	}
	if (err) {
		ls_error("cannot run '%s': %s", cmd, strerror(-err));
		return LS_EXIT_NOEXEC;
	}
	why = untraceable(r->cmd_path, 0);
	if (why) {
		ls_error("cannot trace '%s': %s", cmd, why);
		return LS_EXIT_FAILURE;
	}
	if (find_agent(r->agent, sizeof(r->agent)))
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

int ls_cmd_run(int argc, char **argv)
{
	struct run r = { 0 };
	char **envp;
	int first, err, status = 0, rep;

	first = parse(&r, argc, argv);
	if (first < 0)
		return LS_EXIT_FAILURE;
	err = prepare(&r, argv[first]);
	if (err)
		return err;
	envp = child_env(&r);
	if (!envp) {
		ls_error("out of memory");
		goto fail;
	}
	install_forwarding();
	err = spawn(&r, argv + first, envp);
	free(envp);
	if (err) {
		ls_error("cannot run '%s': %s", argv[first], strerror(-err));
		ls_outfile_abort(&r.out);
		remove_tmpdir(r.tmpdir);
		return err == -ENOENT ? LS_EXIT_NOTFOUND : LS_EXIT_NOEXEC;
	}
	if (wait_child(&r, &status))
		goto fail;
	rep = report_all(&r, status);
	remove_tmpdir(r.tmpdir);
	if (r.output && rep < 0) {
		ls_outfile_abort(&r.out);	/* no half report */
	} else if (r.output && (err = ls_outfile_commit(&r.out))) {
		ls_error("cannot write '%s': %s", r.output, strerror(-err));
		rep = -1;
	}
	if (WIFSIGNALED(status))
		die_like(WTERMSIG(status));
	if (WEXITSTATUS(status))
		return WEXITSTATUS(status);
	if (rep < 0)
		return LS_EXIT_FAILURE;
	return rep ? LS_EXIT_LEAK : 0;
fail:
	ls_outfile_abort(&r.out);
	remove_tmpdir(r.tmpdir);
	return LS_EXIT_FAILURE;
}
