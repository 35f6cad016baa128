"""Peak consumers, allocation activity, temporary allocations and the size
and lifetime histograms, from an exit snapshot, a live agent and
the post-mortem file after SIGKILL.

Ground truth: tests/workloads/peaks.c (its opening comment gives every
figure).  Lifetimes are asserted by bucket ranges that timing jitter cannot
move: blocks freed at once stay under 0.5 s, blocks held 600 ms are at
least 0.5 s old.
"""
import json
import os
import signal
import subprocess
import tempfile
import time

from harness import (cli, cli_json, agent_env, check, once, workload, eq, ok, contains, run_process, site_function, exit_snapshot, LEAKSCOPE,
                     BUILD, Failure, bpf_missing)
from gopprof import pprof_top

AGENT = os.path.join(BUILD, "libleakscope.so")
RUNTIME = tempfile.mkdtemp(prefix="leakscope-peaks-")
os.chmod(RUNTIME, 0o700)
FILL = 8000000


def ls(*args, timeout=60):
    return cli(args, agent_env(RUNTIME), timeout)


def ls_json(*args):
    return cli_json(args, agent_env(RUNTIME))


def sites_of(report, prog):
    out = {}
    for s in report["sites"]:
        out.setdefault(site_function(s, prog), []).append(s)
    return out


def one(sites, fn):
    got = sites.get(fn, [])
    eq(len(got), 1, "sites of %s" % fn)
    return got[0]


@once
def snap():
    prog, path = exit_snapshot("peaks")
    return prog, path


def check_peak(rep, prog, where):
    eq(rep["by"], "peak", where + ": by")
    eq(rep["peak"]["sites_bytes"], FILL + 370248, where + ": bytes at the peak")
    eq(rep["peak"]["sites_blocks"], 236, where + ": blocks at the peak")
    # One thread: every local maximum is checked, the flushed peak is exact.
    eq(rep["totals"]["peak_live_bytes"], FILL + 370248, where + ": peak total")
    top = rep["sites"][0]
    eq(site_function(top, prog), "fill_peak", where + ": top peak consumer")
    eq(top["peak_bytes"], FILL, where + ": fill_peak bytes at the peak")
    eq(top["peak_blocks"], 200, where + ": fill_peak blocks at the peak")
    eq(top["live_bytes"], 0, where + ": fill_peak live now")
    s = sites_of(rep, prog)
    eq(sorted(x["peak_bytes"] for x in s["keep_sized"]), [240, 20000, 350000],
       where + ": keep_sized at the peak")
    eq(one(s, "marker")["peak_bytes"], 8, where + ": marker at the peak")
    ok("hold" not in s and "make_temps" not in s,
       where + ": nothing of hold or make_temps at the peak")


def check_temps(rep, prog, where):
    s = sites_of(rep, prog)
    t = one(s, "make_temps")
    eq((t["temporary_blocks"], t["temporary_bytes"]), (1000, 100000),
       where + ": make_temps temporaries")
    h = one(s, "hold")
    eq((h["temporary_blocks"], h["temporary_bytes"]), (1, 64),
       where + ": hold temporaries (the last block only)")
    ok("fill_peak" not in s and "keep_sized" not in s,
       where + ": no temporaries of fill_peak or keep_sized")
    eq(rep["sites"][0]["temporary_blocks"], 1000, where + ": ranked first")


@check("peaks: --by peak names the site that filled the peak, exactly (exit snapshot)")
def t_peak_exit():
    prog, path = snap()
    check_peak(ls_json("report", "--by", "peak", "--format", "json", path),
               prog, "exit")
    text = ls("report", "--by", "peak", path).stdout.decode()
    contains(text, "Peak: 8370248 bytes in 236 blocks live", "text peak line")
    contains(text, "8000000 bytes in 200 allocations at the peak (now 0 bytes)",
             "text peak site")
    folded = ls("report", "--by", "peak", "--format", "folded", path)
    line = [l for l in folded.stdout.decode().splitlines() if "fill_peak" in l]
    eq(len(line), 1, "folded line of fill_peak")
    ok(line[0].endswith(" %d" % FILL), "folded width is the peak bytes",
       line[0])


@check("peaks: --by temporary counts heaptrack's temporaries exactly")
def t_temporary():
    prog, path = snap()
    check_temps(ls_json("report", "--by", "temporary", "--format", "json",
                        path), prog, "exit")


@check("peaks: --by allocated ranks by bytes allocated, with rates")
def t_allocated():
    prog, path = snap()
    rep = ls_json("report", "--by", "allocated", "--format", "json", path)
    s = sites_of(rep, prog)
    eq(site_function(rep["sites"][0], prog), "fill_peak", "top allocator")
    eq(rep["sites"][0]["allocated_bytes"], FILL, "its bytes")
    eq(one(s, "make_temps")["allocated_blocks"], 1000, "make_temps allocations")
    ok(one(s, "make_temps")["allocated_blocks_per_second"] > 0, "a rate")


