"""Mappings that are not live memory (issue 12): the chunks an allocator
other than libc maps for its heap blocks, and PROT_NONE reservations, are
kept apart from the live totals (ground truth: mapped-totals.c,
libtinyalloc.c); redis-server (linked with jemalloc) live vs VmRSS."""

import os
import subprocess
import time

from harness import (check, once, workload, leakscope, root_report,
                     expect_status, expect_site, expect_totals_consistent,
                     need, free_port, eq, ok, LEAKSCOPE)

MIB = 1 << 20


@once
def run():
    r = leakscope(["--format", "json"], [workload("mapped-totals")])
    expect_status(r, 0, "mapped-totals exit status")
    return root_report(r)


@check("the tiny allocator's blocks are live; its chunks are not sites")
def t_blocks():
    rep = run()
    expect_site(rep, "site_blocks", workload("mapped-totals"), 3000000, 30)
    kinds = sorted(set(s["kind"] for s in rep["sites"]))
    eq(kinds, ["heap", "mmap"], "kinds of the sites listed")


@check("program mappings count, MAP_FIXED inside a reservation too")
def t_program_maps():
    rep = run()
    expect_site(rep, "site_prog_map", workload("mapped-totals"), 12288, 1,
                "mmap")
    expect_site(rep, "site_fixed", workload("mapped-totals"), 8192, 1,
                "mmap")


@check("live totals: blocks and program mappings only (3020480 in 32)")
def t_totals():
    rep = run()
    t = rep["totals"]
    eq((t["live_bytes"], t["live_blocks"]), (3020480, 32), "live totals")
    ok(t["peak_live_bytes"] < 3020480 + t["peak_slack"] + 1,
       "peak without chunks or reservation", str(t))
    expect_totals_consistent(rep)


@check("allocator chunks shown apart: 2 or 3 whole MiB")
def t_allocator_apart():
    a = run()["totals"]["allocator_mapped_bytes"]
    ok(a in (2 * MIB, 3 * MIB), "allocator_mapped_bytes 2 or 3 MiB", str(a))


@check("the 64 MiB PROT_NONE reservation shown apart, less the fixed part")
def t_reserved():
    eq(run()["totals"]["reserved_bytes"], 64 * MIB - 8192, "reserved_bytes")


@check("text report: the line of what is not counted as live")
def t_text():
    r = leakscope([], [workload("mapped-totals")])
    expect_status(r, 0, "mapped-totals exit status")
    text = r.files["report"]
    ok("67100672 bytes reserved" in text.replace(",", ""),
       "reserved in the text report", text[-600:])


def vm_rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    return 0


@check("redis-server (jemalloc): live bytes near used_memory, below VmRSS")
def t_redis():
    srv, cli = need("redis-server"), need("redis-cli")
    port = free_port()
    out = os.path.join(os.environ.get("TMPDIR", "/tmp"),
                       "leakscope-redis-%d.json" % os.getpid())
    p = subprocess.Popen([LEAKSCOPE, "run", "--format", "json", "--output",
                          out, "--", srv, "--port", str(port), "--bind",
                          "127.0.0.1", "--save", "", "--appendonly", "no"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        cmd = [cli, "-h", "127.0.0.1", "-p", str(port)]
        for _ in range(100):
            if subprocess.run(cmd + ["ping"], capture_output=True,
                              timeout=10).stdout.strip() == b"PONG":
                break
            time.sleep(0.1)
        payload = "".join("SET k%d %s\n" % (i, "v" * 1000)
                          for i in range(5000))
        subprocess.run(cmd, input=payload.encode(), capture_output=True,
                       timeout=60)
        pid = int(subprocess.run(cmd + ["info", "server"],
                                 capture_output=True, timeout=10).stdout
                  .split(b"process_id:")[1].split()[0])
        rss = vm_rss(pid)
        used = int(subprocess.run(cmd + ["info", "memory"],
                                  capture_output=True, timeout=10).stdout
                   .split(b"used_memory:")[1].split()[0])
        subprocess.run(cmd + ["shutdown", "nosave"], capture_output=True,
                       timeout=10)
        p.wait(timeout=60)
        with open(out) as f:
            import json
            rep = [json.loads(x) for x in f if x.strip()][-1]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        if os.path.exists(out):
            os.unlink(out)
    # Counting jemalloc's chunks too gave about 3x used_memory (20.6 MB
    # for 6.5 MB) and close to VmRSS.
    live = rep["totals"]["live_bytes"]
    why = "live %d, used_memory %d, VmRSS %d, allocator %d" % (
        live, used, rss, rep["totals"]["allocator_mapped_bytes"])
    ok(live <= used + MIB, "redis live bytes <= its used_memory + 1 MiB",
       why)
    ok(live <= rss, "redis live bytes <= VmRSS", why)
    ok(rep["totals"]["allocator_mapped_bytes"] > 0,
       "jemalloc's chunks shown apart", str(rep["totals"]))
