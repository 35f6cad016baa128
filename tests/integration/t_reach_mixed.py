"""A held-out check of the reachability categories: reach-mixed.cc, a C++
program with threads, containers, a leaked list, cycles and interior
pointers, written once and not tuned against either tool.  `check PID`
(both methods, on the running program) and `run --leak-check` (at exit)
must give the records valgrind's memcheck gives, stack by stack.

Ground truth besides valgrind: the parts of the program whose sizes do
not depend on libstdc++ (the list, the cycle, the interior pointer).
"""
import json
import os
import subprocess
import tempfile

from harness import (check, once, workload, eq, ok, fail, need, run_process,
                     leakscope, root_report, reach_records, valgrind_run,
                     valgrind_records, expect_same_records, LEAKSCOPE, BUILD)

RUNTIME = tempfile.mkdtemp(prefix="leakscope-mixed-")
os.chmod(RUNTIME, 0o700)

# Node: a pointer and 5 longs (48 bytes); site -> records
TRUTH = {
    "site_list": [("definite", 48, 432, 1), ("indirect", 432, 0, 9)],
    "site_cycle": [("definite", 48, 96, 1), ("indirect", 96, 0, 2)],
    "site_middle": [("possible", 1000, 0, 1)],
}


def env():
    e = dict(os.environ)
    e["LEAKSCOPE_RUNTIME_DIR"] = RUNTIME
    e.pop("LD_PRELOAD", None)
    return e


@once
def valgrind():
    return valgrind_run(need("valgrind"), [workload("reach-mixed")])


@once
def live():
    e = env()
    e["LD_PRELOAD"] = os.path.join(BUILD, "libleakscope.so")
    p = subprocess.Popen([workload("reach-mixed")], env=e,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         start_new_session=True)
    out = {}
    try:
        line = p.stdout.readline()
        if not line.startswith(b"ready"):
            fail("reach-mixed ready", "ready", line)
        for m in ("concurrent", "fork"):
            r = run_process([LEAKSCOPE, "check", "--format", "json",
                             "--method", m, str(p.pid)], env=env())
            if r.returncode != 0:
                fail("check --method %s" % m, 0, r.describe())
            out[m] = reach_records(json.loads(r.stdout))
    finally:
        p.stdin.close()
        p.wait(timeout=30)
    return out


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
    vg = need("valgrind")
    vgdb = need("vgdb")
    p = subprocess.Popen([vg, "--vgdb=yes", workload("reach-mixed")],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        ok(p.stdout.readline().startswith(b"ready"), "reach-mixed under valgrind")
        r = run_process([vgdb, "--pid=%d" % p.pid, "leak_check", "full",
                         "reachable", "any"], timeout=60)
    finally:
        p.stdin.close()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    vrec = valgrind_records((r.stdout + r.stderr).decode("utf-8", "replace"))
    expect_same_records(live()["fork"], vrec, "check PID against vgdb")


@check("held-out C++ program, at exit: run --leak-check gives valgrind's "
       "records (the blocked threads' stacks from their stack pointers)")
def t_exit():
    r = leakscope(["--leak-check", "--format", "json"],
                  [workload("reach-mixed")], input=b"")
    eq(r.returncode, 0, "exit status")
    expect_same_records(reach_records(root_report(r)), valgrind(),
                        "run --leak-check")
