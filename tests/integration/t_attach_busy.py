"""leakscope attach into programs whose threads allocate without pause.

The traced program is never crashed by leakscope.  Attached, the agent
resolves the real allocator with the global lookup, and in a non-PIE
program that takes malloc's address (python3 from Debian does) that
lookup answers with the program's canonical PLT stub, which jumps through
the GOT slot the attach redirects to the agent's hook: every malloc
recursed until the stack ran out (SIGSEGV, most attaches).

Ground truth: tests/workloads/attach-busy.c (non-PIE, malloc and free
called directly and through a table of their addresses, 4 threads
checking the bytes of every block they free; its leaks per site after
"l") and /usr/bin/python3 running 3 threads that build and check strings
and dicts, with a known number of 100 kB bytes objects kept.  Each check
attaches to ROUNDS fresh processes; each must answer to the end, its
threads must find every block intact, and the report must hold the known
leak exactly.
"""
import os
import select
import subprocess

from harness import check, workload, eq, fail, expect_site, sites_text, need
# The attach tests' private runtime dir, environment and ptrace check.
from harness import ptrace_allowed
from t_attach import env, ls_ok, report, Target, TIMEOUT

ROUNDS = 5


class Busy(Target):
    """A program driven by one-line commands, each answered by one line
    (kill() as attach-target's)."""

    def __init__(self, argv, what):
        self.what = what
        self.p = subprocess.Popen(argv, env=env(), stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE, start_new_session=True)

    def line(self, after):
        ready, _, _ = select.select([self.p.stdout], [], [], TIMEOUT)
        got = self.p.stdout.readline().decode() if ready else ""
        if not got:
            try:
                status = self.p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                status = "still running, silent"
            fail("%s (pid %d) answering %s" % (self.what, self.p.pid, after),
                 "a line", "none: status %s (a negative status is the signal "
                 "that killed it)" % status)
        return got

    def cmd(self, c):
        self.p.stdin.write((c + "\n").encode())
        self.p.stdin.flush()
        return self.line("'%s'" % c)

    def quit(self):
        eq(self.cmd("q"), "bye\n", "%s's last answer" % self.what)
        try:
            eq(self.p.wait(timeout=TIMEOUT), 0, "%s's exit status" % self.what)
        except subprocess.TimeoutExpired:
            fail("%s exiting after 'q'" % self.what, "exit", "still running")


def rounds(argv, what, nthreads, leak, expect):
    """ROUNDS fresh processes: attach while every thread allocates, then
    the threads' own check, the known leak in the report, a clean exit."""
    ptrace_allowed()
    for i in range(ROUNDS):
        b = Busy(argv, what)
        try:
            eq(b.line("at start"), "ready %d\n" % nthreads, "%s started" % what)
            ls_ok("attach", b.p.pid)
            checked = "checked %d bad 0\n" % nthreads
            eq(b.cmd("c"), checked, "round %d: threads run on, blocks intact" % i)
            b.cmd(leak)
            expect(report(b.p.pid), i)
            eq(b.cmd("c"), checked, "round %d: still intact after the report" % i)
            b.quit()
        finally:
            b.kill()


@check("attach: a non-PIE program with &malloc, 4 threads allocating: 5 fresh attaches, no crash, leaks exact")
def t_busy_c():
    prog = workload("attach-busy")

    def expect(rep, i):
        expect_site(rep, "site_busy_direct", prog, 7 * 1234, 7)
        expect_site(rep, "site_busy_table", prog, 3 * 4321, 3)

    rounds([prog], "attach-busy", 4, "l", expect)


PY_BUSY = r"""
import sys, threading, time
rounds = [0, 0, 0]
bad = [0]
stop = False

def work(k):
    keep, i = [], 0
    while not stop:
        # over 512 bytes: each string is a malloc of its own, not pymalloc
        keep.append({"i": i, "s": "x" * (600 + i % 700), "t": str(i) * 10})
        if len(keep) > 200:
            for e in keep:
                if len(e["s"]) != 600 + e["i"] % 700 or e["t"] != str(e["i"]) * 10:
                    bad[0] += 1
            keep.clear()
            rounds[k] += 1
        i += 1

threads = [threading.Thread(target=work, args=(k,)) for k in range(3)]
for t in threads:
    t.start()
print("ready 3", flush=True)
held = []
for line in sys.stdin:
    c = line.split()
    if c[0] == "c":
        start = list(rounds)
        while any(rounds[k] - start[k] < 20 for k in range(3)):
            time.sleep(0.001)
        print("checked 3 bad %d" % bad[0], flush=True)
    elif c[0] == "l":
        held.extend(bytes(100000) for _ in range(int(c[1])))
        print("ok l %d" % len(held), flush=True)
    elif c[0] == "q":
        break
stop = True
for t in threads:
    t.join()
print("bye", flush=True)
"""

PY_KEPT = 11


@check("attach: python3 with 3 threads building strings and dicts: 5 fresh attaches, no crash, leak exact")
def t_busy_python():
    # Debian's own python3 is the non-PIE one that takes &malloc; a
    # python3 elsewhere on PATH (pyenv) may be PIE and miss the point.
    py = "/usr/bin/python3" if os.access("/usr/bin/python3", os.X_OK) else need("python3")
    py = os.path.realpath(py)

    def expect(rep, i):
        # bytes(100000): a 33-byte header and the data, one calloc each
        # (by size: Debian's python3 has no symbols for bytes_new; the
        # adaptive interpreter may call it from two code paths)
        hits = [s for s in rep["sites"] if s["live_blocks"] and
                s["live_bytes"] == s["live_blocks"] * 100033]
        eq((sum(s["live_blocks"] for s in hits), sum(s["live_bytes"] for s in hits)),
           (PY_KEPT, PY_KEPT * 100033), "round %d: blocks of 100033 bytes "
           "(%s)" % (i, sites_text({"sites": hits})))

    rounds([py, "-c", PY_BUSY], "python3", 3, "l %d" % PY_KEPT, expect)
