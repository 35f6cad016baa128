/*
 * redact.c - secrets out of command lines.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "redact.h"

static const char *const secret_opts[] = {
	"--cookie", "--password", "--passwd", "--token", "--secret",
	"--api-key", "--access-token", "--auth-token", "--client-secret",
	NULL,
};

/* Whether a is a secret-bearing option; *eq its '=' (or NULL). */
static int secret_opt(const char *a, const char **eq)
{
	size_t i, n;

	*eq = NULL;
	for (i = 0; secret_opts[i]; i++) {
		n = strlen(secret_opts[i]);
		if (strncmp(a, secret_opts[i], n))
			continue;
		if (a[n] == '=')
			*eq = a + n;
		if (!a[n] || a[n] == '=')
			return 1;
	}
	return 0;
}

/* argv[i] becomes prefix (its first keep bytes) + LS_REDACTED. */
static void mask(char **argv, size_t i, size_t keep)
{
	char *m = malloc(keep + sizeof(LS_REDACTED));

	if (!m) {
		memset(argv[i] + keep, 0, strlen(argv[i] + keep));
		return;
	}
	memcpy(m, argv[i], keep);
	memcpy(m + keep, LS_REDACTED, sizeof(LS_REDACTED));
	free(argv[i]);
	argv[i] = m;
}

size_t ls_argv_redact(char **argv, size_t argc)
{
	size_t i, hidden = 0;
	int cookie = 0, next = 0;

	for (i = 0; i < argc && argv[i]; i++) {
		const char *a = argv[i], *eq;

		if (next || (cookie && a[0] != '-' && a[0] != '+')) {
			next = 0;
			mask(argv, i, 0);
			hidden++;
			continue;
		}
		cookie = !strcmp(a, "-setcookie");
		if (secret_opt(a, &eq) && eq) {
			mask(argv, i, (size_t)(eq - a) + 1);
			hidden++;
		} else if (secret_opt(a, &eq))
			next = 1;
	}
	return hidden;
}
