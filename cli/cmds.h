/*
 * cmds.h - the commands (one file each, cli/cmd-NAME.c): their argument
 * structs, help and entry points, for the table in main.c.
 */
#ifndef LEAKSCOPE_CMDS_H
#define LEAKSCOPE_CMDS_H

#include "cli.h"
#include "report-args.h"

struct ls_run_args {
	struct ls_report_args r;	/* first: LS_CMD_REPORT */
	uint64_t interval_ns;
	uint64_t count;		/* periodic reports; 0 = no limit */
	int follow_exec;
	int all_children;
	int fail_on_leak;
	uint64_t leak_limit;
	uint64_t sample_rate;	/* 0 = full tracking */
	uint64_t sample_seed;
	int leak_check;		/* --leak-check: the check at exit */
	const char *fail_on;	/* --fail-on KINDS */
	unsigned fail_kinds;	/* ... parsed */
};

struct ls_check_args {
	struct ls_report_args r;	/* first: LS_CMD_REPORT */
	int fail_on_leak;
	uint64_t leak_limit;	/* --fail-on-leak=BYTES */
	const char *fail_on;	/* --fail-on KINDS */
	int method;		/* --method: enum ls_check_method */
	uint64_t budget_ns;	/* --pause-budget */
};

struct ls_olds_args {
	struct ls_report_args r;
};

struct ls_snapshot_args {
	const char *output;
};

struct ls_watch_args {
	struct ls_report_args r;
	uint64_t interval_ns;
	uint64_t count;		/* --count: slices, refreshes */
	uint64_t rows;		/* top */
};

struct ls_serve_args {
	const char *listen;
	int allow_remote;
	const char *snapshot_dir;
	uint64_t agent_timeout_ns;	/* 0: the default */
	uint64_t memory_budget;		/* MiB; 0: the default */
	const char *metrics;		/* --metrics ADDR:PORT */
	uint64_t metrics_sites;		/* 0: the default */
	int no_web;
	const char *push_pyroscope, *push_parca;
	uint64_t push_interval_ns;	/* 0: the default */
	const char *push_service, *push_credentials;
	uint64_t push_queue;		/* 0: the default */
};

/* `leakscope trace` (cmd-trace.c): memleak's options and the tracer's. */
struct ls_trace_args {
	struct ls_report_args r;	/* first: LS_CMD_REPORT */
	uint64_t pid;
	const char *command;	/* -c */
	int event;		/* --event: enum ls_tracer_what */
	const char *obj, *prefix, *stack_mode;
	uint64_t sample_rate, stack_bytes;
	int print_trace, combined_only, wa_missing_free, percpu, verbose;
};

struct ls_attach_args {
	uint64_t sample_rate;	/* 0 = full tracking */
	uint64_t depth;
	uint64_t timeout_ns;	/* for a safe point */
};

struct ls_help_args {
	int man, markdown;
};

struct ls_beam_args {
	const char *cookie, *cookie_file, *output;
	const struct ls_renderer *format;	/* text or json */
	uint64_t interval_ns, count, top, timeout_ns, port;
	int gc_check;
};

extern const struct ls_usage ls_run_usage, ls_report_usage, ls_olds_usage,
	ls_stats_usage, ls_reset_usage, ls_snapshot_usage, ls_watch_usage,
	ls_top_usage, ls_diff_usage, ls_help_usage, ls_serve_usage,
	ls_beam_usage, ls_trace_usage, ls_attach_usage, ls_detach_usage,
	ls_check_usage;

int ls_cmd_run(struct ls_invocation *inv);
int ls_cmd_report(struct ls_invocation *inv);
int ls_cmd_olds(struct ls_invocation *inv);
int ls_cmd_stats(struct ls_invocation *inv);
int ls_cmd_reset(struct ls_invocation *inv);
int ls_cmd_snapshot(struct ls_invocation *inv);
int ls_cmd_watch(struct ls_invocation *inv);
int ls_cmd_top(struct ls_invocation *inv);
int ls_cmd_diff(struct ls_invocation *inv);
int ls_cmd_help(struct ls_invocation *inv);
int ls_cmd_serve(struct ls_invocation *inv);
int ls_cmd_beam(struct ls_invocation *inv);
int ls_cmd_trace(struct ls_invocation *inv);
int ls_cmd_attach(struct ls_invocation *inv);
int ls_cmd_detach(struct ls_invocation *inv);
int ls_cmd_check(struct ls_invocation *inv);

void ls_run_defaults(void *args);
void ls_watch_defaults(void *args);
void ls_top_defaults(void *args);
void ls_beam_defaults(void *args);
void ls_trace_defaults(void *args);
void ls_attach_defaults(void *args);
void ls_check_defaults(void *args);

/* The exit statuses, as --help and the man page state them. */
extern const char ls_exit_status_text[];

#endif
