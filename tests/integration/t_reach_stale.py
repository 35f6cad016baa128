"""jemalloc's free memory and its own state are not roots
(docs/REACHABILITY.md, "Heap models"): a leak whose only remaining
pointer lies in a freed jemalloc block is definitely lost, as valgrind
and LeakSanitizer say of the same program under glibc's malloc; and no
live block is called lost, on redis-server (Debian's, linked with
jemalloc) run under the agent from its start or attached.

Ground truth: tests/workloads/reach-stale.c (its opening comment), built
here with gcc at -O0 and -O2 against Debian's libjemalloc.so.2 for
leakscope, and against glibc's malloc for valgrind and for clang's
LeakSanitizer (the verdict is the program's, whatever the allocator).
Run mode at exit (each -O0 build 3 times), check PID (both methods) of
the program run under the agent, and `leakscope attach` after the
program allocated (the leaks' holders then lie in memory jemalloc mapped
after the attach).  Before the model all 8 leaks were "still reachable"
in every mode: jemalloc's freed holders, and for the large ones its
extent records, were scanned as roots.

tcmalloc (gperftools' libtcmalloc_minimal.so.4, preloaded) has a model
of its name that scans its memory as roots and says how much: no leak is
made up.  Before it, tcmalloc's own mmap made the agent take it for
glibc's malloc and read glibc's chunk headers in its memory.
"""
import atexit
import os
import re
import shutil
import subprocess
import tempfile
import time

from harness import (cli, agent_env, agent_checks, check, once, eq, ok,
                     fail, need, leakscope, root_report, reach_records,
                     reap, ptrace_allowed, run_process, valgrind_run,
                     free_port, Skip, Failure, BUILD, workload, WORKLOAD_SRC, libjemalloc,
                     ask, check_pid_json)

RUNTIME = tempfile.mkdtemp(prefix="leakscope-stale-")
os.chmod(RUNTIME, 0o700)
atexit.register(shutil.rmtree, RUNTIME, True)
SRC = os.path.join(WORKLOAD_SRC, "reach-stale.c")
OPTS = ("-O0", "-O2")
REPS = 3
TIMEOUT = 60
KEEP = 50
REDIS_ROUNDS = 2

TRUTH = {
    "site_keep_node": [("reachable", 48 * KEEP, 0, KEEP)],
    "site_keep_payload": [("reachable", 100 * KEEP, 0, KEEP)],
    "site_leak": [("definite", 4 * 100 + 4 * 30000, 64, 8)],
    "site_child": [("indirect", 64, 0, 1)],
}
# After the attach the kept list is untracked: only the leaks are blocks.
TRUTH_ATTACHED = {
    "site_leak": [("definite", 8 * 100, 64, 8)],
    "site_child": [("indirect", 64, 0, 1)],
}


def build(cc, opt, extra, tag):
    out = os.path.join(RUNTIME, "reach-stale-%s%s" % (tag, opt))
    r = subprocess.run([need(cc), opt, "-g", "-Wall", "-I",
                        os.path.dirname(SRC), "-o", out, SRC] + list(extra),
                       capture_output=True, timeout=120)
    if r.returncode != 0:
        raise Failure("%s %s %s: %s" % (cc, opt, SRC, r.stderr.decode()))
    return out


@once
def binaries():
    """opt -> {"je": built against jemalloc, "glibc": against glibc's
    malloc, "lsan": clang -fsanitize=leak}."""
    je = libjemalloc()
    return {o: {"je": build("gcc", o, [je], "je"),
                "glibc": build("gcc", o, [], "glibc"),
                "lsan": build("clang", o, ["-fsanitize=leak"], "lsan")}
            for o in OPTS}


def heap_model(rep):
    return rep["check"]["heap_model"]


@check("run --leak-check, jemalloc, -O0 (3 runs) and -O2: the leaks held "
       "only by freed blocks are definitely lost, the kept list still "
       "reachable; nothing of jemalloc's memory scanned as a root")
def t_run():
    for o in OPTS:
        for i in range(REPS if o == "-O0" else 1):
            r = leakscope(["--leak-check", "--format", "json"],
                          [binaries()[o]["je"], "exit"],
                          env=agent_env(RUNTIME))
            eq(r.returncode, 0, "%s run %d: exit status" % (o, i))
            rep = root_report(r)
            eq(reach_records(rep), TRUTH, "%s run %d" % (o, i))
            hm = heap_model(rep)
            eq(hm["allocator"], "jemalloc", "%s: the heap model" % o)
            eq(hm["untracked_scanned_bytes"], 0,
               "%s: jemalloc's memory scanned as roots" % o)
            ok(hm["unscanned_bytes"] > 0,
               "%s: jemalloc's free memory and state not scanned" % o,
               str(hm))


@check("the oracles on the same program under glibc's malloc: valgrind's "
       "records and LeakSanitizer's leaked bytes are the ground truth "
       "leakscope gives under jemalloc")
