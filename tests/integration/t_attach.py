"""leakscope attach / detach: tracking a process started WITHOUT the agent.

Ground truth: tests/workloads/attach-target.c (driven one command at a
time over stdin/stdout, no sleeps: each command answers one line), its
exact post-attach leaks per site; static-wait.c (statically linked); real
programs (python3, sqlite3, redis-server on 127.0.0.1) attached while
they work.  Every target gets a private runtime dir.
"""
import atexit
import json
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time

from harness import agent_env
from harness import (ptrace_allowed, cli, check, once, free_port, workload, eq,
                     ok, contains, fail, run_process, expect_site,
                     expect_no_site, expect_no_temporaries,
                     expect_totals_consistent, outer_functions, site_text,
                     sites_text, need, need_user_reaches, LEAKSCOPE, BUILD,
                     Failure, Skip)

RUNTIME = tempfile.mkdtemp(prefix="leakscope-attach-")
os.chmod(RUNTIME, 0o700)
atexit.register(shutil.rmtree, RUNTIME, True)
TIMEOUT = 60
FAILED = 1      # a command on a process could not do it (cli/cli.h)
USAGE = 125


def env():
    return agent_env(RUNTIME)


def ls(*args, timeout=TIMEOUT):
    return cli(args, env(), timeout)


def ls_ok(*args):
    r = ls(*args)
    if r.returncode != 0:
        fail("leakscope %s" % " ".join(map(str, args)), "status 0", r.describe())
    return r


def readline(pipe, what):
    """One line from a child's pipe, failing after TIMEOUT seconds."""
    ready, _, _ = select.select([pipe], [], [], TIMEOUT)
    if not ready:
        fail(what, "a line within %d s" % TIMEOUT, "nothing")
    return pipe.readline()


class Target:
    """attach-target.c, started without the agent, driven line by line."""

    def __init__(self, preload=False):
        e = env()
        if preload:
            e["LD_PRELOAD"] = os.path.join(BUILD, "libleakscope.so")
        self.p = subprocess.Popen([workload("attach-target")], env=e,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  start_new_session=True)
        self.out = []

    @property
    def pid(self):
        return self.p.pid

    def cmd(self, c):
        self.p.stdin.write((c + "\n").encode())
        self.p.stdin.flush()
        line = readline(self.p.stdout, "attach-target answering '%s'" % c).decode()
        if not line:
            fail("attach-target answering '%s'" % c, "a line",
                 "end of output (status %s)" % self.p.poll())
        self.out.append(line)
        return line

    def quit(self):
        self.cmd("q")
        try:
            status = self.p.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            self.p.kill()
            raise Failure("attach-target did not exit after 'q'")
        return status, "".join(self.out)

    def still_fine(self):
        """Allocates once more and exits 0: the attempt left it unharmed."""
        self.cmd("l")
        status, _ = self.quit()
        eq(status, 0, "its exit status")

    def kill(self):
        if self.p.poll() is None:
            self.p.kill()
            self.p.wait()


def report(pid):
    return json.loads(ls_ok("report", pid, "--format", "json").stdout.decode())


SCRIPT = ["p", "l", "t", "d", "f", "l"]


@once
def plain_run():
    """The same commands with nobody attaching: output and status."""
    t = Target()
    for c in SCRIPT:
        t.cmd(c)
    return t.quit()


@once
def attached_run():
    ptrace_allowed()
    t = Target()
    try:
        t.cmd("p")  # before: unknown to the agent
        a = ls_ok("attach", t.pid)
        t.cmd("l")
        t.cmd("t")
        t.cmd("d")
        t.cmd("f")
        rep = report(t.pid)
        text = ls_ok("report", t.pid).stdout.decode()
        stats = json.loads(ls_ok("stats", "--format", "json", t.pid).stdout.decode())
        sock = os.path.exists(os.path.join(RUNTIME, "%d.sock" % t.pid))
        pm = os.path.exists(os.path.join(RUNTIME, "%d.pm" % t.pid))
        d = ls_ok("detach", t.pid)
        gone = (not os.path.exists(os.path.join(RUNTIME, "%d.sock" % t.pid)),
                not os.path.exists(os.path.join(RUNTIME, "%d.pm" % t.pid)))
        after = ls("report", t.pid)
        t.cmd("l")  # after detach: nobody counts, nothing breaks
        status, out = t.quit()
    finally:
        t.kill()
    return dict(attach=a, report=rep, text=text, stats=stats, files=(sock, pm),
                detach=d, gone=gone, after=after, status=status, out=out)


