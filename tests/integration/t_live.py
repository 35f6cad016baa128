"""Live processes: report/olds/stats/snapshot/reset/watch/top on a running
agent, growth trends, post-mortem after SIGKILL, and bad inputs.

Ground truth: tests/workloads/growth.c (five sites of known shape over 24 s,
sampled by the agent once per second) and slow.c (a steady 10 KB/s leak).
Every agent here gets a private runtime dir (LEAKSCOPE_RUNTIME_DIR) so tests
never see each other's sockets.
"""
import json
import shutil
import os
import random
import signal
import socket
import subprocess
import tempfile
import time

from harness import agent_env, wait_socket
from harness import (cli, cli_json, check, once, workload, eq, ok, ge, contains, fail,
                     run_process, site_function, LEAKSCOPE, BUILD, Failure,
                     Skip, shorten)

AGENT = os.path.join(BUILD, "libleakscope.so")
RUNTIME = tempfile.mkdtemp(prefix="leakscope-live-")
os.chmod(RUNTIME, 0o700)
GROWTH_SECONDS = 24
LINEAR_RATE = 81920.0


def env(extra=None):
    return agent_env(RUNTIME, extra)


def start(prog, args=(), extra=None):
    """Start prog with the agent preloaded by hand, as a user would."""
    e = env(extra)
    e["LD_PRELOAD"] = AGENT
    p = subprocess.Popen([prog] + list(args), env=e, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True)
    if wait_socket(RUNTIME, p.pid, 2):
        return p
    p.kill()
    raise Failure("the agent in pid %d never opened its socket in %s" % (
        p.pid, RUNTIME))


def ls(*args, timeout=60):
    return cli(args, env(), timeout)


def ls_json(*args):
    return cli_json(args, env())


def by_function(report, prog):
    out = {}
    for site in report["sites"]:
        fn = site_function(site, prog)
        if fn:
            out.setdefault(fn, []).append(site)
    return out


@once
def growth():
    """One 24 s run of growth.c, examined while it runs and after a kill."""
    prog = workload("growth")
    p = start(prog, [str(GROWTH_SECONDS + 30)])
    t0 = time.monotonic()
    res = {"prog": prog, "pid": p.pid}
    time.sleep(2.0)
    res["stats"] = ls_json("stats", "--format", "json", p.pid)
    res["report"] = ls_json("report", "--format", "json", p.pid)
    res["olds"] = ls("olds", p.pid, 3)
    snap = os.path.join(RUNTIME, "growth.lsnap")
    res["snapshot"] = ls("snapshot", p.pid, "-o", snap)
    res["from_file"] = ls("report", "--format", "json", "--show-allocs", snap)
    res["top"] = ls("top", p.pid, "--count", "1")
    time.sleep(max(0, GROWTH_SECONDS - (time.monotonic() - t0)))
    res["growing"] = ls_json("report", "--growing", "--format", "json", p.pid)
    res["final"] = ls_json("report", "--format", "json", p.pid)
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    res["post"] = ls("report", "--postmortem", "--format", "json", p.pid)
    res["post_text"] = ls("report", "--postmortem", p.pid)
    return res


def trend_of(report, prog, fn):
    sites = by_function(report, prog).get(fn, [])
    if len(sites) != 1:
        fail("sites of %s" % fn, 1, len(sites))
    if "trend" not in sites[0]:
        fail("%s has a trend" % fn, "trend object", shorten(json.dumps(sites[0])))
    return sites[0]["trend"]


@check("live: stats, report and olds answer for a running pid")
def t_live_basic():
    g = growth()
    s = g["stats"]
    eq(s["pid"], g["pid"], "stats pid")
    ge(s["totals"]["live_bytes"], 8192 * 10, "live bytes after 2 s")
    ge(s["calls"]["malloc"], 100, "malloc calls after 2 s")
    ok(s["mallinfo"]["arena"] > 0, "allocator statistics present")
    eq(g["report"]["reason"], "live", "report reason")
    ok("site_g_linear" in by_function(g["report"], g["prog"]),
       "the linear site is in the live report")
    eq(g["olds"].returncode, 0, "olds status")
    ages = [float(l.split()[1][:-1]) for l in g["olds"].stdout.decode().splitlines()
            if l.strip().startswith("age ")]
    eq(len(ages), 3, "olds lists 3 blocks")
    ok(ages == sorted(ages, reverse=True), "olds: oldest first", repr(ages))


