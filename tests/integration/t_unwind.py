"""The unwinder's walk memo on whole programs: every capture is either a
walk or a memo hit, and with LEAKSCOPE_UNWIND=check every stack, from the
memo or walked, is compared with libunwind's (docs/UNWINDING.md)."""

import os
import re

from harness import (check, once, workload, leakscope, root_report,
                     expect_status, expect_site, need, eq, ok, ge)

PY_SCRIPT = r"""
import json
rows = [{"id": i, "name": "n%d" % i, "tags": ["t%d" % (i % 7)] * (i % 5)}
        for i in range(20000)]
text = json.dumps(rows)
print(len(text), len(json.loads(text)))
"""


def report(command, extra_env=None, args=()):
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env.update(extra_env or {})
    r = leakscope(["--format", "json"] + list(args), command, env=env,
                  timeout=300)
    expect_status(r, 0, "%s exit status" % os.path.basename(command[0]))
    rep = root_report(r)
    rep["stderr"] = r.stderr.decode("utf-8", "replace")
    return rep


def unwind_of(rep, what):
    u = rep.get("unwind")
    ok(isinstance(u, dict), "%s: the report has an unwind object" % what,
       repr(u))
    return u


@once
def basic():
    return report([workload("basic")])


@check("every recorded allocation is one capture: walks + memo hits = "
       "allocated blocks (basic)")
def t_counts():
    rep = basic()
    u = unwind_of(rep, "basic")
    eq(u["unwinder"], "cfi", "unwinder")
    eq(u["walks"] + u["memo_hits"], rep["totals"]["allocated_blocks"],
       "walks + memo hits")
    ge(u["memo_hits"], 900, "memo hits (1000 allocations from one loop)")
    ok("check_mismatches" not in u, "no check count without "
       "LEAKSCOPE_UNWIND=check", repr(u))


def cross_checked(command, what, min_hits=1, env=None, args=()):
    rep = report(command, dict(env or {}, LEAKSCOPE_UNWIND="check"), args)
    u = unwind_of(rep, what)
    eq(u["unwinder"], "check", "%s: unwinder" % what)
    # The agent writes the first few differing stacks, frame by frame,
    # to stderr (agent/capture.c): they go with the failure.
    shown = [l for l in rep["stderr"].splitlines() if "unwind check" in l
             or re.match(r"  [ *]#\d", l)]
    ok(u["check_mismatches"] == 0, "%s: stacks that differ from libunwind's: "
       "%d (of %d walked, %d from the memo)" % (
           what, u["check_mismatches"], u["walks"], u["memo_hits"]),
       "\n  ".join(shown[:200]))
    ok(not shown, "%s: no mismatch written without one counted" % what,
       "\n  ".join(shown[:20]))
    ge(u["memo_hits"], min_hits, "%s: memo hits" % what)
    return rep


@check("LEAKSCOPE_UNWIND=check: threads workload, every stack equals "
       "libunwind's, ground truth unchanged")
def t_check_threads():
    rep = cross_checked([workload("threads")], "threads")
    expect_site(rep, "site_thread_leak", workload("threads"), 1050, 5)


@check("LEAKSCOPE_UNWIND=check: deep recursion and patterns workloads")
def t_check_workloads():
    cross_checked([workload("deep")], "deep", min_hits=0)  # each stack once
    cross_checked([workload("patterns")], "patterns")


# A capture from the program's frame walks exactly --depth frames (no
# slack for the agent's own): the stack is cut there, equal to libunwind's
# cut at the same place, however deep the recursion goes on.
@check("LEAKSCOPE_UNWIND=check: --depth 3 on a leak 100 calls deep keeps "
       "exactly site_deep, descend, descend")
def t_check_depth_cut():
    rep = cross_checked([workload("deep")], "deep --depth 3", min_hits=0,
                        args=["--depth", "3"])
    site = expect_site(rep, "site_deep", workload("deep"), 4242, 1)
    eq([f.get("function") for f in site["frames"]],
       ["site_deep", "descend", "descend"], "frames of site_deep")


@check("LEAKSCOPE_UNWIND=check: C++ and inlined-code workloads, C++ "
       "exceptions through 50 allocating frames")
