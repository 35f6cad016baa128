/*
 * cmd-attach.c - `leakscope attach PID`: load the agent into a process
 * started without it (lib/inject.h, docs/ATTACH.md).
 */
#include <signal.h>
#include <stdio.h>
#include <limits.h>
#include <string.h>
#include "../common/attach.h"
#include "../common/contract.h"
#include "../lib/client.h"
#include "../lib/inject.h"
#include "../lib/procinfo.h"
#include "cmds.h"
#include "spawn.h"

#define A(field) LS_ARG(struct ls_attach_args, field)

static const struct ls_option own[] = {
	LS_OPT__SAMPLE_RATE(struct ls_attach_args, sample_rate, 0, ""),
	LS_OPT__DEPTH(struct ls_attach_args, depth,
		      " (captured, default " LS_RO_STR(LS_DEPTH_DEFAULT) ")"),
	{ .kind = LS_OPT_SECONDS,
	  .long_name = "timeout",
	  .offset = A(timeout_ns),
	  .argh = "SECONDS",
	  .help = LS_OPT__TIMEOUT_HELP " (for a safe point; default 5)",
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
	0,	/* no report options */
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

/* "full" or "sampled (--sample-rate N)" into buf. */
static const char *mode_name(uint64_t rate, char *buf, size_t cap)
{
	if (!rate)
		return "full";
	snprintf(buf, cap, "sampled (--sample-rate %llu)",
		 (unsigned long long)rate);
	return buf;
}

/* The agent answers already: one line saying in which mode, and what
 * to type for the mode asked.  The agent keeps the mode it started in
 * for the life of the process (detached and attached again too). */
static void already(pid_t pid, const struct ls_attach_args *a)
{
	struct ls_snapshot snap;
	char err[256], now[64], rate[48] = "";
	int p = (int)pid;

	if (ls_client_snapshot(pid, 0, &snap, err, sizeof(err))) {
		ls_error("pid %d already has the agent answering: use "
			 "'leakscope report %d'", p, p);
		return;
	}
	mode_name(snap.hdr.sample_rate, now, sizeof(now));
	if (a->sample_rate)
		snprintf(rate, sizeof(rate), " --sample-rate %llu",
			 (unsigned long long)a->sample_rate);
	if (snap.hdr.sample_rate == a->sample_rate)
		ls_error("pid %d is already %s in %s mode: use 'leakscope "
			 "report %d'", p, snap.has_attach ? "attached" :
			 "traced (leakscope run)", now, p);
	else
		ls_error("pid %d %s in %s mode, which it keeps while it runs "
			 "('leakscope report %d' reads it): for %s mode start "
			 "it again with 'leakscope run%s -- CMD'", p,
			 snap.has_attach ? "is attached" :
			 "runs the agent from its start", now, p,
			 a->sample_rate ? "sampled" : "full", rate);
	ls_snapshot_release(&snap);
}

int ls_cmd_attach(struct ls_invocation *inv)
{
	const struct ls_attach_args *a = inv->args;
	struct ls_inject_opts o = { 0 };
	struct ls_inject_result res;
	char agent[PATH_MAX], dir[4096], settings[4096 + 256], err[512];

	if (agent_answers(inv->pid)) {
		already(inv->pid, a);
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