@check("live: snapshot -o FILE saves a snapshot that report FILE renders, with blocks")
def t_snapshot_file():
    g = growth()
    eq(g["snapshot"].returncode, 0, "snapshot status")
    eq(g["from_file"].returncode, 0, "report FILE status")
    rep = json.loads(g["from_file"].stdout.decode())
    eq(rep["pid"], g["pid"], "pid in the saved snapshot")
    nblocks = sum(len(s.get("blocks", [])) for s in rep["sites"])
    eq(nblocks, rep["totals"]["live_blocks"], "every live block saved")


@check("live: top prints the sites by growth rate")
def t_top():
    g = growth()
    eq(g["top"].returncode, 0, "top status")
    contains(g["top"].stdout.decode(), "leakscope top - pid %d" % g["pid"], "top header")
    contains(g["top"].stdout.decode(), "site_g_", "a growth site in top")


@check("trend: a constant-rate leak with churn on the same stack is linear, rate within 10%")
def t_linear():
    g = growth()
    t = trend_of(g["final"], g["prog"], "site_g_linear")
    eq(t["label"], "linear", "site_g_linear label")
    ok(abs(t["bytes_per_second"] - LINEAR_RATE) <= 0.1 * LINEAR_RATE,
       "rate %.0f B/s vs %.0f" % (t["bytes_per_second"], LINEAR_RATE))


@check("trend: a cache that fills and stops is saturating")
def t_cache():
    g = growth()
    eq(trend_of(g["final"], g["prog"], "site_g_cache")["label"], "saturating",
       "site_g_cache label")


@check("trend: live bytes doubling every 4 s is exponential")
def t_double():
    g = growth()
    eq(trend_of(g["final"], g["prog"], "site_g_double")["label"], "exponential",
       "site_g_double label")


@check("trend: steady churn with constant live bytes is constant")
def t_steady():
    g = growth()
    eq(trend_of(g["final"], g["prog"], "site_g_steady")["label"], "constant",
       "site_g_steady label")


@check("trend: --growing lists the linear and exponential sites only; temporaries never")
def t_growing():
    g = growth()
    fns = set(by_function(g["growing"], g["prog"]))
    ok("site_g_linear" in fns and "site_g_double" in fns,
       "growing sites reported", repr(sorted(fns)))
    for fn in ("site_g_cache", "site_g_steady", "site_g_temp"):
        ok(fn not in fns, "%s not reported as growing" % fn, repr(sorted(fns)))


@check("post-mortem: after SIGKILL, report --postmortem PID gives the last state with stacks and trends")
def t_postmortem():
    g = growth()
    r = g["post"]
    eq(r.returncode, 0, "report --postmortem status")
    rep = json.loads(r.stdout.decode())
    eq(rep["pid"], g["pid"], "pid")
    eq(rep["postmortem"], True, "marked post-mortem")
    sites = by_function(rep, g["prog"])
    lin = sites.get("site_g_linear", [])
    eq(len(lin), 1, "linear site in the post-mortem report")
    # The file is current to within one sampling period (1 s): 10 leaks/s.
    want = g["final"]["totals"]["live_bytes"]
    ok(abs(rep["totals"]["live_bytes"] - want) <= 3 * LINEAR_RATE,
       "post-mortem live bytes %d near the last live report's %d"
       % (rep["totals"]["live_bytes"], want))
    eq(lin[0]["trend"]["label"], "linear", "post-mortem trend of the leak")
    contains(g["post_text"].stdout.decode(), "post-mortem", "text says post-mortem")
    contains(g["post_text"].stdout.decode(), "site_g_linear", "text has the stack")


