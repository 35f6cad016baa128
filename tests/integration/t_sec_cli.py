"""The CLI's low-severity holes (docs/SECURITY.md, "The CLI, the runtime dir
and the server"), each checked as the mistake it was:

- report and snapshot files created 0644 (they hold the command line and
  addresses): now 0600 under umask 022;
- secrets on a command line (-setcookie, --password=...) printed by every
  report: now <redacted> in text, JSON and the exit report;
- `check` of a stopped process (SIGSTOP) waited 120 s: now one line at
  once, status 1;
- a snapshot naming a FIFO as a module path, or a module whose debug link
  names a FIFO beside it, hung `report` and `diff`;
- `trace` stopped by Ctrl+C after its first periodic report died of the
  signal without a final report.
"""
import json
import os
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from harness import (check, workload, exit_snapshot, run_process, leakscope,
                     eq, ok, contains, need, LEAKSCOPE)
from t_live import start, ls, env


def umask022(fn):
    def wrapped(*a, **kw):
        old = os.umask(0o022)
        try:
            return fn(*a, **kw)
        finally:
            os.umask(old)
    return wrapped


@check("outputs: snapshot -o and report --output files are created 0600 under umask 022")
@umask022
def t_outputs_0600():
    d = tempfile.mkdtemp(prefix="leakscope-sec-out-")
    p = start(workload("growth"), ["30"])
    try:
        snap = os.path.join(d, "s.lsnap")
        r = ls("snapshot", p.pid, "-o", snap)
        eq(r.returncode, 0, "snapshot: " + r.stderr.decode())
        rep = os.path.join(d, "r.txt")
        r = ls("report", snap, "--output", rep)
        eq(r.returncode, 0, "report: " + r.stderr.decode())
        old = os.path.join(d, "old.txt")    # an existing 0644 file replaced
        with open(old, "w") as f:
            f.write("x")
        os.chmod(old, 0o644)
        r = ls("report", snap, "--output", old)
        eq(r.returncode, 0, "report over a 0644 file: " + r.stderr.decode())
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
    for f in (snap, rep, old):
        eq(stat.S_IMODE(os.stat(f).st_mode), 0o600, os.path.basename(f) + "'s mode")
    shutil.rmtree(d)


@check("secrets on the command line: -setcookie's and --password='s values are <redacted> in the exit report, its JSON and report")
def t_redacted():
    args = ["sh", "-c", ":", "x", "-setcookie", "C00KIEVALUE",
            "--password=HUNTER2", "--token", "T0KENVALUE"]
    r = leakscope(["--format", "json"], args)
    doc = r.files["report"]
    for secret in ("C00KIEVALUE", "HUNTER2", "T0KENVALUE"):
        ok(secret not in doc, "the JSON exit report hides " + secret)
    eq(json.loads(doc)["command"][3:],
       ["x", "-setcookie", "<redacted>", "--password=<redacted>", "--token",
        "<redacted>"], "the command as the JSON shows it")
    prog, snap = exit_snapshot("basic", ["--password", "HUNTER2"])
    for fmt in ("text", "json"):
        rr = run_process([LEAKSCOPE, "report", snap, "--format", fmt])
        eq(rr.returncode, 0, "report --format " + fmt)
        ok(b"HUNTER2" not in rr.stdout, "report --format %s hides the password" % fmt)
        contains(rr.stdout.decode(), "--password <redacted>" if fmt == "text"
                 else '"--password","<redacted>"', fmt + " command line")


def proc_state(pid):
    """The state letter of /proc/PID/stat (after the command's ')')."""
    with open("/proc/%d/stat" % pid) as f:
        return f.read().rsplit(")", 1)[1].split()[0]


@check("check of a stopped process (SIGSTOP): one line at once, status 1")
def t_check_stopped():
    p = start(workload("growth"), ["30"])
    try:
        os.kill(p.pid, signal.SIGSTOP)
        # SIGSTOP is delivered asynchronously: the case is a process
        # already stopped, so wait until /proc says so.
        deadline = time.monotonic() + 10
        while proc_state(p.pid) != "T":
            ok(time.monotonic() < deadline, "pid %d stopped within 10 s"
               % p.pid)
            time.sleep(0.01)
        t0 = time.monotonic()
        r = ls("check", p.pid, timeout=30)
        took = time.monotonic() - t0
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
    eq(r.returncode, 1, "status: " + r.stderr.decode())
    contains(r.stderr.decode(), "pid %d is stopped" % p.pid, "reason")
    eq(r.stderr.decode().strip().count("\n"), 0, "one line")
    ok(took < 5, "it took %.1f s" % took)


@check("a snapshot whose module path is now a FIFO: report and diff finish, the FIFO is not read")
def t_module_fifo():
    d = tempfile.mkdtemp(prefix="leakscope-sec-fifo-")
    prog = os.path.join(d, "basic")
    shutil.copy2(workload("basic"), prog)
    _, snap = exit_snapshot(prog)
    os.unlink(prog)
    os.mkfifo(prog)
    try:
        for argv in (["report", snap], ["diff", snap, snap]):
            r = run_process([LEAKSCOPE] + argv, timeout=20)
            eq(r.returncode, 0, " ".join(argv[:1]) + ": " + r.stderr.decode())
    finally:
        shutil.rmtree(d)


@check("a module whose debug link names a FIFO beside it: report finishes, and finds a real debug file there")
def t_debuglink_fifo():
    objcopy = need("objcopy")
    d = tempfile.mkdtemp(prefix="leakscope-sec-dbg-")
    prog = os.path.join(d, "basic")
    shutil.copy2(workload("basic"), prog)
    dbg = prog + ".debug"
    try:
        for argv in ([objcopy, "--only-keep-debug", prog, dbg],
                     [objcopy, "--strip-debug", "--add-gnu-debuglink=" + dbg, prog]):
            eq(run_process(argv).returncode, 0, " ".join(argv[:2]))
        _, snap = exit_snapshot(prog)
        r = run_process([LEAKSCOPE, "report", snap], timeout=20)
        eq(r.returncode, 0, "report with the debug file: " + r.stderr.decode())
        contains(r.stdout.decode(), "basic.c:", "file:line from the debug file")
        os.rename(dbg, dbg + ".saved")
        os.mkfifo(dbg)
        r = run_process([LEAKSCOPE, "report", snap], timeout=20)
        eq(r.returncode, 0, "report with a FIFO as the debug file: " +
           r.stderr.decode())
        ok("basic.c:" not in r.stdout.decode(), "no file:line (no debug file)")
    finally:
        shutil.rmtree(d)


@check("trace: Ctrl+C after its first periodic report writes the final report and exits 0")
def t_trace_ctrl_c():
    from t_trace import need_bpf, readline
    need_bpf()
    s = subprocess.Popen(["sleep", "30"])
    t = subprocess.Popen([LEAKSCOPE, "trace", "-p", str(s.pid), "0.3"],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        first = readline(t.stdout, "the first periodic report")
        contains(first, "stacks with outstanding allocations", "first report")
        t.send_signal(signal.SIGINT)
        out, err = t.communicate(timeout=20)
    finally:
        s.kill()
        s.wait()
        if t.poll() is None:
            t.kill()
            t.wait()
    eq(t.returncode, 0, "trace's status: " + err.decode()[-300:])
    contains(out.decode(), "stacks with outstanding allocations", "the final report")
