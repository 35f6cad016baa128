"""The check at exit when ptrace is refused: the program's threads
already have a tracer, as under a debugger.  Once the program says
"ready" (its threads waiting or running), this test seizes every one of
them (PTRACE_SEIZE, which does not stop them) and holds them until they
exit, continuing any signal stop; the agent's own tracer child is then
refused (EPERM), the other threads run on while the image is taken, and
the report says "other threads were still running" (docs/REACHABILITY.md,
"Roots at exit": a thread waiting in a system call is scanned from the
stack pointer /proc/self/task/TID/syscall shows, with the six argument
registers that file shows, less the red zone unless the call is the C
library's; a running thread's stack whole).  Without the extra tracer
the note is absent.

Against valgrind's memcheck, run on the same binary and arguments
without the extra tracer (valgrind reads every register of every
thread), gcc and clang at -O0 and -O2 (tests/workloads/verdict/, each
documents its truth):

- blockeddead.c: a thread waiting in read(), a futex wait, nanosleep()
  or pause() of the C library with a dropped block's address in the red
  zone below its stack pointer: definitely lost; the controls (a live
  local, a leaf keeping the pointer in its own red zone across a read()
  it makes in assembly) still reachable.  valgrind's summary and gate.
- livethreads.c: a thread blocked in read() holding blocks in a local
  and its TLS (valgrind's summary), and one churning 2 MiB blocks while
  main returns (what is lost is valgrind's).
- blockedreg.c: a block's only pointer in a callee-saved register (r12,
  rbx, r15) of a thread blocked in a system call the program makes in
  assembly.  valgrind: still reachable.
Without ptrace no register but the six arguments of the call can be read
(the kernel shows no other), so where a waiting thread alone holds a
block in another register leakscope calls it definitely lost and its
gate trips: blockedreg.c in every build, and livethreads.c 0 at -O2,
whose local lives in a callee-saved register across libc's read() (the
wrapper saves none).  The checks assert exactly those differences
(registers_unseen()) and valgrind's verdict everywhere else.

A process that is not dumpable refuses ptrace too: the last check runs
the programs execute-only as a second user (gcc -O0, clang -O2).  The
agent cannot open /proc/self/task/TID/syscall there (the kernel gives a
non-dumpable process's owner-only /proc files to root), so every other
thread is scanned whole: blockeddead.c's dropped blocks are still
reachable through the dead words below the stack pointer, the exact
differences syscall_unread() lists.

The program's output and exit status are the native run's (99 where
the gate trips).  Where valgrind calls possibly lost what leakscope calls
definitely lost, it is asked twice more (t_verdicts.py's rule).
"""
import ctypes
import os
import select
import shutil
import signal
import subprocess
import sys
import tempfile
import time

from harness import (agent_env, as_user, check, once, eq, ok, need,
                     ptrace_allowed, run_process, system_user, LEAKSCOPE,
                     Failure)
from t_verdicts import (summary, run_vg_args, pool_map, ask_again,
                        log_reruns, KINDS, LOST, ALL, TWO)
from t_verdicts_heldout import build

OUT = tempfile.mkdtemp(prefix="leakscope-verdicts-notrace-")
NOTE = "Note: other threads were still running"
# (program, modes, the kinds compared with valgrind's)
CASES = (
    ("blockeddead", range(7), KINDS),
    ("livethreads", (0,), KINDS),
    ("livethreads", (1,), LOST),
    ("blockedreg", range(3), KINDS),
)
PROGRAMS = sorted({c[0] for c in CASES})

PTRACE_CONT, PTRACE_SEIZE = 7, 0x4206
WALL = 0x40000000	# __WALL: wait for threads that are not our children
_libc = ctypes.CDLL(None, use_errno=True)
_libc.ptrace.restype = ctypes.c_long
_libc.ptrace.argtypes = (ctypes.c_long, ctypes.c_long, ctypes.c_void_p,
                         ctypes.c_void_p)


def program_pid(runner, binary):
    """The pid of binary, the child `leakscope run` (pid runner)
    started."""
    want = os.path.realpath(binary)
    for c in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open("/proc/%s/stat" % c) as f:
                ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            if ppid == runner and os.readlink("/proc/%s/exe" % c) == want:
                return int(c)
        except (OSError, IndexError, ValueError):
            pass
    raise Failure("no child of leakscope run %d runs %s" % (runner, binary))


def seize_all(pid):
    """Every thread of pid seized by this thread (not stopped): the tids."""
    tids = sorted(int(t) for t in os.listdir("/proc/%d/task" % pid))
    for tid in tids:
        if _libc.ptrace(PTRACE_SEIZE, tid, None, None):
            e = ctypes.get_errno()
            raise Failure("PTRACE_SEIZE of thread %d of %d: %s" % (
                tid, pid, os.strerror(e)))
    return tids