def t_oracles():
    vg = need("valgrind")
    for o in OPTS:
        got = valgrind_run(vg, [binaries()[o]["glibc"], "exit"])
        eq(got, TRUTH, "valgrind %s" % o)
        r = run_process([binaries()[o]["lsan"], "exit"], timeout=TIMEOUT,
                        env=dict(os.environ, LSAN_OPTIONS="exitcode=23"))
        m = re.search(r"SUMMARY: LeakSanitizer: (\d+) byte\(s\) leaked in "
                      r"(\d+) allocation", r.stderr.decode("utf-8", "replace"))
        eq((int(m.group(1)), int(m.group(2))) if m else None,
           (4 * 100 + 4 * 30000 + 64, 9), "LeakSanitizer %s" % o)
        eq(r.returncode, 23, "LeakSanitizer %s: exit status" % o)


@check("check PID (both methods) of the jemalloc program run under the "
       "agent: the same records as at exit")
def t_live():
    for o in OPTS:
        j = agent_checks(binaries()[o]["je"], RUNTIME)
        for m in ("concurrent", "fork"):
            eq(j[m]["check"]["method"], m, "the method that ran")
            eq(reach_records(j[m]), TRUTH, "%s check --method %s" % (o, m))
            eq(heap_model(j[m])["untracked_scanned_bytes"], 0,
               "%s %s: jemalloc's memory scanned as roots" % (o, m))


def check_json(pid, method):
    return check_pid_json(pid, method, RUNTIME, TIMEOUT)


@once
def attached():
    """opt -> {method: report}: 'p', attach, 'l', a check of each method."""
    ptrace_allowed()
    out = {}
    for o in OPTS:
        p = subprocess.Popen([binaries()[o]["je"], "attach"],
                             env=agent_env(RUNTIME), stdin=subprocess.PIPE,
                             stdout=subprocess.PIPE, start_new_session=True)
        try:
            ask(p, b"p", TIMEOUT)
            r = cli(("attach", p.pid), agent_env(RUNTIME), TIMEOUT)
            if r.returncode != 0:
                fail("attach", 0, r.describe())
            ask(p, b"l", TIMEOUT)
            out[o] = {m: check_json(p.pid, m) for m in ("concurrent", "fork")}
        finally:
            reap(p, TIMEOUT)
    return out


@check("attach, then leaks whose holders jemalloc mapped after the attach "
       "(both methods, -O0 and -O2): definitely lost; jemalloc's memory "
       "mapped before the attach scanned as roots, and its size said")
def t_attached():
    for o, reps in attached().items():
        for m, rep in reps.items():
            eq(reach_records(rep), TRUTH_ATTACHED, "%s check --method %s" % (o, m))
            hm = heap_model(rep)
            ok(hm["untracked_scanned_bytes"] >= 48 * KEEP,
               "%s %s: the pre-attach memory scanned as roots" % (o, m),
               str(hm))
            ok(hm["unscanned_bytes"] >= 6 << 20,
               "%s %s: the holders' memory, mapped since, not scanned"
               % (o, m), str(hm))


def redis_cli(port, *args, stdin=None):
    r = subprocess.run(["redis-cli", "-p", str(port)] + list(args),
                       input=stdin, capture_output=True, timeout=TIMEOUT)
    return r.stdout.decode().strip()


def redis_values(port):
    return redis_cli(port, stdin="".join(
        "GET key:%d\n" % i for i in range(1000)).encode()).split()


@check("a C++ program under jemalloc (its operator new, which the agent "
       "hooks, allocated the object holding a malloc'd block): jemalloc's "
       "memory outside tracked blocks not scanned as roots, the block "
       "still reachable, as valgrind says")
def t_cxx_new():
    prog = workload("reach-newheld")
    r = leakscope(["--leak-check", "--format", "json"], [prog],
                  env=agent_env(RUNTIME, {"LD_PRELOAD": libjemalloc()}))
    eq(r.returncode, 0, "exit status")
    rep = root_report(r)
    truth = {"site_held": [("reachable", 100, 0, 1)]}
    eq(reach_records(rep), truth, "run --leak-check")
    hm = heap_model(rep)
    eq(hm["allocator"], "jemalloc", "the heap model")
    eq(hm["untracked_scanned_bytes"], 0, "jemalloc's memory scanned as "
       "roots")
    ok(hm["unscanned_bytes"] > 0, "jemalloc's free memory not scanned",
       str(hm))
    eq(valgrind_run(need("valgrind"), [prog]), truth, "valgrind")


def libtcmalloc():
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"):
        p = os.path.join(d, "libtcmalloc_minimal.so.4")
        if os.path.exists(p):
            return p
    raise Skip("libtcmalloc_minimal.so.4 is not installed (Debian "
               "libtcmalloc-minimal4)")


@check("tcmalloc (libtcmalloc_minimal.so.4 preloaded into the glibc build): "
       "the heap model named, its memory scanned as roots and its size "
       "said; no leak made up: each leak definitely lost or still "
       "reachable, the kept list still reachable")