def t_check_cxx():
    cross_checked([workload("cxx-leaks")], "cxx-leaks")
    cross_checked([workload("inlined")], "inlined", min_hits=0)
    # C++ exceptions through 50 frames that allocate, 2000 times: the
    # frames the exception unwound are called again at the same places,
    # over the memo's and the suffixes' words.
    rep = cross_checked([workload("stress-cxx")], "stress-cxx",
                        min_hits=200000)
    ok(rep["unwind"]["walks"] < 1000, "stress-cxx: the repeated descents "
       "come from the memo", repr(rep["unwind"]))



@check("LEAKSCOPE_UNWIND=check: longjmp out of allocating recursion, "
       "allocations in a signal handler every 100 us, threads")
def t_check_stress():
    # The memo and the suffixes over stacks left by longjmp, captures
    # interrupted by a handler that captures, short-lived threads.
    for mode, hits in (("longjmp", 100000), ("signals", 50000),
                       ("threads quick", 1000)):
        cross_checked([workload("stress")] + mode.split(), "stress " + mode,
                      min_hits=hits)


# A signal inside glibc's lazy binding: _dl_runtime_resolve's CFA is on
# %rbx, which the compact rules cannot hold; after a signal frame the
# walk finds %rbx as _dl_fixup saved it (agent/unwind.c); without that
# the stack ends at the trampoline.  "stress signals" meets the same on a
# loaded machine, when the first call of munmap is preempted in _dl_fixup
# and the pending SIGALRM arrives there.
@check("LEAKSCOPE_UNWIND=check: a handler that allocates inside lazy "
       "binding goes on through _dl_runtime_resolve to the program")
def t_check_lazybind():
    lib = os.path.join(os.path.dirname(workload("stress")), "liblazy.so")
    rep = cross_checked([workload("stress"), "lazybind", lib],
                        "stress lazybind", min_hits=0)
    site = expect_site(rep, "site_lazy_signal", workload("stress"), 4242, 1)
    fns = [f.get("function") for f in site["frames"]]
    for want in ("on_usr1", "_dl_fixup", "liblazy_run", "mode_lazybind",
                 "main"):
        ok(want in fns, "%s in the handler's stack" % want, repr(fns))


@check("LEAKSCOPE_UNWIND=check: python3 building and parsing JSON")
def t_check_python():
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") \
        else need("python3")
    cross_checked([py, "-c", PY_SCRIPT], "python3", min_hits=1000)


# Every object through malloc, from 1 to 150 interpreter calls deep, three
# times over: ~150 distinct walks of up to 80 words each, more than the
# memo's ring holds (8192 words), so entries are recorded, padded, pushed
# out by the ring and recorded again while others are answered.
PY_DEEP = r"""
import sys
sys.setrecursionlimit(5000)
def down(n):
    if n == 0:
        return [str(i) * 3 for i in range(20)]
    return down(n - 1) + [(n, "x" * (n % 17))]
total = 0
for rnd in range(3):
    for depth in range(1, 151):
        total += len(down(depth))
print(total)
"""


@check("LEAKSCOPE_UNWIND=check: python3 with PYTHONMALLOC=malloc, stacks "
       "1-150 calls deep (the memo's ring wraps)")
def t_check_python_malloc():
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") \
        else need("python3")
    rep = cross_checked([py, "-c", PY_DEEP], "python3 (malloc)",
                        min_hits=100000, env={"PYTHONMALLOC": "malloc"})
    u = rep["unwind"]
    # 150 depths x 3 rounds with the ring holding a fraction of them:
    # hundreds of walks at the least, yet far fewer than captures.
    ge(u["walks"], 300, "walks (entries pushed out by the ring, redone)")
    ok(u["walks"] * 10 < u["memo_hits"], "most captures from the memo",
       repr(u))


@check("LEAKSCOPE_UNWIND=check: perl, sqlite3 and git")
def t_check_tools():
    cross_checked([need("perl"), "-e",
                   'my %h; $h{$_} = "x" x ($_ % 50) for 1..20000; '
                   'print scalar(keys %h), "\\n"'], "perl", min_hits=100)
    cross_checked([need("sqlite3"), ":memory:",
                   "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 "
                   "FROM c WHERE x < 20000) SELECT count(*), sum(x) FROM c;"],
                  "sqlite3")
    cross_checked([need("git"), "--version"], "git")
