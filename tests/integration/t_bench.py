"""The benchmark's own workloads and runner (bench/, docs/PERFORMANCE.md):
the C++ containers workload leaves exactly what its opening comment says
and its deep template stacks equal libunwind's, and bench/run-bench runs a
workload under full tracking with its stack check and says so in its
table.  Built by `make -C bench build`, which the checks run (a few
seconds the first time)."""

import json
import os
import re
import subprocess

from harness import (ROOT, BUILD, Failure, check, once, leakscope, root_report,
                     expect_status, expect_site, module_is, need, eq, ok, ge, contains)

BENCH_BIN = os.path.join(BUILD, "bench")
CXX = os.path.join(BENCH_BIN, "cxx-containers")
ROUNDS = 10		# 2000 items a round: items 999, 1999, ... leak
LEAKED = ROUNDS * 2000 // 1000
KEPT_SIZE = 64		# sizeof(struct kept_item)


@once
def built():
    need("g++")
    p = subprocess.run(["make", "-s", "-C", os.path.join(ROOT, "bench"), "build"],
                       capture_output=True, text=True, timeout=240)
    if p.returncode or not os.access(CXX, os.X_OK):
        raise Failure("make -C bench build failed:\n" + (p.stdout + p.stderr)[-1500:])
    return CXX


@once
def cxx_report():
    env = dict(os.environ, LEAKSCOPE_UNWIND="check")
    env.pop("LD_PRELOAD", None)
    r = leakscope(["--format", "json", "--by", "allocated", "--top", "100000",
                   "--depth", "128", "--full-names"], [built(), str(ROUNDS), "42"], env=env, timeout=120)
    expect_status(r, 0, "cxx-containers exit status")
    return r, root_report(r)


@check("cxx-containers: its known leak, %d blocks of %d bytes from keep_forever(), "
       "nothing else of its own left" % (LEAKED, KEPT_SIZE))
def t_cxx_leak():
    r, rep = cxx_report()
    contains(r.stdout.decode(errors="replace"), "leaked=%d leaked_bytes=%d" % (LEAKED, LEAKED * KEPT_SIZE),
             "the program's own count")
    site = expect_site(rep, "(anonymous namespace)::keep_forever(unsigned long, "
                       "std::__cxx11::basic_string<char, std::char_traits<char>, "
                       "std::allocator<char> > const&)", built(),
                       LEAKED * KEPT_SIZE, LEAKED)
    eq(site["allocated_blocks"], LEAKED, "blocks keep_forever allocated")
    own = [s for s in rep["sites"] if s["live_blocks"] and s is not site and
           any(module_is(f, built()) for f in s["frames"])]
    eq(len(own), 0, "other sites of cxx-containers with live blocks")


@check("cxx-containers: deep template stacks (Builder<24> down to Builder<0>, "
       "over 30 frames) and every stack equal to libunwind's (LEAKSCOPE_UNWIND=check)")
def t_cxx_stacks():
    _, rep = cxx_report()
    u = rep["unwind"]
    eq(u["unwinder"], "check", "unwinder")
    eq(u["check_mismatches"], 0, "stacks that differ from libunwind's (of %d walked, "
       "%d from the memo)" % (u["walks"], u["memo_hits"]))
    ge(u["walks"] + u["memo_hits"], 300000, "captures")
    deepest = max(rep["sites"], key=lambda s: len([f for f in s["frames"]
                                                   if not f.get("inlined")]))
    names = [f.get("function") or "" for f in deepest["frames"] if not f.get("inlined")]
    ge(len(names), 30, "frames of the deepest stack")
    for level in (24, 0):
        ok(any("Builder<%d>::grow" % level in n for n in names),
           "Builder<%d>::grow in the deepest stack" % level, "\n    ".join(names))


def run_bench(args, timeout=120):
    built()
    return subprocess.run([os.path.join(ROOT, "bench", "run-bench"), "--no-install",
                           "--json", os.path.join(BENCH_BIN, "t_bench.json")] + args,
                          capture_output=True, text=True, timeout=timeout)


@check("run-bench --quick --only cxx-containers: a full-tracking row with its "
       "stack check, 0 stacks differing")
