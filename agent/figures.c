/*
 * figures.c - the process-wide figures of a snapshot and a growth sample.
 */
#include <malloc.h>
#include <string.h>
#include "figures.h"
#include "sys.h"
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

/* The last count, how long it took, and when the next may be taken (0:
 * at once).  Under mi_lock, held only around these (not across
 * mallinfo2(): glibc's own fork handler waits for the arena locks
 * mallinfo2() holds, and this lock is only reset in the child). */
static ls_lock_t mi_lock = LS_LOCK_INIT;
static struct lsnap_mallinfo mi_last;
static uint64_t mi_last_ns, mi_next_mono, mi_skipped;

/* glibc's mallinfo2 (2.33 on), looked up so that the agent loads into
 * older ones (glibcver.h); there, mallinfo, whose int fields count
 * modulo 4 GiB. */
static struct mallinfo2 (*mallinfo2_fn)(void);
static int mallinfo2_looked;

void ls_figures_init(void)
{
	void *p = dlsym(RTLD_DEFAULT, "mallinfo2");

	memcpy(&mallinfo2_fn, &p, sizeof(p));
	__atomic_store_n(&mallinfo2_looked, 1, __ATOMIC_RELEASE);
}

static struct mallinfo2 count_mallinfo(void)
{
	struct mallinfo old;

	if (!__atomic_load_n(&mallinfo2_looked, __ATOMIC_ACQUIRE))
		ls_figures_init();
	if (mallinfo2_fn)
		return mallinfo2_fn();
	/* deprecated for its int fields, the reason it is the fallback */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
	old = mallinfo();
#pragma GCC diagnostic pop
	return (struct mallinfo2){
		.arena = (unsigned)old.arena, .ordblks = (unsigned)old.ordblks,
		.smblks = (unsigned)old.smblks, .hblks = (unsigned)old.hblks,
		.hblkhd = (unsigned)old.hblkhd, .usmblks = (unsigned)old.usmblks,
		.fsmblks = (unsigned)old.fsmblks,
		.uordblks = (unsigned)old.uordblks,
		.fordblks = (unsigned)old.fordblks,
		.keepcost = (unsigned)old.keepcost,
	};
}

/* The count is timed in this thread's CPU time: on a loaded machine a
 * count preempted for a few time slices is not a heap that is slow to
 * count (timed in wall time, a small heap's count preempted for 5 ms
 * would keep the last figures for 5 s). */
void ls_figures_mallinfo(struct lsnap_mallinfo *m)
{
	struct mallinfo2 mi;
	uint64_t t0, t1, c0;

	ls_lock(&mi_lock);
	t0 = ls_now_ns(CLOCK_MONOTONIC);
	if (t0 < mi_next_mono) {
		*m = mi_last;
		mi_skipped++;
		ls_unlock(&mi_lock);
		return;
	}
	ls_unlock(&mi_lock);
	c0 = ls_now_ns(CLOCK_THREAD_CPUTIME_ID);
	mi = count_mallinfo();
	t0 = ls_now_ns(CLOCK_THREAD_CPUTIME_ID) - c0;
	t1 = ls_now_ns(CLOCK_MONOTONIC);
	*m = (struct lsnap_mallinfo){
		.arena = mi.arena, .ordblks = mi.ordblks, .smblks = mi.smblks,
		.hblks = mi.hblks, .hblkhd = mi.hblkhd, .usmblks = mi.usmblks,
		.fsmblks = mi.fsmblks, .uordblks = mi.uordblks,
		.fordblks = mi.fordblks, .keepcost = mi.keepcost,
	};
	ls_lock(&mi_lock);
	mi_last = *m;
	mi_last_ns = t0;
	mi_next_mono = mi_last_ns < LS_MALLINFO_SLOW_NS ? 0 :
		       t1 + mi_last_ns * LS_MALLINFO_DUTY;
	ls_unlock(&mi_lock);
}

void ls_figures_reset_child(void)
{
	ls_lock_reset(&mi_lock);
}

void ls_figures_mallinfo_ration(uint64_t *last_ns, uint64_t *skipped)
{
	ls_lock(&mi_lock);
	*last_ns = mi_last_ns;
	*skipped = mi_skipped;
	ls_unlock(&mi_lock);
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