def prog():
    return workload("attach-target")


LEAKS = [("site_malloc", 10000, 10), ("site_calloc", 3000, 5),
         ("site_realloc_new", 777, 1), ("site_reallocarray", 500, 1),
         ("site_posix_memalign", 256, 1), ("site_aligned_alloc", 1024, 1),
         ("site_memalign", 333, 1), ("site_valloc", 100, 1),
         ("site_pvalloc", 4096, 1), ("site_thread", 2222, 1),
         ("site_realloc_pre", 30000, 10)]


@check("attach: every post-attach leak exact to the byte, one site per interposed function")
def t_exact_sites():
    rep = attached_run()["report"]
    for fn, b, k in LEAKS:
        expect_site(rep, fn, prog(), b, k)
    expect_site(rep, "site_mmap", prog(), 12288, 1, kind="mmap")
    expect_no_temporaries(rep)


@check("attach: full stacks without frame pointers (program, libc's strdup, a new thread)")
def t_stacks():
    rep = attached_run()["report"]
    site = expect_site(rep, "site_malloc", prog(), 10000, 10)
    eq(outer_functions(site, prog())[:3], ["site_malloc", "leak_all", "main"],
       "site_malloc's program frames")
    s = [x for x in rep["sites"] if x["frames"] and x["frames"][0].get("function") in
         ("__strdup", "strdup")]
    ok(len(s) == 1 and s[0]["live_bytes"] == 12 and
       "site_strdup" in outer_functions(s[0], prog()),
       "strdup's 12 bytes, from inside libc, with site_strdup above it",
       sites_text(rep))
    t = expect_site(rep, "site_thread", prog(), 2222, 1)
    ok(outer_functions(t, prog())[:2] == ["site_thread", "thread_main"],
       "the thread created after attach: site_thread <- thread_main", site_text(t))


@check("attach: a library dlopen'ed after attaching is tracked (its GOT patched)")
def t_dlopen_after():
    rep = attached_run()["report"]
    lib = os.path.join(os.path.dirname(prog()), "libleaky.so")
    site = expect_site(rep, "site_in_libleaky", lib, 4321, 1)
    ok("dl_stage" in outer_functions(site, prog()),
       "the library's stack continues into the program", site_text(site))


@check("attach: pre-attach blocks: frees and reallocs pass, nothing negative, totals add up")
def t_pre_attach():
    r = attached_run()
    rep = r["report"]
    expect_totals_consistent(rep)
    neg = [s for s in rep["sites"] if s["live_bytes"] < 0 or s["live_blocks"] < 0]
    ok(not neg, "no site below zero", "\n".join(site_text(s) for s in neg))
    want = sum(b for _, b, _ in LEAKS) + 12288 + 12 + 4321
    # Whatever libc or the loader keep is theirs; the program's is exact.
    prog_bytes = sum(s["live_bytes"] for s in rep["sites"]
                     if outer_functions(s, prog()) or
                     outer_functions(s, os.path.join(os.path.dirname(prog()),
                                                     "libleaky.so")))
    eq(prog_bytes, want, "live bytes of the program's own sites")
    ok(rep["totals"]["live_bytes"] >= want, "totals cover them",
       rep["totals"])


@check("attach: reports say tracking started at the attach")
def t_since():
    r = attached_run()
    ok(isinstance(r["report"].get("attached"), str) and
       r["report"]["attached"].endswith("Z"), "JSON 'attached' is a time",
       r["report"].get("attached"))
    contains(r["text"], "Tracking since attaching at", "text report header")
    ok(r["stats"].get("attached"), "stats JSON says it too", r["stats"])
    contains(r["attach"].stdout.decode(), "threads paused", "attach prints the pause")


