"""Reachability under jemalloc, attached after the program allocated
(docs/REACHABILITY.md, "Heap models"): blocks allocated before the
attach are roots, so live data written into them after it keeps its
targets alive, and no part of jemalloc's memory is skipped.

Ground truth: tests/workloads/reach-jemalloc.c under Debian's
libjemalloc.so.2 (N records allocated before the attach, each given a
new value after it: every new value is live, the program says their
total; five 300-byte blocks leaked after it), and redis-server (Debian's,
linked with jemalloc) whose 1000 keys are overwritten after the attach
while GET returns every new value.  Before the heap models, jemalloc's
blocks were taken for glibc chunks whose headers made whole regions "the
allocator's" and skipped them: 91,184 of the workload's 100,000 new
values (46.3 MB) and 156 of redis's 1000 were reported definitely lost.
"""
import atexit
import os
import shutil
import subprocess
import tempfile
import time

from harness import (cli, agent_env, ptrace_allowed, check, once, workload,
                     eq, ok, fail, need, reach_records, reap, free_port,
                     libjemalloc, ask, check_pid_json, expect_status, BUILD)

RUNTIME = tempfile.mkdtemp(prefix="leakscope-jemalloc-")
os.chmod(RUNTIME, 0o700)
atexit.register(shutil.rmtree, RUNTIME, True)
TIMEOUT = 60
RECORDS = 50000
LEAKS = 5


def ls(*args):
    return cli(args, agent_env(RUNTIME), TIMEOUT)


def command(p, c):
    return ask(p, c, TIMEOUT)


def check_json(pid, method):
    return check_pid_json(pid, method, RUNTIME, TIMEOUT)


@once
def attached():
    """'p' before the attach, 'o' and 'l' after; both methods."""
    ptrace_allowed()
    env = agent_env(RUNTIME, {"LD_PRELOAD": libjemalloc()})
    p = subprocess.Popen([workload("reach-jemalloc"), str(RECORDS)], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         start_new_session=True)
    out = {}
    try:
        command(p, b"p")
        expect_status(ls("attach", p.pid), 0, "leakscope attach")
        out["value_bytes"] = int(command(p, b"o")[2])
        command(p, b"l")
        for m in ("concurrent", "fork"):
            out[m] = check_json(p.pid, m)
        r = ls("check", "--method", "fork", "--pause-budget", "0", p.pid)
        out["text"] = r.stdout.decode()
        out["alive"] = p.poll() is None
    finally:
        reap(p, TIMEOUT)
    return out


@check("jemalloc, attach, then check (both methods): every value written "
       "after the attach into a pre-attach record is still reachable, "
       "the leaks definitely lost")
def t_attached_exact():
    a = attached()
    truth = {"site_new_value": [("reachable", a["value_bytes"], 0, RECORDS)],
             "site_leak": [("definite", 300 * LEAKS, 0, LEAKS)]}
    for m in ("concurrent", "fork"):
        eq(a[m]["check"]["method"], m, "the method that ran")
        eq(reach_records(a[m]), truth, "check --method %s" % m)
    ok(a["alive"], "the target ran on")


@check("jemalloc: the report names the heap model, and how much of "
       "jemalloc's memory it scanned as roots")
def t_model_reported():
    a = attached()
    for m in ("concurrent", "fork"):
        hm = a[m]["check"]["heap_model"]
        eq(hm["allocator"], "jemalloc", "%s: the heap model" % m)
        # the pre-attach records alone are 48 bytes each
        ok(hm["untracked_scanned_bytes"] >= 48 * RECORDS,
           "%s: jemalloc's untracked memory scanned as roots" % m, str(hm))
        # what jemalloc mapped since the attach is not scanned, but the new
        # values may all fit in what the old ones freed (t_reach_stale.py)
    ok("Heap model: jemalloc;" in a["text"], "the text report says it",
       a["text"][:600])


def redis_cli(port, *args):
    r = subprocess.run(["redis-cli", "-p", str(port)] + list(args),
                       capture_output=True, timeout=TIMEOUT)
    return r.stdout.decode().strip()


