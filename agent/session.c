/*
 * session.c - an attach session (`leakscope attach`, attach.c): the
 * settings the injector passes, the start of tracking in a running
 * process, and the detach.
 */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../common/attach.h"
#include "../common/cfi.h"
#include "../common/contract.h"
#include "agent.h"
#include "attach.h"
#include "control.h"
#include "dllock.h"
#include "figures.h"
#include "reach.h"
#include "heapmodel.h"
#include "guard.h"
#include "modules.h"
#include "pmfile.h"
#include "real.h"
#include "rundir.h"
#include "sample.h"
#include "snapwrite.h"
#include "capture.h"
#include "sys.h"

/* --- attach ------------------------------------------------------------------ */

/*
 * Attach (agent/attach.c): ls_agent_setting() takes one setting of the
 * injector's (common/attach.h keys); ls_agent_start_attached() starts
 * tracking, the control thread and the post-mortem file from them, a
 * second time after a detach forgetting what the first session saw;
 * ls_agent_detach() puts the GOT back, stops tracking, removes the
 * socket and post-mortem file (the control thread ends after answering).
 * Return 0 or a negative errno with a reason in err.  Never in a hook.
 * An attached agent rests in LS_DISABLED between sessions, so that no
 * hook call ever starts it the preloaded way (ls_agent_core_start).
 */
static int ls_agent_detach(char *err, size_t errlen);

static void ls_agent_setting(const char *key, size_t klen, const char *value)
{
	char *end;
	unsigned long long n = strtoull(value, &end, 10);
	int num = *value && !*end;

#define IS(k) (klen == strlen(k) && !memcmp(key, k, klen))
	if (IS(LS_ATTACH_KEY_DEPTH) && num)
		ls_agent.depth = n < LS_DEPTH_MIN ? LS_DEPTH_MIN :
				 n > LS_DEPTH_MAX ? LS_DEPTH_MAX : (int)n;
	else if (IS(LS_ATTACH_KEY_SAMPLE_RATE) && num)
		ls_agent.sample_rate = n;
	else if (IS(LS_ATTACH_KEY_PERIOD_MS) && num && n >= LS_PERIOD_MS_MIN &&
		 n <= LS_PERIOD_MS_MAX)
		ls_agent.period_ms = (uint32_t)n;
	else if (IS(LS_ATTACH_KEY_HISTORY) && num && n >= LS_HISTORY_MIN &&
		 n <= LS_HISTORY_MAX)
		ls_agent.hist_len = (uint32_t)n;
	else if (IS(LS_ATTACH_KEY_RUNTIME_DIR) && strlen(value) < PATH_MAX)
		strcpy(ls_agent.runtime_dir, value);
#undef IS
}

/* What must be set up once per process, whichever session comes first. */
static int attach_once(char *err, size_t errlen)
{
	static int done;
	static uint64_t first_rate;

	if (done) {
		if (ls_agent.sample_rate != first_rate) {
			/* The sampler's state lives as long as the process. */
			if (first_rate)
				snprintf(err, errlen, "the agent in this process "
					 "was first attached sampled (--sample-rate "
					 "%llu): attach again with --sample-rate "
					 "%llu, or restart the program under "
					 "'leakscope run' for full tracking",
					 (unsigned long long)first_rate,
					 (unsigned long long)first_rate);
			else
				snprintf(err, errlen, "the agent in this process "
					 "was first attached in full mode: attach "
					 "again without --sample-rate, or restart "
					 "the program under 'leakscope run "
					 "--sample-rate N'");
			return -EINVAL;
		}
		ls_agent_reset();
		return 0;
	}
	if (ls_thread_init()) {
		snprintf(err, errlen, "no thread key left in the process");
		return -EAGAIN;
	}
	if (ls_sample_init(ls_agent.sample_rate, 0))
		ls_agent.sample_rate = 0;
	first_rate = ls_agent.sample_rate;
	ls_capture_init();
	ls_state_read_cmdline();
	ls_agent_atfork();
	ls_control_on_detach(ls_agent_detach);
	done = 1;
	return 0;
}

/* Out of gcc's interprocedural analysis: knowing err's size, it would
 * warn that a long runtime dir's path is cut to fit the attach result's
 * reason, which is what snprintf is for. */
