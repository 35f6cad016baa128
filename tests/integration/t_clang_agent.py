"""The agent built with clang (build/clang/libleakscope.so: `make
agent-clang`, which `make tests` runs when clang is installed) against
the agent built with gcc and against valgrind: the agent's unit tests
pass linked with it; it needs no symbol, symbol
version or library the gcc build does not (under clang an atomic access
to a packed struct's member is a call into libatomic, which the agent
does not link) and exports the same ones; under `leakscope run
--leak-check --fail-on-leak` it gives the LEAK SUMMARY, the gate's exit
status and the first frames of every lost block that the gcc agent and
valgrind give, on verdict programs (tests/workloads/verdict/) and on
python3 (there valgrind's definitely and indirectly lost lines); and
every stack it captures is libunwind's (LEAKSCOPE_UNWIND=check)."""

import os
import re
import shutil
import subprocess
import tempfile

from harness import (agent_env, at_file_end, check, once, eq, ok, need,
                     leakscope, run_process, workload, BUILD, Failure)
from t_verdicts import build, summary, vg_output, pool_map, KINDS
from t_unwind import cross_checked, PY_SCRIPT

GCC_AGENT = os.path.join(BUILD, "libleakscope.so")
CLANG_AGENT = os.path.join(BUILD, "clang", "libleakscope.so")
OUT = tempfile.mkdtemp(prefix="leakscope-clang-agent-")
at_file_end(lambda: shutil.rmtree(OUT, True))
FRAMES = 3	# the first frames of a lost block compared

# (program, mode): a lost block kept in returned frames (the agent's
# scan of the exiting stack), lost and kept lists (indirectly lost), a
# block grown by realloc and dropped beside a calloc'd one kept.
VERDICTS = (("deadframe", 0), ("shapes", 0), ("gate", 3))

# python3: exit status 3 unless the file named by its last argument
# (the agent, or valgrind's preloaded part) is mapped in it.
PY_MAPPED = r"""
import sys
with open("/proc/self/maps") as f:
    if sys.argv[-1] not in f.read():
        sys.exit(3)
"""
# python3 losing one 4242-byte block.  With PYTHONMALLOC=malloc the
# objects that held its address are freed blocks, which no leak check
# scans (pymalloc's arenas are scanned, and keep stale copies).  Writing
# the block with memset left a pointer into it in one run out of four
# (possibly lost, under either agent): it is left as malloc gave it.
PY_LEAK = r"""
import ctypes
libc = ctypes.CDLL(None)
libc.malloc.restype = ctypes.c_void_p
libc.malloc.argtypes = [ctypes.c_size_t]
p = libc.malloc(4242)
p = None
""" + PY_MAPPED
# What python3 keeps possibly lost and reachable at exit depends on what
# runs it (valgrind: 53652 bytes possibly lost and 210253 reachable; both
# agents 53656 and 207625): those lines are compared between the agents.
PY_VG_KINDS = ("definitely lost", "indirectly lost")


def python3():
    """Debian's python3 (not a wrapper script, which valgrind would run
    in its place)."""
    return "/usr/bin/python3" if os.path.exists("/usr/bin/python3") \
        else need("python3")


def clang_agent():
    """The clang-built agent, or Skip without clang."""
    need("clang")
    if not os.path.exists(CLANG_AGENT):
        raise Failure("%s is not built (run make tests or make agent-clang)"
                      % os.path.relpath(CLANG_AGENT, os.path.dirname(BUILD)))
    return CLANG_AGENT


# clang calls bcmp where a memcmp's result is only compared with 0 (in
# glibc since 2.2.5: every glibc the agent loads into has it).
CLANG_LIBCALLS = {"bcmp@GLIBC_2.2.5"}


def dynsyms(lib, flag):
    """nm -D FLAG on lib: {symbol@version: type letter}."""
    r = subprocess.run([need("nm"), "-D", flag, lib], capture_output=True,
                       timeout=30)
    if r.returncode:
        raise Failure("nm -D %s %s: %s" % (flag, lib, r.stderr.decode()))
    out = {}
    for line in r.stdout.decode().splitlines():
        f = line.split()
        if len(f) >= 2:
            out[f[-1]] = f[-2]
    return out


def needed(lib):
    r = subprocess.run([need("readelf"), "-d", lib], capture_output=True,
                       timeout=30)
    return sorted(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]",
                             r.stdout.decode()))


@check("the clang agent needs no symbol, version or library the gcc agent "
       "does not (no libatomic, no __atomic_* call) and exports the same "
       "symbols")