@once
def redis():
    """redis-server with 1000 keys, attached, the keys overwritten; a
    check of each method; GET of every key."""
    ptrace_allowed()
    server = need("redis-server")
    need("redis-cli")
    port = free_port()
    d = tempfile.mkdtemp(prefix="leakscope-redis-")
    atexit.register(shutil.rmtree, d, True)
    p = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1",
                          "--save", "", "--appendonly", "no", "--dir", d],
                         env=agent_env(RUNTIME), stdout=subprocess.DEVNULL,
                         start_new_session=True)
    out = {}
    try:
        for _ in range(100):
            if redis_cli(port, "ping") == "PONG":
                break
            time.sleep(0.1)
        cmds = "".join("SET key:%d old-%d-%s\n" % (i, i, "x" * (i % 90))
                       for i in range(1000))
        subprocess.run(["redis-cli", "-p", str(port)], input=cmds.encode(),
                       capture_output=True, timeout=TIMEOUT)
        r = ls("attach", p.pid)
        if r.returncode != 0:
            fail("attach redis-server", 0, r.describe())
        cmds = "".join("SET key:%d new-%d-%s\n" % (i, i, "y" * (i % 90))
                       for i in range(1000))
        subprocess.run(["redis-cli", "-p", str(port)], input=cmds.encode(),
                       capture_output=True, timeout=TIMEOUT)
        for m in ("concurrent", "fork"):
            out[m] = check_json(p.pid, m)
        got = subprocess.run(["redis-cli", "-p", str(port)],
                             input="".join("GET key:%d\n" % i
                                           for i in range(1000)).encode(),
                             capture_output=True, timeout=TIMEOUT)
        out["values"] = got.stdout.decode().split()
    finally:
        reap(p, TIMEOUT, lambda q: q.terminate())
    return out


@check("redis-server (jemalloc), 1000 keys, attach, keys overwritten: "
       "no block definitely lost (both methods) while GET returns every "
       "new value")
def t_redis():
    r = redis()
    eq(r["values"], ["new-%d-%s" % (i, "y" * (i % 90)) for i in range(1000)],
       "GET of the 1000 keys")
    for m in ("concurrent", "fork"):
        eq(r[m]["check"]["method"], m, "the method that ran")
        eq(r[m]["check"]["heap_model"]["allocator"], "jemalloc",
           "%s: the heap model" % m)
        eq(r[m]["reachability"]["definite"], {"bytes": 0, "blocks": 0},
           "%s: definitely lost" % m)
        ok(r[m]["reachability"]["reachable"]["blocks"] >= 1000,
           "%s: the new values among the reachable blocks" % m,
           str(r[m]["reachability"]))


@check("jemalloc from the start: a library that calls mallocx (no hook "
       "sees it), dlopened after a first check, makes the next check scan "
       "jemalloc's mappings as roots; an unrelated library does not")
def t_dlopen_bypass_after_check():
    env = agent_env(RUNTIME, {"LD_PRELOAD": "%s %s" % (
        os.path.join(BUILD, "libleakscope.so"), libjemalloc())})
    p = subprocess.Popen([workload("heapmodel-dlopen")], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         start_new_session=True)
    got = []
    try:
        command(p, b"a")
        for lib in (None, "libleaky.so", "libmallocx.so", None):
            if lib:
                path = os.path.join(os.path.dirname(workload("basic")), lib)
                eq(command(p, b"d " + path.encode())[-1], b"1",
                   "dlopen " + lib)
            hm = check_json(p.pid, "concurrent")["check"]["heap_model"]
            eq(hm["allocator"], "jemalloc", "the heap model")
            got.append((lib, hm["unscanned_bytes"] > 0,
                        hm["untracked_scanned_bytes"] > 0))
    finally:
        reap(p, TIMEOUT)
    # (the library loaded before the check, jemalloc's own mappings left
    # out, some of them scanned as roots)
    eq(got, [(None, True, False), ("libleaky.so", True, False),
             ("libmallocx.so", False, True), (None, False, True)],
       "each check's heap model")