def tend(tids, deadline):
    """Until every seized thread has exited: each stop continued (a signal
    on its way delivered), each exit reaped (its real parent then sees
    it)."""
    live = list(tids)
    while live:
        for tid in list(live):
            try:
                w, st = os.waitpid(tid, os.WNOHANG | WALL)
            except ChildProcessError:
                live.remove(tid)
                continue
            if not w:
                continue
            if os.WIFSTOPPED(st):
                sig = os.WSTOPSIG(st) if st >> 16 == 0 else 0
                _libc.ptrace(PTRACE_CONT, tid, None, sig)
            else:
                live.remove(tid)
        if live and time.monotonic() > deadline:
            return live
        time.sleep(0.002)
    return []


def run_ls(binary, args, at_ready=None, user=None):
    """`leakscope run --leak-check --fail-on-leak binary ARGS`; once the
    program says "ready", at_ready(its pid) runs and returns the threads
    it seized, held until they exit; as user (uid, gid, the directory
    user_copy() made) when given: (summary, exit status, the program's
    output, the note there, threads seized)."""
    ls, runtime, pre = LEAKSCOPE, OUT, None
    if user:
        uid, gid, work = user
        ls, runtime, pre = (os.path.join(work, "leakscope"),
                            os.path.join(work, "rt"), as_user(uid, gid))
        binary = os.path.join(work, os.path.basename(binary))
    report = os.path.join(tempfile.mkdtemp(dir=runtime), "report")
    if user:
        os.chown(os.path.dirname(report), uid, gid)
    p = subprocess.Popen([ls, "run", "--leak-check", "--fail-on-leak",
                          "--output", report, "--", binary] + args,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=agent_env(runtime),
                         start_new_session=True, preexec_fn=pre)
    tids = []
    try:
        r, _, _ = select.select([p.stdout], [], [], 30)
        line = p.stdout.readline() if r else b""
        if line != b"ready\n":
            raise Failure("%s %s did not get ready: %r" % (binary, args,
                                                           line))
        if at_ready:
            tids = at_ready(program_pid(p.pid, binary))
        p.stdin.close()
        p.stdin = None		# closed: communicate() has none to write
        left = tend(tids, time.monotonic() + 60)
        if left:
            raise Failure("%s %s: threads %s did not exit" % (binary, args,
                                                              left))
        out, err = p.communicate(timeout=60)
    except BaseException:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        tend(tids, time.monotonic() + 10)
        p.communicate()
        raise
    if p.returncode not in (0, 99):
        raise Failure("leakscope run %s %s: exit status %d\n%s" % (
            binary, args, p.returncode, err.decode()[-800:]))
    with open(report) as f:
        text = f.read()
    return (summary(text, "leakscope %s %s" % (binary, args)), p.returncode,
            line + out, NOTE in text, len(tids))


def argv(mode):
    return [str(mode), "ready"]


@once
def binaries():
    need("valgrind")
    ptrace_allowed()
    builds = [(n, cc, opt) for n in PROGRAMS for cc, opt in ALL]
    return dict(zip(builds, pool_map(build, builds)))


@once
def results():
    """(program, mode, cc, opt) -> (valgrind's summary and status,
    leakscope's run with the extra tracer, the native exit status and
    output, the kinds compared)."""
    bins = binaries()
    keys = [(n, m, cc, opt) for n, modes, _ in CASES for m in modes
            for cc, opt in ALL]
    kinds = {(n, m): ks for n, modes, ks in CASES for m in modes}
    binary = lambda k: bins[k[0], k[2], k[3]]
    vg = pool_map(lambda *k: run_vg_args(binary(k), argv(k[1])), keys)
    ls = pool_map(lambda *k: run_ls(binary(k), argv(k[1]), seize_all),
                  keys)
    native = pool_map(lambda *k: run_process([binary(k)] + argv(k[1])),
                      keys)
    out = {k: (v, l, (n.returncode, n.stdout), kinds[k[:2]])
           for k, v, l, n in zip(keys, vg, ls, native)}
    settled = ask_again({k: (v, [l[:2]], ks)
                         for k, (v, l, _, ks) in out.items()},
                        lambda k: run_vg_args(binary(k), argv(k[1])))
    for k, v in settled.items():
        out[k] = (v,) + out[k][1:]
    return out


def size(mode):
    return 700 + 10 * mode


# What each program states: (mode, kind) -> (bytes, blocks), in
# valgrind's summary.
TRUTHS = {"blockeddead": {(m, k): v for m in range(7) for k, v in (
              ("definitely lost", (0, 0) if m >= 5 else (size(m), 1)),
              ("still reachable", (size(m), 1) if m >= 5 else (0, 0)))},
          "livethreads": {(0, "still reachable"): (790, 2),
                          (0, "definitely lost"): (0, 0),
                          (1, "definitely lost"): (500, 1)},
          "blockedreg": {(m, "still reachable"): (400, 1)
                         for m in range(3)}}