@check("reset: forgets the blocks seen so far; later reports show only newer ones")
def t_reset():
    prog = workload("slow")
    p = start(prog)
    try:
        time.sleep(0.6)
        before = ls_json("report", "--format", "json", p.pid)
        r = ls("reset", p.pid)
        eq(r.returncode, 0, "reset status")
        after = ls_json("report", "--format", "json", p.pid)
        time.sleep(0.5)
        later = ls_json("report", "--format", "json", p.pid)
    finally:
        p.wait(timeout=30)
    eq(p.returncode, 0, "target exit status after reset")
    ge(before["totals"]["live_bytes"], 4000, "live bytes before reset")
    ok(after["totals"]["live_bytes"] <= 2000,
       "live bytes right after reset: %d" % after["totals"]["live_bytes"])
    ok(3000 <= later["totals"]["live_bytes"] - after["totals"]["live_bytes"] <= 8000,
       "0.5 s later about 5000 new bytes: %d" %
       (later["totals"]["live_bytes"] - after["totals"]["live_bytes"]))


@check("watch: slices then a trend summary naming the growing site")
def t_watch():
    prog = workload("slow")
    p = start(prog)
    try:
        r = ls("watch", p.pid, "--interval", "0.3", "--slices", "5")
    finally:
        p.wait(timeout=30)
    eq(r.returncode, 0, "watch status")
    out = r.stdout.decode()
    eq(out.count("[slice "), 5, "five slices")
    contains(out, "site_tick", "the leaking site named")
    summary = out.split("Trend over", 1)
    ok(len(summary) == 2 and "linear" in summary[1] and "growing" in summary[1],
       "summary labels the leak linear and growing", shorten(out))


# --------------------------------------------------------------- bad inputs

def expect_error(r, needle, what):
    ok(r.returncode != 0, "%s: non-zero exit" % what, r.describe())
    err = r.stderr.decode()
    lines = [l for l in err.splitlines() if l.strip()]
    ok(len(lines) == 1 and lines[0].startswith("leakscope: "),
       "%s: one 'leakscope:' line on stderr" % what, err)
    contains(err, needle, what)


@check("errors: a pid without an agent, a dead pid, a stale socket, a missing file, a corrupt file")
def t_bad_targets():
    plain = subprocess.Popen(["sleep", "5"], env=env())
    try:
        expect_error(ls("report", plain.pid), "has no leakscope agent", "pid without agent")
        # A socket left behind by a dead agent of this pid.
        path = os.path.join(RUNTIME, "%d.sock" % plain.pid)
        s = socket.socket(socket.AF_UNIX)
        s.bind(path)
        s.close()
        expect_error(ls("stats", plain.pid), "stale socket", "stale socket")
        os.unlink(path)
    finally:
        plain.kill()
        plain.wait()
    expect_error(ls("report", plain.pid), "no process with pid", "dead pid")
    expect_error(ls("report", "/nonexistent/snap.lsnap"), "cannot open", "missing file")
    bad = os.path.join(RUNTIME, "corrupt.lsnap")
    with open(bad, "wb") as f:
        f.write(b"LEAKSCP\0" + bytes(range(256)) * 4)
    expect_error(ls("report", bad), "snapshot", "corrupt file")
    expect_error(ls("report", "--postmortem", plain.pid), "no post-mortem file",
                 "post-mortem of a process that left none")
    expect_error(ls("olds", "x"), "", "olds with a bad pid")
    expect_error(ls("watch", "1", "--slices", "0"), "invalid value", "watch --slices 0")
    expect_error(ls("snapshot", "1"), "expected PID and -o FILE", "snapshot without -o")
    expect_error(ls("frobnicate"), "unknown command", "unknown command")


@check("errors: another user's process is refused with a clear message")
def t_other_user():
    if os.getuid() != 0 or not os.path.exists("/usr/bin/setpriv"):
        raise Skip("needs root and setpriv to act as another user")
    prog = workload("slow")
    p = start(prog)
    try:
        r = run_process(["setpriv", "--reuid=65534", "--regid=65534",
                         "--clear-groups", LEAKSCOPE, "stats", str(p.pid)],
                        env=env(), timeout=30)
    finally:
        p.wait(timeout=30)
    if r.returncode == 126 or b"Permission denied" in r.stderr and b"leakscope:" not in r.stderr:
        raise Skip("build/leakscope is not executable by nobody")
    expect_error(r, "another user", "stats as nobody on root's process")


