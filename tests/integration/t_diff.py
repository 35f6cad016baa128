"""leakscope diff: two snapshots of tests/workloads/phases.c, whose sites
grow, shrink, appear and disappear by documented amounts between its two
phases.  The test drives the workload through a pipe (one byte per phase,
the phase number back on its stdout), never with sleeps.

Snapshots come from `leakscope snapshot PID -o FILE` at the end of each
phase; diffs are checked between those files, across two processes (other
addresses: ASLR), against a live pid and against a post-mortem file, then
filters, the text layout, and bad inputs.
"""
import json
import os
import re
import select
import signal
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET

from harness import agent_env
from harness import (cli, check, once, workload, eq, ok, fail, contains,
                     site_function, exit_snapshot, need,
                     BUILD, Failure, shorten)
from gopprof import pprof_top

AGENT = os.path.join(BUILD, "libleakscope.so")
RUNTIME = tempfile.mkdtemp(prefix="leakscope-diff-")
os.chmod(RUNTIME, 0o700)
TIMEOUT = 30

# phases.c's ground truth: function -> (change, bytes delta, blocks delta,
# base (bytes, blocks), new (bytes, blocks)).
TRUTH = {
    "site_grow_big": ("grew", 131072, 2, (65536, 1), (196608, 3)),
    "site_grow_lin": ("grew", 20000, 20, (10000, 10), (30000, 30)),
    "site_new": ("new", 10000, 4, (0, 0), (10000, 4)),
    "site_const": ("same", 0, 0, (2560, 5), (2560, 5)),
    "site_gone": ("gone", -9000, -3, (9000, 3), (0, 0)),
    "site_shrink": ("shrank", -24576, -6, (32768, 8), (8192, 2)),
}
ORDER = ["site_grow_big", "site_grow_lin", "site_new", "site_const",
         "site_gone", "site_shrink"]


def env(extra=None):
    return agent_env(RUNTIME, extra)


def ls(*args, timeout=60):
    return cli(args, env(), timeout)


class Phases:
    """A running workload (phases.c unless argv says otherwise) with the
    agent preloaded, stepped through its stdin and stdout."""

    def __init__(self, extra=None, argv=None):
        e = env(extra)
        e["LD_PRELOAD"] = AGENT
        self.prog = argv[0] if argv else workload("phases")
        self.p = subprocess.Popen(argv or [self.prog], env=e,
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE,
                                  start_new_session=True)
        self.pid = self.p.pid

    def step(self, want, send=b"x", answer=None):
        os.write(self.p.stdin.fileno(), send)
        line = b""
        deadline = time.monotonic() + TIMEOUT
        while not line.endswith(b"\n"):
            left = deadline - time.monotonic()
            r, _, _ = select.select([self.p.stdout], [], [], max(left, 0))
            if not r:
                self.kill()
                raise Failure("phases.c did not finish phase %d in %ss" % (
                    want, TIMEOUT))
            chunk = os.read(self.p.stdout.fileno(), 64)
            if not chunk:
                raise Failure("phases.c exited during phase %d: %s" % (
                    want, shorten(self.p.stderr.read())))
            line += chunk
        eq(line, answer or b"%d\n" % want, "the workload's answer")

    def snapshot(self, path):
        r = ls("snapshot", self.pid, "-o", path)
        if r.returncode != 0:
            fail("leakscope snapshot %d" % self.pid, "status 0", r.describe())
        return path

    def finish(self):
        self.p.stdin.close()
        try:
            eq(self.p.wait(timeout=TIMEOUT), 0, "phases.c exit status")
        finally:
            self.kill()

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def snap_path(name):
    return os.path.join(RUNTIME, name + ".lsnap")


@once
def same_process():
    """Both snapshots of one process, and a diff against its live pid."""
    w = Phases()
    try:
        w.step(1)
        a = w.snapshot(snap_path("p1"))
        w.step(2)
        b = w.snapshot(snap_path("p2"))
        live = ls("diff", "--format", "json", a, w.pid)
        live_big = ls("diff", "--format", "json", "--min-size", "4096", a,
                      w.pid)
    finally:
        w.finish()
    return {"prog": w.prog, "a": a, "b": b, "live": live,
            "live_big": live_big}


@once
def other_process():
    """Phase 2 of a second process (other addresses)."""
    w = Phases()
    try:
        w.step(1)
        w.step(2)
        b = w.snapshot(snap_path("q2"))
    finally:
        w.finish()
    return b


