"""Reachability: `leakscope check PID` on a live process, `run --leak-check`
at exit, the CI gate, suppressions.

Ground truth: tests/workloads/reach.c (every category, each held by one kind
of root: a global, another thread's stack, another thread's TLS, a lost
list, a lost cycle, an interior pointer), clean-stdio.c and clean-cxx.cc
(nothing of their own outstanding, the runtimes' one-time allocations
only).  valgrind's memcheck on the same workload is the reference.
"""
import json
import os
import re
import subprocess
import tempfile
import time

from harness import (agent_env, vgdb_live_records, cli, check, once, workload,
                     eq, ok, contains, fail, need, run_process, leakscope,
                     root_report, LEAKSCOPE, BUILD, Failure, Skip, shorten,
                     wait_environ, valgrind_records, listening_process)

AGENT = os.path.join(BUILD, "libleakscope.so")
RUNTIME = tempfile.mkdtemp(prefix="leakscope-check-")
os.chmod(RUNTIME, 0o700)

# site -> {kind: (bytes, blocks)}, and what its lost blocks hold
TRUTH = {
    "site_global": {"reachable": (1000, 1)},
    "site_tls": {"reachable": (1100, 1)},
    "site_stack": {"reachable": (1200, 1)},
    "site_list_head": {"definite": (64, 1)},
    "site_list_node": {"indirect": (144, 3)},
    "site_cycle": {"definite": (80, 1), "indirect": (80, 1)},
    "site_interior": {"possible": (300, 1)},
    "site_leak": {"definite": (300, 3)},
    "site_holder": {"reachable": (64, 1)},
}
HELD = {"site_list_head": (144, 3), "site_cycle": (80, 1)}
KINDS = ("definite", "indirect", "possible", "reachable")
SUMMARY = {"definite": (444, 5), "indirect": (224, 4),
           "possible": (300, 1), "reachable": (3364, 4)}


def env():
    return agent_env(RUNTIME)


class Target:
    """reach.c under the agent, preloaded by hand, held until closed."""

    def __init__(self, args=(), name="reach"):
        e = env()
        e["LD_PRELOAD"] = AGENT
        self.p = subprocess.Popen([workload(name)] + list(args), env=e,
                                  stdin=subprocess.PIPE,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE,
                                  start_new_session=True)
        line = self.p.stdout.readline().decode()
        if not line.startswith("ready"):
            self.close()
            raise Failure("reach did not get ready: %r" % line)
        self.pid = self.p.pid

    def alive(self):
        return self.p.poll() is None

    def close(self):
        try:
            self.p.stdin.close()
            self.p.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def ls(*args, timeout=60):
    return cli(args, env(), timeout)


def first_function(site):
    for f in site["frames"]:
        if f.get("function"):
            return f["function"]
    return None


def by_site(report):
    """site function -> its reachability object (the workload's sites)."""
    out = {}
    for s in report["sites"]:
        fn = first_function(s)
        if fn in TRUTH:
            if fn in out:
                fail("one site for %s" % fn, 1, "several")
            out[fn] = s["reachability"]
    return out


def expect_truth(report, where):
    got = by_site(report)
    eq(sorted(got), sorted(TRUTH), "%s: the workload's sites" % where)
    for fn, kinds in TRUTH.items():
        for k in KINDS:
            want = kinds.get(k, (0, 0))
            have = (got[fn][k]["bytes"], got[fn][k]["blocks"])
            eq(have, want, "%s: %s %s (bytes, blocks)" % (where, fn, k))
        held = got[fn]["held_indirect"]
        eq((held["bytes"], held["blocks"]), HELD.get(fn, (0, 0)),
           "%s: %s holds indirectly (bytes, blocks)" % (where, fn))


def check_json(t, *opts):
    r = ls("check", "--format", "json", *opts, t.pid)
    if r.returncode != 0:
        fail("check exit status", 0, r.describe())
    return json.loads(r.stdout)