@check("attach: socket and post-mortem file while attached; detach removes both")
def t_detach_files():
    r = attached_run()
    eq(r["files"], (True, True), "socket, post-mortem file while attached")
    eq(r["gone"], (True, True), "both removed by detach")
    ok(r["after"].returncode == FAILED and b"is not tracked" in r["after"].stderr and
       b"detached" in r["after"].stderr, "report after detach: detached",
       r["after"].describe())


@check("attach: the target's output and exit status are byte-identical to a plain run")
def t_transparent():
    plain = plain_run()
    r = attached_run()
    eq(r["status"], 0, "attached run's exit status")
    eq((r["status"], r["out"]), plain, "status and output, attached vs plain")


@once
def hammered():
    """Four threads calling malloc/free without pause during every attach,
    three attach/detach rounds, then the target quits."""
    ptrace_allowed()
    t = Target()
    rounds = []
    try:
        t.cmd("h 4")
        for _ in range(3):
            a = ls("attach", t.pid)
            s = ls("stats", "--format", "json", t.pid)
            d = ls("detach", t.pid)
            rounds.append((a, s, d))
        t.cmd("H")
        t.cmd("l")
        status, out = t.quit()
    finally:
        t.kill()
    return rounds, status, out


@check("attach: four threads hammering malloc: attach, stats, detach three times; no crash, no hang")
def t_hammer():
    rounds, status, out = hammered()
    for i, (a, s, d) in enumerate(rounds):
        eq(a.returncode, 0, "attach %d status (%s)" % (i, a.describe()))
        contains(a.stdout.decode(), "again" if i else "attached to pid",
                 "attach %d: the agent is %s" % (i, "reused" if i else "loaded"))
        eq(s.returncode, 0, "stats %d" % i)
        calls = json.loads(s.stdout.decode())["calls"]
        ok(calls.get("malloc", 0) > 0 and calls.get("free", 0) > 0,
           "round %d: the hammer's calls are seen" % i, calls)
        eq(d.returncode, 0, "detach %d status (%s)" % (i, d.describe()))
    eq(status, 0, "the target's exit status")
    ok(out.endswith("bye 3389484\n") or out.startswith("ok h"),
       "the target answered to the end", out)


@check("attach: a shell forking /bin/true without pause: 3 attach/detach; no child dies of an inherited breakpoint")
def t_forking_shell():
    ptrace_allowed()
    sh = need("bash")
    true = need("true")
    stop = os.path.join(RUNTIME, "stop-forking")
    script = ('while [ ! -e %s ]; do %s || echo "child failed: $?"; done; '
              'echo loop done' % (stop, true))
    p = subprocess.Popen([sh, "-c", script], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, env=env())
    try:
        for _ in range(3):
            ls_ok("attach", p.pid)
            ls_ok("detach", p.pid)
        open(stop, "w").close()
        out, _ = p.communicate(timeout=TIMEOUT)
        eq((p.returncode, out), (0, b"loop done\n"), "the shell's status and output")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@check("attach: a fresh attach after detach sees only what came after it")
def t_reattach():
    ptrace_allowed()
    t = Target()
    try:
        ls_ok("attach", t.pid)
        t.cmd("l")
        ls_ok("detach", t.pid)
        t.cmd("t")          # while detached: not seen
        a = ls_ok("attach", t.pid)
        contains(a.stdout.decode(), "attached to pid %d again" % t.pid, "second attach")
        t.cmd("d")
        rep = report(t.pid)
        lib = os.path.join(os.path.dirname(prog()), "libleaky.so")
        expect_site(rep, "site_in_libleaky", lib, 4321, 1)
        expect_no_site(rep, "site_thread", prog())
        expect_no_site(rep, "site_malloc", prog())
        ls_ok("detach", t.pid)
        status, _ = t.quit()
        eq(status, 0, "exit status")
    finally:
        t.kill()