def diff_json(*args):
    r = ls("diff", "--format", "json", *args)
    if r.returncode != 0:
        fail("leakscope diff %s" % " ".join(map(str, args)), "status 0",
             r.describe())
    eq(r.stderr, b"", "stderr of diff")
    return json.loads(r.stdout.decode())


def by_function(d, prog):
    out = {}
    for s in d["sites"]:
        fn = site_function(s, prog)
        ok(fn is not None, "every changed stack has a program frame",
           shorten(json.dumps(s)))
        ok(fn not in out, "one stack per function: %s" % fn)
        out[fn] = s
    return out


def expect_truth(d, prog, what):
    """Exactly the ground truth: the six sites, their changes and figures,
    and no other stack."""
    sites = by_function(d, prog)
    eq(sorted(sites), sorted(TRUTH), "%s: the stacks compared" % what)
    for fn, (change, db, dn, base, new) in TRUTH.items():
        s = sites[fn]
        got = (s["change"], s["live_bytes_delta"], s["live_blocks_delta"],
               (s["base"]["live_bytes"], s["base"]["live_blocks"]),
               (s["new"]["live_bytes"], s["new"]["live_blocks"]))
        eq(got, (change, db, dn, base, new), "%s: %s" % (what, fn))
        eq((s["base"]["present"], s["new"]["present"]),
           (change != "new", change != "gone"), "%s: %s present" % (what, fn))
        eq(s["kind"], "heap", "%s: %s kind" % (what, fn))
    eq([site_function(s, prog) for s in d["sites"]], ORDER,
       "%s: largest growth first" % what)
    t = d["totals"]
    eq((t["base"]["live_bytes"], t["base"]["live_blocks"]), (119864, 27),
       "%s: base totals" % what)
    eq((t["new"]["live_bytes"], t["new"]["live_blocks"]), (247360, 44),
       "%s: new totals" % what)
    eq((t["live_bytes_delta"], t["live_blocks_delta"]), (127496, 17),
       "%s: total deltas" % what)
    eq(t["stacks"], {"grew": 2, "shrank": 1, "new": 1, "gone": 1, "same": 1},
       "%s: stacks per change" % what)
    eq(d["sites_total"], 6, "%s: sites_total" % what)


@check("diff: two snapshots of one process: exactly the sites that changed, by how much")
def t_diff_same_process():
    s = same_process()
    d = diff_json(s["a"], s["b"])
    eq((d["format"], d["version"]), ("leakscope-diff", 1), "format")
    eq(d["different_programs"], False, "different_programs")
    eq(d["base"]["pid"], d["new"]["pid"], "one pid")
    expect_truth(d, s["prog"], "file vs file")


@check("diff: snapshots of two processes match by symbols, not addresses")
def t_diff_two_processes():
    s = same_process()
    b = other_process()
    d = diff_json(s["a"], b)
    ok(d["base"]["pid"] != d["new"]["pid"], "two pids")
    expect_truth(d, s["prog"], "process 1 vs process 2")
    # The comparison means something only if the addresses differ.
    mine = diff_json(s["a"], s["b"])
    addr = lambda dd: {site_function(x, s["prog"]): x["frames"][0]["address"]
                       for x in dd["sites"]}
    ok(addr(d)["site_grow_big"] != addr(mine)["site_grow_big"],
       "the two processes' addresses differ (ASLR)")


@check("diff: a live pid as NEW")
def t_diff_live_pid():
    s = same_process()
    r = s["live"]
    if r.returncode != 0:
        fail("diff FILE PID", "status 0", r.describe())
    expect_truth(json.loads(r.stdout.decode()), s["prog"], "file vs pid")


