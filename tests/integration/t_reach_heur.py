"""valgrind's leak heuristics (stdstring, length64, newarray,
multipleinheritance): an interior pointer of one of their shapes makes a
block still reachable, not possibly lost, in `check PID` (both methods)
and `run --leak-check`, as memcheck 3.19 says by default.

Ground truth: tests/workloads/reach-heur.cc (C++, built without frame
pointers, with libstdc++'s reference-counted std::string): one block per
heuristic, a plain interior pointer, a plain leak.
"""
import os
import tempfile

from harness import (agent_checks, check, once, workload, eq, ok, need,
                     leakscope, root_report, reach_records, valgrind_run,
                     expect_same_records)

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


def heuristics(report):
    h = report["check"]["heuristics"]
    return {k: (v["bytes"], v["blocks"]) for k, v in h.items() if v["blocks"]}


@once
def live():
    return agent_checks(workload("reach-heur"), RUNTIME, text=True)


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