@check("peaks: size and lifetime histograms per site and for the process")
def t_histograms():
    prog, path = snap()
    rep = ls_json("report", "--histogram", "--by", "allocated", "--format",
                  "json", path)
    s = sites_of(rep, prog)
    sized = {}
    for site in s["keep_sized"]:
        for b, n in enumerate(site["size_histogram"]):
            if n:
                sized[b] = sized.get(b, 0) + n
    eq(sized, {5: 10, 10: 20, 17: 5}, "keep_sized size buckets")
    t = one(s, "make_temps")
    eq([(b, n) for b, n in enumerate(t["size_histogram"]) if n], [(7, 1000)],
       "make_temps size buckets")
    eq(sum(t["lifetime_histogram"]), 1000, "make_temps frees")
    eq(sum(t["lifetime_histogram"][8:]), 0, "make_temps: none lived 0.5 s")
    h = one(s, "hold")
    eq(sum(h["lifetime_histogram"]), 8, "hold frees")
    eq(sum(h["lifetime_histogram"][:8]), 0, "hold: all lived 0.5 s or more")
    eq(one(s, "fill_peak")["size_histogram"][16], 200, "fill_peak sizes")
    whole = rep["histogram"]
    eq(sum(whole["sizes"]), rep["calls"]["malloc"], "process sizes = mallocs")
    eq(sum(whole["lifetimes"]), rep["calls"]["free"] - 0,
       "process lifetimes = frees")
    text = ls("report", "--histogram", path).stdout.decode()
    contains(text, "Allocation sizes:", "text histogram")
    contains(text, "16-31 B x10", "text size bucket")