@check("malformed requests (fuzzed) get errors and never harm the target")
def t_fuzz():
    p = start(workload("growth"), ["6"])
    rnd = random.Random(7)
    path = os.path.join(RUNTIME, "%d.sock" % p.pid)
    answers = []
    payloads = [b"", b"\n", b"snapshot extra\n", b"SNAPSHOT\n", b"x" * 5000,
                b"\x00\xff\n", b"ping", b"reset now\n"]
    payloads += [bytes(rnd.randrange(256) for _ in range(rnd.randrange(1, 300)))
                 for _ in range(300)]
    t0 = time.monotonic()
    try:
        for data in payloads:
            s = socket.socket(socket.AF_UNIX)
            s.settimeout(5)
            s.connect(path)
            try:
                s.sendall(data)
                s.shutdown(socket.SHUT_WR)
                answers.append(s.recv(100))
            except OSError:
                answers.append(b"")
            s.close()
        s = socket.socket(socket.AF_UNIX)
        s.settimeout(5)
        s.connect(path)
        s.sendall(b"ping\n")
        pong = s.recv(100)
        s.close()
        fuzz_seconds = time.monotonic() - t0
    finally:
        p.wait(timeout=30)
    ok(fuzz_seconds < 5, "the fuzzing ran while the target lived (%.1fs)" % fuzz_seconds)
    eq(p.returncode, 0, "target exit status after the fuzzing")
    eq(pong, b"OK leakscope 1\n", "the agent still answers ping")
    ok(all(a.startswith(b"ERR ") for a in answers),
       "every malformed request answered with ERR",
       repr([a for a in answers if not a.startswith(b"ERR ")][:5]))


@check("top in a real terminal (tmux): draws the table and quits on q")
def t_top_tty():
    if not shutil.which("tmux"):
        raise Skip("tmux is not installed")
    p = start(workload("growth"), ["20"])
    session = "leakscope-test-%d" % os.getpid()
    done = os.path.join(RUNTIME, "top-status")
    try:
        # The status goes in under another name, then is renamed: `echo $?
        # > done` creates the file before it writes, and a reader between
        # the two read nothing.
        cmd = ("LEAKSCOPE_RUNTIME_DIR=%s %s top %d --interval 0.5; "
               "echo $? > %s.tmp && mv %s.tmp %s" % (
                   RUNTIME, LEAKSCOPE, p.pid, done, done, done))
        subprocess.run(["tmux", "new-session", "-d", "-s", session, "-x", "150",
                        "-y", "30", cmd], check=True, env=env())
        screen = ""
        for _ in range(50):
            time.sleep(0.1)
            screen = subprocess.run(["tmux", "capture-pane", "-t", session, "-p"],
                                    capture_output=True, text=True).stdout
            if "site_g_" in screen:
                break
        contains(screen, "leakscope top - pid %d" % p.pid, "top header on screen")
        contains(screen, "(q quits)", "interactive hint")
        contains(screen, "site_g_linear", "a site on screen")
        subprocess.run(["tmux", "send-keys", "-t", session, "q"], check=True)
        for _ in range(50):
            if os.path.exists(done):
                break
            time.sleep(0.1)
        ok(os.path.exists(done), "top quit on q")
        with open(done) as f:
            eq(f.read().strip(), "0", "top exit status")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session],
                       stderr=subprocess.DEVNULL)
        p.kill()
        p.wait()