def t_run_bench():
    p = run_bench(["--quick", "--reps", "1", "--only", "cxx-containers",
                   "--configs", "leakscope"])
    eq(p.returncode, 0, "run-bench exit status (stderr: %s)" % p.stderr[-600:])
    row = [l for l in p.stdout.splitlines() if re.match(r"cxx-containers\s+leakscope\s", l)]
    eq(len(row), 1, "cxx-containers leakscope rows in:\n" + p.stdout)
    m = re.search(r"\s(\d+) of (\d+)$", row[0])
    ok(m, "a stack diffs cell 'N of M' at the row's end", row[0])
    eq(int(m.group(1)), 0, "stacks that differ")
    ge(int(m.group(2)), 300000, "stacks compared")
    contains(p.stdout, "0 differences in %s captures over 1 workloads" % m.group(2),
             "the stack check's verdict")


@check("run-bench: an unknown workload is a one-line error, exit status 1")
def t_run_bench_unknown():
    p = run_bench(["--quick", "--only", "nosuch"], timeout=60)
    eq(p.returncode, 1, "exit status")
    eq(p.stderr.strip().splitlines()[-1][:38], "run-bench: unknown workload: nosuch (h",
       "last stderr line")


@check("run-bench --baseline-agent: baseline rows interleaved with the others, "
       "run with the agent named (a file that is no agent leaves them n/a, saying why)")
def t_run_bench_baseline():
    agent = os.path.join(BUILD, "libleakscope.so")
    p = run_bench(["--quick", "--reps", "1", "--only", "churn-1t", "--no-check",
                   "--configs", "leakscope,leakscope-sampled", "--baseline-agent", agent])
    eq(p.returncode, 0, "run-bench exit status (stderr: %s)" % p.stderr[-600:])
    for cfg in ("baseline", "baseline-sampled"):
        row = [l for l in p.stdout.splitlines() if re.match(r"churn-1t\s+%s\s" % cfg, l)]
        eq(len(row), 1, "churn-1t %s rows in:\n%s" % (cfg, p.stdout))
        ratio = float(row[0].split()[3])
        ok(1.0 < ratio < 50.0, "%s's wall x is a tracked run's" % cfg, row[0])
    # the same agent on both sides: each mode's after/before is one pair near 1
    contains(p.stdout, "this build against --baseline-agent", "the after/before table")
    row = [l for l in p.stdout.splitlines() if re.match(r"churn-1t\s+\d", l)]
    eq(len(row), 1, "churn-1t after/before rows in:\n%s" % p.stdout)
    with open(os.path.join(BENCH_BIN, "t_bench.json")) as f:
        ab = json.load(f)["after_before"]["churn-1t"]
    for mode in ("full", "sampled"):
        eq(ab[mode]["pairs"], 1, "%s pairs" % mode)
        ok(0.3 < ab[mode]["median"] < 3.0, "%s after/before of an agent against "
           "itself" % mode, str(ab[mode]))
        contains(row[0], "%.3f" % ab[mode]["median"], "%s median printed" % mode)
    bogus = os.path.join(BENCH_BIN, "t_bench-not-an-agent.so")
    with open(bogus, "w") as f:
        f.write("not an ELF object\n")
    p = run_bench(["--quick", "--reps", "1", "--only", "churn-1t", "--no-check",
                   "--configs", "leakscope", "--baseline-agent", bogus])
    eq(p.returncode, 0, "run-bench exit status (stderr: %s)" % p.stderr[-600:])
    contains(p.stderr, "baseline: n/a (fails on a tiny run: ", "the probe's verdict")
    ok("this build against --baseline-agent" not in p.stdout,
       "no after/before table without baseline runs", p.stdout)
    missing = os.path.join(BENCH_BIN, "no-such-agent.so")
    p = run_bench(["--quick", "--only", "churn-1t", "--baseline-agent", missing], timeout=60)
    eq(p.returncode, 2, "exit status for a missing agent")
    contains(p.stderr.strip().splitlines()[-1], "--baseline-agent: cannot read " + missing,
             "last stderr line")