@check("peaks: live agent and post-mortem after SIGKILL name the peak consumer")
def t_live_postmortem():
    env = dict(os.environ, LEAKSCOPE_RUNTIME_DIR=RUNTIME, LD_PRELOAD=AGENT,
               LEAKSCOPE_PERIOD_MS="100")
    p = subprocess.Popen([workload("peaks"), "wait"], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        line = p.stdout.readline()
        eq(line, b"ready\n", "workload ready")
        prog = workload("peaks")
        check_peak(ls_json("report", "--by", "peak", "--format", "json",
                           p.pid), prog, "live")
        check_temps(ls_json("report", "--by", "temporary", "--format", "json",
                            p.pid), prog, "live")
        time.sleep(0.5)		# a few post-mortem samples after the work
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait(timeout=10)
    check_peak(ls_json("report", "--postmortem", "--by", "peak", "--format",
                       "json", p.pid), prog, "post-mortem")
    check_temps(ls_json("report", "--postmortem", "--by", "temporary",
                        "--format", "json", p.pid), prog, "post-mortem")
    text = ls("report", "--postmortem", "--by", "peak", p.pid).stdout.decode()
    contains(text, "fill_peak", "post-mortem text names fill_peak")


@check("peaks: bad --by values and combinations are usage errors")
def t_usage():
    prog, path = snap()
    r = ls("report", "--by", "bogus", path)
    eq(r.returncode, 125, "status of --by bogus")
    contains(r.stderr.decode(), "leakscope: invalid value 'bogus' for --by",
             "message")
    r = ls("report", "--by", "peak", "--min-size", "1", path)
    eq(r.returncode, 125, "status of --by peak --min-size")
    contains(r.stderr.decode(), "cannot be combined", "message")


@check("peaks: the peak as a flame graph (svg) and as a pprof profile (peak_space)")
def t_peak_renderers():
    prog, path = snap()
    d = tempfile.mkdtemp(prefix="leakscope-peaks-svg-")
    svg = os.path.join(d, "peak.svg")
    r = ls("report", "--by", "peak", "--format", "svg", "--output", svg, path)
    eq(r.returncode, 0, "svg status")
    with open(svg) as f:
        text = f.read()
    contains(text, "fill_peak", "svg names fill_peak")
    contains(text, "8,370,248 bytes", "svg root width is the peak's bytes")
    prof = os.path.join(d, "peak.pb.gz")
    r = ls("report", "--by", "peak", "--format", "pprof", "--output", prof,
           path)
    eq(r.returncode, 0, "pprof status")
    top = pprof_top(prof, "peak_space")
    eq(top.get("fill_peak", (0, 0))[0], FILL, "pprof peak_space of fill_peak")
    eq(top.get("keep_sized", (0, 0))[0], 370240,
       "pprof peak_space of keep_sized")
    top = pprof_top(prof, "inuse_space")
    eq(top.get("fill_peak", (0, 0))[0], 0, "pprof inuse_space of fill_peak")


@check("peaks: sampled mode estimates the peak consumer (seeded, within 30%)")
def t_peak_sampled():
    prog, path = exit_snapshot("peaks", extra={
        "LEAKSCOPE_SAMPLE_RATE": "65536", "LEAKSCOPE_SAMPLE_SEED": "7"})
    rep = ls_json("report", "--by", "peak", "--format", "json", path)
    eq(rep["mode"], "sampled", "mode")
    top = rep["sites"][0]
    eq(site_function(top, prog), "fill_peak", "top peak consumer, sampled")
    ok(abs(top["peak_bytes"] - FILL) <= 0.3 * FILL,
       "fill_peak estimate %d within 30%% of %d" % (top["peak_bytes"], FILL))
    eq(top["live_bytes"], 0, "fill_peak live now, sampled")


@check("peaks: python3 that builds 30 MB of bytearrays and drops them: the peak names them")
def t_peak_python():
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else None
    if not py:
        from harness import Skip
        raise Skip("no /usr/bin/python3")
    prog, path = exit_snapshot(py, ["-c", "x = [bytearray(100000) for i in "
                                    "range(300)]\ndel x\n"])
    rep = ls_json("report", "--by", "peak", "--format", "json", path)
    top = rep["sites"][0]
    names = " ".join(str(f.get("function")) for f in top["frames"])
    contains(names.lower(), "bytearray", "the top peak consumer allocates bytearrays")
    # 300 x 100001 bytes (the buffer and its NUL), whatever else the
    # interpreter's allocator puts around them.
    ok(30000300 <= top["peak_bytes"] < 31000000,
       "bytes at the peak %d: the 300 bytearrays" % top["peak_bytes"])
    eq(top["live_bytes"], 0, "freed by the end")


@check("peaks: two threads churning: the sites' bytes at the peak add up to the peak within its slack")
def t_peak_threads():
    prog, path = exit_snapshot("threads")
    rep = ls_json("report", "--by", "peak", "--format", "json", path)
    t = rep["totals"]
    ok(abs(rep["peak"]["sites_bytes"] - t["peak_live_bytes"]) <=
       t["peak_slack"], "sites at the peak %d vs peak %d (slack %d)" % (
           rep["peak"]["sites_bytes"], t["peak_live_bytes"], t["peak_slack"]))
    ok(t["peak_live_bytes"] >= t["live_bytes"], "peak at least the live end")
    for x in rep["sites"]:
        ok(0 < x["peak_bytes"] <= x["allocated_bytes"] and
           0 <= x["peak_blocks"] <= x["allocated_blocks"],
           "site %d: at the peak %d bytes in %d blocks, within what it "
           "allocated (%d in %d)" % (x["id"], x["peak_bytes"],
                                     x["peak_blocks"], x["allocated_bytes"],
                                     x["allocated_blocks"]))


@check("peaks: the eBPF tracer (trace --event alloc) has the same exact peak, temporaries and lifetimes")
def t_peak_trace():
    from harness import Skip
    why = bpf_missing()
    if why:
        raise Skip(why)
    prog = workload("peaks")
    reps = {}
    for by in ("peak", "temporary"):
        r = run_process([LEAKSCOPE, "trace", "--format", "json", "--by", by,
                         "-T", "100", "--", prog], timeout=120)
        eq(r.returncode, 0, "trace --by %s status" % by)
        reps[by] = json.loads(r.stdout.decode())
    rep = reps["peak"]
    eq(rep["peak"]["sites_bytes"], FILL + 370248, "trace: bytes at the peak")
    eq(rep["peak"]["sites_blocks"], 236, "trace: blocks at the peak")
    top = rep["sites"][0]
    eq(site_function(top, prog), "fill_peak", "trace: top peak consumer")
    eq((top["peak_bytes"], top["peak_blocks"], top["live_bytes"]),
       (FILL, 200, 0), "trace: fill_peak at the peak, and now")
    s = sites_of(reps["temporary"], prog)
    t = one(s, "make_temps")
    eq((t["temporary_blocks"], t["temporary_bytes"]), (1000, 100000),
       "trace: make_temps temporaries")
    eq(sum(t["lifetime_histogram"][8:]), 0, "trace: make_temps lived < 0.5 s")
    h = one(s, "hold")
    eq((h["temporary_blocks"], sum(h["lifetime_histogram"][:8]),
        sum(h["lifetime_histogram"])), (1, 0, 8),
       "trace: hold's one temporary, 8 lifetimes of 0.5 s or more")