REACHABLE, LOST_ = "still reachable", "definitely lost"


def registers_unseen(k):
    """Where leakscope, without ptrace, cannot see a register that holds
    a block's only pointer while its thread waits: (from, to, the block)
    moved in valgrind's summary, or None.  blockedreg's thread makes its
    call in assembly with the pointer in r12, rbx or r15; livethreads 0's
    keeps its 700-byte block in a callee-saved register at -O2 (rbp with
    gcc) across libc's read(), whose wrapper saves none of them."""
    if k[0] == "blockedreg":
        return REACHABLE, LOST_, (400, 1)
    if k[:2] == ("livethreads", 0) and k[3] == "-O2":
        return REACHABLE, LOST_, (700, 1)
    return None


def syscall_unread(k):
    """A program that is not dumpable: registers_unseen(), but
    livethreads 0 (its thread's stack scanned whole: the pointer's stale
    copies below its stack pointer hold the block), and blockeddead's
    waiting threads' dropped blocks still reachable through the dead
    words below their stack pointers (the agent cannot open
    /proc/self/task/TID/syscall, which the kernel gives to root: every
    other thread is scanned whole)."""
    if k[0] == "blockeddead" and k[1] < 5:
        return LOST_, REACHABLE, (size(k[1]), 1)
    return None if k[0] == "livethreads" else registers_unseen(k)


def expected(vsum, move):
    """valgrind's summary with move (from, to, (bytes, blocks)) made, and
    whether leakscope's gate trips on it."""
    want = dict(vsum)
    if move:
        frm, to, block = move
        want[frm] = tuple(a - b for a, b in zip(want[frm], block))
        want[to] = tuple(a + b for a, b in zip(want[to], block))
    return want, want[LOST_] != (0, 0) or want["indirectly lost"] != (0, 0)


def differences(name, runs, move):
    """Each case of program name in runs (case -> leakscope's run):
    leakscope's summary (the kinds compared) and gate valgrind's with
    move(case) made, the program's truth in valgrind's, the program's
    output and exit status the native run's, the note in each report:
    (what differs, cases compared, cases equal to valgrind's)."""
    bad, n, same = [], 0, 0
    for k, (lsum, lrc, lout, note, _) in sorted(runs.items()):
        if k[0] != name:
            continue
        (vsum, vrc), _, (nrc, nout), kinds = results()[k]
        n += 1
        what = "%s %d (%s %s)" % k
        wsum, gate = expected(vsum, move(k))
        got = {kd: lsum[kd] for kd in kinds}
        if got != {kd: wsum[kd] for kd in kinds} or (lrc == 99) != gate:
            bad.append("%s: leakscope %s (exit %d), want %s (gate %s); "
                       "valgrind %s (exit %d)" % (what, got, lrc, wsum, gate,
                                                  vsum, vrc))
        same += got == {kd: vsum[kd] for kd in kinds} and \
            (lrc == 99) == (vrc == 42)
        for (m, kd), v in TRUTHS[name].items():
            if m == k[1] and vsum[kd] != v:
                bad.append("%s: valgrind's %s %s, the program's %s" % (
                    what, kd, vsum[kd], v))
        if (lout, lrc) != (nout, 99 if lrc == 99 else nrc) or \
           vrc != (42 if vrc == 42 else nrc):
            bad.append("%s: output and status %r %d (valgrind %d), "
                       "native %r %d" % (what, lout, lrc, vrc, nout, nrc))
        if not note:
            bad.append("%s: no note that threads were still running" % what)
    return bad, n, same


def compare(name, moved):
    """differences() of the traced runs, asserted; the agreement count
    printed.  moved: how many cases differ from valgrind by a move."""
    log_reruns((name,))
    runs = {k: v[1] for k, v in results().items()}
    bad, n, same = differences(name, runs, registers_unseen)
    bad += ["%s %d (%s %s): %d threads seized" % (k + (v[4],))
            for k, v in sorted(runs.items()) if k[0] == name and v[4] < 2]
    sys.stderr.write("# %s, ptrace refused: %d of %d cases are valgrind's\n"
                     % (name, same, n))
    eq(n, sum(len(c[1]) for c in CASES if c[0] == name) * len(ALL),
       "%s: cases compared" % name)
    ok(not bad, "%s: cases that differ" % name, "\n  ".join(bad))
    eq(n - same, moved, "%s: cases that differ from valgrind as "
       "registers_unseen() says" % name)


@check("a tracer already on every thread (ptrace refused): each report "
       "says the other threads were still running; without it no report "
       "does and the verdicts are valgrind's")
