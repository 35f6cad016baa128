/*
 * redact.h - keep secrets given on a command line out of what leakscope
 * prints.
 *
 * A report names its process by its command line, and command lines
 * carry secrets: an Erlang node's `-setcookie C` (or `-setcookie Node C`),
 * a daemon's `--password P`.  The snapshot reader and the post-mortem
 * reader pass every command line they read through ls_argv_redact(), so
 * that no report, JSON document, web view or exit report shows them.
 */
#ifndef LEAKSCOPE_REDACT_H
#define LEAKSCOPE_REDACT_H

#include <stddef.h>

#define LS_REDACTED "<redacted>"

/*
 * The secret-bearing options (docs/SECURITY.md lists them):
 *   -setcookie        every argument after it up to the next option (one
 *                     starting with '-' or '+');
 *   --cookie, --password, --passwd, --token, --secret, --api-key,
 *   --access-token, --auth-token, --client-secret
 *                     the next argument, or the value after '=' in
 *                     "--password=P".
 * Each secret is replaced by LS_REDACTED in place (argv[i] freed and
 * reallocated; when no copy can be made it is emptied: hidden all the
 * same).  Returns how many arguments were hidden.
 */
size_t ls_argv_redact(char **argv, size_t argc);

#endif
