/*
 * t-agent-lockrank.c - the lock-order check of LS_LOCK_CHECK builds
 * (agent/lockrank.h): locks taken in rank order, or several of one rank,
 * pass; a lock of lower rank than one held is reported with both ranks,
 * and without a hook the process aborts with a one-line message.
 */
#define LS_LOCK_CHECK 1
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "../../agent/lockrank.h"
#include "tap.h"

static int seen, seen_want, seen_held;

static void on_violation(int want, int held)
{
	seen++;
	seen_want = want;
	seen_held = held;
}

static ls_lock_t modules = LS_LOCK_INIT, site = LS_LOCK_INIT,
		 live_a = LS_LOCK_INIT, live_b = LS_LOCK_INIT,
		 sample = LS_LOCK_INIT;

int main(void)
{
	int fds[2], status, r;
	char msg[256] = "";
	ssize_t n;
	pid_t pid;

	ls_rank_on_violation = on_violation;

	/* In rank order, two of one rank: nothing to report. */
	ls_lock_ranked(&modules, LS_RANK_MODULES);
	ls_lock_ranked(&site, LS_RANK_SITE);
	ls_lock_ranked(&live_a, LS_RANK_LIVE);
	ls_lock_ranked(&live_b, LS_RANK_LIVE);
	ls_lock_ranked(&sample, LS_RANK_SAMPLE);
	ok(seen == 0, "ranks taken in order, two shards of one rank: no report");
	is_u64(ls_rank_held[LS_RANK_LIVE], 2, "two live locks counted");
	ls_unlock_ranked(&sample, LS_RANK_SAMPLE);
	ls_unlock_ranked(&live_b, LS_RANK_LIVE);
	ls_unlock_ranked(&live_a, LS_RANK_LIVE);
	ls_unlock_ranked(&site, LS_RANK_SITE);
	ls_unlock_ranked(&modules, LS_RANK_MODULES);
	for (r = 0; r < LS_RANK_COUNT && !ls_rank_held[r]; r++)
		;
	is_u64(r, LS_RANK_COUNT, "every count back to 0 after the unlocks");

	/* A site lock under a live shard's: the fork handlers' order broken. */
	ls_lock_ranked(&live_a, LS_RANK_LIVE);
	ls_lock_ranked(&site, LS_RANK_SITE);
	is_u64(seen, 1, "a lower rank taken under a higher one is reported once");
	is_u64(seen_want, LS_RANK_SITE, "the rank taken: site");
	is_u64(seen_held, LS_RANK_LIVE, "the rank held: live");
	ls_unlock_ranked(&site, LS_RANK_SITE);
	ls_unlock_ranked(&live_a, LS_RANK_LIVE);

	/* Released first, the same lock of lower rank is fine again. */
	ls_lock_ranked(&site, LS_RANK_SITE);
	ls_lock_ranked(&live_a, LS_RANK_LIVE);
	is_u64(seen, 1, "after the release, site then live: no new report");
	ls_unlock_ranked(&live_a, LS_RANK_LIVE);
	ls_unlock_ranked(&site, LS_RANK_SITE);

	/* The report itself, as the check makes it. */
	ls_rank_violation(LS_RANK_MMAPS, LS_RANK_ARENA);
	ok(seen == 2 && seen_want == LS_RANK_MMAPS && seen_held == LS_RANK_ARENA,
	   "ls_rank_violation hands both ranks to the hook");

	/* A fork child's counts are forgotten (its locks were reset). */
	ls_lock_ranked(&sample, LS_RANK_SAMPLE);
	ls_rank_forget_all();
	ls_lock_reset(&sample);
	ls_lock_ranked(&modules, LS_RANK_MODULES);
	is_u64(seen, 2, "after ls_rank_forget_all, any rank may be taken");
	ls_unlock_ranked(&modules, LS_RANK_MODULES);

	/* Without a hook: one line on stderr, then abort(). */
	if (pipe(fds))
		return 1;
	pid = fork();
	if (pid == 0) {
		dup2(fds[1], 2);
		ls_rank_on_violation = NULL;
		ls_lock_ranked(&sample, LS_RANK_SAMPLE);
		ls_lock_ranked(&modules, LS_RANK_MODULES);
		_exit(0);
	}
	close(fds[1]);
	/* To the end: a short read must not pass for the whole line. */
	r = 0;
	while (r < (int)sizeof(msg) - 1 &&
	       (n = read(fds[0], msg + r, sizeof(msg) - 1 - r)) > 0)
		r += (int)n;
	msg[r] = 0;
	close(fds[0]);
	waitpid(pid, &status, 0);
	ok(WIFSIGNALED(status) && WTERMSIG(status) == SIGABRT,
	       "without a hook the process aborts (status %#x)", status);
	r = !strcmp(msg, "leakscope: lock order: took a modules lock "
			 "holding a sample lock (agent/lockrank.h)\n");
	msg[strcspn(msg, "\n")] = 0;
	ok(r, "its one line names both ranks: '%s'", msg);
	return tap_done();
}
