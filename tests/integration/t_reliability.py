"""Reliability under stress patterns: thread churn, reset."""

import json
import os
import shutil
import glob
import signal
import subprocess
import tempfile
import time

from harness import wait_socket
from harness import (check, once, workload, leakscope, root_report,
                     expect_status, expect_site, expect_no_temporaries,
                     site_function, run_process, need, contains,
                     exit_snapshot, marker_line, find_sites,
                     valgrind_heap_usage, eq, ge, ok, BUILD, LEAKSCOPE)

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


@check("thread churn: every thread's malloc is counted, exactly (3000 + 30 leaks)")
def t_churn_calls():
    eq(churn()["calls"]["malloc"], THREADS + THREADS // 100, "malloc calls")


@check("thread churn: blocks allocated equal valgrind's total heap usage; bytes are "
       "the workload's plus glibc's one calloc")
def t_churn_valgrind():
    allocs, _, _ = valgrind_heap_usage([workload("thread-churn")])
    t = churn()["totals"]
    eq(t["allocated_blocks"], allocs, "allocated blocks vs valgrind")
    # 200 bytes a thread, 48 more every 100th; glibc's calloc (a thread
    # vector sized by the loaded modules: 16 bytes apart under valgrind)
    own = THREADS * 200 + THREADS // 100 * 48
    ok(own < t["allocated_bytes"] <= own + 1024, "allocated bytes: %d + glibc's calloc" % own,
       str(t["allocated_bytes"]))


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
    # Before the fix the samples from before the reset made it "constant".
    # A loaded machine can starve the workload's 10 ms loop and bend the
    # line, so any growing shape passes, at about the workload's rate.
    ok(tr["label"] in ("linear", "exponential", "saturating"),
       "site_g_linear grows after reset: %s" % tr)
    ok(40000 <= tr["bytes_per_second"] <= 160000,
       "rate near 81920 B/s after reset: %s" % tr)
    ok(tr["samples"] <= 30, "only samples after the reset count: %d" % tr["samples"])
    names = [site_function(s, prog) for s in growing["sites"]]
    ok(tr["label"] != "linear" or "site_g_linear" in names,
       "report --growing after reset names the linear site_g_linear: %s" % names)


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


def preloaded(prog, args, env_extra):
    """prog started with the agent preloaded by hand and env_extra set."""
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(env_extra)
    env["LD_PRELOAD"] = os.path.join(BUILD, "libleakscope.so")
    return subprocess.Popen([prog] + list(args), env=env,
                            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            start_new_session=True)


def ls_env(env_extra, *args):
    env = dict(os.environ, **env_extra)
    return run_process([LEAKSCOPE] + [str(a) for a in args], env=env)


@check("settings: each unusable LEAKSCOPE_* setting is said once on stderr and shown by stats")
def t_settings_notes():
    rt = tempfile.mkdtemp(prefix="leakscope-notes-")
    os.chmod(rt, 0o700)
    env = {"LEAKSCOPE_RUNTIME_DIR": rt, "LEAKSCOPE_DEPTH": "abc",
           "LEAKSCOPE_UNWIND": "bogus", "LEAKSCOPE_OUT_DIR": "/nonexistent",
           "LEAKSCOPE_HISTORY": "3"}
    p = preloaded(workload("growth"), ["30"], env)
    try:
        wait_socket(rt, p.pid, 3)
        r = ls_env({"LEAKSCOPE_RUNTIME_DIR": rt}, "stats", p.pid, "--format", "json")
    finally:
        os.kill(p.pid, signal.SIGKILL)
        err = p.communicate(timeout=30)[1].decode()
    eq(r.returncode, 0, "stats status: " + r.stderr.decode())
    notes = json.loads(r.stdout.decode())["notes"]
    want = ["LEAKSCOPE_DEPTH='abc' is not a number", "LEAKSCOPE_UNWIND='bogus'",
            "LEAKSCOPE_OUT_DIR='/nonexistent'", "LEAKSCOPE_HISTORY=3 is outside"]
    for w in want:
        eq(len([n for n in notes if w in n]), 1, "stats notes naming %r: %s" % (w, notes))
        eq(err.count(w), 1, "stderr lines naming %r: %r" % (w, err))
    prefix = "leakscope: agent in pid %d: " % p.pid
    eq(sorted(l[len(prefix):] for l in err.splitlines() if l.startswith(prefix)),
       sorted(notes), "stderr's lines are the notes")


@check("settings: a runtime dir others may write: the agent says so and uses a private fallback beside it, which the CLI finds")
def t_runtime_dir_unusable():
    rt = tempfile.mkdtemp(prefix="leakscope-open-")
    os.chmod(rt, 0o777)          # others may write: the agent refuses it
    p = preloaded(workload("growth"), ["30"], {"LEAKSCOPE_RUNTIME_DIR": rt})
    try:
        time.sleep(0.5)
        r = ls_env({"LEAKSCOPE_RUNTIME_DIR": rt}, "stats", p.pid)
    finally:
        os.kill(p.pid, signal.SIGKILL)
        err = p.communicate(timeout=30)[1].decode()
    fallbacks = [d for d in glob.glob(rt + ".??????") if os.path.isdir(d)]
    for d in fallbacks:
        shutil.rmtree(d)
    eq(r.returncode, 0, "stats status: " + r.stderr.decode())
    contains(r.stdout.decode(), "pid %d," % p.pid, "stats answered")
    eq(len(fallbacks), 1, "one fallback dir beside %s" % rt)
    contains(err, "runtime dir '%s' is not a directory of this user's that "
             "only it can write (squatted?): using '%s'" % (rt, fallbacks[0]),
             "the agent's note")
    eq(os.listdir(rt), [], "nothing went into the dir others may write")


@check("dead pid with a post-mortem file: the error says to use --postmortem")
def t_dead_pid_postmortem():
    from t_live import start, ls, RUNTIME
    p = start(workload("growth"), ["30"])
    pm = os.path.join(RUNTIME, "%d.pm" % p.pid)
    for _ in range(300):
        if os.path.exists(pm):
            break
        time.sleep(0.01)
    os.kill(p.pid, signal.SIGKILL)
    p.wait(timeout=30)
    r = ls("stats", p.pid)
    eq(r.returncode, 1, "stats of a dead pid")
    contains(r.stderr.decode(), "use 'leakscope report --postmortem %d'" % p.pid,
             "the error points at the post-mortem file")
    os.unlink(pm)


@check("olds: a snapshot with no live block prints none, status 0")
def t_olds_empty():
    _, snap = exit_snapshot("noleak")
    r = run_process([LEAKSCOPE, "olds", snap])
    eq(r.returncode, 0, "olds status: " + r.stderr.decode())
    contains(r.stdout.decode(), "0 oldest of 0 live blocks", "what olds says")


@check("report -: a snapshot read from a pipe gives the same report as from its file")
def t_report_stdin():
    _, snap = exit_snapshot("basic")
    with open(snap, "rb") as f:
        data = f.read()
    from_file = run_process([LEAKSCOPE, "report", "--format", "json", snap])
    piped = run_process([LEAKSCOPE, "report", "--format", "json", "-"], input=data)
    eq(piped.returncode, 0, "report - status: " + piped.stderr.decode())
    eq(piped.stdout, from_file.stdout, "the report from stdin")
    bad = run_process([LEAKSCOPE, "report", "-"], input=b"not a snapshot")
    eq((bad.returncode, bad.stderr.decode()),
       (1, "leakscope: standard input: not a leakscope snapshot\n"), "garbage on stdin")


@check("run --interval --format json without --output is refused (it would mix with the command's stderr)")
def t_interval_json_needs_output():
    r = run_process([LEAKSCOPE, "run", "--interval", "1", "--format", "json", "--",
                     workload("basic")])
    eq(r.returncode, 125, "status")
    err = r.stderr.decode()
    ok(err.startswith("leakscope: --format json with --interval needs --output FILE")
       and err.count("\n") == 1, "one line naming --output: %r" % err)


@check("watch --slices 3: labels from the agent's own history; sites named with file:line")
def t_watch_few_slices():
    from t_live import start, ls
    prog = workload("growth")
    p = start(prog, ["30"])
    try:
        time.sleep(7)                   # the agent's history: ~7 samples
        r = ls("watch", p.pid, "--interval", "0.3", "--slices", "3")
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=30)
    eq(r.returncode, 0, "watch status: " + r.stderr.decode())
    out = r.stdout.decode()
    contains(out, "Trend from the agent's samples", "the summary says where labels come from")
    named = "site_g_linear (growth.c:%d)" % marker_line("growth.c", "site_g_linear")
    lines = [l for l in out.splitlines() if named in l]
    ok(lines, "site_g_linear named with its file:line", out)
    ok(all("unknown" not in l for l in out.split("Trend from")[1].splitlines()),
       "no site left unknown", out)


