/*
 * t-lib-redact.c - secrets out of command lines (lib/redact.h): each
 * documented option's value is hidden, nothing else is touched.
 */
#include <stdlib.h>
#include <string.h>
#include "../../lib/redact.h"
#include "tap.h"

/* words (NULL-terminated) redacted, joined by spaces into out. */
static size_t redact(const char *const *words, char *out, size_t cap)
{
	char *argv[16];
	size_t n = 0, i, hidden;

	while (words[n])
		argv[n] = strdup(words[n]), n++;
	hidden = ls_argv_redact(argv, n);
	out[0] = 0;
	for (i = 0; i < n; i++) {
		strncat(out, argv[i], cap - strlen(out) - 2);
		if (i + 1 < n)
			strcat(out, " ");
		free(argv[i]);
	}
	return hidden;
}

#define CASE(want_hidden, want, ...) do {				\
	static const char *const w[] = { __VA_ARGS__, NULL };		\
	char got[512];							\
	size_t h = redact(w, got, sizeof(got));				\
	ok(h == (want_hidden) && !strcmp(got, want), "%s -> '%s' (%zu "	\
	   "hidden)", want, got, h);					\
} while (0)

int main(void)
{
	CASE(1, "erl -sname a -setcookie <redacted> -noshell",
	     "erl", "-sname", "a", "-setcookie", "s3cret", "-noshell");
	CASE(2, "erl -setcookie <redacted> <redacted> +A 4",
	     "erl", "-setcookie", "node@h", "s3cret", "+A", "4");
	CASE(1, "iex --cookie <redacted> -S mix",
	     "iex", "--cookie", "s3cret", "-S", "mix");
	CASE(1, "db --password=<redacted> --port 5",
	     "db", "--password=hunter2", "--port", "5");
	CASE(2, "x --token <redacted> --api-key <redacted>",
	     "x", "--token", "t0k", "--api-key", "k3y");
	CASE(0, "x --passwordless --tokens 3 -p hunter2",
	     "x", "--passwordless", "--tokens", "3", "-p", "hunter2");
	CASE(0, "x --password", "x", "--password");
	return tap_done();
}
