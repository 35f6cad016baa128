"""Reliability under stress patterns (issue 12): thread churn, reset."""

import os
import signal
import time

from harness import (check, once, workload, leakscope, root_report,
                     expect_status, expect_site, expect_no_temporaries,
                     site_function, run_process, need, eq, ge, ok)

THREADS = 3000
PEAK_BATCH = 64 << 10      # agent/thread.h LS_PEAK_BATCH, slack per record


@once
def churn():
    r = leakscope(["--format", "json"], [workload("thread-churn")], timeout=120)
    expect_status(r, 0, "thread-churn exit status")
    return root_report(r)


@check("thread churn: every 100th of 3000 threads leaks 48 bytes: 1440 bytes in 30 blocks")
def t_churn_leak():
    expect_site(churn(), "site_churn_leak", workload("thread-churn"), 1440, 30)


@check("thread churn: frees run by a key destructor after the agent's own are tracked")
def t_churn_late_free():
    expect_no_temporaries(churn())


@check("thread churn: per-thread records are reused (peak slack of a few records, not 3000)")
def t_churn_records():
    slack = churn()["totals"]["peak_slack"]
    ok(slack <= 16 * PEAK_BATCH, "peak_slack <= 16 records' worth (%d)" % (16 * PEAK_BATCH),
       "%d (%d records)" % (slack, slack // PEAK_BATCH))


@check("thread churn: every thread's malloc is counted (3000 + 30 leaks)")
def t_churn_calls():
    ge(churn()["calls"]["malloc"], THREADS + THREADS // 100, "malloc calls")


@check("reset: growth is judged from the reset on (a steady leak reads linear again, not constant)")
def t_reset_trend():
    # The live tests' helpers: a target started with the agent preloaded
    # by hand, in their private runtime dir.
    from t_live import start, ls, ls_json, trend_of
    prog = workload("growth")
    p = start(prog, ["30"], {"LEAKSCOPE_PERIOD_MS": "100"})
    try:
        time.sleep(4.0)                 # ~40 samples of growth before
        eq(ls("reset", p.pid).returncode, 0, "reset status")
        time.sleep(2.5)                 # ~25 samples after
        rep = ls_json("report", "--format", "json", p.pid)
        growing = ls_json("report", "--growing", "--format", "json", p.pid)
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
    tr = trend_of(rep, prog, "site_g_linear")
    eq(tr["label"], "linear", "site_g_linear's label after reset")
    ok(tr["samples"] <= 30, "only samples after the reset count: %d" % tr["samples"])
    names = [site_function(s, prog) for s in growing["sites"]]
    ok("site_g_linear" in names, "report --growing after reset names site_g_linear: %s" % names)


SHOW_ENV = 'echo "[$LD_PRELOAD]"; env | grep -c "^LEAKSCOPE_" || true'


@check("environment: bash -c sees no LD_PRELOAD and no LEAKSCOPE_* (bash replaces unsetenv)")
def t_env_bash():
    bash = need("bash")
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    native = run_process([bash, "-c", SHOW_ENV], env=env)
    traced = leakscope([], [bash, "-c", SHOW_ENV], env=env)
    eq(traced.stdout.decode(), native.stdout.decode(), "what bash prints under leakscope")
    eq(native.stdout.decode(), "[]\n0\n", "what bash prints natively")


@check("environment: the user's own LD_PRELOAD is given back to bash as it was")
def t_env_bash_theirs():
    bash = need("bash")
    theirs = "libm.so.6"
    env = dict(os.environ, LD_PRELOAD=theirs)
    traced = leakscope([], [bash, "-c", SHOW_ENV], env=env)
    eq(traced.stdout.decode(), "[%s]\n0\n" % theirs, "bash's LD_PRELOAD")


# The agent keeps its control socket among the 32 descriptors under
# min(RLIMIT_NOFILE, 1024) (agent/sys.c): the probe leaves those out.
FD_PROBE = ("import os, resource; fd = os.open('/dev/null', os.O_RDONLY); "
            "top = min(resource.getrlimit(resource.RLIMIT_NOFILE)[0], 1024) - 32; "
            "print(fd, sorted(int(f) for f in os.listdir('/proc/self/fd') "
            "if int(f) != fd and int(f) < top))")


@check("descriptors: the program's first open() and its inherited fds are as native (--output too)")
def t_fds():
    py = need("python3")
    native = run_process([py, "-c", FD_PROBE])
    traced = leakscope([], [py, "-c", FD_PROBE])
    eq(traced.stdout.decode(), native.stdout.decode(), "first fd and open fds")
    child = leakscope([], ["sh", "-c", "ls /proc/self/fd | sort -n | tr '\\n' ' '"])
    nchild = run_process(["sh", "-c", "ls /proc/self/fd | sort -n | tr '\\n' ' '"])
    eq(child.stdout.decode(), nchild.stdout.decode(), "fds a child of the command inherits")


@check("early allocations: a library constructor's malloc(12345), made before the agent's constructor, is seen")
def t_early_ctor():
    r = leakscope(["--format", "json"], [workload("early-ctor")])
    expect_status(r, 0, "early-ctor exit status")
    rep = root_report(r)
    expect_site(rep, "site_lib_ctor", os.path.join(os.path.dirname(workload("early-ctor")),
                                                   "libearly.so"), 12345, 1)
    expect_site(rep, "site_main_early", workload("early-ctor"), 100, 1)


@check("early allocations: libstdc++'s emergency pool (its constructor, before the agent's) is seen")
def t_early_cxx_pool():
    r = leakscope(["--format", "json"], [workload("cxx-leaks")])
    expect_status(r, 0, "cxx-leaks exit status")
    pools = [s for s in root_report(r)["sites"]
             if "libstdc++" in (s["frames"][0].get("module") or "")
             and any(f.get("function") == "call_init" for f in s["frames"])]
    ok(len(pools) == 1 and pools[0]["live_blocks"] == 1 and pools[0]["live_bytes"] >= 64 << 10,
       "one block of >= 64 KiB allocated by libstdc++ under ld.so's call_init: %s"
       % [(s["live_bytes"], s["live_blocks"]) for s in pools])
