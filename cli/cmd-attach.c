/*
 * cmd-attach.c - `leakscope attach PID`: load the agent into a process
 * started without it (lib/inject.h, docs/ATTACH.md).
 */
#include <signal.h>
#include <stdio.h>
#include <limits.h>
#include "../common/attach.h"
#include "../common/contract.h"
#include "../lib/client.h"
#include "../lib/inject.h"
#include "../lib/procinfo.h"
#include "cmds.h"
#include "spawn.h"

#define A(field) LS_ARG(struct ls_attach_args, field)
#define STR_(x) #x
#define STR(x) STR_(x)

static const struct ls_option own[] = {
	{ .kind = LS_OPT_SIZE,
	  .long_name = "sample-rate",
	  .offset = A(sample_rate),
	  .argh = "BYTES",
	  .help = "record a Poisson sample of the allocations, one per BYTES on\n"
	  "average (e.g. 512KiB): nearly free; figures become estimates",
	  .flags = LS_OPTF_NONZERO,
	  .want = "a positive size such as 512KiB" },
	{ .kind = LS_OPT_UINT,
	  .long_name = "depth",
	  .offset = A(depth),
	  .argh = "N",
	  .help = "frames captured per stack, " STR(LS_DEPTH_MIN) "-" STR(LS_DEPTH_MAX)
		  " (default " STR(LS_DEPTH_DEFAULT) ")",
	  .min = LS_DEPTH_MIN,
	  .max = LS_DEPTH_MAX,
	  .want = STR(LS_DEPTH_MIN) " to " STR(LS_DEPTH_MAX) },
	{ .kind = LS_OPT_SECONDS,
	  .long_name = "timeout",
	  .offset = A(timeout_ns),
	  .argh = "SECONDS",
	  .help = "wait at most this long for a safe point (default 5)",
	  .flags = LS_OPTF_NONZERO,
	  .max = 600000000000ull,
	  .want = "seconds, at most 600" },
	{ .kind = LS_OPT_END },
};

const struct ls_usage ls_attach_usage = {
	"attach", "[OPTIONS] PID",
	"start tracking a running process (no restart, no debugger)",
	"Load the agent into the running process PID with ptrace, at a safe\n"
	"point, and track its allocations from now on: 'leakscope report PID',\n"
	"olds, stats, reset, snapshot, watch and top then work as under\n"
	"'leakscope run'.  Blocks allocated before are not known.  Its threads\n"
	"stop three times for a moment, printed.  'leakscope detach PID' stops.",
	(const struct ls_option *const[]){ own, NULL },
	"Needs ptrace rights on PID (the same user with kernel.yama.ptrace_scope\n"
	"0, or root), a dynamically linked x86-64 program and glibc 2.34 or\n"
	"later.  How it works and what is safe: docs/ATTACH.md.",
};

void ls_attach_defaults(void *args)
{
	struct ls_attach_args *a = args;

	a->depth = LS_DEPTH_DEFAULT;
	a->timeout_ns = 5000000000ull;
}

/* An agent answering on pid's socket: attached, or preloaded. */
static int agent_answers(pid_t pid)
{
	char reply[64], err[256];

	return !ls_client_request(pid, LS_VERB_PING, reply, sizeof(reply), err,
				  sizeof(err));
}

static void print_attached(pid_t pid, const struct ls_attach_args *a,
			   const struct ls_inject_result *res)
{
	double p[3];
	int i;

	for (i = 0; i < 3; i++)
		p[i] = (double)res->pause_ns[i] / 1e6;
	printf("leakscope: attached to pid %d%s (%s); tracking %s from now on\n",
	       (int)pid, res->reused ? " again" : "", res->safe_point,
	       a->sample_rate ? "a sample" : "every allocation");
	printf("leakscope: %u GOT slots switched; threads paused %.3f + %.3f + "
	       "%.3f ms = %.3f ms\n", res->switched, p[0], p[1], p[2],
	       p[0] + p[1] + p[2]);
	printf("leakscope: 'leakscope report %d' shows what it holds; "
	       "'leakscope detach %d' stops\n", (int)pid, (int)pid);
}

int ls_cmd_attach(struct ls_invocation *inv)
{
	const struct ls_attach_args *a = inv->args;
	struct ls_inject_opts o = { 0 };
	struct ls_inject_result res;
	char agent[PATH_MAX], dir[4096], settings[4096 + 256], err[512];

	if (agent_answers(inv->pid)) {
		ls_error("pid %d already has the agent answering (attached, or "
			 "under leakscope run): use 'leakscope report %d'",
			 (int)inv->pid, (int)inv->pid);
		return LS_EXIT_ERROR;
	}
	if (ls_find_agent(agent, sizeof(agent)))
		return LS_EXIT_ERROR;
	if (ls_proc_runtime_dir(inv->pid, dir, sizeof(dir))) {
		ls_error("no runtime directory for pid %d", (int)inv->pid);
		return LS_EXIT_ERROR;
	}
	snprintf(settings, sizeof(settings), "%s=%llu\n%s=%llu\n%s=%s\n",
		 LS_ATTACH_KEY_DEPTH, (unsigned long long)a->depth,
		 LS_ATTACH_KEY_SAMPLE_RATE, (unsigned long long)a->sample_rate,
		 LS_ATTACH_KEY_RUNTIME_DIR, dir);
	o.agent = agent;
	o.settings = settings;
	o.timeout_ms = (int)(a->timeout_ns / 1000000) ? (int)(a->timeout_ns / 1000000) : 1;
	if (ls_inject_attach(inv->pid, &o, &res, err, sizeof(err))) {
		ls_error("%s", err);
		/* Interrupted: the target restored, end by the signal. */
		if (ls_inject_interrupted()) {
			signal(ls_inject_interrupted(), SIG_DFL);
			raise(ls_inject_interrupted());
		}
		return LS_EXIT_ERROR;
	}
	print_attached(inv->pid, a, &res);
	return LS_EXIT_OK;
}
