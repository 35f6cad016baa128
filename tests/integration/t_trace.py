"""`leakscope trace`: the eBPF tracer on processes started without
leakscope (ground truth: tests/workloads/trace-target.c, trace-growth.c).

Every workload is frameless (-fomit-frame-pointer), and so is Debian's
libc: full stacks prove the copied-stack CFI unwinding.  The workload
waits on its stdin until the tracer says it is attached, and says "done"
on its stdout once it has allocated: no sleeps.  Skips, saying why, where
the kernel or the build lacks eBPF support."""

import json
import os
import re
import select
import signal
import subprocess

from harness import (check, once, workload, LEAKSCOPE, Skip, Failure, fail,
                     bpf_missing,
                     need,
                     eq, ok, ge, expect_site, expect_no_temporaries,
                     outer_functions, sites_mentioning, site_text,
                     sites_text, module_base)

TIMEOUT = 30

ALLOC_SITES = [
    ("site_malloc", 400, 4, "heap"),
    ("site_calloc", 240, 2, "heap"),
    ("site_realloc_grow", 1000, 1, "heap"),
    ("site_realloc_fail", 80, 1, "heap"),
    ("site_reallocarray", 120, 1, "heap"),
    ("site_posix_memalign", 256, 1, "heap"),
    ("site_aligned_alloc", 192, 1, "heap"),
    ("site_memalign", 160, 1, "heap"),
    ("site_valloc", 300, 1, "heap"),
    ("site_pvalloc", 100, 1, "heap"),
    ("site_big", 300000, 1, "heap"),
    ("site_deep", 64, 1, "heap"),
    ("site_mmap", 8192, 1, "mmap"),
]


@once
def support():
    """Why tracing cannot run here, or None."""
    return bpf_missing()


def need_bpf():
    why = support()
    if why:
        raise Skip(why)


def readline(f, what, proc=None):
    """One line from a pipe within TIMEOUT seconds."""
    ready, _, _ = select.select([f], [], [], TIMEOUT)
    if not ready:
        raise Failure("no %s within %d s" % (what, TIMEOUT))
    return f.readline().decode("utf-8", "replace")


class Traced:
    def __init__(self, rc, out, err, wl_status):
        self.rc, self.out, self.err, self.wl_status = rc, out, err, wl_status

    def describe(self):
        return "status %s, stderr: %s\n  stdout: %s" % (
            self.rc, self.err.strip()[:800], self.out[:1500])

    def report(self):
        try:
            return json.loads(self.out)
        except ValueError:
            raise Failure("the report is not JSON\n  " + self.describe())


def kill(p):
    if p.poll() is None:
        p.kill()
    p.wait()