@once
def live():
    t = Target()
    try:
        j = check_json(t)
        text = ls("check", t.pid)
        again = check_json(t)
        by = check_json(t, "--by", "allocated")
        alive = t.alive()
    finally:
        t.close()
    return j, text, again, alive, by


@check("check PID: every category exactly per site, in a live process")
def t_live_categories():
    j, _, _, alive, _ = live()
    expect_truth(j, "live")
    ok(alive, "the target runs on after the check")


@check("check PID: a second check gives the same answer (nothing changed)")
def t_live_again():
    j, _, again, _, _ = live()
    eq(by_site(again), by_site(j), "second check")


@check("check --by allocated: the same categories, stacks ranked by bytes allocated")
def t_live_by():
    by = live()[4]
    eq(by.get("by"), "allocated", "the report says its order")
    expect_truth(by, "--by allocated")
    alloc = [s["allocated_bytes"] for s in by["sites"]]
    eq(alloc, sorted(alloc, reverse=True), "sites in allocated-bytes order")


@check("check PID: the threads were stopped and their registers scanned")
def t_live_stats():
    j, _, _, _, _ = live()
    c = j["check"]
    eq(c["threads_stopped"], 2, "threads stopped (main, holder; not the "
       "agent's control thread)")
    ok(c["all_registers"], "every thread's registers", str(c))
    ok(not c["at_exit"], "live, not at exit")
    ok(c["pause_ms"] is not None and c["pause_ms"] > 0, "pause measured",
       str(c))
    eq(j["reason"], "live", "snapshot reason")
    if concurrent_ok() and c["method"] == "fork":
        # the default's pause budget may send it to the fork image, by
        # name (a loaded machine can hold the control thread that long)
        eq(c["method_asked"], "concurrent", "the method asked for")
        ok(c["fallback"] in ("budget", "overrun"),
           "a fallback from the default method is named", str(c))
    else:
        eq(c["method"], "concurrent" if concurrent_ok() else "fork",
           "the default method")