@check("attach: the post-mortem file of an attached process killed with SIGKILL has its leaks")
def t_postmortem():
    ptrace_allowed()
    t = Target()
    try:
        t.cmd("p")
        ls_ok("attach", t.pid)
        t.cmd("l")
        # the agent samples once a second: wait until a sample has the leak
        deadline = time.monotonic() + 20
        seen = False
        while not seen and time.monotonic() < deadline:
            r = ls("report", "--postmortem", "--format", "json", t.pid)
            seen = r.returncode == 0 and b"site_malloc" in r.stdout
            if not seen:
                time.sleep(0.1)
        ok(seen, "a growth sample with site_malloc in the post-mortem file")
        os.kill(t.pid, signal.SIGKILL)
        t.p.wait(timeout=TIMEOUT)
        rep = json.loads(ls_ok("report", "--postmortem", "--format", "json",
                               t.pid).stdout.decode())
        expect_site(rep, "site_malloc", prog(), 10000, 10)
        expect_site(rep, "site_mmap", prog(), 12288, 1, kind="mmap")
    finally:
        t.kill()
        for suffix in (".pm", ".sock"):
            try:
                os.unlink(os.path.join(RUNTIME, "%d%s" % (t.pid, suffix)))
            except OSError:
                pass


@check("attach --sample-rate --depth: sampled reports, short stacks; a re-attach must keep the rate")
def t_sampled():
    ptrace_allowed()
    t = Target()
    try:
        t.cmd("p")
        ls_ok("attach", "--sample-rate", "4KiB", "--depth", "3", t.pid)
        t.cmd("l")
        rep = report(t.pid)
        eq((rep["mode"], rep.get("sample_rate")), ("sampled", 4096), "mode and rate")
        eq(max(len(s["frames"]) for s in rep["sites"]), 3, "frames per stack at most")
        # attached: another mode says, in one line, what it is and how
        expect_error(ls("attach", t.pid), FAILED,
                     "pid %d is attached in sampled (--sample-rate 4096) mode, "
                     "which it keeps while it runs" % t.pid, "full over sampled")
        expect_error(ls("attach", t.pid), FAILED, "'leakscope run -- CMD'",
                     "full over sampled: how")
        expect_error(ls("attach", "--sample-rate", "4KiB", t.pid), FAILED,
                     "pid %d is already attached in sampled (--sample-rate "
                     "4096) mode: use 'leakscope report %d'" % (t.pid, t.pid),
                     "the same mode again")
        ls_ok("detach", t.pid)
        expect_error(ls("attach", t.pid), FAILED,
                     "was first attached sampled (--sample-rate 4096): attach again "
                     "with --sample-rate 4096, or restart the program under "
                     "'leakscope run' for full tracking", "re-attach in full mode")
        a = ls_ok("attach", "--sample-rate", "4KiB", t.pid)
        contains(a.stdout.decode(), "again", "re-attach at the same rate")
        ls_ok("detach", t.pid)
        t.still_fine()
    finally:
        t.kill()


# ----------------------------------------------------------- failure modes

def expect_error(r, status, needle, what):
    err = r.stderr.decode()
    if r.returncode != status or needle not in err or err.count("\n") != 1 or \
            not err.startswith("leakscope: "):
        fail(what, "status %d, one line with '%s'" % (status, needle), r.describe())


@check("attach: a dead pid (status 1), a bad option, no PID (status 125): one-line errors")
def t_bad_input():
    p = subprocess.Popen(["true"])
    p.wait()
    expect_error(ls("attach", p.pid), FAILED, "no process with pid", "dead pid")
    expect_error(ls("attach", "--bogus", "1"), USAGE, "unknown option", "bad option")
    expect_error(ls("attach"), USAGE, "expected one PID", "no pid")
    expect_error(ls("detach", p.pid), FAILED, "no process with pid", "detach of a dead pid")


@check("attach: refuses a process already under the agent (LD_PRELOAD), which runs on")
def t_preloaded():
    ptrace_allowed()
    t = Target(preload=True)
    try:
        t.cmd("p")
        expect_error(ls("attach", t.pid), FAILED, "already", "attach to a preloaded process")
        d = ls("detach", t.pid)
        expect_error(d, FAILED, "nothing to detach", "detach of a preloaded process")
        t.still_fine()
    finally:
        t.kill()