@check("a forked worker (no exec) gets its own control socket after a second, and its post-mortem after SIGKILL")
def t_prefork():
    prog = workload("prefork")
    e = env()
    e["LD_PRELOAD"] = AGENT
    p = subprocess.Popen([prog, "6"], env=e, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        child = int(p.stdout.readline())
        ok(wait_socket(RUNTIME, child, 3), "the worker opened its own socket")
        time.sleep(1.5)
        rep = ls_json("report", "--format", "json", child)
        eq(rep["pid"], child, "report pid")
        leak = [s for s in rep["sites"] if site_function(s, prog) == "site_worker_leak"]
        eq(len(leak), 1, "the worker's leak site")
        ge(leak[0]["live_bytes"], 4096 * 30, "worker leak after ~2.5 s")
        os.kill(child, signal.SIGKILL)
        p.wait(timeout=30)
        r = ls("report", "--postmortem", "--format", "json", child)
        eq(r.returncode, 0, "post-mortem of the worker: " + r.stderr.decode())
        post = json.loads(r.stdout.decode())
        ok(any(site_function(s, prog) == "site_worker_leak" for s in post["sites"]),
           "post-mortem has the worker's leak")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@check("an agent's start removes dead processes' sockets and week-old post-mortem files, nothing else")
def t_sweep():
    d = tempfile.mkdtemp(prefix="leakscope-sweep-")
    os.chmod(d, 0o700)
    # pid_max is at most 4194304: these pids cannot exist.
    names = {
        "4194999.sock": False,      # dead pid's socket: removed
        "4194998.pm": False,        # dead pid's post-mortem, 8 days old: removed
        "4194997.pm": True,         # dead pid's post-mortem, an hour old: kept
        "%d.sock" % os.getpid(): True,   # a live pid: kept
        "%d.pm" % os.getpid(): True,
        "123abc.sock": True,        # not ours to judge
        "notes.pm": True,
        "4194996.lsnap": True,
    }
    for n in names:
        with open(os.path.join(d, n), "w"):
            pass
    old = time.time() - 8 * 86400
    os.utime(os.path.join(d, "4194998.pm"), (old, old))
    hour = time.time() - 3600
    os.utime(os.path.join(d, "4194997.pm"), (hour, hour))
    e = env({"LEAKSCOPE_RUNTIME_DIR": d})
    e["LD_PRELOAD"] = AGENT
    p = subprocess.Popen([workload("slow")], env=e, stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL)
    try:
        deadline = time.time() + 5
        while time.time() < deadline and (
                os.path.exists(os.path.join(d, "4194999.sock")) or
                os.path.exists(os.path.join(d, "4194998.pm"))):
            time.sleep(0.05)
        for n, kept in sorted(names.items()):
            eq(os.path.exists(os.path.join(d, n)), kept,
               "%s %s" % (n, "kept" if kept else "removed"))
        ok(os.path.exists(os.path.join(d, "%d.sock" % p.pid)),
           "the new agent's own socket is there")
    finally:
        p.kill()
        p.wait()
        shutil.rmtree(d, ignore_errors=True)


FASTBIN_CHUNKS = 2000000
SLOW_ROUND_MS = 40


@check("live: the agent's counts of the allocator (mallinfo2) do not stall the "
       "program: 2M scattered chunks in a fast bin, growth sampled every 100 ms "
       "for 4 s, at most 2 rounds of its allocations over %d ms; stats still "
       "show the allocator's figures" % SLOW_ROUND_MS)
def t_mallinfo_stall():
    prog = workload("fastbins")
    e = env({"LEAKSCOPE_PERIOD_MS": "100"})
    e["LD_PRELOAD"] = AGENT
    p = subprocess.Popen([prog, str(FASTBIN_CHUNKS), "4", str(SLOW_ROUND_MS)], env=e,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        time.sleep(2.5)
        s = ls_json("stats", "--format", "json", p.pid)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    eq(p.returncode, 0, "fastbins exit status (stderr: %s)" % err.decode()[-300:])
    line = out.decode().strip()
    f = dict(kv.split("=") for kv in line.split()[1:])
    if f.get("schedstat") != "1":
        print("# no /proc/thread-self/schedstat: the rounds' times include "
              "preemption")
    eq(int(f["chunks"]), FASTBIN_CHUNKS, "chunks in the fast bin")
    # the heap is what the check is about: one count of it holds the
    # arena's lock longer than a slow round
    ge(float(f["count_ms"]), SLOW_ROUND_MS, "ms one mallinfo2() takes on this heap")
    ge(int(f["rounds"]), 1000, "rounds of allocations in 4 s")
    ok(int(f["slow"]) <= 2, "at most 2 rounds over %d ms (one count, one "
       "preemption)" % SLOW_ROUND_MS, line)
    ok(float(f["max_ms"]) < 1000, "no round waits a second (the agent counting "
       "back to back starved the program for 18.9 s before the counts were "
       "rationed)", line)
    ok(s["mallinfo"]["arena"] > 0, "stats still show the allocator's figures",
       repr(s.get("mallinfo")))
