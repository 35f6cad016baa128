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
	/* No stdio: the thread holds the agent's locks.  One write, so the
	 * line reaches stderr whole even while other threads write there. */
	char line[160];
	size_t n = 0;
	const char *parts[] = { "leakscope: lock order: took a ", w,
				" lock holding a ", h,
				" lock (agent/lockrank.h)\n" };

	for (size_t i = 0; i < sizeof(parts) / sizeof(parts[0]); i++) {
		size_t len = strlen(parts[i]);

		if (len > sizeof(line) - n)
			len = sizeof(line) - n;
		memcpy(line + n, parts[i], len);
		n += len;
	}
	(void)!write(2, line, n);
	abort();
}

void ls_rank_forget_all(void)
{
	memset(ls_rank_held, 0, sizeof(ls_rank_held));
}
