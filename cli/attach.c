/*
 * attach.c - `leakscope attach PID` and `leakscope detach PID`: tracking
 * a process that was started without leakscope (lib/inject.h,
 * docs/ATTACH.md).
 */
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include "../common/attach.h"
#include "../lib/client.h"
#include "../lib/inject.h"
#include "../lib/procinfo.h"
#include "../lib/util.h"
#include "cmd.h"
#include "target.h"

static const char attach_usage[] =
"usage: leakscope attach PID [--sample-rate BYTES] [--depth N] [--timeout SECONDS]\n"
"\n"
"Load the agent into the running process PID (ptrace; no restart, no\n"
"debugger) and start tracking its allocations from now on.  Blocks it\n"
"allocated before are not known.  Then 'leakscope report PID', olds,\n"
"stats, reset, snapshot, watch and top work as under 'leakscope run';\n"
"'leakscope detach PID' stops tracking.\n"
"\n"
"  --sample-rate BYTES  sampled mode: one sample per BYTES on average\n"
"  --depth N            frames per stack, 1-256 (default 64)\n"
"  --timeout SECONDS    wait at most this long for a safe point (default 5)\n";

static int usage_error(const char *cmd, const char *what)
{
	ls_error("%s (see 'leakscope %s --help')", what, cmd);
	return LS_EXIT_FAILURE;
}

struct attach_args {
	pid_t pid;
	uint64_t sample_rate, depth;
	int timeout_ms;
};

static int parse_attach(int argc, char **argv, struct attach_args *a)
{
	static const struct option longopts[] = {
		{ "sample-rate", required_argument, NULL, 's' },
		{ "depth", required_argument, NULL, 'd' },
		{ "timeout", required_argument, NULL, 't' },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	uint64_t ns;
	int c;

	a->depth = 64;
	a->timeout_ms = 5000;
	opterr = 0;
	optind = 1;
	while ((c = getopt_long(argc, argv, "+h", longopts, NULL)) != -1) {
		switch (c) {
		case 's':
			if (ls_parse_size(optarg, &a->sample_rate) || !a->sample_rate)
				return usage_error("attach", "--sample-rate needs a positive size");
			break;
		case 'd':
			if (ls_parse_count(optarg, &a->depth) || !a->depth || a->depth > 256)
				return usage_error("attach", "--depth needs a number from 1 to 256");
			break;
		case 't':
			if (ls_parse_seconds(optarg, &ns) || ns > 600000000000ull)
				return usage_error("attach", "--timeout needs seconds, at most 600");
			a->timeout_ms = (int)(ns / 1000000) ? (int)(ns / 1000000) : 1;
			break;
		case 'h':
			fputs(attach_usage, stdout);
			return -1;
		default: {
			char msg[256];

			snprintf(msg, sizeof(msg), "unknown option '%s'", argv[optind - 1]);
			return usage_error("attach", msg);
		}
		}
	}
	if (optind != argc - 1 || !ls_target_is_pid(argv[optind], &a->pid))
		return usage_error("attach", "expected one PID");
	return 0;
}

/* An agent already answering on pid's socket: attached, or preloaded. */
static int agent_answers(pid_t pid)
{
	char reply[64], err[256];

	return !ls_client_request(pid, "ping", reply, sizeof(reply), err, sizeof(err));
}

static void print_attached(const struct attach_args *a,
			   const struct ls_inject_result *res)
{
	double p[3];
	int i;

	for (i = 0; i < 3; i++)
		p[i] = (double)res->pause_ns[i] / 1e6;
	printf("leakscope: attached to pid %d%s (%s); tracking %s from now on\n",
	       (int)a->pid, res->reused ? " again" : "", res->safe_point,
	       a->sample_rate ? "a sample" : "every allocation");
	printf("leakscope: %u GOT slots switched; threads paused %.3f + %.3f + "
	       "%.3f ms = %.3f ms\n", res->switched, p[0], p[1], p[2],
	       p[0] + p[1] + p[2]);
	printf("leakscope: 'leakscope report %d' shows what it holds; "
	       "'leakscope detach %d' stops\n", (int)a->pid, (int)a->pid);
}

int ls_cmd_attach(int argc, char **argv)
{
	struct attach_args a = { 0 };
	struct ls_inject_opts o = { 0 };
	struct ls_inject_result res;
	char agent[PATH_MAX], dir[4096], settings[4096 + 256], err[512];
	int r = parse_attach(argc, argv, &a);

	if (r)
		return r < 0 ? 0 : r;
	if (agent_answers(a.pid)) {
		ls_error("pid %d already has the agent answering (attached, or "
			 "under leakscope run): use 'leakscope report %d'",
			 (int)a.pid, (int)a.pid);
		return LS_EXIT_FAILURE;
	}
	if (ls_find_agent(agent, sizeof(agent)))
		return LS_EXIT_FAILURE;
	if (ls_proc_runtime_dir(a.pid, dir, sizeof(dir))) {
		ls_error("no runtime directory for pid %d", (int)a.pid);
		return LS_EXIT_FAILURE;
	}
	snprintf(settings, sizeof(settings), "%s=%llu\n%s=%llu\n%s=%s\n",
		 LS_ATTACH_KEY_DEPTH, (unsigned long long)a.depth,
		 LS_ATTACH_KEY_SAMPLE_RATE, (unsigned long long)a.sample_rate,
		 LS_ATTACH_KEY_RUNTIME_DIR, dir);
	o.agent = agent;
	o.settings = settings;
	o.timeout_ms = a.timeout_ms;
	r = ls_inject_attach(a.pid, &o, &res, err, sizeof(err));
	if (r) {
		ls_error("%s", err);
		return LS_EXIT_FAILURE;
	}
	print_attached(&a, &res);
	return 0;
}

int ls_cmd_detach(int argc, char **argv)
{
	char reply[256], err[512];
	pid_t pid;
	int r;

	if (argc == 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")))
		return fputs("usage: leakscope detach PID\n\nStop tracking a process "
			     "'leakscope attach' attached to: its calls go back to its "
			     "allocator, the agent's socket and post-mortem file are "
			     "removed.  It runs on unchanged.\n", stdout), 0;
	if (argc != 2 || !ls_target_is_pid(argv[1], &pid))
		return usage_error("detach", "expected one PID");
	r = ls_client_request(pid, "detach", reply, sizeof(reply), err, sizeof(err));
	if (r == -EPROTO && strstr(err, "not attached")) {
		ls_error("pid %d runs with the agent preloaded (leakscope run or "
			 "LD_PRELOAD): there is nothing to detach", (int)pid);
		return LS_EXIT_FAILURE;
	}
	if (r) {
		ls_error("%s", err);
		return LS_EXIT_FAILURE;
	}
	printf("leakscope: detached from pid %d\n", (int)pid);
	return 0;
}
