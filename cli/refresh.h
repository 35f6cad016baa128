/*
 * refresh.h - what the refreshing commands (watch, top) share: reloading
 * their target through the source table, names that survive reloads,
 * and stopping on SIGINT/SIGTERM.
 */
#ifndef LEAKSCOPE_REFRESH_H
#define LEAKSCOPE_REFRESH_H

#include <signal.h>
#include <stdint.h>
#include "../lib/snapshot.h"
#include "../lib/symbolize.h"
#include "report-args.h"

/* Symbolizes against a snapshot kept alive for the purpose; replaced
 * when the target's module map changes, so that the symbolizer's caches
 * serve every refresh. */
struct ls_namer {
	struct ls_snapshot base;
	struct ls_symbolizer *sym;
	struct ls_sympool *pool;	/* files stay open across bases */
	int have;
};

/* Take snap as the names' base if the module map changed (snap is then
 * emptied), else release it. */
void ls_namer_update(struct ls_namer *n, struct ls_snapshot *snap);
void ls_namer_release(struct ls_namer *n);	/* and its pool */
/* "fn < caller < caller's caller" of site, into buf. */
void ls_namer_describe(struct ls_namer *n, const struct ls_report_opts *o,
		       const struct ls_site *site, char *buf, size_t cap);

/* Load target again; prints the error.  0 or -errno. */
int ls_refresh_load(const char *target, struct ls_snapshot *snap);

extern volatile sig_atomic_t ls_refresh_stop;
/* SIGINT and SIGTERM set ls_refresh_stop. */
void ls_refresh_catch_signals(void);
/* Sleep ns, or less when a stop signal comes. */
void ls_refresh_sleep(uint64_t ns);

#endif
