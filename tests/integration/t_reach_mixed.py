"""A held-out check of the reachability categories: reach-mixed.cc, a C++
program with threads, containers, a leaked list, cycles and interior
pointers, written once and not tuned against either tool.  `check PID`
(both methods, on the running program) and `run --leak-check` (at exit)
must give the records valgrind's memcheck gives, stack by stack.

Ground truth besides valgrind: the parts of the program whose sizes do
not depend on libstdc++ (the list, the cycle, the interior pointer).
"""
import os
import tempfile

from harness import (agent_checks, vgdb_live_records, check, once, workload,
                     eq, ok, need, leakscope, root_report, reach_records,
                     valgrind_run, expect_same_records)

RUNTIME = tempfile.mkdtemp(prefix="leakscope-mixed-")
os.chmod(RUNTIME, 0o700)

# Node: a pointer and 5 longs (48 bytes); site -> records
TRUTH = {
    "site_list": [("definite", 48, 432, 1), ("indirect", 432, 0, 9)],
    "site_cycle": [("definite", 48, 96, 1), ("indirect", 96, 0, 2)],
    "site_middle": [("possible", 1000, 0, 1)],
}


@once
def valgrind():
    return valgrind_run(need("valgrind"), [workload("reach-mixed")])


@once
def live():
    return {m: reach_records(j)
            for m, j in agent_checks(workload("reach-mixed"), RUNTIME).items()}


@check("held-out C++ program: valgrind's records hold the known leaks")
def t_truth():
    vg = valgrind()
    expect_same_records(vg, TRUTH, "valgrind", only=TRUTH)
    ok(len(vg) >= 9, "valgrind has records for every site", str(sorted(vg)))


@check("held-out C++ program, running: check PID (concurrent and fork) "
       "gives valgrind's records, stack by stack")
def t_live():
    got = live()
    for m in ("concurrent", "fork"):
        expect_same_records(got[m], valgrind(), "check --method %s" % m)


@check("held-out C++ program, running under valgrind: vgdb's leak_check "
       "full reachable any gives the records check PID gives")
def t_vgdb_live():
    expect_same_records(live()["fork"], vgdb_live_records(workload("reach-mixed")),
                        "check PID against vgdb")


@check("held-out C++ program, at exit: run --leak-check gives valgrind's "
       "records (the blocked threads' stacks from their stack pointers)")
def t_exit():
    r = leakscope(["--leak-check", "--format", "json"],
                  [workload("reach-mixed")], input=b"")
    eq(r.returncode, 0, "exit status")
    expect_same_records(reach_records(root_report(r)), valgrind(),
                        "run --leak-check")