def t_tcmalloc():
    r = leakscope(["--leak-check", "--format", "json"],
                  [binaries()["-O2"]["glibc"], "exit"],
                  env=agent_env(RUNTIME, {"LD_PRELOAD": libtcmalloc()}))
    eq(r.returncode, 0, "exit status")
    rep = root_report(r)
    hm = heap_model(rep)
    eq(hm["allocator"], "tcmalloc", "the heap model")
    ok(hm["untracked_scanned_bytes"] > 0, "tcmalloc's memory scanned as "
       "roots, its size said", str(hm))
    recs = reach_records(rep)
    for site in ("site_keep_node", "site_keep_payload"):
        eq(recs.get(site), TRUTH[site], site)
    leaks = recs.get("site_leak", [])
    ok({k for k, _, _, _ in leaks} <= {"definite", "reachable"} and
       sum(b for _, b, _, _ in leaks) == 4 * 100 + 4 * 30000 and
       sum(n for _, _, _, n in leaks) == 8,
       "the 8 leaks definitely lost or still reachable", str(leaks))


def definite_from_commands(rep):
    """The definitely lost blocks allocated while redis read a command
    (the values SET writes are): 0 unless a live value is called lost."""
    n = 0
    for site in rep["sites"]:
        r = site.get("reachability")
        if r and r["definite"]["blocks"] and any(
                "processMultibulkBuffer" in (f.get("function") or "")
                or "processInlineBuffer" in (f.get("function") or "")
                for f in site["frames"]):
            n += r["definite"]["blocks"]
    return n


@once
def redis():
    """redis-server under the agent from its start ("run"; its process
    title left alone, so that the client finds the agent through its
    environment) and attached ("attach"): 1000 keys set, then overwritten
    REDIS_ROUNDS times, a check of each method and GET of every key after
    each round."""
    ptrace_allowed()
    server = need("redis-server")
    need("redis-cli")
    out = {}
    for how in ("run", "attach"):
        port = free_port()
        d = tempfile.mkdtemp(prefix="leakscope-redis-", dir=RUNTIME)
        extra = {"LD_PRELOAD": os.path.join(BUILD, "libleakscope.so")} \
            if how == "run" else None
        p = subprocess.Popen([server, "--port", str(port), "--bind",
                              "127.0.0.1", "--save", "", "--appendonly",
                              "no", "--dir", d, "--set-proc-title", "no"],
                             env=agent_env(RUNTIME, extra),
                             stdout=subprocess.DEVNULL, start_new_session=True)
        rounds = []
        try:
            for _ in range(100):
                if redis_cli(port, "ping") == "PONG":
                    break
                time.sleep(0.1)
            redis_cli(port, stdin="".join(
                "SET key:%d old-%d-%s\n" % (i, i, "x" * (i % 90))
                for i in range(1000)).encode())
            if how == "attach":
                r = cli(("attach", p.pid), agent_env(RUNTIME), TIMEOUT)
                if r.returncode != 0:
                    fail("attach redis-server", 0, r.describe())
            for k in range(REDIS_ROUNDS):
                redis_cli(port, stdin="".join(
                    "SET key:%d new%d-%d-%s\n" % (i, k, i, "y" * (i % 90))
                    for i in range(1000)).encode())
                checks = {m: check_json(p.pid, m)
                          for m in ("concurrent", "fork")}
                rounds.append((k, checks, redis_values(port)))
        finally:
            reap(p, TIMEOUT, lambda q: q.terminate())
        out[how] = rounds
    return out


@check("redis-server (jemalloc), run under the agent and attached, keys "
       "overwritten twice: GET returns every new value, and no value is "
       "definitely lost (both methods, every round): none at all attached, "
       "none allocated reading a command and the count steady from "
       "round to round under the agent from the start (redis's own start-up "
       "allocations it drops stay lost)")
def t_redis():
    for how, rounds in redis().items():
        lost = set()
        for k, checks, values in rounds:
            eq(values, ["new%d-%d-%s" % (k, i, "y" * (i % 90))
                        for i in range(1000)], "%s round %d: GET" % (how, k))
            for m, rep in checks.items():
                eq(heap_model(rep)["allocator"], "jemalloc",
                   "%s %s: the heap model" % (how, m))
                d = rep["reachability"]["definite"]
                if how == "attach":
                    eq(d, {"bytes": 0, "blocks": 0},
                       "attach round %d %s: definitely lost" % (k, m))
                else:
                    eq(definite_from_commands(rep), 0, "run round %d %s: "
                       "values definitely lost" % (k, m))
                    lost.add(d["blocks"])
                ok(rep["reachability"]["reachable"]["blocks"] +
                   rep["reachability"]["possible"]["blocks"] >= 1000,
                   "%s round %d %s: the values reached" % (how, k, m),
                   str(rep["reachability"]))
        if how == "run":
            ok(max(lost) - min(lost) < 50, "run: definitely lost blocks "
               "from check to check, within a few of redis's own (not "
               "1000 values a round)", str(sorted(lost)))
            eq(heap_model(rounds[-1][1]["fork"])["untracked_scanned_bytes"],
               0, "run: jemalloc's memory scanned as roots")
