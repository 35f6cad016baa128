/*
 * redact.h - keep a node's cookie out of what leakscope prints.
 *
 * An Erlang VM started with `-setcookie C` (or `-setcookie Node C`) has
 * the cookie in its command line, and a report names the process by its
 * command line: every argument after -setcookie, up to the next option
 * (one starting with '-' or '+'), is replaced by "<cookie>".  Used by the
 * NIF and by `leakscope beam` on the snapshots they render.  Header-only:
 * the NIF and the C node are built separately.
 */
#ifndef LEAKSCOPE_ERLANG_REDACT_H
#define LEAKSCOPE_ERLANG_REDACT_H

#include <stdlib.h>
#include <string.h>
#include "../lib/snapshot.h"

#define LS_COOKIE_MASK "<cookie>"

/* Returns 0, or -1 when a copy could not be made (that argument is then
 * emptied in place: hidden all the same). */
static inline int ls_redact_cookie(struct ls_snapshot *snap)
{
	size_t i;
	int hiding = 0, r = 0;

	for (i = 0; i < snap->argc && snap->argv[i]; i++) {
		char *a = snap->argv[i], *mask;

		if (!strcmp(a, "-setcookie")) {
			hiding = 1;
			continue;
		}
		if (!hiding || a[0] == '-' || a[0] == '+') {
			hiding = 0;
			continue;
		}
		mask = strdup(LS_COOKIE_MASK);
		if (!mask) {
			memset(a, 0, strlen(a));
			r = -1;
			continue;
		}
		free(a);
		snap->argv[i] = mask;
	}
	return r;
}

#endif
