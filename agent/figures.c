/*
 * figures.c - the process-wide figures of a snapshot and a growth sample.
 */
#include <malloc.h>
#include <string.h>
#include "figures.h"
#include "sample.h"
#include "thread.h"

void ls_figures_calls(struct lsnap_call *out)
{
	uint64_t calls[LS_FN_COUNT];
	unsigned i;

	ls_thread_calls(calls);
	for (i = 0; i < LS_FN_COUNT; i++) {
		memset(&out[i], 0, sizeof(out[i]));
		memcpy(out[i].name, ls_fn_names[i], strlen(ls_fn_names[i]));
		out[i].count = calls[i];
	}
}

void ls_figures_mallinfo(struct lsnap_mallinfo *m)
{
	struct mallinfo2 mi = mallinfo2();

	*m = (struct lsnap_mallinfo){
		.arena = mi.arena, .ordblks = mi.ordblks, .smblks = mi.smblks,
		.hblks = mi.hblks, .hblkhd = mi.hblkhd, .usmblks = mi.usmblks,
		.fsmblks = mi.fsmblks, .uordblks = mi.uordblks,
		.fordblks = mi.fordblks, .keepcost = mi.keepcost,
	};
}

void ls_figures_peak(struct lsnap_totals *t)
{
	int64_t live;
	uint64_t peak, slack;

	ls_thread_live_peak(&live, &peak, &slack);
	peak = (uint64_t)ls_sample_unscale((int64_t)peak);
	t->peak_live_bytes = peak > t->live_bytes ? peak : t->live_bytes;
	t->peak_slack = (uint64_t)ls_sample_unscale((int64_t)slack);
}