@once
def concurrent_ok():
    """Whether this kernel has userfaultfd's asynchronous write-protection
    (6.7+), which the concurrent mark needs (else the agent forks)."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    fd = libc.syscall(323, 0o2000000 | 1)    # userfaultfd, user mode only
    if fd < 0:
        return False
    try:
        import fcntl
        import struct
        api = bytearray(struct.pack("QQQ", 0xAA, (1 << 15) | (1 << 13), 0))
        buf = (ctypes.c_char * len(api)).from_buffer(api)
        r = libc.ioctl(fd, 0xC018AA3F, buf)
        return r == 0
    finally:
        os.close(fd)


def need_concurrent():
    if not concurrent_ok():
        raise Skip("the kernel lacks userfaultfd's asynchronous "
                   "write-protection (6.7+): checks fall back to fork")


@check("check --method fork and the concurrent mark: every category exactly, "
       "the same records")
def t_methods_agree():
    need_concurrent()
    t = Target()
    try:
        fork = check_json(t, "--method", "fork")
        # no pause budget: the concurrent mark itself is compared
        conc = check_json(t, "--method", "concurrent", "--pause-budget", "0")
    finally:
        t.close()
    eq(fork["check"]["method"], "fork", "--method fork")
    eq(conc["check"]["method"], "concurrent", "--method concurrent")
    expect_truth(fork, "fork")
    expect_truth(conc, "concurrent")
    eq(our_records(conc), our_records(fork), "records")


MOVE_SITES = ("site_box", "site_moved_root", "site_moved_late",
              "site_moved_new", "site_new_holder", "site_born_lost",
              "site_freed")


def move_sites(report):
    """site function -> {kind: blocks} for tests/workloads/reach-move.c"""
    out = {}
    for s in report["sites"]:
        fn = first_function(s)
        if fn in MOVE_SITES:
            kinds = out.setdefault(fn, {})
            for k in KINDS:
                n = s["reachability"][k]["blocks"]
                if n:
                    kinds[k] = kinds.get(k, 0) + n
    return out


@check("concurrent mark: pointers moved from unscanned to scanned memory "
       "during the mark (into a scanned root, into a scanned block, into a "
       "block allocated meanwhile) are never lost; a block allocated "
       "meanwhile is reachable, then lost; a freed one is gone")
def t_concurrent_moves():
    need_concurrent()
    truth = {"site_box": {"reachable": 2},
             "site_moved_root": {"reachable": 1},
             "site_moved_late": {"reachable": 1},
             "site_moved_new": {"reachable": 1},
             "site_new_holder": {"reachable": 1},
             "site_born_lost": {"reachable": 1}}
    t = Target(name="reach-move")
    try:
        first = check_json(t, "--top", "100", "--pause-budget", "0")
        second = check_json(t, "--top", "100")
        fork = check_json(t, "--top", "100", "--method", "fork")
        alive = t.alive()
    finally:
        t.close()
    eq(first["check"]["method"], "concurrent", "the first check's method")
    eq(first["check"]["threads_stopped"], 3, "threads stopped")
    eq(move_sites(first), truth, "the check during which they moved")
    truth["site_born_lost"] = {"definite": 1}
    eq(move_sites(second), truth, "the next concurrent check")
    eq(move_sites(fork), truth, "the next check, by fork")
    ok(alive, "the target runs on")


@check("concurrent mark: more allocations during the mark than its change "
       "log holds: the check falls back to the fork method, exact")
def t_concurrent_overflow():
    need_concurrent()
    t = Target(["flood"], name="reach-move")
    try:
        j = check_json(t, "--top", "100")
        alive = t.alive()
    finally:
        t.close()
    eq(j["check"]["method"], "fork", "the method after the overflow")
    eq(move_sites(j), {"site_box": {"reachable": 2},
                       "site_moved_root": {"reachable": 1},
                       "site_moved_new": {"reachable": 1},
                       "site_moved_late": {"definite": 1},
                       "site_freed": {"reachable": 1}},
       "nothing moved: the table as it was")
    ok(alive, "the target runs on")


CROWD = 300000


@check("concurrent mark on a big heap met in no useful order while a thread "
       "floods the change log: stays concurrent, exact")
def t_concurrent_crowd():
    # Before the mark read pages in address order through a cache and the
    # change log became a ring read during the mark, this check (300,000
    # shuffled blocks, a worker freeing and allocating without pause)
    # marked for seconds, overflowed the log and fell back to fork.
    need_concurrent()
    t = Target(["crowd", str(CROWD)])
    try:
        runs = [check_json(t, "--top", "100", "--pause-budget", "0")
                for _ in range(2)]
        alive = t.alive()
    finally:
        t.close()
    for i, j in enumerate(runs):
        where = "crowd check %d" % i
        eq(j["check"]["method"], "concurrent", where + ": method")
        eq(j["check"]["partial"], False, where + ": partial")
        expect_truth(j, where)
        crowd = {}
        for s in j["sites"]:
            fn = first_function(s)
            if fn in ("site_crowd", "site_crowd_index"):
                r = s["reachability"]
                crowd[fn] = {k: r[k]["blocks"] for k in KINDS if r[k]["blocks"]}
        eq(crowd, {"site_crowd": {"reachable": CROWD},
                   "site_crowd_index": {"reachable": 1}},
           where + ": the crowd's blocks")
    ok(alive, "the target runs on")


@check("check PID text: valgrind's loss records and LEAK SUMMARY")
def t_live_text():
    _, r, _, _, _ = live()
    eq(r.returncode, 0, "exit status")
    out = r.stdout.decode()
    contains(out, "208 (64 direct, 144 indirect) bytes in 1 blocks are "
             "definitely lost in loss record", "the list record")
    contains(out, "160 (80 direct, 80 indirect) bytes in 1 blocks are "
             "definitely lost in loss record", "the cycle record")
    contains(out, "300 bytes in 1 blocks are possibly lost", "interior")
    contains(out, "144 bytes in 3 blocks are indirectly lost", "list nodes")
    contains(out, "LEAK SUMMARY:", "summary")
    for k, label in (("definite", "definitely lost"),
                     ("indirect", "indirectly lost"),
                     ("possible", "possibly lost"),
                     ("reachable", "still reachable")):
        b, n = SUMMARY[k]
        contains(out, "%s: %d bytes in %d blocks" % (label, b, n),
                 "summary line")
    first = re.search(r"^(\d+).*loss record 1 of", out, re.M)
    ok(first and "definitely lost" in first.group(0),
       "the first record is a definite leak", shorten(out, 400))


@once
def at_exit():
    r = leakscope(["--leak-check", "--format", "json"], [workload("reach")],
                  input=b"")
    return r


@check("run --leak-check: the same categories at exit (holder thread alive)")
def t_exit_categories():
    r = at_exit()
    eq(r.returncode, 0, "exit status without --fail-on-leak")
    rep = root_report(r)
    expect_truth(rep, "at exit")
    ok(rep["check"]["at_exit"], "flagged at exit")
    ok(rep["check"]["all_registers"],
       "the running holder thread was stopped and its registers read")


@check("valgrind --leak-check=full on the same workload: the same records")
def t_valgrind():
    vg = need("valgrind")
    r = run_process([vg, "--leak-check=full", "--show-leak-kinds=all",
                     workload("reach")], input=b"", timeout=120)
    vrec = valgrind_records(r.stderr.decode("utf-8", "replace"))
    ours = our_records(root_report(at_exit()))
    eq(sorted(vrec), sorted(ours), "sites with records")
    for fn in ours:
        eq(sorted(ours[fn]), sorted(vrec[fn]), "records of %s" % fn)


@check("memory no longer tracked (after reset) is a root: a block only it "
       "points to is still reachable")
def t_untracked_roots():
    t = Target()
    try:
        r = ls("reset", t.pid)
        eq(r.returncode, 0, "reset: " + r.describe())
        t.p.stdin.write(b"n")
        t.p.stdin.flush()
        eq(t.p.stdout.readline(), b"done\n", "the workload allocated")
        j = check_json(t)
    finally:
        t.close()
    got = {}
    for s in j["sites"]:
        got[first_function(s)] = s["reachability"]
    ok("site_after_reset" in got, "the new block is listed", str(list(got)))
    f = got["site_after_reset"]
    eq((f["reachable"]["bytes"], f["reachable"]["blocks"]), (1300, 1),
       "site_after_reset reachable through the untracked holder")
    eq(f["definite"]["blocks"], 0, "not reported lost")
    ok("site_holder" not in got and "site_leak" not in got,
       "the blocks reset forgot are not listed", str(list(got)))


def our_records(rep):
    ours = {}
    for fn, figs in by_site(rep).items():
        for k in KINDS:
            if figs[k]["blocks"]:
                held = figs["held_indirect"]["bytes"] if k == "definite" else 0
                ours.setdefault(fn, []).append(
                    (k, figs[k]["bytes"], held, figs[k]["blocks"]))
    return ours


@check("valgrind's live leak check (vgdb leak_check full reachable any) on "
       "the same workload, running: the same records as check PID")
def t_valgrind_live():
    vrec = vgdb_live_records(workload("reach"))
    j, _, _, _, _ = live()
    ours = our_records(j)
    eq(sorted(vrec), sorted(ours), "sites with records")
    for fn in ours:
        eq(sorted(ours[fn]), sorted(vrec[fn]), "live records of %s" % fn)


@check("check PID while a thread allocates without pause: no crash, no hang")
def t_busy():
    t = Target(["busy"])
    try:
        for i in range(6):
            # Both methods, in turn: the concurrent one meets blocks
            # allocated and freed during its mark.
            j = check_json(t, "--method", ("concurrent", "fork")[i % 2])
            got = by_site(j)
            eq(got["site_leak"]["definite"]["blocks"], 3,
               "check %d: site_leak still definitely lost" % i)
            eq(got["site_global"]["reachable"]["blocks"], 1,
               "check %d: site_global still reachable" % i)
            eq(j["check"]["threads_stopped"], 3, "three threads stopped")
            ok(t.alive(), "the target survives check %d" % i)
    finally:
        t.close()
    eq(t.p.returncode, 0, "the busy target's exit status")


@check("check on a process that exits midway: one line, status 1, never a "
       "half report")
def t_exits_midway():
    outcomes = set()
    for delay in (0.0, 0.001, 0.003, 0.01, 0.03):
        t = Target(["busy"])
        p = subprocess.Popen([LEAKSCOPE, "check", str(t.pid)], env=env(),
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        time.sleep(delay)
        t.p.kill()
        out, err = p.communicate(timeout=30)
        t.p.wait()
        if p.returncode == 0:
            contains(out.decode(), "LEAK SUMMARY:", "a whole report")
            outcomes.add("done")
            continue
        eq(p.returncode, 1, "exit status of a failed check")
        lines = err.decode().strip().splitlines()
        eq(len(lines), 1, "error lines: %r" % lines)
        ok(lines[0].startswith("leakscope: "), "one leakscope line",
           lines[0])
        eq(out, b"", "nothing on stdout")
        outcomes.add("error")
    r = ls("check", "999999")
    eq(r.returncode, 1, "a pid that does not exist")
    eq(r.stderr.decode().strip().count("\n"), 0, "one line")
    contains(r.stderr.decode(), "no process with pid 999999", "reason")


def fake_agent_check(after_marked):
    """`check` against a socket of our own standing in for a sleep's agent:
    READY, the registers read, MARKED, then after_marked (bytes) and the
    connection closed.  Returns the finished `leakscope check`."""
    import socket
    import threading
    sl, srv, path = listening_process(RUNTIME, env())
    wait_environ(sl.pid, "LEAKSCOPE_RUNTIME_DIR")   # how check finds the socket
    srv.settimeout(30)

    def serve():
        try:
            c, _ = srv.accept()
            c.settimeout(10)
            c.recv(64)                      # the verb
            c.sendall(b"READY 1\n")        # no thread of sleep's to skip
            c.recv(1 << 16)                 # the register list (or its start)
            c.sendall(b"MARKED\n" + after_marked)
            # Half-close, then drain until the client closes: closing with
            # unread register bytes would send a reset, not this end.
            c.shutdown(socket.SHUT_WR)
            while c.recv(1 << 16):
                pass
            c.close()
        except OSError:
            pass
    th = threading.Thread(target=serve, daemon=True)
    th.start()
    try:
        return ls("check", sl.pid, timeout=60)
    finally:
        th.join(10)
        srv.close()
        os.unlink(path)
        sl.kill()
        sl.wait()


@check("check: an agent that closes after MARKED without a snapshot, or sends "
       "its ERR line, gives that reason in one line (not 'not a leakscope "
       "snapshot')")
def t_no_snapshot():
    r = fake_agent_check(b"")
    eq(r.returncode, 1, "exit status")
    err = r.stderr.decode().strip()
    eq(err.count("\n"), 0, "one line: %r" % err)
    contains(err, "the check ended without a snapshot", "reason")
    r = fake_agent_check(b"ERR out of memory\n")
    eq(r.returncode, 1, "exit status with an ERR line")
    err = r.stderr.decode().strip()
    eq(err.count("\n"), 0, "one line: %r" % err)
    contains(err, "refused: out of memory", "the agent's reason")


@check("check refuses a process sampled by the agent, in one line")
def t_sampled():
    e = env()
    e["LD_PRELOAD"] = AGENT
    e["LEAKSCOPE_SAMPLE_RATE"] = "4096"
    p = subprocess.Popen([workload("reach")], env=e, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    try:
        p.stdout.readline()
        r = ls("check", p.pid)
    finally:
        p.stdin.close()
        p.wait(timeout=10)
    eq(r.returncode, 1, "exit status")
    contains(r.stderr.decode(), "check needs full tracking", "reason")
    eq(r.stderr.decode().strip().count("\n"), 0, "one line")


def gate(opts, name, input=b""):
    return leakscope(opts, [workload(name)], input=input)


@check("clean C and C++ programs pass run --leak-check --fail-on-leak and "
       "run --fail-on-leak (the runtimes' own allocations suppressed)")
def t_clean_pass():
    for name in ("clean-stdio", "clean-cxx"):
        for opts in (["--leak-check", "--fail-on-leak"], ["--fail-on-leak"]):
            r = gate(opts, name)
            eq(r.returncode, 0, "%s %s: %s" % (name, " ".join(opts),
                                               r.describe()))
            eq(r.stderr, b"", "%s %s: nothing on stderr" % (name, opts))


@check("--no-default-suppressions: clean-stdio's outstanding blocks, all the C "
       "library's, are listed (adding up to the reachable total) and counted by "
       "run --fail-on-leak (99); without it none is listed")
def t_no_default_suppressions():
    def report(extra):
        r = gate(["--leak-check", "--format", "json"] + extra, "clean-stdio")
        eq(r.returncode, 0, "clean-stdio --leak-check %s: %s" % (extra, r.describe()))
        return root_report(r)
    hidden, shown = report([]), report(["--no-default-suppressions"])
    eq(len(hidden["sites"]), 0, "sites listed by default")
    reach = shown["totals"]["reachability"]
    eq((reach["definite"]["bytes"], reach["indirect"]["bytes"], reach["possible"]["bytes"]),
       (0, 0, 0), "nothing lost")
    eq(reach, hidden["totals"]["reachability"], "the same blocks sorted either way")
    ok(len(shown["sites"]) > 0, "sites listed with --no-default-suppressions")
    eq((sum(x["live_bytes"] for x in shown["sites"]),
        sum(x["live_blocks"] for x in shown["sites"])),
       (reach["reachable"]["bytes"], reach["reachable"]["blocks"]),
       "the sites add up to the reachable total")
    mods = sorted({os.path.basename(x["frames"][0].get("module") or "?") for x in shown["sites"]})
    ok(all(m.startswith(("libc.so", "ld-linux")) for m in mods),
       "every block allocated inside the C library or the loader", str(mods))
    r = gate(["--fail-on-leak", "--no-default-suppressions"], "clean-stdio")
    eq(r.returncode, 99, "run --fail-on-leak --no-default-suppressions: " + r.describe())
    ok(re.search(r"leakscope: pid \d+: %d bytes in %d blocks outstanding at exit "
                 r"from %d stacks \(--fail-on-leak\)" % (
                     reach["reachable"]["bytes"], reach["reachable"]["blocks"],
                     len(shown["sites"])), r.stderr.decode()),
       "the reason names the C library's blocks", r.stderr.decode())


@check("a leaking program fails run --leak-check --fail-on-leak with one "
       "line saying why, also with --output")
def t_leak_fails():
    r = gate(["--leak-check", "--fail-on-leak"], "reach")
    eq(r.returncode, 99, "exit status")
    lines = r.stderr.decode().strip().splitlines()
    eq(len(lines), 1, "stderr lines %r" % lines)
    ok(re.match(r"leakscope: pid \d+: 668 bytes in 9 blocks definitely lost "
                r"or indirectly lost from 4 stacks \(--fail-on-leak\)$",
                lines[0]), "the reason", lines[0])


@check("--fail-on possible: the gate counts what it is told; --fail-on "
       "reachable trips on reachable bytes only")
def t_fail_on_kinds():
    r = gate(["--fail-on", "possible"], "reach")
    eq(r.returncode, 99, "exit status")
    contains(r.stderr.decode(), ": 300 bytes in 1 blocks possibly lost",
             "reason")
    r = gate(["--fail-on", "reachable", "--suppressions",
              write_supp("leak:site_global\nleak:site_tls\nleak:site_stack\n"
                         "leak:site_holder\n")],
             "reach")
    eq(r.returncode, 0, "nothing reachable left after suppressions: " +
       r.describe())


@check("--fail-on-leak honours the report's filters (--min-size)")
def t_gate_filters():
    r = gate(["--leak-check", "--fail-on-leak", "--min-size", "100"], "reach")
    eq(r.returncode, 99, "site_leak's 100-byte blocks count")
    contains(r.stderr.decode(), ": 300 bytes in 3 blocks definitely lost",
             "only the blocks of 100 bytes or more")
    r = gate(["--leak-check", "--fail-on-leak", "--min-size", "101"], "reach")
    eq(r.returncode, 0, "no lost block of 101 bytes or more: " + r.describe())
    r = gate(["--fail-on-leak", "--min-size", "65536"], "basic")
    eq(r.returncode, 99, "without --leak-check: site_large's block counts")
    contains(r.stderr.decode(), ": 65536 bytes in 1 blocks outstanding",
             "only blocks of 64 KiB or more")
    r = gate(["--fail-on-leak", "--min-size", "65537"], "basic")
    eq(r.returncode, 0, "without --leak-check, none that large: " +
       r.describe())


def write_supp(text):
    fd, path = tempfile.mkstemp(prefix="leakscope-supp-", dir=RUNTIME)
    with os.fdopen(fd, "w") as f:
        f.write(text)
    return path


@check("an LSan suppression file removes exactly the suppressed records")
def t_suppressions():
    supp = write_supp("# list and leaks\n  leak:site_list_head  \n\n"
                      "leak:^site_leak$\n")
    supp2 = write_supp("leak:reach.c:9*\nleak:*interi?r\n")
    r = gate(["--leak-check", "--format", "json", "--suppressions", supp,
              "--suppressions", write_supp("leak:site_interior\n")], "reach")
    rep = root_report(r)
    got = by_site(rep)
    # The list's nodes, which only the suppressed head holds, go with it
    # (LeakSanitizer's scope), though their own site matches nothing.
    eq(sorted(got), sorted(set(TRUTH) - {"site_list_head", "site_leak",
                                         "site_interior",
                                         "site_list_node"}),
       "sites left")
    for fn in got:
        for k in KINDS:
            eq((got[fn][k]["bytes"], got[fn][k]["blocks"]),
               TRUTH[fn].get(k, (0, 0)), "%s %s unchanged" % (fn, k))
    eq(rep["suppressed"]["sites"] >= 3, True, "suppressed sites")
    s = rep["reachability"]
    eq((s["definite"]["bytes"], s["definite"]["blocks"]), (80, 1),
       "definite left: the cycle")
    eq((s["indirect"]["bytes"], s["indirect"]["blocks"]), (80, 1),
       "indirect left: the cycle's")
    # a pattern that matches nothing changes nothing
    r = gate(["--leak-check", "--format", "json", "--suppressions", supp2],
             "reach")
    base = root_report(r)
    expect_truth(base, "non-matching suppressions")
    # head 64/1, its nodes 144/3, the leaks 300/3, the interior 300/1
    eq((rep["suppressed"]["bytes"] - base["suppressed"]["bytes"],
        rep["suppressed"]["blocks"] - base["suppressed"]["blocks"]),
       (808, 8), "suppressed beyond the default suppressions")


@check("bad suppression files: one line naming the file and line, status "
       "125, no report")
def t_bad_suppressions():
    for text, line, why in (("leak:ok\nrace:foo\n", 2, "unknown suppression"),
                            ("\n\nleak:\n", 3, "empty pattern"),
                            ("leak\n", 1, "expected TYPE:PATTERN")):
        path = write_supp(text)
        r = gate(["--leak-check", "--suppressions", path], "reach")
        eq(r.returncode, 125, "exit status")
        msg = r.stderr.decode().strip()
        eq(msg.count("\n"), 0, "one line: %r" % msg)
        contains(msg, "%s:%d: %s" % (path, line, why), "reason")
        eq(r.files, {}, "no report written")
    r = ls("check", "--suppressions", "/nonexistent/supp", "1")
    eq(r.returncode, 125, "check with a missing file")
    contains(r.stderr.decode(), "cannot read suppressions "
             "'/nonexistent/supp'", "reason")


@check("--gen-suppressions prints ready-made entries that suppress them")
def t_gen_suppressions():
    r = gate(["--leak-check", "--gen-suppressions"], "reach")
    text = r.files["report"]
    entries = re.findall(r"^leak:(.*)$", text, re.M)
    for fn in ("site_leak", "site_list_head", "site_cycle", "site_list_node",
               "site_interior"):
        ok(fn in entries, "an entry for %s" % fn, str(entries))
    ok("site_global" not in entries, "none for reachable blocks",
       str(entries))
    path = write_supp(text[text.index("Suppressions for"):].split("\n", 1)[1])
    r = gate(["--leak-check", "--fail-on-leak", "--suppressions", path],
             "reach")
    eq(r.returncode, 0, "the generated file silences the gate: " +
       r.describe())


@check("--only definite,indirect: only lost bytes, in JSON, folded and the "
       "SVG flame graph")
def t_only():
    r = gate(["--leak-check", "--only", "definite,indirect", "--format",
              "json"], "reach")
    rep = root_report(r)
    got = by_site(rep)
    eq(sorted(got), ["site_cycle", "site_leak", "site_list_head",
                     "site_list_node"], "sites")
    eq(sum(s["live_bytes"] for s in rep["sites"]), 668, "live bytes shown")
    r = gate(["--leak-check", "--only", "definite,indirect", "--format",
              "folded"], "reach")
    total = sum(int(l.rsplit(" ", 1)[1]) for l in
                r.files["report"].splitlines() if l.strip())
    eq(total, 668, "folded weights: the lost bytes")
    r = gate(["--leak-check", "--only", "definite,indirect", "--format",
              "svg"], "reach")
    svg = r.files["report"]
    contains(svg, "668 bytes", "the flame graph's root: the lost bytes")
    ok("site_global" not in svg and "site_leak" in svg,
       "the flame graph holds the lost sites only")
    r = gate(["--only", "definite"], "reach")
    eq(r.returncode, 125, "--only without --leak-check")
    r = gate(["--leak-check", "--only", "lost"], "reach")
    eq(r.returncode, 125, "an unknown kind")
    contains(r.stderr.decode(), "unknown kind 'lost'", "reason")


@check("check on a real program (python3): runs on, answers whole")
def t_python():
    py = need("python3")
    e = env()
    e["LD_PRELOAD"] = AGENT
    p = subprocess.Popen([py, "-c", "import sys, json\n"
                          "keep = [bytes(1000) for i in range(20000)]\n"
                          "print('ready', flush=True)\nsys.stdin.read()\n"
                          "print(len(keep))"], env=e, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        eq(p.stdout.readline().strip(), b"ready", "python ready")
        r = ls("check", "--format", "json", p.pid)
        eq(r.returncode, 0, "check status: " + r.describe())
        j = json.loads(r.stdout)
        reach = j["totals"]["reachability"]
        ok(reach["reachable"]["blocks"] > 20000,
           "the 20000 byte strings are reachable", str(reach))
        out, _ = p.communicate(input=b"", timeout=30)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    eq(out.split()[-1], b"20000", "python finished its work")