def t_symbols():
    clang = clang_agent()
    for lib in (clang, GCC_AGENT):
        ok(os.path.exists(lib), "%s built" % lib)
    und_c = dynsyms(clang, "--undefined-only")
    und_g = dynsyms(GCC_AGENT, "--undefined-only")
    atomics = sorted(s for s in und_c if s.startswith("__atomic"))
    eq(atomics, [], "__atomic_* calls the clang agent needs")
    eq(sorted(set(und_c) - set(und_g) - CLANG_LIBCALLS), [],
       "undefined symbols of the clang agent beyond the gcc agent's and "
       "clang's own library calls")
    newer = sorted(s for s in und_c if re.search(r"@GLIBC_", s) and not
                   re.search(r"@GLIBC_2\.([0-9]|1[0-7])(\.\d+)?$", s))
    eq(newer, [], "symbols of glibc versions above GLIBC_2.17 the clang "
       "agent binds to")
    eq(needed(clang), needed(GCC_AGENT), "libraries needed (DT_NEEDED)")
    eq(sorted(dynsyms(clang, "--defined-only")),
       sorted(dynsyms(GCC_AGENT, "--defined-only")), "exported symbols")


@check("the agent's unit tests (built with gcc) linked with the agent's "
       "objects built with clang: every check passes")
def t_unit():
    clang_agent()
    units = os.path.join(BUILD, "tests", "unit")
    mine = os.path.join(BUILD, "clang", "tests", "unit")
    names = sorted(n for n in os.listdir(units) if n.startswith("t-agent-"))
    got = sorted(n for n in os.listdir(mine) if n.startswith("t-agent-")) \
        if os.path.isdir(mine) else []
    eq(got, names, "unit tests linked with the clang agent (make tests)")
    bad = []
    for n in names:
        r = run_process([os.path.join(mine, n)], timeout=120)
        out = r.stdout.decode("utf-8", "replace")
        plan = re.search(r"^1\.\.(\d+)$", out, re.M)
        oks = len(re.findall(r"^ok ", out, re.M))
        if r.returncode or re.search(r"^not ok", out, re.M) or not plan or \
                int(plan.group(1)) != oks or not oks:
            bad.append("%s (exit %d): %s" % (n, r.returncode, "\n  ".join(
                l for l in out.splitlines() if l.startswith(("not ok", "#"))
                )[:1500]))
    eq(bad, [], "unit tests failing with the clang agent")


_RECORD = re.compile(r"are (definitely lost|indirectly lost|possibly lost|"
                     r"still reachable) in loss record")
_VG_FRAME = re.compile(r"^==\d+==\s+(?:at|by) 0x[0-9A-Fa-f]+: (.*)$")


def frame_key(text, vg):
    """A frame's function and source position (file's base name:line),
    each "?" when not known, from a line of valgrind's (vg:
    "fn (file.c:12)", "fn (in /lib/x.so)", "??? (in ...)") or of a
    leakscope report ("fn+0x1a [module] file.c:12 (inlined)")."""
    if vg:
        m = re.match(r"(.*?) \((?:(\S+):(\d+)|in .*)\)$", text)
        fn, path, line = m.groups() if m else (text, None, None)
    else:
        m = re.match(r"(\S+?)(?:\+0x[0-9a-f]+)? \[[^\]]*\]"
                     r"(?: (\S+):(\d+))?", text)
        fn, path, line = m.groups() if m else (text, None, None)
    if fn in ("???", "") or fn.startswith("0x"):
        fn = "?"
    return (fn, "%s:%s" % (os.path.basename(path), line) if path else "?")


def first_frames(text, vg):
    """Each lost record's first FRAMES frames below the allocator, as
    (function, file:line), from a leakscope text report or valgrind's
    output (vg): the set of them per kind lost."""
    out, cur = {}, None
    for line in text.splitlines():
        m = _RECORD.search(line)
        if m:
            cur = [] if m.group(1) != "still reachable" else None
            if cur is not None:
                out.setdefault(m.group(1), []).append(cur)
            continue
        if cur is None:
            continue
        if vg:
            fm = _VG_FRAME.match(line)
            body = fm.group(1) if fm else None
        else:
            body = line.strip() if line.startswith("\t\t") else None
        if body is None:
            cur = None
            continue
        if (vg and not cur and ("vg_replace_malloc.c:" in body or
                                "/vgpreload_" in body)) or \
                len(cur) >= FRAMES or (cur and cur[-1][0] == "main"):
            continue	# valgrind's allocator frames; it ends at main
        key = frame_key(body, vg)
        cur.append(key)
    return {k: sorted({tuple(f) for f in v}) for k, v in out.items()}


