"""valgrind's leak heuristics (stdstring, length64, newarray,
multipleinheritance): an interior pointer of one of their shapes makes a
block still reachable, not possibly lost, in `check PID` (both methods)
and `run --leak-check`, as memcheck 3.19 says by default.

Ground truth: tests/workloads/reach-heur.cc (C++, built without frame
pointers, with libstdc++'s reference-counted std::string): one block per
heuristic, a plain interior pointer, a plain leak.
"""
import json
import os
import subprocess
import tempfile

from harness import (check, once, workload, eq, ok, fail, need, run_process,
                     leakscope, root_report, reach_records, valgrind_run,
                     expect_same_records, LEAKSCOPE, BUILD, Failure)

RUNTIME = tempfile.mkdtemp(prefix="leakscope-heur-")
os.chmod(RUNTIME, 0o700)

TRUTH = {
    "site_stdstring": [("reachable", 8, 0, 1), ("reachable", 65, 0, 1)],
    "site_length64": [("reachable", 108, 0, 1)],
    "site_newarray": [("reachable", 68, 0, 1)],
    "site_multiple": [("reachable", 40, 0, 1)],
    "site_interior": [("possible", 200, 0, 1)],
    "site_lost": [("definite", 50, 0, 1)],
}
HEURISTICS = {"stdstring": (65, 1), "length64": (108, 1),
              "newarray": (68, 1), "multipleinheritance": (40, 1)}


def env():
    e = dict(os.environ)
    e["LEAKSCOPE_RUNTIME_DIR"] = RUNTIME
    e.pop("LD_PRELOAD", None)
    return e


def heuristics(report):
    h = report["check"]["heuristics"]
    return {k: (v["bytes"], v["blocks"]) for k, v in h.items() if v["blocks"]}


@once
def live():
    e = env()
    e["LD_PRELOAD"] = os.path.join(BUILD, "libleakscope.so")
    p = subprocess.Popen([workload("reach-heur")], env=e,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         start_new_session=True)
    out = {}
    try:
        line = p.stdout.readline()
        if not line.startswith(b"ready"):
            fail("reach-heur ready", "ready", line)
        for m in ("concurrent", "fork"):
            r = run_process([LEAKSCOPE, "check", "--format", "json",
                             "--method", m, str(p.pid)], env=env())
            if r.returncode != 0:
                fail("check --method %s" % m, 0, r.describe())
            out[m] = json.loads(r.stdout)
        r = run_process([LEAKSCOPE, "check", "--method", "fork",
                         str(p.pid)], env=env())
        out["text"] = r.stdout.decode()
    finally:
        p.stdin.close()
        p.wait(timeout=30)
    return out


@check("check PID, both methods: blocks held by heuristic-shaped interior "
       "pointers are still reachable, which heuristic counted")
def t_live():
    j = live()
    for m in ("concurrent", "fork"):
        eq(reach_records(j[m]), TRUTH, "check --method %s" % m)
        eq(heuristics(j[m]), HEURISTICS, "%s: reachable via heuristic" % m)
    text = j["text"]
    ok("of which reachable via heuristic:" in text and
       "multipleinheritance: 40 bytes in 1 blocks" in text,
       "the text LEAK SUMMARY names the heuristics", text[-800:])


@check("run --leak-check and valgrind --leak-check=full on the same "
       "program: the same records and heuristic sums")
def t_valgrind():
    vrec, vheur = valgrind_run(need("valgrind"), [workload("reach-heur")],
                               heuristics=True)
    r = leakscope(["--leak-check", "--format", "json"],
                  [workload("reach-heur")], input=b"")
    eq(r.returncode, 0, "exit status")
    rep = root_report(r)
    expect_same_records(vrec, TRUTH, "valgrind against the ground truth")
    eq(vheur, HEURISTICS, "valgrind's heuristic sums")
    eq(reach_records(rep), TRUTH, "run --leak-check")
    eq(heuristics(rep), vheur, "run --leak-check: heuristic sums")
