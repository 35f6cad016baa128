"""The concurrent check's bounded pause (docs/REACHABILITY.md, "A bounded
pause"): on a heap two threads rewrite at full speed, the agent's part of
the stop stays within the budget, or the fork image ran instead and the
report says why, with the stop it predicted; either way the verdict is
exact.

Ground truth: tests/workloads/reach-writes.c (every block stays reachable
from its table while the writers replace and rewrite them: nothing is
lost, definitely, indirectly or possibly).
"""
import atexit
import json
import os
import shutil
import subprocess
import tempfile

from harness import (BUILD, cli, agent_env, ptrace_allowed, check, once,
                     workload, eq, ok, fail, reap, Skip)

RUNTIME = tempfile.mkdtemp(prefix="leakscope-pause-")
os.chmod(RUNTIME, 0o700)
atexit.register(shutil.rmtree, RUNTIME, True)
TIMEOUT = 120
# MiB, blocks, writer threads, one rewrite in REPLACE replaces its block
HEAP = ("8", "20000", "2", "16")
BUDGETS = ("10", "1")


@once
def checks():
    """reach-writes under the agent; `check` with the default budget and
    with a budget of 1 ms."""
    ptrace_allowed()
    agent = {"LD_PRELOAD": os.path.join(BUILD, "libleakscope.so")}
    p = subprocess.Popen([workload("reach-writes")] + list(HEAP),
                         env=agent_env(RUNTIME, agent), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, start_new_session=True)
    out = {}
    try:
        line = p.stdout.readline()
        if not line.startswith(b"ready"):
            fail("reach-writes ready", "ready", line)
        for budget in BUDGETS:
            args = ["check", "--format", "json", "--top", "1"]
            if budget != "10":
                args += ["--pause-budget", budget]
            r = cli(args + [p.pid], agent_env(RUNTIME), TIMEOUT)
            if r.returncode != 0:
                fail("check --pause-budget %s" % budget, 0, r.describe())
            out[budget] = json.loads(r.stdout)
        r = cli(["check", "--pause-budget", "1", p.pid], agent_env(RUNTIME),
                TIMEOUT)
        out["text"] = r.stdout.decode()
        out["alive"] = p.poll() is None
    finally:
        reap(p, TIMEOUT)
    if out["10"]["check"].get("fallback") == "kernel":
        raise Skip("the kernel lacks userfaultfd's asynchronous "
                   "write-protection (6.7+): checks fall back to fork")
    return out


def expect_nothing_lost(j, where):
    r = j["reachability"]
    for k in ("definite", "indirect", "possible"):
        eq(r[k]["blocks"], 0, "%s: %s blocks" % (where, k))
    ok(r["reachable"]["blocks"] >= int(HEAP[1]),
       "%s: every block reachable" % where, str(r))


@check("check on a heap two threads rewrite: the default's stop stays "
       "within its 10 ms budget, or the fork image ran and the report says "
       "why; nothing reported lost")
def t_default_budget():
    j = checks()["10"]
    c = j["check"]
    eq(c["method_asked"], "concurrent", "the method asked for")
    eq(c["pause_budget_ms"], 10.0, "the default budget")
    if c["method"] == "concurrent":
        eq(c["fallback"], None, "no fallback named")
        ok(c["stop_work_ms"] <= 10.0, "the agent's stop within the budget",
           str(c))
    else:
        ok(c["fallback"] in ("budget", "overrun"),
           "the fallback is the budget's", str(c))
        if c["fallback"] == "budget":
            # The agent falls back when its prediction passes the budget
            # by a nanosecond or more, and stops predicting there
            # (agent/reachcm.c, predict_stop's cap); JSON gives
            # microseconds, so just over 10 ms reads 10.0.
            ok(c["stop_predicted_ms"] >= 10.0,
               "the stop predicted over the budget", str(c))
    ok(c["pause_ms"] is not None and c["pause_ms"] > 0, "pause measured",
       str(c))
    ok(c["preclean_passes"] >= 1, "at least one precleaning pass", str(c))
    expect_nothing_lost(j, "default budget")


@check("check --pause-budget 1 on a heap two threads rewrite: the written "
       "pages alone predict a longer stop, so the fork image runs, named "
       "with its reason in JSON and text; nothing reported lost")
def t_tight_budget():
    out = checks()
    c = out["1"]["check"]
    eq(c["method"], "fork", "the method that ran")
    eq(c["method_asked"], "concurrent", "the method asked for")
    eq(c["fallback"], "budget", "the fallback's reason")
    ok(c["dirty_pages"] > 1000 and c["stop_predicted_ms"] > 1.0,
       "thousands of written pages, a stop predicted over 1 ms", str(c))
    expect_nothing_lost(out["1"], "--pause-budget 1")
    ok("Method: fork, not the concurrent mark asked for:" in out["text"] and
       "pause budget" in out["text"], "the text report says why",
       out["text"][:800])
    ok(out["alive"], "the target ran on")


@check("check --pause-budget with a bad value: one line naming the option, "
       "exit status 125, no check")
def t_bad_budget():
    for bad in ("abc", "60001", "-1"):
        r = cli(["check", "--pause-budget", bad, "1"], agent_env(RUNTIME))
        eq(r.returncode, 125, "exit status for --pause-budget %s" % bad)
        lines = r.stderr.decode().strip().splitlines()
        eq(len(lines), 1, "one line of error for %s" % bad)
        ok("--pause-budget" in lines[0] and bad in lines[0],
           "the error names the option and the value", lines[0])