def run_ls(agent, argv, env):
    """leakscope run --leak-check --fail-on-leak ARGV under agent: (LEAK
    SUMMARY, exit status, first frames of the lost records)."""
    r = leakscope(["--leak-check", "--fail-on-leak"], argv, timeout=120,
                  env=agent_env(OUT, dict(env, LEAKSCOPE_AGENT=agent)))
    text = r.files.get("report", "")
    if r.returncode not in (0, 99):
        raise Failure("leakscope run %s (agent %s): exit status %d\n%s" % (
            " ".join(argv), agent, r.returncode,
            r.stderr.decode("utf-8", "replace")[-800:]))
    return (summary(text, "leakscope %s" % " ".join(argv)), r.returncode,
            first_frames(text, False))


def run_vg(argv, env):
    text, rc = vg_output(argv[0], argv[1:], agent_env(OUT, env))
    return (summary(text, "valgrind %s" % " ".join(argv)), rc,
            first_frames(text, True))


def compare(what, argv, marked=False, env=None, vg_kinds=KINDS):
    """Run argv under valgrind and both agents (marked: with the file the
    tool preloads as one more argument, which the program finds mapped;
    env: more environment); fail on any difference between the agents'
    summaries, or from valgrind's in its kinds vg_kinds, the gate (99
    exactly when valgrind's 42) or the lost records' first frames."""
    tools = (("valgrind", "vgpreload_memcheck"),
             ("the gcc agent", os.path.realpath(GCC_AGENT)),
             ("the clang agent", os.path.realpath(clang_agent())))

    def run(who, lib):
        args = argv + [lib] if marked else argv
        return run_vg(args, env or {}) if who == "valgrind" else \
            run_ls(lib, args, env or {})
    (vsum, vrc, vframes), (gsum, _, _), (csum, _, _) = runs = \
        pool_map(run, tools)
    eq(csum, gsum, "%s: LEAK SUMMARY under the clang agent (the gcc "
       "agent's)" % what)
    for (who, _), (lsum, lrc, lframes) in zip(tools[1:], runs[1:]):
        eq({k: lsum[k] for k in vg_kinds}, {k: vsum[k] for k in vg_kinds},
           "%s under %s: LEAK SUMMARY (valgrind's)" % (what, who))
        eq(lrc == 99, vrc == 42, "%s under %s: the gate trips (exit %d) as "
           "valgrind's leak errors (exit %d)" % (what, who, lrc, vrc))
        eq(lframes, vframes, "%s under %s: first %d frames of the lost "
           "blocks (valgrind's)" % (what, who, FRAMES))
    ok(vframes.get("definitely lost"), "%s: a definitely lost block" % what,
       repr(vframes))
    return gsum


@once
def verdict_bins():
    need("valgrind")
    return dict(zip(VERDICTS, pool_map(lambda n, m: build(n, "gcc", "-O0"),
                                       VERDICTS)))


@check("leak check under the clang agent on verdict programs (dead frames, "
       "lost lists, realloc): the gcc agent's and valgrind's LEAK SUMMARY, "
       "gate and first frames")
def t_verdicts():
    clang_agent()
    for (name, mode), binary in sorted(verdict_bins().items()):
        compare("%s %d" % (name, mode), [binary, str(mode)])


@check("leak check under the clang agent on python3 losing a 4242-byte "
       "block (PYTHONMALLOC=malloc): the gcc agent's summary, valgrind's "
       "lost blocks, gate and frames")
def t_python():
    clang_agent()
    need("valgrind")
    got = compare("python3", [python3(), "-c", PY_LEAK], marked=True,
                  env={"PYTHONMALLOC": "malloc"}, vg_kinds=PY_VG_KINDS)
    eq(got["definitely lost"], (4242, 1), "python3: definitely lost")


@check("LEAKSCOPE_UNWIND=check under the clang agent: every stack of the "
       "threads workload and of python3 is libunwind's")
def t_unwind_check():
    clang = clang_agent()
    env = {"LEAKSCOPE_AGENT": clang}
    cross_checked([workload("threads")], "threads (clang agent)", env=env)
    cross_checked([python3(), "-c", PY_SCRIPT + PY_MAPPED,
                   os.path.realpath(clang)], "python3 (clang agent)",
                  min_hits=1000, env=env)
