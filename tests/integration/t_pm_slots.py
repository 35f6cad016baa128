"""The post-mortem file's compact parts (common/lspm.h, version 4): a
site's stats in a brief slot (up to three histogram buckets that are not
0) or a wide one, a history row only for a site whose live bytes changed
after it first held memory, the samples before the row filled in, and a
stack's outer frames as the tail of the site before it.

Ground truth: the exit snapshot of the same run, written from the agent's
counters and live tables (agent/snapwrite.c), not from the file; and
tests/workloads/phases.c, whose live bytes after each phase its opening
comment gives.  The phases run 0.4 s apart with a sample every
20 ms, so each value stands for several samples whatever the load."""

import os
import struct
import subprocess
import tempfile
import time

from harness import (BUILD, check, cli_json, eq, ok, once, workload,
                     site_function)
from t_exit_history import parse

AGENT = os.path.join(BUILD, "libleakscope.so")
STATS = ("peak_bytes", "peak_blocks", "temporary_bytes", "temporary_blocks",
         "allocated_bytes", "allocated_blocks", "live_bytes", "live_blocks",
         "size_histogram", "lifetime_histogram")


def traced(name, args=(), steps=None):
    """Run workload name with the agent, a sample every 20 ms, the
    post-mortem file kept; steps, when given, drive it through its stdin
    (a byte per step, its answer line awaited, then 0.4 s).  (program,
    exit snapshot, post-mortem file)."""
    out = tempfile.mkdtemp(prefix="leakscope-pmslots-")
    rt = os.path.join(out, "rt")
    os.mkdir(rt, 0o700)
    env = dict(os.environ, LD_PRELOAD=AGENT, LEAKSCOPE_OUT_DIR=out,
               LEAKSCOPE_RUNTIME_DIR=rt, LEAKSCOPE_CONTROL="1",
               LEAKSCOPE_PERIOD_MS="20", LEAKSCOPE_HISTORY="120",
               LEAKSCOPE_KEEP="1", LEAKSCOPE_EXIT_BLOCKS="1")
    prog = workload(name)
    p = subprocess.Popen([prog] + list(args), env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        time.sleep(0.2 if steps else 0)
        for _ in range(steps or 0):
            p.stdin.write(b"x")
            p.stdin.flush()
            ok(p.stdout.readline().strip().isdigit(), "%s: a phase done" % name)
            time.sleep(0.4)
        p.stdin.close()
        p.stdout.read()
        eq(p.wait(timeout=60), 0, "%s exit status" % name)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    snaps = [f for f in os.listdir(out) if f.endswith(".lsnap")]
    pms = [f for f in os.listdir(rt) if f.endswith(".pm")]
    eq((len(snaps), len(pms)), (1, 1), "%s: an exit snapshot and a kept "
       "post-mortem file" % name)
    return prog, os.path.join(out, snaps[0]), os.path.join(rt, pms[0])


def by_stack(report):
    return {tuple(f["address"] for f in s["frames"]): s for s in report["sites"]}


@once
def growth():
    return traced("growth", ["1", "7"])


@check("post-mortem slots: every site's stack, peak, temporaries, totals and histograms read from the file equal the exit snapshot's, from brief and from wide slots, stacks stored once per outer part")
def t_stats():
    prog, snap, pm = growth()
    args = ("report", "--histogram", "--by", "allocated", "--format", "json")
    a = by_stack(cli_json(args + (snap,)))
    b = by_stack(cli_json(args + (pm,)))
    eq(sorted(b), sorted(a), "the sites with allocations, by stack")
    with open(pm, "rb") as f:
        head = f.read(128)
    # common/lspm.h: nsites at byte 104, frames_used at 120.
    nsites, frames_used = struct.unpack_from("<I", head, 104)[0], \
        struct.unpack_from("<Q", head, 120)[0]
    eq(nsites, len(a), "sites in the file")
    ok(frames_used < sum(len(k) for k in a), "frames stored: fewer than the "
       "stacks have (outer frames shared)", (frames_used, sum(len(k) for k in a)))
    for k, s in a.items():
        eq({f: b[k].get(f) for f in STATS}, {f: s.get(f) for f in STATS},
           "figures of the site of %s" % site_function(s, prog))
        if s.get("trend"):      # its history: one that held memory
            eq(b[k].get("trend"), s["trend"], "growth of the site of %s"
               % site_function(s, prog))
    buckets = [sum(1 for n in s["size_histogram"] + s["lifetime_histogram"]
                   if n) for s in a.values()]
    ok(max(buckets) > 3 and min(buckets) <= 3,
       "sites that need a wide slot and sites that fit a brief one",
       sorted(buckets))


@check("post-mortem slots: a site's history is exact whether it got a row (its bytes changed) or not (held the same bytes since it first held any)")
def t_history():
    _, snap, _ = traced("phases", steps=2)
    ticks, hist_len, sites, hist = parse(snap)
    ok(ticks >= 8, "samples taken", ticks)
    # phases.c: the live total after phase 1 and after phase 2 (phase 2
    # grows two sites from stacks of its own), and the sites that change.
    n = len(next(iter(hist.values())))
    totals = [sum(h[k] for h in hist.values()) for k in range(n)]
    runs = []
    for v in totals:
        if not runs or runs[-1][0] != v:
            runs.append([v, 0])
        runs[-1][1] += 1
    eq([v for v, _ in runs], [0, 119864, 247360], "the live total at each "
       "sample: before phase 1, after it, after phase 2")
    ok(all(c >= 2 for _, c in runs[1:]), "each phase over several samples",
       runs)
    first = runs[0][1]
    end = first + runs[1][1]

    def shape(sid):
        h = hist[sid]
        return (set(h[:first]), set(h[first:end]), set(h[end:]))

    shapes = sorted(shape(sid) for sid in hist)
    for name, one, two in (("site_gone", 9000, 0), ("site_shrink", 32768, 8192),
                           ("site_const", 2560, 2560),
                           ("site_grow_lin", 10000, 10000)):
        ok(({0}, {one}, {two}) in shapes, "%s: 0 before phase 1, %d after "
           "it, %d after phase 2" % (name, one, two), shapes)