@check("diff: a post-mortem file as NEW")
def t_diff_postmortem():
    s = same_process()
    w = Phases({"LEAKSCOPE_PERIOD_MS": "50"})
    try:
        w.step(1)
        w.step(2)
        # The post-mortem file is written by the growth sampler: wait
        # (bounded) until a sample shows phase 2, then kill -9.
        deadline = time.monotonic() + TIMEOUT
        while True:
            r = ls("report", "--postmortem", "--format", "json", w.pid)
            if r.returncode == 0 and json.loads(r.stdout.decode())[
                    "totals"]["live_bytes"] == 247360:
                break
            if time.monotonic() > deadline:
                fail("post-mortem file at phase 2", "247360 live bytes",
                     r.describe())
            time.sleep(0.05)
        os.kill(w.pid, signal.SIGKILL)
        w.p.wait()
        pm = os.path.join(RUNTIME, "%d.pm" % w.pid)
        ok(os.path.exists(pm), "the post-mortem file %s is there" % pm)
        d = diff_json(s["a"], pm)
        filtered = ls("diff", "--min-size", "1", s["a"], pm)
        pm_pprof = os.path.join(RUNTIME, "pm.pb.gz")
        r = ls("report", "--format", "pprof", "--output", pm_pprof, pm)
    finally:
        w.kill()
    expect_truth(d, s["prog"], "file vs post-mortem")
    expect_error(filtered, 1, ["block lists"], "--min-size on a post-mortem file")
    eq(r.returncode, 0, "report --format pprof of the post-mortem file")
    top = pprof_top(pm_pprof, "inuse_space")
    eq(top["phase_step"][1], 247360, "its profile holds phase 2's bytes")


@check("diff: text lists grown, shrunk, new, gone; unchanged only counted")
def t_diff_text():
    s = same_process()
    r = ls("diff", s["a"], s["b"])
    eq(r.returncode, 0, "status")
    text = r.stdout.decode()
    contains(text, "Live: 119864 -> 247360 bytes (+127496), 27 -> 44 blocks "
             "(+17)", "totals line")
    contains(text, "Stacks: 2 grew, 1 shrank, 1 new, 1 gone, 1 unchanged",
             "counts line")
    heads = [l for l in text.splitlines() if l and not l.startswith(("\t", " "))
             and l.endswith(":")]
    eq(heads, ["Grew (largest growth first):", "Shrank:", "New (only in new):",
               "Gone (only in base):"], "sections in order")
    firsts = [l.split("+0x")[0].strip() for l in text.splitlines()
              if l.startswith("\t\tsite_")]
    eq(firsts, ["site_grow_big", "site_grow_lin", "site_shrink", "site_new",
                "site_gone"], "allocating functions, section by section")
    contains(text, "\t+131072 bytes, +2 blocks: 65536 -> 196608 bytes in 1 -> 3"
             " blocks\n\t\tsite_grow_big+0x", "site_grow_big's entry")
    contains(text, "\t-24576 bytes, -6 blocks: 32768 -> 8192 bytes in 8 -> 2"
             " blocks\n\t\tsite_shrink+0x", "site_shrink's entry")
    ok("site_const" not in text, "the unchanged site is not listed")


@check("diff: --min-size compares only the blocks that pass, on both sides")
def t_diff_min_size():
    s = same_process()
    d = diff_json("--min-size", "4096", s["a"], s["b"])
    sites = by_function(d, s["prog"])
    eq(sorted(sites), ["site_grow_big", "site_shrink"], "stacks kept")
    eq(sites["site_grow_big"]["live_bytes_delta"], 131072, "site_grow_big")
    eq(sites["site_shrink"]["live_blocks_delta"], -6, "site_shrink")
    eq(d["filters"]["min_size"], 4096, "filters.min_size")


@check("diff: --min-size on a live pid asks it for its block list")
def t_diff_live_min_size():
    s = same_process()
    r = s["live_big"]
    if r.returncode != 0:
        fail("diff --min-size FILE PID", "status 0", r.describe())
    d = json.loads(r.stdout.decode())
    eq({fn: (x["live_bytes_delta"], x["live_blocks_delta"])
        for fn, x in by_function(d, s["prog"]).items()},
       {"site_grow_big": (131072, 2), "site_shrink": (-24576, -6)},
       "the blocks of 4096 bytes or more")


# phases.c by bytes allocated (freeing does not lower them): function ->
# (change, bytes delta, blocks delta, base (bytes, blocks), new); tmp_scratch
# allocates sum((7i + phase) % 300 + 1, i < 100) bytes in 100 blocks a phase.
TRUTH_ALLOCATED = {
    "site_grow_big": ("grew", 131072, 2, (65536, 1), (196608, 3)),
    "site_grow_lin": ("grew", 20000, 20, (10000, 10), (30000, 30)),
    "tmp_scratch": ("grew", 13650, 100, (13550, 100), (27200, 200)),
    "site_new": ("new", 10000, 4, (0, 0), (10000, 4)),
    "site_const": ("same", 0, 0, (2560, 5), (2560, 5)),
    "site_gone": ("same", 0, 0, (9000, 3), (9000, 3)),
    "site_shrink": ("same", 0, 0, (32768, 8), (32768, 8)),
}


