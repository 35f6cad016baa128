/*
 * cli.h - what every command of the command-line layer shares: the exit
 * statuses, error printing, the command table's row.
 *
 * Exit statuses (one set for every command; docs/guide/command-line.md, and
 * leakscope(1)):
 *   0    success
 *   1    a command on a process or snapshot could not do what it was
 *        asked (no such pid, no agent, unreadable or corrupt file, output
 *        not writable)
 *   99   `run --fail-on-leak`: a traced process ended over the limit
 *   125  a usage error, in every command (unknown command or option, bad
 *        or missing value, wrong arguments); and every failure of `run`
 *        itself (no agent, output not writable, a program LD_PRELOAD
 *        cannot reach), whose other statuses are its command's
 *   126  `run`: the command was found but cannot be executed
 *   127  `run`: the command was not found
 *   2-5  `beam`: the node is unreachable (2), refused the handshake (3),
 *        timed out or was lost (4), runs an OTP release before 23 (5)
 *   any other: `run` exits with its command's status (or dies of its
 *        signal)
 */
#ifndef LEAKSCOPE_CLI_H
#define LEAKSCOPE_CLI_H

#include <sys/types.h>
#include "../lib/render.h"
#include "../lib/snapshot.h"
#include "parse-options.h"

#define LS_VERSION "0.1.0"

#define LS_EXIT_OK 0
#define LS_EXIT_ERROR 1		/* a command other than run failed */
#define LS_EXIT_LEAK 99		/* --fail-on-leak tripped */
#define LS_EXIT_FAILURE 125	/* run's own failures */
#define LS_EXIT_USAGE 125	/* the one usage status, every command */
#define LS_EXIT_NOEXEC 126	/* command found but not executable */
#define LS_EXIT_NOTFOUND 127	/* command not found */
#define LS_EXIT_BEAM_UNREACHABLE 2	/* beam: no such node, nothing listens */
#define LS_EXIT_BEAM_REFUSED 3	/* beam: handshake refused */
#define LS_EXIT_BEAM_LOST 4	/* beam: timeout, connection lost, rpc failed */
#define LS_EXIT_BEAM_RELEASE 5	/* beam: OTP release before 23 */

/* "leakscope: <message>\n" on stderr (stdout flushed first). */
void ls_error(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

/* What the dispatcher hands a command (struct ls_command.flags say what
 * it did before). */
struct ls_invocation {
	const struct ls_command *cmd;
	void *args;		/* the command's argument struct, parsed */
	int argc;		/* arguments left after the options */
	char **argv;
	pid_t pid;		/* LS_CMD_PID: the pid argv[0] names */
	struct ls_snapshot snap;	/* LS_CMD_LOAD: argv[0], loaded */
};

/* struct ls_command.flags: what the dispatcher does before the command
 * runs. */
#define LS_CMD_TARGET 0x1	/* the first argument is the target (PID or
				   FILE), max_args arguments at most */
#define LS_CMD_PID 0x2		/* ... which must be a pid (inv->pid) */
#define LS_CMD_LOAD 0x4		/* ... loaded through lib/source.h into
				   inv->snap (implies LS_CMD_REPORT) */
#define LS_CMD_BLOCKS 0x8	/* ... with its block list */
#define LS_CMD_REPORT 0x10	/* args start with struct ls_report_args:
				   finished and checked */
#define LS_CMD_STOP_AT_ARG 0x20	/* options end at the first argument */
#define LS_CMD_MANY 0x40	/* reports of several processes (run): a
				   format that needs a file of its own
				   needs --output */

struct ls_command {
	const char *name;
	int (*fn)(struct ls_invocation *inv);	/* returns the exit status */
	unsigned flags;
	const struct ls_usage *usage;
	size_t args_size;
	void (*defaults)(void *args);		/* or NULL: zeroed */
	int max_args;				/* with LS_CMD_TARGET */
};

/* The table (main.c), ending with a row whose name is NULL: main()
 * hands it to `help` (cmd-help.c), which lists it, so that the two files
 * do not use each other. */
extern const struct ls_command *ls_help_commands;


#endif