FLOOR_PROBE = r"""
import ctypes, sys
libc = ctypes.CDLL(None)
found = {}
for name in ("malloc", "calloc", "realloc", "free", "posix_memalign"):
    addr = ctypes.cast(getattr(libc, name), ctypes.c_void_p).value
    with open("/proc/self/maps") as f:
        for line in f:
            lo, hi = (int(x, 16) for x in line.split()[0].split("-"))
            if lo <= addr < hi:
                found[name] = line.split()[-1]
libc.malloc.restype = libc.calloc.restype = libc.realloc.restype = ctypes.c_void_p
libc.realloc.argtypes = [ctypes.c_void_p, ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]
p = libc.calloc(1000, 8)
zero = ctypes.string_at(p, 8000) == bytes(8000)
ctypes.memmove(p, b"floor", 5)
p = libc.realloc(p, 1 << 20)
kept = ctypes.string_at(p, 5) == b"floor"
libc.free(p)
print(" ".join("%s=%s" % kv for kv in sorted(found.items())), "zero=%d kept=%d" % (zero, kept),
      "sum=%d" % sum(len(str(i) * 3) for i in range(200000)))
"""


@check("preload-floor: the program's malloc family resolves to the forwarding "
       "library, which behaves as glibc's (calloc zeroes, realloc keeps); "
       "run-bench times it next to native, and says n/a without it")
def t_preload_floor():
    built()
    lib = os.path.join(BENCH_BIN, "libpreload-floor.so")
    env = dict(os.environ, LD_PRELOAD=lib)
    p = subprocess.run(["python3", "-c", FLOOR_PROBE], env=env, capture_output=True,
                       text=True, timeout=60)
    eq(p.returncode, 0, "python3 under the floor library (stderr: %s)" % p.stderr[-400:])
    for name in ("calloc", "free", "malloc", "posix_memalign", "realloc"):
        contains(p.stdout, "%s=%s " % (name, lib), "where %s resolves" % name)
    contains(p.stdout, "zero=1 kept=1 sum=%d" % sum(len(str(i) * 3) for i in range(200000)),
             "the program's results")
    p = run_bench(["--quick", "--reps", "1", "--only", "churn-1t", "--no-check",
                   "--configs", "preload-floor"])
    eq(p.returncode, 0, "run-bench exit status (stderr: %s)" % p.stderr[-600:])
    row = [l for l in p.stdout.splitlines() if re.match(r"churn-1t\s+preload-floor\s", l)]
    eq(len(row), 1, "churn-1t preload-floor rows in:\n" + p.stdout)
    ratio = float(row[0].split()[3])
    ok(0.3 < ratio < 3.0, "the floor's wall x is a forwarded run's, not a failure's",
       row[0])
    # without the library the configuration is n/a, saying how to build it
    aside = lib + ".aside"
    os.rename(lib, aside)
    try:
        p = run_bench(["--quick", "--reps", "1", "--only", "churn-1t", "--no-check",
                       "--configs", "preload-floor"])
    finally:
        os.rename(aside, lib)
    eq(p.returncode, 0, "run-bench exit status without the floor library")
    contains(p.stderr, "preload-floor: n/a (not built (make -C bench build))",
             "the probe's verdict")
    ok(not [l for l in p.stdout.splitlines() if re.match(r"churn-1t\s+preload-floor\s+\d", l)],
       "no timed preload-floor row", p.stdout)


@check("live-memory: the agent counts the 1M blocks bench/hold keeps, and adds at most "
       "24 bytes of table and 30 of RSS per block")
def t_live_memory():
    built()
    p = subprocess.run([os.path.join(ROOT, "bench", "live-memory"), "1000000"],
                       capture_output=True, text=True, timeout=240)
    eq(p.returncode, 0, "live-memory exit status (stderr: %s)" % p.stderr[-600:])
    f = dict(kv.split("=", 1) for kv in p.stdout.split())
    eq(int(f["blocks"]), 1000000, "blocks")
    # The program's own blocks, and the few its start-up (stdio) keeps.
    n = int(f["table_entries"])
    ok(1000000 <= n <= 1000100, "live table entries %d for 1M blocks held" % n)
    ok(float(f["table_per_block"]) <= 24.0, "table bytes per block %s" % f["table_per_block"])
    ok(float(f["rss_per_block"]) <= 30.0,
       "RSS added per block %s (the table, and fixed costs over 1M)" % f["rss_per_block"])


@check("live-memory: a count that is not a number is a usage error, exit status 2")
def t_live_memory_usage():
    p = subprocess.run([os.path.join(ROOT, "bench", "live-memory"), "many"],
                       capture_output=True, text=True, timeout=60)
    eq(p.returncode, 2, "exit status")
    contains(p.stderr, "usage: live-memory", "the usage line")