@check("attach: refuses a process stopped by SIGSTOP (it would have to run it); it stays stopped")
def t_job_stopped():
    ptrace_allowed()
    t = Target()
    try:
        t.cmd("p")
        os.kill(t.pid, signal.SIGSTOP)
        os.waitpid(t.pid, os.WUNTRACED)
        expect_error(ls("attach", t.pid), FAILED, "is stopped", "attach to a stopped process")
        with open("/proc/%d/stat" % t.pid) as f:
            eq(f.read().rsplit(")", 1)[1].split()[0], "T", "its state afterwards")
        os.kill(t.pid, signal.SIGCONT)
        t.still_fine()
    finally:
        t.kill()


@check("attach: refuses a statically linked program, which runs on")
def t_static():
    p = subprocess.Popen([workload("static-wait")], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE)
    try:
        eq(readline(p.stdout, "static-wait"), b"ready\n", "static-wait started")
        expect_error(ls("attach", p.pid), FAILED, "statically linked", "static target")
        out, _ = p.communicate(b"\n", timeout=TIMEOUT)
        eq((p.returncode, out), (0, b"done\n"), "it ran on")
    finally:
        if p.poll() is None:
            p.kill()


P32 = ".globl _start\n_start:\n\tmovl $29, %eax\n\tint $0x80\n\tjmp _start\n"


@check("attach: refuses a 32-bit program, which runs on")
def t_32bit():
    d = tempfile.mkdtemp(prefix="leakscope-p32-")
    try:
        src, obj, exe = (os.path.join(d, n) for n in ("p.s", "p.o", "p32"))
        with open(src, "w") as f:
            f.write(P32)   # pause() in a loop, i386 system calls
        if run_process(["as", "--32", "-o", obj, src]).returncode or \
                run_process(["ld", "-m", "elf_i386", "-o", exe, obj]).returncode:
            raise Skip("binutils cannot build an i386 program here")
        p = subprocess.Popen([exe])
        try:
            expect_error(ls("attach", p.pid), FAILED, "is a 32-bit program", "32-bit target")
            ok(p.poll() is None, "it runs on")
        finally:
            p.kill()
            p.wait()
    finally:
        shutil.rmtree(d, ignore_errors=True)


@check("attach: another tracer already attached: named, target unharmed")
def t_other_tracer():
    ptrace_allowed()
    t = Target()
    helper = None
    try:
        code = ("import ctypes,sys; l=ctypes.CDLL(None, use_errno=True); "
                "r=l.ptrace(0x4206, %d, 0, 0); print(r, flush=True); "
                "sys.stdin.read()" % t.pid)
        helper = subprocess.Popen(["python3", "-c", code], stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE)
        eq(readline(helper.stdout, "helper"), b"0\n", "the helper seized the target")
        expect_error(ls("attach", t.pid), FAILED,
                     "already traced by pid %d" % helper.pid, "second tracer")
        helper.communicate(b"", timeout=TIMEOUT)
        t.still_fine()
    finally:
        if helper and helper.poll() is None:
            helper.kill()
        t.kill()


@check("attach: another user's process: refused with the reason, unharmed")
def t_other_user():
    ptrace_allowed()
    if os.geteuid() != 0:
        raise Skip("needs root to run leakscope as another user")
    setpriv = need("setpriv")
    need_user_reaches(65534, LEAKSCOPE)
    t = Target()
    try:
        r = run_process([setpriv, "--reuid=65534", "--regid=65534", "--clear-groups",
                         LEAKSCOPE, "attach", str(t.pid)], timeout=TIMEOUT, env=env())
        expect_error(r, FAILED, "pid %d" % t.pid, "attach as nobody")
        ok(b"another user" in r.stderr or b"belongs to uid 0" in r.stderr,
           "the reason names the owner", r.describe())
        t.still_fine()
    finally:
        t.kill()