@check("diff --by allocated: stacks compared by bytes allocated (phases.c's sums), live figures kept; --by live is the default byte for byte")
def t_diff_by():
    s = same_process()
    d = diff_json("--by", "allocated", s["a"], s["b"])
    eq(d.get("by"), "allocated", "the document says what it compares")
    sites = by_function(d, s["prog"])
    eq(sorted(sites), sorted(TRUTH_ALLOCATED), "the stacks compared")
    for fn, (change, db, dn, base, new) in TRUTH_ALLOCATED.items():
        e = sites[fn]
        got = (e["change"], e["by_bytes_delta"], e["by_blocks_delta"],
               (e["base"]["by_bytes"], e["base"]["by_blocks"]),
               (e["new"]["by_bytes"], e["new"]["by_blocks"]))
        eq(got, (change, db, dn, base, new), "--by allocated: " + fn)
        eq(e["new"]["by_bytes"], e["new"]["allocated_bytes"],
           fn + ": by_bytes is allocated_bytes")
        if fn in TRUTH:
            eq(e["live_bytes_delta"], TRUTH[fn][1], fn + ": live delta kept")
    eq([site_function(e, s["prog"]) for e in d["sites"]][:4],
       ["site_grow_big", "site_grow_lin", "tmp_scratch", "site_new"],
       "largest growth in bytes allocated first")
    default = ls("diff", "--format", "json", s["a"], s["b"])
    live = ls("diff", "--format", "json", "--by", "live", s["a"], s["b"])
    eq(live.stdout, default.stdout, "--by live = the default")
    text = ls("diff", "--by", "allocated", s["a"], s["b"]).stdout.decode()
    contains(text, "compared by allocated bytes", "the text says it")
    contains(text, "+13650 allocated bytes, +100 blocks: 13550 -> 27200 bytes",
             "tmp_scratch's line")
    r = ls("diff", "--by", "peak", "--min-size", "1", s["a"], s["b"])
    eq(r.returncode, 125, "--by peak with --min-size: usage status")
    contains(r.stderr.decode(), "--by peak cannot be combined with --min-age",
             "one line saying why")


@check("diff: --top N keeps the N biggest changes either way")
def t_diff_top():
    s = same_process()
    d = diff_json("--top", "2", s["a"], s["b"])
    eq([site_function(x, s["prog"]) for x in d["sites"]],
       ["site_grow_big", "site_shrink"], "the two biggest changes")
    eq(d["sites_total"], 6, "sites_total before --top")
    eq(d["totals"]["live_bytes_delta"], 127496, "totals cover every stack")


@check("diff: different programs: a warning, the diff still made")
def t_diff_other_program():
    s = same_process()
    _, basic = exit_snapshot("basic")
    r = ls("diff", "--format", "json", basic, s["b"])
    eq(r.returncode, 0, "status")
    err = r.stderr.decode()
    ok(err.startswith("leakscope: warning: ") and err.count("\n") == 1 and
       "different programs" in err, "one warning line", err)
    d = json.loads(r.stdout.decode())
    eq(d["different_programs"], True, "different_programs")
    eq(d["totals"]["stacks"]["new"], 5, "phases.c's five live stacks are new")
    eq(d["totals"]["stacks"]["gone"], 4, "basic.c's four stacks are gone")


def expect_error(r, status, words, what):
    eq(r.returncode, status, "%s: status" % what)
    err = r.stderr.decode()
    ok(err.startswith("leakscope: ") and err.count("\n") == 1,
       "%s: one line on stderr" % what, err)
    for w in words:
        contains(err, w, "%s: the error" % what)
    eq(r.stdout, b"", "%s: nothing on stdout" % what)