def trace_pid(options, wl, mode, stop=True):
    """Start workload wl, trace it with -p, let it run its sites once the
    tracer is attached; stop the tracer (SIGINT) or, stop=False, let it
    end by itself when the workload exits."""
    need_bpf()
    w = subprocess.Popen([workload(wl), mode], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    t = None
    try:
        eq(readline(w.stdout, "ready from %s" % wl), "ready\n", wl)
        t = subprocess.Popen([LEAKSCOPE, "trace", "-p", str(w.pid)] +
                             options, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        line = readline(t.stderr, "line from the tracer")
        if not line.startswith("Attaching to pid %d" % w.pid):
            t.wait(timeout=TIMEOUT)
            fail("the tracer's first line", "Attaching to pid %d" % w.pid,
                 line + t.stderr.read().decode())
        w.stdin.write(b"g")
        w.stdin.flush()
        eq(readline(w.stdout, "done from %s" % wl), "done\n", wl)
        if stop:
            t.send_signal(signal.SIGINT)
        out, err = t.communicate(timeout=TIMEOUT)
        w.stdin.close()
        w.wait(timeout=TIMEOUT)
        return Traced(t.returncode, out.decode(), err.decode(), w.returncode)
    finally:
        kill(w)
        if t:
            kill(t)


def trace_cmd(argv):
    need_bpf()
    r = subprocess.run([LEAKSCOPE, "trace"] + argv, capture_output=True,
                       timeout=TIMEOUT)
    return Traced(r.returncode, r.stdout.decode(), r.stderr.decode(), None)


def exe(wl="trace-target"):
    return workload(wl)


def expect_status(t, status):
    if t.rc != status:
        fail("leakscope trace exit status", status, t.describe())


# ------------------------------------------------------------ --event alloc

@once
def alloc_json():
    t = trace_pid(["--format", "json", "-T", "100"], "trace-target", "wait")
    expect_status(t, 0)
    return t.report()


def alloc_site_check(name, nbytes, nblocks, kind):
    def c():
        expect_site(alloc_json(), name, exe(), nbytes, nblocks, kind)
    return c


for _n, _b, _k, _kind in ALLOC_SITES:
    check("-p: %s holds exactly %d bytes in %d (%s)" % (_n, _b, _k, _kind))(
        alloc_site_check(_n, _b, _k, _kind))


@check("-p: freed temporaries (realloc moves, realloc(p, 0), churn) leave no site")
def _():
    expect_no_temporaries(alloc_json())


@check("-p: full stacks without frame pointers, through the program and libc")
def _():
    rep = alloc_json()
    site = [s for s in rep["sites"]
            if outer_functions(s, exe())[:1] == ["site_deep"]]
    eq(len(site), 1, "site_deep sites")
    eq(outer_functions(site[0], exe()),
       ["site_deep", "deep_3", "deep_2", "deep_1", "run_sites", "main", "_start"],
       "site_deep's program frames")
    libc = [f.get("function") for f in site[0]["frames"]
            if (module_base(f) or "").startswith("libc.so")]
    ok("__libc_start_main" in " ".join(str(x) for x in libc),
       "libc's frames between main and _start", site_text(site[0], 12))


@check("-p: nothing else outstanding: the sites' sum is the report's total")
def _():
    rep = alloc_json()
    want = sum(b for _, b, _, _ in ALLOC_SITES)
    got = sum(s["live_bytes"] for s in rep["sites"])
    eq(got, want, "outstanding bytes over all sites\n    " + sites_text(rep))


@once
def alloc_memleak():
    t = trace_pid(["-a", "-T", "2"], "trace-target", "wait")
    expect_status(t, 0)
    return t


@check("memleak's shape: [HH:MM:SS] Top N stacks..., -a lists addr/size, frames")
def _():
    out = alloc_memleak().out
    lines = out.splitlines()
    ok(re.match(r"^\[\d\d:\d\d:\d\d\] Top 2 stacks with outstanding "
                r"allocations:$", lines[0] if lines else ""),
       "memleak's header line", out[:600])
    ok(re.match(r"^\taddr = [0-9a-f]+ size = 300000$", lines[1]),
       "-a: the block of the top site", out[:600])
    eq(lines[2], "\t300000 bytes in 1 allocation from stack", "top site")
    ok(lines[3].startswith("\t\t site_big+0x") and
       lines[3].endswith("[trace-target]"), "its first frame", out[:600])
    ok("\t8192 bytes in 1 mapping from stack" in lines, "second site", out)
    i = lines.index("\t8192 bytes in 1 mapping from stack")
    ok(re.match(r"^\taddr = [0-9a-f]+ size = 8192$", lines[i - 1]),
       "-a: the mapping of the second site", out)


@check("-o MS is milliseconds (memleak took nanoseconds): -o 600000 hides all")
def _():
    t = trace_pid(["--format", "json", "-o", "600000"], "trace-target", "wait")
    expect_status(t, 0)
    rep = t.report()
    eq(rep.get("sites"), [], "sites at least 10 minutes old")


@check("-s 1 (sampling by bytes, mean 1 byte): every block sampled, weights 1, "
       "the same exact sites, marked as estimates")
def _():
    t = trace_pid(["--format", "json", "-T", "100", "-s", "1"],
                  "trace-target", "wait")
    expect_status(t, 0)
    rep = t.report()
    eq(rep.get("mode"), "sampled", "the report's mode")
    for name, nbytes, nblocks, kind in ALLOC_SITES:
        expect_site(rep, name, exe(), nbytes, nblocks, kind)


@check("-O OBJ --symbols-prefix wl_: an allocator of the program's own, exact")
def _():
    t = trace_pid(["--format", "json", "-O", exe("trace-prefix"),
                   "--symbols-prefix", "wl_"], "trace-prefix", "wait")
    expect_status(t, 0)
    rep = t.report()
    expect_site(rep, "site_prefixed", exe("trace-prefix"), 144, 3, "heap")
    expect_no_temporaries(rep)
    eq(sum(s["live_bytes"] for s in rep["sites"]), 144,
       "outstanding bytes over all sites (libc is not probed)")


@check("--combined-only --stack-mode fp: per-stack totals kept in the kernel, "
       "exact per allocating function")
def _():
    t = trace_pid(["--format", "json", "-T", "100", "--combined-only",
                   "--stack-mode", "fp", "-v"], "trace-target", "wait")
    expect_status(t, 0)
    rep = t.report()
    # Frame pointers lose the callers of frameless code: only the first
    # frame (the return address into the allocating function) is sure.
    for name, nbytes, nblocks, kind in ALLOC_SITES:
        if kind != "heap":
            continue
        got = [s for s in rep["sites"]
               if [f.get("function") for f in s["frames"]][:1] == [name]]
        eq((sum(s["live_bytes"] for s in got), sum(s["live_blocks"] for s in got)),
           (nbytes, nblocks), "%s's bytes and blocks\n    %s" % (
               name, sites_text(rep)))
    m = re.search(r"(\d+) records", t.err)
    ok(m and int(m.group(1)) < 100, "no record per block (-v's count)",
       t.err)


# ------------------------------------------------- commands and exiting ones

@once
def cmd_c():
    t = trace_cmd(["--format", "json", "-T", "100", "-c", "%s now" % exe()])
    expect_status(t, 0)
    return t.report()


@check("-c \"CMD\": probes in place before the command runs: exact sites")
def _():
    rep = cmd_c()
    for name, nbytes, nblocks, kind in ALLOC_SITES:
        expect_site(rep, name, exe(), nbytes, nblocks, kind)


@check("-- CMD ARGS: the command's exit status is the tracer's")
def _():
    t = trace_cmd(["--format", "json", "--", "sh", "-c", "exit 7"])
    expect_status(t, 7)


@check("a process exiting during the trace: report at its exit, symbols resolve")
def _():
    t = trace_pid(["--format", "json", "-T", "100"], "trace-target", "exit",
                  stop=False)
    expect_status(t, 0)
    eq(t.wl_status, 0, "the workload's exit status")
    rep = t.report()
    for name, nbytes, nblocks, kind in ALLOC_SITES[:4]:
        expect_site(rep, name, exe(), nbytes, nblocks, kind)


@check("python3 (a real, frameless program): 10 bytearrays of 200000 bytes, "
       "stack through the interpreter to main")
def _():
    py = need("python3")
    t = trace_cmd(["--format", "json", "-T", "5", "-c",
                   "%s -c 'import os; x = [bytearray(200000) for _ in "
                   "range(10)]; os._exit(0)'" % py])
    expect_status(t, 0)
    sites = [s for s in t.report()["sites"]
             if s["live_blocks"] == 10 and s["live_bytes"] == 2000010]
    eq(len(sites), 1, "sites of 10 blocks, 2000010 bytes\n    " +
       sites_text(t.report()))
    names = [f.get("function") for f in sites[0]["frames"]]
    ok("PyByteArray_Resize" in names and "Py_BytesMain" in names,
       "the interpreter's frames from bytearray to its main",
       site_text(sites[0], 30))


# ---------------------------------------------------------- growth events

def growth(event, mode):
    t = trace_pid(["--format", "json", "--event", event], "trace-growth",
                  mode)
    expect_status(t, 0)
    return t.report()


@check("--event brk: grow_brk's two sbrk(256 KiB) calls, 524288 bytes")
def _():
    expect_site(growth("brk", "brk"), "grow_brk", exe("trace-growth"),
                524288, 2, "brk")


@check("--event mmap: grow_mmap's 5 mappings (61440 bytes); unmapped ones gone")
def _():
    rep = growth("mmap", "mmap")
    expect_site(rep, "grow_mmap", exe("trace-growth"), 61440, 5, "mmap")
    expect_no_temporaries(rep)


@check("--event page-fault: fault_pages' 40 pages (MADV_NOHUGEPAGE), 163840 bytes")
def _():
    expect_site(growth("page-fault", "fault"), "fault_pages",
                exe("trace-growth"), 163840, 40, "fault")


@check("--event page-fault --format svg: Gregg's page-fault flame graph")
def _():
    t = trace_pid(["--format", "svg", "--event", "page-fault"],
                  "trace-growth", "fault")
    expect_status(t, 0)
    ok(t.out.startswith("<?xml") and "</svg>" in t.out, "an SVG document",
       t.out[:200])
    ok("fault_pages" in t.out and "grow_brk" not in t.out,
       "fault_pages (and no other workload function) in the graph",
       t.out[:300])


@once
def kernel_report():
    return growth("kernel", "kernel")


def kernel_sites(fn):
    return sites_mentioning(kernel_report(), lambda f: f == fn)


@check("--event kernel: 8 pipes held: 2 kmallocs each under alloc_pipe_info")
def _():
    sites = kernel_sites("alloc_pipe_info")
    ge(len(sites), 1, "sites under alloc_pipe_info")
    eq(sum(s["live_blocks"] for s in sites), 16,
       "blocks under alloc_pipe_info\n    " +
       "\n    ".join(site_text(s) for s in sites))
    eq(set(s["kind"] for s in sites), {"kernel"}, "their kind")


@check("--event kernel: 4 eventfds held: allocations under do_eventfd")
def _():
    sites = kernel_sites("do_eventfd")
    ge(sum(s["live_blocks"] for s in sites), 4, "blocks under do_eventfd")
    eq(sum(s["live_blocks"] for s in sites) % 4, 0,
       "blocks under do_eventfd, per eventfd alike")


# ------------------------------------------------------------------ errors

def expect_error(argv, pattern, status=125):
    need_bpf()
    r = subprocess.run([LEAKSCOPE, "trace"] + argv, capture_output=True,
                       timeout=TIMEOUT)
    err = r.stderr.decode()
    see = r"( \(see 'leakscope trace --help'\))?"
    if r.returncode != status or not re.fullmatch(pattern + see + r"\n", err):
        fail("leakscope trace %s" % " ".join(argv),
             "status %d and one line /%s/" % (status, pattern),
             "status %d, stderr %r" % (r.returncode, err))


@check("errors: without root or CAP_BPF+CAP_PERFMON: one line, status 1")
def _():
    need_bpf()
    setpriv = need("setpriv")
    r = subprocess.run([setpriv, "--reuid=65534", "--regid=65534",
                        "--clear-groups", "--inh-caps=-all", LEAKSCOPE,
                        "trace", "-p", "1"], capture_output=True,
                       timeout=TIMEOUT)
    if "Permission denied" in r.stderr.decode():
        raise Skip("the build is not reachable by nobody")
    eq((r.returncode, r.stderr.decode()),
       (1, "leakscope: tracing needs root, or CAP_BPF and CAP_PERFMON\n"),
       "status and stderr as nobody")


def dead_pid():
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


@check("errors: a dead pid, a missing -O object: one line, status 1; bad "
       "options: 125")
def _():
    pid = dead_pid()
    expect_error(["-p", str(pid)], r"leakscope: no such process: %d" % pid, 1)
    expect_error(["-p", str(os.getpid()), "-O", "/nonexistent/libjemalloc.so"],
                 r"leakscope: cannot read the allocator object "
                 r"'/nonexistent/libjemalloc.so': No such file or directory", 1)
    expect_error(["-p", str(os.getpid()), "-O", "/etc/hostname"],
                 r"leakscope: '/etc/hostname' is not an ELF file", 1)
    expect_error(["--event", "sbrk", "-p", "1"],
                 r"leakscope: invalid value 'sbrk' for --event: expected "
                 r"one of alloc, brk, mmap, page-fault, kernel")
    expect_error([], r"leakscope: no process to trace: .*")
    expect_error(["-p", "1", "-c", "true"],
                 r"leakscope: give one of -p, -c and -- CMD")


@check("--stack-bytes 256: the same blocks, and site_deep's stack a strict prefix of "
       "the whole one (the copy ends before _start's frame); --wa-missing-free accepted")
def _():
    whole = alloc_json()
    t = trace_pid(["--format", "json", "-T", "100", "--stack-bytes", "256",
                   "--wa-missing-free"], "trace-target", "wait")
    expect_status(t, 0)
    rep = t.report()
    for name, nbytes, nblocks, kind in ALLOC_SITES:
        expect_site(rep, name, exe(), nbytes, nblocks, kind)

    def deep(r):
        s = [x for x in r["sites"] if outer_functions(x, exe())[:1] == ["site_deep"]]
        eq(len(s), 1, "site_deep sites")
        return [(f.get("function"), f.get("line")) for f in s[0]["frames"]]
    full, cut = deep(whole), deep(rep)
    ok(0 < len(cut) < len(full) and full[:len(cut)] == cut,
       "site_deep's frames with 256 bytes copied: a strict prefix of the whole stack",
       "whole %s\ncut %s" % (full, cut))
