"""Reachability in glibc's heaps: the chunks of thread arenas allocated
before `leakscope attach` are roots, and chunks glibc cached after free
(tcache, fastbins) are not.

Ground truth: tests/workloads/reach-arena.c (two workers with arenas of
their own and the main thread; holders allocated before the attach hold
the only pointers to blocks allocated after it; leaks whose only pointer
is left in a chunk freed into a tcache, into a fastbin).  valgrind's
memcheck on the same workload is the reference.
"""
import json
import os
import select
import shutil
import subprocess
import tempfile
import atexit

from harness import (cli, agent_env, ptrace_allowed, check, once, workload,
                     eq, ok, fail, need, leakscope, root_report, reap,
                     reach_records, valgrind_run, expect_same_records,
                     expect_status)

RUNTIME = tempfile.mkdtemp(prefix="leakscope-arena-")
os.chmod(RUNTIME, 0o700)
atexit.register(shutil.rmtree, RUNTIME, True)
TIMEOUT = 60
INPUT = b"p\na\nc\n"

# site -> sorted records (kind, direct bytes, indirect bytes, blocks); the
# workers' blocks share a stack, the main thread's has its own
AFTER_ATTACH = {
    "site_arena_kept": [("reachable", 1400, 0, 2)],
    "site_main_kept": [("reachable", 800, 0, 1)],
    "site_tcache_leak": [("definite", 500, 0, 1), ("definite", 1000, 0, 2)],
    "site_fast_leak": [("definite", 300, 0, 1), ("definite", 600, 0, 2)],
}
WHOLE_RUN = dict(AFTER_ATTACH,
                 site_pre_holder=[("reachable", 64, 0, 1),
                                  ("reachable", 128, 0, 2)])


def env():
    return agent_env(RUNTIME)


def ls(*args):
    return cli(args, env(), TIMEOUT)


def command(p, c):
    p.stdin.write(c + b"\n")
    p.stdin.flush()
    ready, _, _ = select.select([p.stdout], [], [], TIMEOUT)
    line = p.stdout.readline() if ready else b""
    if line != b"done " + c + b"\n":
        fail("reach-arena answering %r" % c, "done", line)


@once
def attached():
    """'p' before the attach, 'a' and 'c' after; both check methods."""
    ptrace_allowed()
    p = subprocess.Popen([workload("reach-arena")], env=env(),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         start_new_session=True)
    out = {}
    try:
        command(p, b"p")
        expect_status(ls("attach", p.pid), 0, "leakscope attach")
        command(p, b"a")
        command(p, b"c")
        for m in ("concurrent", "fork"):
            # no pause budget: the method asked for is the one compared
            r = ls("check", "--format", "json", "--method", m,
                   "--pause-budget", "0", p.pid)
            if r.returncode != 0:
                fail("check --method %s" % m, 0, r.describe())
            out[m] = json.loads(r.stdout)
        out["alive"] = p.poll() is None
    finally:
        reap(p, TIMEOUT)
    return out


@once
def valgrind():
    return valgrind_run(need("valgrind"), [workload("reach-arena")],
                        input=INPUT)


@check("attach, then check (both methods): blocks held only by pre-attach "
       "chunks of thread arenas are still reachable; leaks left in tcache "
       "and fastbin chunks are definitely lost")
def t_attached_exact():
    a = attached()
    for m in ("concurrent", "fork"):
        eq(a[m]["check"]["method"], m, "the method that ran")
        eq(reach_records(a[m]), AFTER_ATTACH, "check --method %s" % m)
    ok(a["alive"], "the target ran on")


@check("run --leak-check: the same, with the holders tracked")
def t_run_exact():
    r = leakscope(["--leak-check", "--format", "json"],
                  [workload("reach-arena")], input=INPUT)
    eq(r.returncode, 0, "exit status")
    eq(reach_records(root_report(r)), WHOLE_RUN, "run --leak-check")


@check("valgrind --leak-check=full on the same workload: the same records "
       "as check after attach and as run --leak-check")
def t_valgrind():
    vg = valgrind()
    expect_same_records(vg, WHOLE_RUN, "valgrind against the ground truth")
    expect_same_records(reach_records(attached()["fork"]), vg,
                        "check after attach", only=AFTER_ATTACH)
