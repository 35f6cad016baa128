"""The hooks' shared clock (agent/tick.h): birth stamps and lifetimes stay
true across idle periods and fork, the ticker runs while the program
allocates and makes no wakeup while it does not.

Ground truth: tests/workloads/tick.c, which reports CLOCK_MONOTONIC right
after each kept block's malloc and the measured lifetimes of two freed
blocks.  Ages are compared in differences between blocks of one report
(birth(a) - birth(b) = age(b) - age(a)), so the moment of the exit report
does not matter.  A stamp may be a few ticks off (truncation to the tick,
the vDSO's coarse clock a jiffy behind, the ticker's scheduling delay on
a loaded machine): TOLERANCE_MS is 12 ticks (47 ms); a ticker that
stopped or a clock a fork child inherited frozen is off by 500 ms or
more.  Wakeups
are counts of the control thread's context switches (/proc), not
timings: ~128 in half a second of allocation, none in two idle seconds.
"""
import json
import os
import subprocess
import tempfile
import threading
import time

from harness import (BUILD, LEAKSCOPE, Failure, check, eq, ok, once,
                     site_function, workload)

AGENT = os.path.join(BUILD, "libleakscope.so")
TICK_MS = 1000.0 / 256
TOLERANCE_MS = 12 * TICK_MS
TIMEOUT = 60


def switches(pid, tid):
    n = 0
    with open("/proc/%d/task/%d/status" % (pid, tid)) as f:
        for line in f:
            if line.startswith(("voluntary_ctxt_switches",
                                "nonvoluntary_ctxt_switches")):
                n += int(line.split(":")[1])
    return n


def control_tid(pid):
    """The agent's thread (named "leakscope"), waited for up to 5 s."""
    for _ in range(100):
        for t in os.listdir("/proc/%d/task" % pid):
            try:
                with open("/proc/%d/task/%s/comm" % (pid, t)) as f:
                    if f.read().strip() == "leakscope":
                        return int(t)
            except OSError:
                pass
        time.sleep(0.05)
    raise Failure("no 'leakscope' thread in pid %d" % pid)


def expect_line(p, want):
    line = p.stdout.readline().decode()
    if line != want + "\n":
        raise Failure("workload said %r, expected %r" % (line, want))


def count_over(pid, tid, seconds):
    a = switches(pid, tid)
    time.sleep(seconds)
    return switches(pid, tid) - a


def run_tick(extra, measure):
    """Run the workload; return its reported times, the agent thread's
    wakeups per phase (when measure) and the two exit snapshots."""
    out = tempfile.mkdtemp(prefix="leakscope-tick-")
    runtime = tempfile.mkdtemp(prefix="leakscope-tick-rt-")
    os.chmod(runtime, 0o700)
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update({"LD_PRELOAD": AGENT, "LEAKSCOPE_OUT_DIR": out,
                "LEAKSCOPE_EXIT_BLOCKS": "1", "LEAKSCOPE_RUNTIME_DIR": runtime,
                "LEAKSCOPE_PERIOD_MS": "3600000"})
    env.update(extra)
    p = subprocess.Popen([workload("tick")], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=env)
    killer = threading.Timer(TIMEOUT, p.kill)
    killer.start()
    res = {"wakeups": {}}
    try:
        expect_line(p, "busy")
        tid = control_tid(p.pid) if measure else None
        if measure:
            res["wakeups"]["busy"] = count_over(p.pid, tid, 0.5)
        p.stdin.write(b"x")
        p.stdin.flush()
        expect_line(p, "idle")
        if measure:
            time.sleep(0.3)	# the ticker's last tick or two
            res["wakeups"]["idle"] = count_over(p.pid, tid, 2.0)
        else:
            time.sleep(1.2)
        p.stdin.write(b"x")
        p.stdin.flush()
        expect_line(p, "busy")
        if measure:
            res["wakeups"]["busy after idle"] = count_over(p.pid, tid, 0.5)
        else:
            time.sleep(0.2)
        p.stdin.write(b"x")
        p.stdin.flush()
        rest, _ = p.communicate(timeout=TIMEOUT)
    finally:
        killer.cancel()
        if p.poll() is None:
            p.kill()
            p.wait()
    eq(p.returncode, 0, "workload status")
    for line in rest.decode().splitlines():
        kind, *pairs = line.split()
        res[kind] = {k: int(v) for k, v in (x.split("=") for x in pairs)}
    snaps = sorted(os.path.join(out, f) for f in os.listdir(out)
                   if f.endswith(".lsnap"))
    eq(len(snaps), 2, "exit snapshots (parent and fork child)")
    parent = [s for s in snaps if os.path.basename(s).startswith("%d-" % p.pid)]
    eq(len(parent), 1, "the parent's snapshot")
    res["parent"] = parent[0]
    res["child"] = [s for s in snaps if s != parent[0]][0]
    return res


def report(path, *args):
    r = subprocess.run([LEAKSCOPE, "report", "--format", "json"] +
                       list(args) + [path], stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, timeout=TIMEOUT)
    if r.returncode != 0:
        raise Failure("leakscope report %s: %s" % (path, r.stderr.decode()))
    return json.loads(r.stdout.decode())


