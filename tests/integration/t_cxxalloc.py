"""C++'s operator new and delete under allocators that define them
themselves (jemalloc, tcmalloc), where `new` never reaches malloc: the
agent's own hooks of every variant (common/interpose.def, kinds NEW, ANEW
and DELETE; agent/hooks.c).

Ground truth: tests/workloads/verdict/cxxalloc.cc (its header states
what it leaks and keeps), built with g++ and clang++ at -O0 and -O2 (C++17, sized
deallocation), run
under LD_PRELOAD=libjemalloc.so.2, under LD_PRELOAD=libtcmalloc_minimal.so.4
and linked with libjemalloc.so.2, each under
`leakscope run --leak-check --fail-on-leak`; the oracle is valgrind on the
glibc build of the same source and compiler.  valgrind cannot throw from
its operator new (it aborts the program), so it runs without "throw": the
throwing case's leak (64 bytes in 1 block, after a caught std::bad_alloc)
is the program's own statement.  A leak's first frame must be its leaking
function, as addr2line says of the same address.  Then an attach to a
running jemalloc program, whose allocations after it leak: found by
`leakscope check`.  Before these hooks, every run said 0 bytes lost and
exited 0.
"""
import json
import os
import re
import subprocess
import tempfile

from harness import (agent_env, check, cli, once, eq, ok, need, leakscope,
                     libjemalloc, ptrace_allowed, ask, check_pid_json,
                     reach_records, reap, expect_status, Failure)
from t_verdicts import run_vg_args, pool_map
from t_reach_stale import libtcmalloc

SRC = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                   "workloads", "verdict", "cxxalloc.cc")
OUT = tempfile.mkdtemp(prefix="leakscope-cxxalloc-")
BUILDS = (("g++", "-O0"), ("g++", "-O2"), ("clang++", "-O0"),
          ("clang++", "-O2"))
THROW_LEAK = (64, 1)
# leak_* function -> its definitely lost (bytes, blocks), with "throw"
LEAKS = {"leak_nodes": (640, 10), "leak_array": (300, 1),
         "leak_aligned": (128, 1), "leak_nothrow": (64, 1),
         "leak_after_throw": THROW_LEAK}


def run_cc(argv):
    r = subprocess.run(argv, capture_output=True, timeout=120)
    if r.returncode:
        raise Failure("%s: %s" % (" ".join(argv), r.stderr.decode()))


def build(cc, opt):
    """The glibc build and the one linked with libjemalloc.so.2, from one
    compilation."""
    out = os.path.join(OUT, "cxxalloc-%s%s" % (cc, opt))
    run_cc([need(cc), opt, "-g", "-std=c++17", "-fsized-deallocation", "-c",
            "-o", out + ".o", SRC])
    run_cc([cc, "-o", out, out + ".o"])
    run_cc([cc, "-o", out + "-je", out + ".o", libjemalloc()])
    return out, out + "-je"


@once
def binaries():
    """(cc, opt, linked with jemalloc) -> path."""
    need("valgrind")
    libtcmalloc()
    built = dict(zip(BUILDS, pool_map(build, BUILDS)))
    return {(cc, opt, linked): built[cc, opt][linked]
            for cc, opt in BUILDS for linked in (0, 1)}


def setups():
    """(name, whether the binary is the jemalloc-linked one, LD_PRELOAD)"""
    return (("LD_PRELOAD=libjemalloc.so.2", 0, libjemalloc()),
            ("LD_PRELOAD=libtcmalloc_minimal.so.4", 0, libtcmalloc()),
            ("linked with libjemalloc.so.2", 1, None))


def run_ls(binary, arg, preload):
    extra = {"LD_PRELOAD": preload} if preload else {}
    r = leakscope(["--leak-check", "--fail-on-leak", "--format", "json"],
                  [binary, arg], env=agent_env(OUT, extra))
    if r.returncode not in (0, 99):
        raise Failure("leakscope run %s %s: exit status %d\n%s" % (
            binary, arg, r.returncode, r.stderr.decode()[-800:]))
    return json.loads(r.files["report"]), r.returncode


def report_summary(rep):
    """The JSON report's totals as valgrind's summary names them."""
    names = {"definite": "definitely lost", "indirect": "indirectly lost",
             "possible": "possibly lost", "reachable": "still reachable"}
    got = {v: (0, 0) for v in names.values()}
    for s in rep["sites"]:
        r = s.get("reachability") or {}
        for k, v in names.items():
            if k in r:
                b, n = got[v]
                got[v] = (b + r[k]["bytes"], n + r[k]["blocks"])
    return got