def t_refused_note():
    bins = binaries()
    keys = [(n, m, "gcc", "-O0") for n, m in (("blockeddead", 0),
                                               ("livethreads", 0),
                                               ("blockedreg", 0))]
    runs = pool_map(lambda *k: run_ls(bins[k[0], k[2], k[3]], argv(k[1])),
                    keys)
    bad = []
    for k, (lsum, lrc, _, note, _) in zip(keys, runs):
        vsum, vrc = results()[k][0]
        if note or lsum != vsum or (lrc == 99) != (vrc == 42):
            bad.append("%s %d (%s %s) without the tracer: the note %s, "
                       "leakscope %s (exit %d), valgrind %s (exit %d)" % (
                           k + ("there" if note else "absent", lsum, lrc,
                                vsum, vrc)))
    ok(not bad, "runs without the extra tracer", "\n  ".join(bad))
    seized = [k for k, v in results().items() if not v[1][3]]
    ok(not seized, "traced runs without the note",
       ", ".join("%s %d (%s %s)" % k for k in sorted(seized)))


@check("ptrace refused, a thread waiting in read(), a futex wait, "
       "nanosleep() or pause() of the C library, its dropped block's "
       "address in the red zone: definitely lost; the controls (a live "
       "local, a leaf's own red zone across its read()) still reachable: "
       "valgrind's summary and gate, gcc and clang at -O0 and -O2")
def t_blockeddead():
    compare("blockeddead", 0)


@check("ptrace refused, a thread blocked in read() holding blocks in a "
       "local and its TLS, and a thread churning 2 MiB blocks: valgrind's "
       "summary (what is lost, for the churning one) and gate; but at -O2 "
       "the local is a callee-saved register libc's read() does not save: "
       "its 700 bytes definitely lost, the gate trips")
def t_livethreads():
    compare("livethreads", 2)


@check("ptrace refused, a block's only pointer in a callee-saved register "
       "of a thread blocked in a system call it makes itself: valgrind "
       "says still reachable; leakscope, which cannot read the register, "
       "says definitely lost and its gate trips (exactly that, every "
       "build)")
def t_blockedreg():
    compare("blockedreg", 12)


USER = "lsnotrace"


def user_copy(uid, gid, binaries):
    """A directory user uid can reach holding leakscope, its agent and
    binaries, these execute-only (mode 0711, owned by root: the kernel
    makes a process of one not dumpable), and its runtime directory."""
    work = tempfile.mkdtemp(prefix="leakscope-notrace-", dir="/dev/shm")
    os.chmod(work, 0o755)
    for f, mode in [(LEAKSCOPE, 0o755),
                    (os.path.join(os.path.dirname(LEAKSCOPE),
                                  "libleakscope.so"), 0o755)] + \
            [(b, 0o711) for b in binaries]:
        shutil.copy(f, work)
        os.chmod(os.path.join(work, os.path.basename(f)), mode)
    os.mkdir(os.path.join(work, "rt"), 0o700)
    os.chown(os.path.join(work, "rt"), uid, gid)
    return work


def not_dumpable(pid):
    """at_ready for the second user's runs: the program is not dumpable
    (the kernel gives its owner-only /proc files to root)."""
    uid = os.stat("/proc/%d/task/%d/syscall" % (pid, pid)).st_uid
    if uid != 0:
        raise Failure("%d is dumpable: its syscall file is uid %d's" % (
            pid, uid))
    return []


@check("a program that is not dumpable (its binary execute-only) run by "
       "a second user, gcc -O0 and clang -O2: ptrace refused, the note; "
       "valgrind's verdicts and gates but where registers are not seen "
       "and where the threads' dead words below their stack pointers are "
       "scanned (blockeddead's dropped blocks still reachable)")
def t_not_dumpable():
    uid, gid = system_user(USER, "run an execute-only program as a second "
                           "user")
    bins = binaries()
    keys = [(n, m, cc, opt) for n, modes, _ in CASES for m in modes
            for cc, opt in TWO]
    work = user_copy(uid, gid, sorted({bins[k[0], k[2], k[3]]
                                       for k in keys}))
    try:
        runs = dict(zip(keys, pool_map(
            lambda *k: run_ls(bins[k[0], k[2], k[3]], argv(k[1]),
                              not_dumpable, (uid, gid, work)), keys)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    bad, same, moved = [], 0, 0
    for name in PROGRAMS:
        b, n, sm = differences(name, runs, syscall_unread)
        bad += b
        same += sm
        moved += sum(1 for k in keys if k[0] == name and syscall_unread(k))
    sys.stderr.write("# not dumpable: %d of %d cases are valgrind's\n"
                     % (same, len(keys)))
    ok(not bad, "cases that differ", "\n  ".join(bad))
    eq(len(keys) - same, moved, "cases that differ from valgrind as "
       "syscall_unread() says")