SIZES = {"site_first": 100, "site_after_idle": 101, "site_ticked": 102,
         "site_child_first": 103, "site_child_mid": 104,
         "site_child_ticked": 105}


def ages(path):
    """{site function: age_ms of its one block}; each block's size and
    thread as the workload allocated it (the hooks build the table entry's
    size:40/tid:24 word by hand, agent.c entry_make)."""
    prog = workload("tick")
    out = {}
    rep = report(path, "--show-allocs")
    fns = [site_function(s, prog) for s in rep["sites"]]
    child = any(fn.startswith("site_child") for fn in fns)
    for fn, s in zip(fns, rep["sites"]):
        blocks = s.get("blocks", [])
        eq(len(blocks), 1, "blocks of %s" % fn)
        # A fork child's inherited blocks keep the parent's thread.
        tid = rep["ppid"] if child and not fn.startswith("site_child") \
            else rep["pid"]
        eq((blocks[0]["size"], blocks[0]["tid"]), (SIZES.get(fn), tid),
           "%s: the block's size and thread" % fn)
        out[fn] = blocks[0]["age_ms"]
    return out


def lifetimes(path):
    """{site function: {bucket: frees}} of the allocating sites."""
    prog = workload("tick")
    out = {}
    for s in report(path, "--histogram", "--by", "allocated")["sites"]:
        h = out.setdefault(site_function(s, prog), {})
        for b, n in enumerate(s["lifetime_histogram"]):
            if n:
                h[b] = h.get(b, 0) + n
    return out


def bucket(ticks):
    return 0 if ticks <= 0 else min(int(ticks).bit_length(), 31)


def expect_births(got, times, names, where):
    """Every pair's birth difference as the workload measured it."""
    for a, b in zip(names, names[1:]):
        want = (times[b] - times[a]) / 1e6
        seen = got[a] - got[b]
        ok(abs(seen - want) <= TOLERANCE_MS,
           "%s: %s born %.1f ms after %s" % (where, b, want, a),
           "the stamps say %.1f ms (tolerance %.1f)" % (seen, TOLERANCE_MS))


def expect_lifetimes(res, where):
    life = lifetimes(res["parent"])
    t = res["times"]
    eq(sum(life.get("life_zero", {}).values()), 10, where + ": life_zero frees")
    ok(set(life["life_zero"]) <= {0, 1}, where + ": freed at once, within a tick",
       repr(life["life_zero"]))
    for name in ("life_ticked", "life_slept"):
        ticks = t[name] / 1e9 * 256
        allowed = {bucket(ticks + d) for d in range(-8, 9)}
        h = life.get(name, {})
        eq(sum(h.values()), 1, "%s: %s frees" % (where, name))
        ok(set(h) <= allowed, "%s: %s lived %.1f ms: bucket in %s" % (
            where, name, t[name] / 1e6, sorted(allowed)), repr(h))


@once
def with_ticker():
    return run_tick({}, True)


@once
def without_control():
    return run_tick({"LEAKSCOPE_CONTROL": "0"}, False)


@once
def sampled():
    return run_tick({"LEAKSCOPE_SAMPLE_RATE": "1"}, False)


@check("tick: the ticker wakes while the program allocates, never while it is idle")
def t_wakeups():
    w = with_ticker()["wakeups"]
    ok(w["busy"] >= 30, "ticking while allocating (256 a second)", repr(w))
    ok(w["idle"] <= 2, "no wakeup in 2 idle seconds", repr(w))
    ok(w["busy after idle"] >= 30, "ticking again after the idle period",
       repr(w))


@check("tick: birth stamps after an idle period are true, ticker on")
def t_births():
    res = with_ticker()
    expect_births(ages(res["parent"]), res["times"],
                  ("site_first", "site_after_idle", "site_ticked"), "parent")


@check("tick: lifetimes across a tick, 50 ms of allocation and 600 ms of sleep")
def t_lifetimes():
    expect_lifetimes(with_ticker(), "ticker on")


@check("tick: a fork child's stamps are its own time, before and after its control thread")
def t_fork_child():
    res = with_ticker()
    got = ages(res["child"])
    expect_births(got, res["times_child"], ("site_child_first", "site_child_mid",
                                            "site_child_ticked"), "child")


@check("tick: LEAKSCOPE_CONTROL=0 (no ticker) stamps from the clock itself")
def t_no_control():
    res = without_control()
    expect_births(ages(res["parent"]), res["times"],
                  ("site_first", "site_after_idle", "site_ticked"), "control off")
    expect_births(ages(res["child"]), res["times_child"],
                  ("site_child_first", "site_child_mid", "site_child_ticked"),
                  "control off, child")
    expect_lifetimes(res, "control off")


@check("tick: sampled mode stamps as full tracking does")
def t_sampled():
    res = sampled()
    expect_births(ages(res["parent"]), res["times"],
                  ("site_first", "site_after_idle", "site_ticked"), "sampled")
