/*
 * refresh.c - reloading a target for watch and top.
 */
#include <errno.h>
#include <string.h>
#include <time.h>
#include "../lib/render.h"
#include "../lib/source.h"
#include "refresh.h"

volatile sig_atomic_t ls_refresh_stop;

static void drop_base(struct ls_namer *n);

void ls_namer_update(struct ls_namer *n, struct ls_snapshot *snap)
{
	if (n->have && n->base.hdr.module_gen == snap->hdr.module_gen) {
		ls_snapshot_release(snap);
		return;
	}
	drop_base(n);
	n->base = *snap;
	memset(snap, 0, sizeof(*snap));
	if (!n->pool)
		n->pool = ls_sympool_new();
	n->sym = n->pool ? ls_symbolizer_new_shared(&n->base, n->pool) : NULL;
	n->have = 1;
}

static void drop_base(struct ls_namer *n)
{
	if (!n->have)
		return;
	ls_symbolizer_free(n->sym);
	n->sym = NULL;
	ls_snapshot_release(&n->base);
	n->have = 0;
}

void ls_namer_release(struct ls_namer *n)
{
	drop_base(n);
	ls_sympool_free(n->pool);
	n->pool = NULL;
}

void ls_namer_describe(struct ls_namer *n, const struct ls_report_opts *o,
		       const struct ls_site *site, char *buf, size_t cap)
{
	ls_render_site_summary(n->have ? n->sym : NULL, o, site, buf, cap);
}

int ls_refresh_load(const char *target, struct ls_snapshot *snap)
{
	struct ls_source_opts so = { 0 };

	return ls_load_target(target, &so, snap);
}

static void on_stop(int sig)
{
	ls_refresh_stop = 1;
}

void ls_refresh_catch_signals(void)
{
	signal(SIGINT, on_stop);
	signal(SIGTERM, on_stop);
}

void ls_refresh_sleep(uint64_t ns)
{
	struct timespec ts = { .tv_sec = (time_t)(ns / 1000000000u),
			       .tv_nsec = (long)(ns % 1000000000u) };

	while (!ls_refresh_stop && nanosleep(&ts, &ts) && errno == EINTR)
		;
}