@check("attach: no safe point within the timeout: refused, nothing changed, target unharmed")
def t_no_safe_point():
    ptrace_allowed()
    t = Target()
    try:
        t.p.stdin.write(b"s\n")
        t.p.stdin.flush()
        eq(readline(t.p.stdout, "spin"), b"spinning\n", "the target spins")
        r = ls("attach", "--timeout", "0.5", t.pid)
        expect_error(r, FAILED, "no safe point", "attach to a spinning process")
        with open("/proc/%d/maps" % t.pid) as f:
            ok("libleakscope" not in f.read(), "the agent was not loaded")
        os.kill(t.pid, signal.SIGUSR1)
        t.still_fine()
    finally:
        t.kill()


@check("attach: a target killed during the attach: attach ends at once, one line")
def t_killed_during():
    ptrace_allowed()
    results = []
    for delay in (0.0, 0.002, 0.01):
        t = Target()
        try:
            t.cmd("h 4")
            a = subprocess.Popen([LEAKSCOPE, "attach", str(t.pid)], env=env(),
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            time.sleep(delay)
            os.kill(t.pid, signal.SIGKILL)
            out, err = a.communicate(timeout=TIMEOUT)
            results.append((a.returncode, err.decode()))
            t.p.wait(timeout=TIMEOUT)
        finally:
            t.kill()
    for rc, err in results:
        ok((rc == 0 and not err) or (rc == FAILED and err.count("\n") == 1 and
                                     ("exited" in err or "no process" in err)),
           "attach either finished first or said the target exited", repr(results))


@check("attach: a target in another mount namespace, where our agent's path is hidden, gets the agent as a memfd")
def t_mount_namespace():
    ptrace_allowed()
    if os.geteuid() != 0:
        raise Skip("needs root for a mount namespace")
    unshare = need("unshare")
    d = tempfile.mkdtemp(prefix="leakscope-ns-")
    prog_copy = os.path.join(d, "attach-target")
    shutil.copy(prog(), prog_copy)
    p = subprocess.Popen([unshare, "-m", "--propagation", "private", "sh", "-c",
                          "mount -t tmpfs none %s && exec %s" % (BUILD, prog_copy)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=env())
    t = Target.__new__(Target)
    t.p, t.out = p, []
    try:
        t.cmd("p")
        agent_there = "/proc/%d/root%s/libleakscope.so" % (p.pid, BUILD)
        if os.path.exists(agent_there):
            raise Skip("the tmpfs did not hide the build directory")
        ls_ok("attach", p.pid)
        with open("/proc/%d/maps" % p.pid) as f:
            contains(f.read(), "/memfd:libleakscope.so (deleted)",
                     "the agent's mapping: a memfd, nothing in its files")
        fds = "/proc/%d/fd" % p.pid
        ok(not any("memfd:" in os.readlink(os.path.join(fds, x))
                   for x in os.listdir(fds)), "no memfd left open in it")
        t.cmd("l")
        rep = report(p.pid)
        expect_site(rep, "site_malloc", prog_copy, 10000, 10)
        ls_ok("detach", p.pid)
        status, _ = t.quit()
        eq(status, 0, "its exit status")
    finally:
        t.kill()
        shutil.rmtree(d, ignore_errors=True)


# ----------------------------------------------------------- real programs

PY_LEAK = r"""
import sys
keep = []
for line in sys.stdin:
    n = int(line)
    keep.extend(bytes(100000) for _ in range(n))
    junk = [str(i) * 3 for i in range(20000)]   # churn, freed
    print(len(keep), flush=True)
"""


@check("attach: python3 under load: 37 new 100 kB objects found exact, python runs on")
def t_python():
    ptrace_allowed()
    py = need("python3")
    real = os.path.realpath(shutil.which(py) or py)
    p = subprocess.Popen([real, "-c", PY_LEAK], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=env())
    try:
        p.stdin.write(b"5\n")
        p.stdin.flush()
        eq(readline(p.stdout, "python"), b"5\n", "python answered")
        ls_ok("attach", p.pid)
        p.stdin.write(b"37\n")
        p.stdin.flush()
        eq(readline(p.stdout, "python"), b"42\n", "python answered after attach")
        rep = report(p.pid)
        # bytes(100000): a 33-byte header and the data, one calloc each;
        # the adaptive interpreter may call it from two code paths
        hits = [s for s in rep["sites"] if any(
            fr.get("function") == "bytes_new" for fr in s["frames"])]
        eq((sum(s["live_blocks"] for s in hits), sum(s["live_bytes"] for s in hits)),
           (37, 37 * 100033), "blocks and bytes under bytes_new (%s)" %
           sites_text({"sites": hits}))
        ls_ok("detach", p.pid)
        p.stdin.write(b"1\n")
        p.stdin.flush()
        eq(readline(p.stdout, "python"), b"43\n", "python answered after detach")
        p.stdin.close()
        eq(p.wait(timeout=TIMEOUT), 0, "python's exit status")
    finally:
        if p.poll() is None:
            p.kill()


@check("attach: sqlite3 answering queries: attached, queried, detached; answers unchanged")
def t_sqlite():
    ptrace_allowed()
    sq = need("sqlite3")
    p = subprocess.Popen([sq, ":memory:"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=env())

    def q(sql):
        p.stdin.write((sql + "\n").encode())
        p.stdin.flush()
        return readline(p.stdout, "sqlite3").decode().strip()

    try:
        q("create table t(x, y); select 1;")
        ls_ok("attach", p.pid)
        got = q("insert into t select value, randomblob(300) from "
                "generate_series(1, 5000); select count(*) from t;")
        rep = report(p.pid)
        ok(any("sqlite3" in (fr.get("module") or "") for s in rep["sites"]
               for fr in s["frames"]) and rep["totals"]["live_bytes"] > 5000 * 300,
           "sites in sqlite holding the new rows", sites_text(rep))
        ls_ok("detach", p.pid)
        got2 = q("select count(*), sum(length(y)) from t;")
        p.stdin.close()
        eq((got, got2, p.wait(timeout=TIMEOUT)), ("5000", "5000|1500000", 0),
           "sqlite3's answers and status")
    finally:
        if p.poll() is None:
            p.kill()


@check("attach: redis-server under redis-benchmark (127.0.0.1): attached, reported, detached, still serving")
def t_redis():
    ptrace_allowed()
    server = need("redis-server")
    bench = need("redis-benchmark")
    cli = need("redis-cli")
    port = free_port()
    d = tempfile.mkdtemp(prefix="leakscope-redis-")
    p = subprocess.Popen([server, "--port", str(port), "--bind", "127.0.0.1",
                          "--save", "", "--appendonly", "no", "--dir", d],
                         stdout=subprocess.DEVNULL, env=env())
    b = None
    try:
        for _ in range(500):
            r = run_process([cli, "-h", "127.0.0.1", "-p", str(port), "ping"],
                            timeout=TIMEOUT)
            if r.stdout.strip() == b"PONG":
                break
            time.sleep(0.01)
        b = subprocess.Popen([bench, "-h", "127.0.0.1", "-p", str(port), "-n",
                              "200000", "-c", "4", "-q", "-t", "set,get"],
                             stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        a = ls_ok("attach", p.pid)
        for i in range(20):
            run_process([cli, "-h", "127.0.0.1", "-p", str(port), "set",
                         "big%d" % i, "x" * 50000], timeout=TIMEOUT)
        rep = report(p.pid)
        ok(rep["calls"].get("malloc", 0) + rep["calls"].get("calloc", 0) > 0 and
           rep["totals"]["allocated_bytes"] >= 20 * 50000,
           "redis's allocations after attach are seen (%s)" %
           a.stdout.decode().splitlines()[0], json.dumps(rep["totals"]))
        ls_ok("detach", p.pid)
        r = run_process([cli, "-h", "127.0.0.1", "-p", str(port), "strlen", "big7"],
                        timeout=TIMEOUT)
        eq(r.stdout.strip(), b"50000", "redis still serving after detach")
    finally:
        if b and b.poll() is None:
            b.kill()
            b.wait()
        p.terminate()
        p.wait(timeout=TIMEOUT)
        shutil.rmtree(d, ignore_errors=True)
