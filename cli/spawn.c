/*
 * spawn.c - starting the command of `leakscope run`: found as execvp
 * would, refused when LD_PRELOAD cannot reach it, started with the agent
 * spliced into its environment, signals sent to leakscope passed on.
 */
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../common/contract.h"
#include "../lib/util.h"
#include "spawn.h"

#ifndef LS_LIBDIR
#define LS_LIBDIR "/usr/local/lib/leakscope"
#endif

extern char **environ;

static int is_exec_file(const char *path)
{
	struct stat st;

	return !stat(path, &st) && S_ISREG(st.st_mode) && !access(path, X_OK);
}

/* As execvp would: a name with a slash is a path, else search $PATH.
 * Returns 0, -ENOENT or -EACCES (found but not executable). */
int ls_resolve_command(const char *name, char *out, size_t cap)
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

/* Why the loader a PT_INTERP names cannot load the glibc-built agent
 * (musl's: it would fail to start the program), or NULL. */
static const char *foreign_loader(int fd, const Elf64_Phdr *ph)
{
	static char why[PATH_MAX + 96];
	char interp[PATH_MAX];
	size_t len = ph->p_filesz < sizeof(interp) ? ph->p_filesz : sizeof(interp) - 1;
	ssize_t n = pread(fd, interp, len, (off_t)ph->p_offset);

	interp[n > 0 ? n : 0] = 0;
	if (!strstr(interp, "musl"))
		return NULL;
	snprintf(why, sizeof(why), "it runs on musl libc (its loader is %s), "
		 "not glibc: the agent cannot load into it", interp);
	return why;
}

/*
 * Can LD_PRELOAD reach this program?  Not if it is statically linked, of
 * another ELF class, or setuid/setgid to someone else (the loader then
 * runs in secure mode and ignores LD_PRELOAD).  A script is judged by its
 * interpreter.  Returns NULL or the reason.
 */
static const char *untraceable_at(const char *path, int depth)
{
	unsigned char buf[512];
	Elf64_Ehdr eh;
	struct stat st;
	const char *why;
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
		return *interp ? untraceable_at(interp, depth + 1) : NULL;
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
			why = foreign_loader(fd, &ph);
			close(fd);
			return why;
		}
	}
	close(fd);
	return "it is statically linked, and LD_PRELOAD only reaches dynamically linked programs";
}

int ls_find_agent(char *out, size_t cap)
{
	const char *env = getenv(LS_ENV_AGENT);
	char self[PATH_MAX], *slash;
	const char *tries[3];
	ssize_t n;
	int i;

	if (env && *env) {
		if (!realpath(env, out) || access(out, R_OK)) {
			ls_error("agent not found: '%s' (from " LS_ENV_AGENT ")", env);
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
		 "(set " LS_ENV_AGENT ")", self, LS_LIBDIR);
	return -1;
}

const char *ls_untraceable(const char *path)
{
	return untraceable_at(path, 0);
}

/* --- the child's environment --------------------------------------------- */

struct envbuf {
	char **v;
	size_t n, cap;
};

static int env_push(struct envbuf *e, char *s)
{
	if (LS_GROW(e->v, e->n + 2, e->cap))
		return -ENOMEM;
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
char **ls_child_env(const struct ls_run_args *a, const char *agent,
		     const char *tmpdir)
{
	struct envbuf e = { 0 };
	const char *orig = getenv(LS_ENV_PRELOAD);
	char **p;
	int err = 0;

	for (p = environ; *p && !err; p++) {
		/* Our own settings come from the options; those `run` has
		 * no option for (runtime dir, agent, unwinder, growth
		 * sampling, keeping the post-mortem file) pass through. */
		if (!strncmp(*p, LS_ENV_PREFIX, sizeof(LS_ENV_PREFIX) - 1) &&
		    !ls_env_passes_through(*p))
			continue;
		if (ls_env_is(*p, LS_ENV_PRELOAD))
			err = env_push_preload(&e, agent, orig);
		else
			err = env_push(&e, *p);
	}
	err = err ? err : env_pushf(&e, LS_ENV_RUN "=1");
	err = err ? err : env_pushf(&e, LS_ENV_OUT_DIR "=%s", tmpdir);
	err = err ? err : env_pushf(&e, LS_ENV_DEPTH "=%llu",
				   (unsigned long long)a->r.depth);
	if (!err && a->follow_exec)
		err = env_pushf(&e, LS_ENV_FOLLOW_EXEC "=1");
	if (!err && a->all_children)
		err = env_pushf(&e, LS_ENV_ALL_CHILDREN "=1");
	if (!err && a->sample_rate)
		err = env_pushf(&e, LS_ENV_SAMPLE_RATE "=%llu",
				(unsigned long long)a->sample_rate);
	if (!err && a->sample_seed)
		err = env_pushf(&e, LS_ENV_SAMPLE_SEED "=%llu",
				(unsigned long long)a->sample_seed);
	if (!err && a->r.ropts.need_blocks)
		err = env_pushf(&e, LS_ENV_EXIT_BLOCKS "=1");
	if (!err && a->leak_check)
		err = env_pushf(&e, LS_ENV_LEAK_CHECK "=1");
	if (!err && orig)
		err = env_pushf(&e, LS_ENV_PRELOAD_ORIG "=%s", orig);
	if (!err && !orig)
		err = env_push_preload(&e, agent, NULL);
	if (err) {
		free(e.v);
		return NULL;
	}
	return e.v;
}

/* --- starting ------------------------------------------------------------ */

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

void ls_forward_signals(void)
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
int ls_spawn(const char *path, char **argv, char **envp, pid_t *child)
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
		execve(path, argv, envp);
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
	*child = pid;
	child_pid = pid;
	return 0;
}

void ls_forward_done(void)
{
	child_pid = 0;
}

void ls_die_like(int sig)
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