@check("diff: missing file, corrupt snapshot, dead pid: one line, status 1; bad usage: one line, status 125 (the usage status of every command)")
def t_diff_errors():
    s = same_process()
    missing = os.path.join(RUNTIME, "no-such.lsnap")
    expect_error(ls("diff", missing, s["b"]), 1, [missing], "missing file")
    with open(s["a"], "rb") as f:
        data = f.read()
    cut = os.path.join(RUNTIME, "cut.lsnap")
    with open(cut, "wb") as f:
        f.write(data[:len(data) // 2])
    r = ls("diff", s["a"], cut)
    expect_error(r, 1, [cut], "truncated")
    ok(re.search(r"corrupt|truncated", r.stderr.decode()), "says why",
       r.stderr.decode())
    flipped = os.path.join(RUNTIME, "flipped.lsnap")
    with open(flipped, "wb") as f:
        f.write(data[:200] + bytes([data[200] ^ 0xff]) + data[201:])
    expect_error(ls("diff", flipped, s["b"]), 1, [flipped], "corrupt byte")
    dead = subprocess.Popen(["true"])
    dead.wait()
    expect_error(ls("diff", s["a"], dead.pid), 1, [str(dead.pid)], "dead pid")
    expect_error(ls("diff", s["a"]), 125, ["BASE and NEW"], "one argument")
    expect_error(ls("diff", "--format", "folded", s["a"], s["b"]), 125,
                 ["--format"], "folded")
    expect_error(ls("diff", "--show-allocs", s["a"], s["b"]), 125,
                 ["--show-allocs"], "--show-allocs")
    expect_error(ls("diff", "--bogus", s["a"], s["b"]), 125, ["--bogus"],
                 "unknown option")
    out = os.path.join(RUNTIME, "out.json")
    r = ls("diff", "--format", "json", "--output", out, s["a"], cut)
    ok(not os.path.exists(out), "no output file after an error")


@check("diff: --output FILE holds the diff, written whole")
def t_diff_output():
    s = same_process()
    out = os.path.join(RUNTIME, "diff.json")
    r = ls("diff", "--format", "json", "--output", out, s["a"], s["b"])
    eq((r.returncode, r.stdout), (0, b""), "status and stdout")
    with open(out) as f:
        expect_truth(json.load(f), s["prog"], "--output FILE")


def svg_frames(path):
    """{label: (data-v, fill, tooltip)} of the drawn frames of an SVG."""
    ns = "{http://www.w3.org/2000/svg}"
    try:
        root = ET.parse(path).getroot()
    except ET.ParseError as e:
        fail("the SVG parses as XML", "well-formed", e)
    out = {}
    for g in root.iter(ns + "g"):
        if g.get("class") != "f":
            continue
        label, info = g.find(ns + "title").text.split("\n")
        ok(label not in out, "one frame named %s" % label)
        out[label] = (int(g.get("data-v")), g.find(ns + "rect").get("fill"),
                      info)
    return root, out


def colour(fill):
    m = re.fullmatch(r"rgb\((\d+),(\d+),(\d+)\)", fill)
    ok(m is not None, "an rgb() fill", fill)
    r, g, b = map(int, m.groups())
    if r == 255 and g == b < 255:
        return "red"
    if b == 255 and r == g < 255:
        return "blue"
    if r == g == b:
        return "grey"
    return fill


@check("diff --format svg: widths are NEW's bytes, red grew, blue shrank")
def t_diff_svg():
    s = same_process()
    out = os.path.join(RUNTIME, "diff.svg")
    r = ls("diff", "--format", "svg", "--output", out, s["a"], s["b"])
    eq((r.returncode, r.stdout, r.stderr), (0, b"", b""), "status and output")
    root, frames = svg_frames(out)
    eq(root.get("data-diff"), "1", "a differential graph")
    want = {"site_grow_big": (196608, "red"), "site_grow_lin": (30000, "red"),
            "site_new": (10000, "red"), "site_const": (2560, "grey"),
            "site_shrink": (8192, "blue")}
    got = {}
    for label, (v, fill, info) in frames.items():
        fn = label.split(" ")[0]
        if fn.startswith("site_"):
            got[fn] = (v, colour(fill))
    eq(got, want, "the sites' widths and colours (site_gone has no width)")
    eq(frames["all"][0], 247360, "the root is NEW's live bytes")
    eq(colour(frames["all"][1]), "red", "the root grew")
    eq(colour(frames["phase_step [phases]"][1]), "red", "the callers grew")
    ok("+131,072" in frames["site_grow_big [phases]"][2] and
       "-24,576" in frames["site_shrink [phases]"][2],
       "tooltips carry the byte deltas", repr(frames["site_shrink [phases]"]))
    # Blocks, and --top: the left-out stacks are one frame, totals kept.
    out2 = os.path.join(RUNTIME, "diff-top.svg")
    r = ls("diff", "--format", "svg", "--count", "blocks", "--top", "2",
           "--output", out2, s["a"], s["b"])
    eq(r.returncode, 0, "status with --count blocks --top 2")
    _, frames = svg_frames(out2)
    eq(frames["all"][0], 44, "the root is NEW's live blocks")
    eq(frames["site_grow_big [phases]"][0], 3, "site_grow_big's blocks")
    eq(frames["site_shrink [phases]"][0], 2, "site_shrink's blocks")
    eq(frames["[4 other stacks]"][0], 39, "the other four stacks' blocks")


PY_GROW = """
import sys
keep = []
for line in sys.stdin:
    keep.extend(bytearray(100000) for _ in range(int(line)))
    sys.stdout.write("ok\\n")
    sys.stdout.flush()
"""


@check("diff: python3 (a real program, unnamed frames): the bytearrays it kept, exactly")
def t_diff_python():
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") \
        else need("python3")
    w = Phases(argv=[py, "-c", PY_GROW])
    try:
        w.step(1, b"10\n", b"ok\n")
        a = w.snapshot(snap_path("py1"))
        w.step(2, b"20\n", b"ok\n")
        b = w.snapshot(snap_path("py2"))
    finally:
        w.finish()
    d = diff_json(a, b)
    top = d["sites"][0]
    # 20 more bytearrays of 100000 bytes, each with its terminating NUL.
    eq((top["change"], top["live_bytes_delta"], top["live_blocks_delta"]),
       ("grew", 20 * 100001, 20), "the largest growth")
    eq((top["base"]["live_blocks"], top["new"]["live_blocks"]), (10, 30),
       "its blocks on each side")
    ok(any(f["function"] == "PyByteArray_Resize" for f in top["frames"]),
       "its stack goes through PyByteArray_Resize",
       "\n".join(str(f["function"]) for f in top["frames"]))
    # (the interpreter's own buffers, an 8 KiB read buffer, may come and go)
    rest = [x for x in d["sites"][1:] if abs(x["live_bytes_delta"]) > 65536]
    eq(rest, [], "no other stack changed by more than 64 KiB")


@check("diff: go tool pprof -base on the two processes' pprof files agrees")
def t_diff_pprof_base():
    s = same_process()
    b = other_process()
    files = []
    for snap in (s["a"], b):
        path = snap.replace(".lsnap", ".pb.gz")
        r = ls("report", "--format", "pprof", "--output", path, snap)
        eq(r.returncode, 0, "report --format pprof %s" % snap)
        files.append(path)
    top = pprof_top(files[1], "inuse_space", "-base", files[0])
    got = {fn: v[0] for fn, v in top.items() if fn.startswith("site_")}
    eq(got, {fn: t[1] for fn, t in TRUTH.items() if t[1]},
       "pprof's per-function difference (addresses differ: ASLR)")
    eq(top["main"][1], 127496, "main's cumulative difference")


@check("diff: --depth, --full-names, --hide-runtime shape the stacks shown, not the matching")
def t_diff_stack_view():
    _, snap = exit_snapshot("cxx-leaks")
    full = diff_json("--full-names", snap, snap)
    short = diff_json(snap, snap)
    for d in (full, short):
        eq(d["totals"]["stacks"]["same"], d["sites_total"],
           "every stack of a snapshot matches itself")
    names = lambda d: {f["function"] for s in d["sites"] for f in s["frames"]
                       if f["function"]}
    ok(any("std::allocator<int>" in n for n in names(full)),
       "--full-names keeps template arguments", repr(sorted(names(full))))
    ok(not any("std::allocator<int>" in n for n in names(short)) and
       any("<…>" in n for n in names(short)),
       "template arguments are cut to <…> by default",
       repr(sorted(names(short))))
    shallow = diff_json("--depth", "2", snap, snap)
    ok(all(0 < len(s["frames"]) <= 2 for s in shallow["sites"]),
       "--depth 2: at most two frames per stack")
    hidden = diff_json("--hide-runtime", snap, snap)
    outer = [s["frames"][-1]["function"] for s in hidden["sites"]
             if any(f["function"] == "main" for f in s["frames"])]
    ok(outer and all(f == "main" for f in outer),
       "--hide-runtime: the program's stacks end at main", repr(outer))