@once
def results():
    """(cc, opt, setup, arg) -> (valgrind's summary and status on the glibc
    build, leakscope's JSON report and status)."""
    bins = binaries()
    vkeys = [(cc, opt, arg) for cc, opt in BUILDS for arg in ("", "clean")]
    vg = dict(zip(vkeys, pool_map(
        lambda cc, opt, arg: run_vg_args(bins[cc, opt, 0],
                                         [arg] if arg else []), vkeys)))
    keys = [(cc, opt, name, arg) for cc, opt in BUILDS
            for name, _, _ in setups() for arg in ("throw", "clean")]
    how = {name: (linked, pre) for name, linked, pre in setups()}
    ls = pool_map(lambda cc, opt, name, arg: run_ls(
        bins[cc, opt, how[name][0]], arg, how[name][1]), keys)
    return {k: (vg[k[0], k[1], "" if k[3] == "throw" else "clean"], r)
            for k, r in zip(keys, ls)}


@check("operator new, new[], aligned and nothrow new, delete of every "
       "variant, std::vector and std::map kept, a caught std::bad_alloc, "
       "under jemalloc and tcmalloc preloaded and jemalloc linked (g++ and "
       "clang++, -O0 and -O2): valgrind's LEAK SUMMARY of the glibc build, "
       "and --fail-on-leak exits 99 exactly when valgrind finds a leak")
def t_summary():
    bad = []
    for (cc, opt, name, arg), ((vsum, vrc), (rep, lrc)) in \
            results().items():
        want = dict(vsum)
        if arg == "throw":
            b, n = want["definitely lost"]
            want["definitely lost"] = (b + THROW_LEAK[0], n + THROW_LEAK[1])
        got = report_summary(rep)
        if got != want or (lrc == 99) != (vrc == 42):
            bad.append("%s %s, %s, %s: leakscope %s (exit %d), valgrind "
                       "%s (exit %d)" % (cc, opt, name, arg, got, lrc, vsum,
                                         vrc))
    eq(len(results()), 24, "runs compared")
    ok(not bad, "%d runs differ from valgrind" % len(bad), "\n  ".join(bad))


def definite_by_function(rep):
    """leak_* function -> its definitely lost (bytes, blocks), all its
    sites together."""
    out = {}
    for fn, recs in reach_records(rep, "leak_").items():
        for kind, b, _, n in recs:
            if kind == "definite":
                ob, on = out.get(fn, (0, 0))
                out[fn] = (ob + b, on + n)
    return out


def nm_addresses(binary):
    r = subprocess.run(["nm", "-C", binary], capture_output=True, timeout=60)
    out = {}
    for line in r.stdout.decode().splitlines():
        m = re.match(r"([0-9a-f]+) [tT] (\w+)\(\)$", line)
        if m:
            out[m.group(2)] = int(m.group(1), 16)
    return out


def addr2line_function(binary, addr):
    """The outermost function addr2line -i gives for addr (the frame's own,
    whatever was inlined into it there)."""
    r = subprocess.run(["addr2line", "-i", "-f", "-C", "-e", binary,
                        "0x%x" % addr], capture_output=True, timeout=60)
    lines = r.stdout.decode().splitlines()
    return re.match(r"\w+", lines[-2]).group(0) if len(lines) >= 2 else ""


@check("each leak's stack starts at its leaking function, as addr2line "
       "says of the same return address; every leak_* function's bytes and "
       "blocks are the program's")
def t_stacks():
    need("addr2line")
    bins = binaries()
    bad, n = [], 0
    for (cc, opt, name, arg), (_, (rep, _)) in results().items():
        if arg != "throw":
            continue
        binary = bins[cc, opt, name.startswith("linked")]
        syms = nm_addresses(binary)
        for s in rep["sites"]:
            d = (s.get("reachability") or {}).get("definite")
            if not d or not d["blocks"]:
                continue
            f = s["frames"][0]
            fn = re.match(r"\w+", f.get("function") or "").group(0) \
                if f.get("function") else "?"
            n += 1
            if fn not in syms:
                bad.append("%s %s %s: first frame %s" % (cc, opt, name,
                                                         f.get("text")))
                continue
            a2l = addr2line_function(binary, syms[fn] + f["offset"] - 1)
            if a2l != fn:
                bad.append("%s %s %s: %s, addr2line says %s" % (
                    cc, opt, name, f.get("text"), a2l))
        got = definite_by_function(rep)
        if got != LEAKS:
            bad.append("%s %s %s: leaks %s" % (cc, opt, name, got))
    ok(n >= 12 * len(LEAKS), "definitely lost sites looked at: %d" % n)
    ok(not bad, "stacks differ", "\n  ".join(bad))


