/*
 * redact.h - keep a node's cookie out of what leakscope prints.
 *
 * An Erlang VM started with `-setcookie C` (or `-setcookie Node C`) has
 * the cookie in its command line, and a report names the process by its
 * command line: the snapshots the NIF and `leakscope beam` render go
 * through lib/redact.h, which shows every argument after -setcookie, up
 * to the next option, as "<redacted>" (and the other secret-bearing
 * options' values too).  The snapshot reader does the same for every
 * snapshot it reads.
 */
#ifndef LEAKSCOPE_ERLANG_REDACT_H
#define LEAKSCOPE_ERLANG_REDACT_H

#include "../lib/redact.h"
#include "../lib/snapshot.h"

/* Returns 0. */
static inline int ls_redact_cookie(struct ls_snapshot *snap)
{
	ls_argv_redact(snap->argv, snap->argc);
	return 0;
}

#endif
