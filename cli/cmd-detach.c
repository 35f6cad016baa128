/*
 * cmd-detach.c - `leakscope detach PID`: stop tracking a process
 * `leakscope attach` loaded the agent into (docs/ATTACH.md).
 */
#include <errno.h>
#include <string.h>
#include "../common/contract.h"
#include "../lib/client.h"
#include "cmds.h"

const struct ls_usage ls_detach_usage = {
	"detach", "PID",
	"stop tracking a process 'leakscope attach' attached to",
	"Put PID's calls back to its own allocator, stop tracking, remove the\n"
	"agent's socket and post-mortem file.  PID runs on unchanged; the\n"
	"agent's code stays loaded, and a later 'leakscope attach' reuses it.",
	(const struct ls_option *const[]){ NULL },
	NULL,
	0,	/* no report options */
};

int ls_cmd_detach(struct ls_invocation *inv)
{
	char reply[256], err[1024];
	int r = ls_client_request(inv->pid, LS_VERB_DETACH, reply, sizeof(reply),
				  err, sizeof(err));

	if (r == -EPROTO && strstr(err, "not attached")) {
		ls_error("pid %d runs with the agent preloaded (leakscope run or "
			 "LD_PRELOAD): there is nothing to detach", (int)inv->pid);
		return LS_EXIT_ERROR;
	}
	if (r) {
		ls_error("%s", err);
		return LS_EXIT_ERROR;
	}
	if (strcmp(reply, LS_REPLY_OK)) {
		ls_error("pid %d: unexpected answer '%s'", (int)inv->pid, reply);
		return LS_EXIT_ERROR;
	}
	printf("leakscope: detached from pid %d\n", (int)inv->pid);
	return LS_EXIT_OK;
}