#if defined(__clang__)
static __attribute__((noinline))
#else
static __attribute__((noipa))
#endif
int ls_agent_start_attached(char *err, size_t errlen)
{
	int r;

	ls_real_rebind_default();
	if (!ls_real.free) {
		snprintf(err, errlen, "the process's malloc and free not found");
		return -ENOENT;
	}
	if (!ls_agent.runtime_dir[0]) {
		snprintf(err, errlen, "no runtime directory given");
		return -EINVAL;
	}
	r = attach_once(err, errlen);
	if (r)
		return r;
	ls_figures_init();	/* lookups with dlsym: here, not in a hook */
	ls_cfi_init();
	ls_modules_refresh();
	ls_heapmodel_learn();
	ls_dllock_learn();
	ls_reach_learn_segments();
	ls_agent.pid = getpid();
	ls_agent.start_mono = ls_now_ns(CLOCK_MONOTONIC);
	ls_agent.attach_wall_ns = ls_now_ns(CLOCK_REALTIME);
	r = ls_rundir_prepare(ls_agent.runtime_dir, sizeof(ls_agent.runtime_dir));
	if (r) {
		snprintf(err, errlen, "runtime directory %s: %s",
			 ls_agent.runtime_dir, strerror(-r));
		return r;
	}
	__atomic_store_n(&ls_agent.state, LS_ON, __ATOMIC_RELEASE);
	ls_pm_open(ls_agent.runtime_dir, ls_agent.period_ms, ls_agent.hist_len);
	r = ls_control_start(ls_agent_reset);
	if (r) {
		__atomic_store_n(&ls_agent.state, LS_DISABLED, __ATOMIC_RELEASE);
		ls_pm_close(0);
		snprintf(err, errlen, "cannot start the control thread: %s",
			 strerror(-r));
	}
	return r;
}

static void attach_fail(struct ls_attach_result *res, const char *why)
{
	res->status = LS_ATTACH_FAILED;
	snprintf(res->reason, sizeof(res->reason), "%s", why);
}

/* `leakscope attach`'s call, on a thread it holds at a safe point. */
__attribute__((visibility("default")))
struct ls_attach_result *leakscope_attach(const char *settings)
{
	struct ls_attach_result *res = ls_attach_result();
	int saved = errno;

	ls_guard_enter();
	memset(res, 0, sizeof(*res));
	res->version = LS_ATTACH_VERSION;
	if (ls_glibc_missing())
		attach_fail(res, "this glibc has dlsym or pthread_create in "
			    "libdl.so.2 or libpthread.so.0, which the program "
			    "did not load");
	else if (ls_attach_preloaded())
		res->status = LS_ATTACH_PRELOADED;
	else if (ls_agent_on())
		res->status = LS_ATTACH_ACTIVE;
	else if (ls_attach_prepare(ls_agent_modules_changed))
		attach_fail(res, "dlopen, dlsym or the agent's own hooks not found");
	else {
		/* The defaults of ls_state_read_config(), which did not run. */
		ls_agent.depth = LS_DEPTH_DEFAULT;
		ls_agent.sample_rate = 0;
		ls_agent.period_ms = LS_PERIOD_MS_DEFAULT;
		ls_agent.hist_len = LS_HISTORY_DEFAULT;
		ls_attach_parse(settings, ls_agent_setting);
		if (ls_agent_start_attached(res->reason, sizeof(res->reason))) {
			res->status = LS_ATTACH_FAILED;
		} else {
			ls_attach_list();
			res->control_tid = (uint32_t)ls_control_tid_wait();
			res->start_wall_ns = ls_agent.attach_wall_ns;
		}
	}
	ls_guard_leave();
	errno = saved;
	return res;
}

static int ls_agent_detach(char *err, size_t errlen)
{
	int expect = LS_ON;

	if (!ls_agent.attach_wall_ns) {
		snprintf(err, errlen, "not attached (started with the agent "
			 "preloaded): nothing to detach");
		return -EINVAL;
	}
	ls_attach_restore();
	if (!__atomic_compare_exchange_n(&ls_agent.state, &expect, LS_DISABLED,
					 0, __ATOMIC_ACQ_REL, __ATOMIC_RELAXED)) {
		snprintf(err, errlen, "not tracking");
		return -EINVAL;
	}
	ls_snapwrite_lock();
	ls_pm_close(0);
	ls_pm_forget_child();	/* unmapped: a new attach opens a new file */
	ls_snapwrite_unlock();
	ls_control_stop();
	ls_rundir_remove_made();
	return 0;
}