def attach_run(binary, extra):
    """binary wait, attached, then its shapes made: the check's JSON."""
    env = agent_env(OUT, dict(extra, MALLOC_CONF="tcache:false"))
    p = subprocess.Popen([binary, "wait"], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, start_new_session=True)
    try:
        expect_status(cli(("attach", p.pid), agent_env(OUT), 60), 0,
                      "leakscope attach")
        ask(p, b"l")
        rep = check_pid_json(p.pid, "concurrent", OUT)
        alive = p.poll() is None
    finally:
        reap(p)
    ok(alive, "the program ran on")
    return rep


@check("attach to a running C++ program under jemalloc (preloaded, and "
       "linked), then new, new[], aligned and nothrow new after it: each "
       "leak found by `leakscope check`, the containers kept still "
       "reachable")
def t_attach():
    """Without jemalloc's thread caches (MALLOC_CONF=tcache:false): a
    cache's array, allocated before the attach and so scanned as a root,
    keeps a stale pointer to each region it handed out, which hides a
    leak (docs/REACHABILITY.md, "Heap models")."""
    ptrace_allowed()
    bins = binaries()
    want = {k: v for k, v in LEAKS.items() if k != "leak_after_throw"}
    for name, binary, extra in (
            ("preloaded", bins["g++", "-O2", 0],
             {"LD_PRELOAD": libjemalloc()}),
            ("linked", bins["g++", "-O2", 1], {})):
        rep = attach_run(binary, extra)
        eq(definite_by_function(rep), want,
           "%s: definitely lost by leak_*" % name)
        kept = reach_records(rep, "keep_")
        eq(sorted(kept), ["keep_containers"], "%s: the containers' site"
           % name)
        ok(all(k == "reachable" for k, _, _, _ in kept["keep_containers"]),
           "%s: the containers still reachable" % name, str(kept))


@check("on glibc's malloc (no other allocator) libstdc++'s operator new "
       "runs in place of the agent's: each leak's stack is malloc's hook's, "
       "its first frame libstdc++'s operator new, its first outside "
       "libstdc++ the leak_* function, and the summary valgrind's")
def t_libstdcxx_new():
    bins = binaries()
    binary = bins["g++", "-O2", 0]
    rep, rc = run_ls(binary, "", None)
    (vsum, vrc), = pool_map(lambda: run_vg_args(binary, []), [()])
    eq(report_summary(rep), vsum, "the LEAK SUMMARY")
    eq(rc, 99, "exit status")
    bad, n = [], 0
    for s in rep["sites"]:
        d = (s.get("reachability") or {}).get("definite")
        if not d or not d["blocks"]:
            continue
        n += 1
        f0 = s["frames"][0]
        f1 = next(f for f in s["frames"]
                  if "libstdc++" not in f.get("module", ""))
        if "libstdc++" not in f0.get("module", "") or \
           not (f0.get("function") or "").startswith("operator new") or \
           not (f1.get("function") or "").startswith("leak_"):
            bad.append("%s / %s" % (f0.get("text"), f1.get("text")))
    eq(n, len(LEAKS) - 1, "definitely lost sites")
    ok(not bad, "stacks not malloc's hook's", "\n  ".join(bad))


@check("tcmalloc's own constructor drops an 8-byte block it allocated with "
       "its operator new (MallocExtension::Register): definitely lost with "
       "--no-default-suppressions, a stack of tcmalloc's and the loader's "
       "frames only; suppressed by default (t_summary's tcmalloc runs)")
def t_tcmalloc_own():
    binary = binaries()["g++", "-O2", 0]
    r = leakscope(["--leak-check", "--no-default-suppressions", "--format",
                   "json"], [binary, "clean"],
                  env=agent_env(OUT, {"LD_PRELOAD": libtcmalloc()}))
    eq(r.returncode, 0, "exit status")
    rep = json.loads(r.files["report"])
    own = []
    for s in rep["sites"]:
        d = (s.get("reachability") or {}).get("definite")
        if d and d["blocks"]:
            own.append((d["bytes"], d["blocks"], all(
                re.search(r"libtcmalloc|ld-linux", f.get("module", ""))
                for f in s["frames"]), s["frames"][0].get("function")))
    eq(own, [(8, 1, True, "MallocExtension::Register(MallocExtension*)")],
       "definitely lost sites")
