/*
 * lockrank.c - the lock-order check of LS_LOCK_CHECK builds (lockrank.h).
 */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "lockrank.h"

__thread unsigned short ls_rank_held[LS_RANK_COUNT];
void (*ls_rank_on_violation)(int want, int held);

static const char *const rank_names[LS_RANK_COUNT] = {
	"modules", "mmaps", "site", "thread", "arena", "live", "sample",
};

void ls_rank_violation(int want, int held)
{
	const char *w = rank_names[want], *h = rank_names[held];

	if (ls_rank_on_violation) {
		ls_rank_on_violation(want, held);
		return;
	}
	/* No stdio: the thread holds the agent's locks. */
	(void)!write(2, "leakscope: lock order: took a ", 30);
	(void)!write(2, w, strlen(w));
	(void)!write(2, " lock holding a ", 16);
	(void)!write(2, h, strlen(h));
	(void)!write(2, " lock (agent/lockrank.h)\n", 25);
	abort();
}

void ls_rank_forget_all(void)
{
	memset(ls_rank_held, 0, sizeof(ls_rank_held));
}