def pressure_run(options):
    r = leakscope(["--format", "json"] + options, [workload("pressure"), "2048"])
    expect_status(r, 0, "pressure exit status (the report must be written)")
    made = int(r.stdout.decode().split()[1])
    return made, root_report(r)


@check("memory pressure (RLIMIT_AS, 2 MiB headroom): the exit report is written; live blocks + dropped = mallocs made")
def t_pressure_full():
    made, rep = pressure_run([])
    # The site itself may be what the agent had no memory left to make.
    recorded = sum(x["live_blocks"] for x in
                   find_sites(rep, "site_pressure", workload("pressure")))
    eq(recorded + rep["totals"]["dropped"], made,
       "recorded blocks + dropped events (recorded %d, dropped %d)"
       % (recorded, rep["totals"]["dropped"]))


@check("memory pressure, sampled mode: the exit report is written and says what it dropped")
def t_pressure_sampled():
    made, rep = pressure_run(["--sample-rate", "64KiB"])
    ge(made, 1, "mallocs that succeeded")
    ok(0 <= rep["totals"]["dropped"] <= made, "dropped events (%d) at most the "
       "mallocs made (%d)" % (rep["totals"]["dropped"], made))


@check("run passes the user's LEAKSCOPE_PERIOD_MS / HISTORY / KEEP through (a bad HISTORY is said)")
def t_run_passes_settings():
    env = dict(os.environ, LEAKSCOPE_HISTORY="3")
    r = leakscope([], [workload("basic")], env=env)
    expect_status(r, 0, "basic exit status")
    contains(r.stderr.decode(), "LEAKSCOPE_HISTORY=3 is outside", "the agent saw the setting")
