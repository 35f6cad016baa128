/*
 * cmd-reset.c - `leakscope reset PID`: the agent forgets the blocks it
 * has seen so far.
 */
#include <string.h>
#include "../common/contract.h"
#include "../lib/client.h"
#include "cmds.h"

const struct ls_usage ls_reset_usage = {
	"reset", "PID",
	"forget the blocks a running process allocated so far",
	"Forget the blocks PID's agent has seen so far: later reports show\n"
	"only newer ones.  Allocated totals and call counts keep counting.",
	(const struct ls_option *const[]){ NULL },
	NULL,
	0,	/* no report options */
};

int ls_cmd_reset(struct ls_invocation *inv)
{
	char reply[256], err[1024];

	if (ls_client_request(inv->pid, LS_VERB_RESET, reply, sizeof(reply),
			      err, sizeof(err))) {
		ls_error("%s", err);
		return LS_EXIT_ERROR;
	}
	if (strcmp(reply, LS_REPLY_OK)) {
		ls_error("pid %d: unexpected answer '%s'", (int)inv->pid, reply);
		return LS_EXIT_ERROR;
	}
	printf("pid %d: reset\n", (int)inv->pid);
	return LS_EXIT_OK;
}
