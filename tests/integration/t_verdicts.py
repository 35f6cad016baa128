"""Leak verdicts against independent oracles: valgrind's memcheck and
LeakSanitizer, on the small programs of tests/workloads/verdict/ (each
documents its truth in its opening comment).

Every program is built here with gcc and clang, at -O0 and -O2, and run
under `leakscope run --leak-check --fail-on-leak` and under valgrind
(`--leak-check=full --show-leak-kinds=all
--errors-for-leak-kinds=definite,indirect`) on the same binary: the four
LEAK SUMMARY lines (bytes and blocks) must be equal, and leakscope's gate
(exit 99) must trip exactly when valgrind's leak errors do.  The cases
that were intermittent (stale words of dead frames, ended threads'
stacks, threads running at exit) run 3 times under leakscope.  Where LeakSanitizer's verdict is
the same as valgrind's (clang -fsanitize=leak), its leaked bytes and
allocations and its exit status are compared too.  The suite compares
every case; docs/REACHABILITY.md records the figures.

valgrind's own verdict is not always the same on every machine: once,
on a fresh CI machine, it called gate 2's dropped 1 MiB block (clang -O0)
"possibly lost" where leakscope said definitely lost.  memcheck serves
every block from its own arena in the low addresses it gives the client
(the block right after ld.so's and libc's mappings), and "possibly lost"
means that some word it scans holds an address inside the block and none
its start.  Words there that are no pointers of the program's are at
hand: ld.so's cache_new still holds the address of /etc/ld.so.cache,
unmapped after start-up, and ld.so's version records hold ELF hashes
(0x0696919x, 0x09691a75) that read as addresses in the same range; where
valgrind puts the block depends on the sizes of what was mapped before
it (a loader cache of 10, 11 or 12 pages puts it at 0x4a41040, 0x4a42040
or 0x4a43040).  Here it was never possibly lost in 474 runs (with and
without ASLR, 250 environment sizes, a fresh directory per run as below,
4 loader caches, at a load of 10): the word that did it there is not
known.  At exit here no word points inside
the block (vgdb's who_points_at), so the program is not changed: no word
of its own could; when valgrind calls blocks
possibly lost that every leakscope run calls definitely lost (the same
bytes and blocks, everything else equal), it is asked twice more and 2
of its 3 answers are the oracle, so a real disagreement still fails
(VG_RERUNS; t_possibly_rule).  Every case is treated so, livethreads 1's
2 MiB blocks too.
"""
import concurrent.futures
import os
import re
import subprocess
import sys
import tempfile

from harness import (agent_env, check, cli, once, eq, ok, fail, need,
                     leakscope, run_process, BUILD, WORKLOAD_SRC, Failure)

SRC = os.path.join(WORKLOAD_SRC, "verdict")
OUT = tempfile.mkdtemp(prefix="leakscope-verdicts-")
AGENT = os.path.join(BUILD, "libleakscope.so")
ALL = (("gcc", "-O0"), ("gcc", "-O2"), ("clang", "-O0"), ("clang", "-O2"))
TWO = (("gcc", "-O0"), ("clang", "-O2"))
REPS = 3
KINDS = ("definitely lost", "indirectly lost", "possibly lost",
         "still reachable")
LOST = KINDS[:3]

# (program, modes, build variants, leakscope runs per -O0 build, the
# kinds compared): each mode of each build is one case.
CASES = (
    ("exitpath", range(5), ALL, REPS, KINDS),
    ("deadframe", range(3), ALL, REPS, KINDS),
    ("threadend", range(5), ALL, REPS, KINDS),
    ("regs", (0, 2), ALL, 1, KINDS),
    ("regs", (1,), (("gcc", "-O0"), ("clang", "-O0")), 1, KINDS),
    ("gate", range(4), ALL, 1, KINDS),
    ("livethreads", (0,), ALL, REPS, KINDS),
    # A thread churning 2 MiB blocks: whether one is live at the instant
    # of the exit differs from run to run (and under valgrind); what is
    # lost does not.
    ("livethreads", (1,), ALL, REPS, LOST),
    ("blockedreg", range(3), ALL, REPS, KINDS),
    ("pthexit", range(4), ALL, 1, KINDS),
    ("shapes", range(5), TWO, 1, KINDS),
)
PROGRAMS = sorted({c[0] for c in CASES})
# LeakSanitizer is compared where its verdict is valgrind's: it scans the
# exiting thread's stack from its stack pointer inside the leak check, so
# the stale words in the exit path's frames count there (the exit-path
# cases at -O0 differ), and it takes interior pointers for pointers (no
# "possibly lost").
LSAN = ("threadend", "gate", "exitpath", "deadframe", "blockedreg")

# leakscope's default suppressions (lib/suppress.c) that these programs
# meet, for valgrind: the dynamic loader's TLS vectors and dlopen's own.
VG_SUPP = "".join(
    "{\n   %s\n   Memcheck:Leak\n   match-leak-kinds: all\n   ...\n"
    "   fun:%s\n}\n" % (f, f) for f in (
        "_dl_allocate_tls", "_dl_resize_dtv", "_dl_update_slotinfo",
        "__tls_get_addr", "_dl_new_object", "_dl_map_object",
        "_dl_check_map_versions", "_dl_map_object_deps",
        "_dl_find_object_update", "_dlerror_run"))

_SUMMARY = re.compile(r"(definitely lost|indirectly lost|possibly lost|"
                      r"still reachable): ([\d,]+) bytes in ([\d,]+) blocks")


def summary(text, who):
    """The LEAK SUMMARY of a report or of valgrind's output: kind ->
    (bytes, blocks)."""
    if "All heap blocks were freed" in text:
        return {k: (0, 0) for k in KINDS}
    got = {}
    for m in _SUMMARY.finditer(text):
        got[m.group(1)] = (int(m.group(2).replace(",", "")),
                           int(m.group(3).replace(",", "")))
    if sorted(got) != sorted(KINDS):
        fail("%s: a LEAK SUMMARY" % who, "its four lines", text[-1500:])
    return got


def build(name, cc, opt, extra=()):
    src = os.path.join(SRC, name + ".c")
    tag = "%s-%s%s%s" % (name, cc, opt, "-lsan" if extra else "")
    out = os.path.join(OUT, tag)
    r = subprocess.run([need(cc), opt, "-g", "-pthread", "-o", out, src]
                       + list(extra) + ["-ldl"], capture_output=True,
                       timeout=120)
    if r.returncode != 0:
        raise Failure("%s %s %s: %s" % (cc, opt, src, r.stderr.decode()))
    return out


def run_ls(binary, mode):
    r = leakscope(["--leak-check", "--fail-on-leak"], [binary, str(mode)],
                  env=agent_env(OUT))
    text = r.files.get("report", "")
    if r.returncode not in (0, 99):
        fail("leakscope run %s %d: exit status" % (binary, mode), "0 or 99",
             r.returncode)
    return summary(text, "leakscope %s %d" % (binary, mode)), r.returncode


def vg_output(binary, args, env=None):
    """valgrind's report on binary ARGS (its loss records and LEAK
    SUMMARY) and its exit status, 42 for leak errors."""
    supp = os.path.join(OUT, "vg.supp")
    if not os.path.exists(supp):
        with open(supp, "w") as f:
            f.write(VG_SUPP)
    r = run_process([need("valgrind"), "--leak-check=full",
                     "--show-leak-kinds=all",
                     "--errors-for-leak-kinds=definite,indirect",
                     "--error-exitcode=42", "--suppressions=" + supp,
                     binary] + list(args), timeout=120, env=env)
    return r.stderr.decode("utf-8", "replace"), r.returncode


def run_vg_args(binary, args):
    text, rc = vg_output(binary, args)
    return summary(text, "valgrind %s %s" % (binary, args)), rc


def run_vg(binary, mode):
    return run_vg_args(binary, [str(mode)])


def run_lsan(binary, mode):
    r = run_process([binary, str(mode)], timeout=60,
                    env=dict(os.environ, LSAN_OPTIONS="exitcode=23"))
    text = r.stderr.decode("utf-8", "replace")
    m = re.search(r"SUMMARY: LeakSanitizer: (\d+) byte\(s\) leaked in "
                  r"(\d+) allocation", text)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0), r.returncode


def pool_map(fn, jobs):
    with concurrent.futures.ThreadPoolExecutor(2) as ex:
        return list(ex.map(lambda j: fn(*j), jobs))


@once
def results():
    """(program, mode, cc, opt) -> (valgrind's summary and status,
    [leakscope's summaries and statuses, one per run], kinds compared)."""
    need("valgrind")
    builds = sorted({(n, cc, opt) for n, _, vs, _, _ in CASES
                     for cc, opt in vs})
    bins = dict(zip(builds, pool_map(build, builds)))
    keys, reps, kinds = [], {}, {}
    for n, modes, vs, r, ks in CASES:
        for m in modes:
            for cc, opt in vs:
                keys.append((n, m, cc, opt))
                reps[n, m, cc, opt] = r if opt == "-O0" else 1
                kinds[n, m, cc, opt] = ks
    vg = pool_map(lambda n, m, cc, opt: run_vg(bins[n, cc, opt], m), keys)
    ls_jobs = [(k, i) for k in keys for i in range(reps[k])]
    ls = pool_map(lambda k, i: run_ls(bins[k[0], k[2], k[3]], k[1]), ls_jobs)
    out = {k: (v, [], kinds[k]) for k, v in zip(keys, vg)}
    for (k, _), r in zip(ls_jobs, ls):
        out[k][1].append(r)
    for k, v in ask_again(out, lambda k: run_vg(bins[k[0], k[2], k[3]],
                                                 k[1])).items():
        out[k] = (v, out[k][1], out[k][2])
    return out


VG_RERUNS = []	# (case, valgrind's 3 answers) where it was asked again


def ask_again(cases, rerun):
    """valgrind's "possibly lost" for what leakscope calls definitely
    lost (module docstring).  cases: case -> (valgrind's summary and
    status, [leakscope's, one per run], the kinds compared); rerun(case)
    asks valgrind again.  For each case in that situation, valgrind is
    asked twice more: case -> the answer 2 of its 3 give."""
    again = [k for k, (v, runs, kinds) in cases.items()
             if only_possibly(v[0], runs, kinds)]
    answers = pool_map(lambda k, i: rerun(k),
                       [(k, i) for k in again for i in range(2)])
    settled = {}
    for i, k in enumerate(again):
        three = [cases[k][0]] + answers[2 * i:2 * i + 2]
        VG_RERUNS.append((k, three))
        settled[k] = majority(three)
    return settled


def lsan_settle(answers, agrees, rerun):
    """LeakSanitizer runs once per case; where its answer is not
    valgrind's (agrees(case, answer) is false), it is asked twice more
    and 2 of 3 decide: on a loaded machine a thread can end after its
    check.  answers: case -> (leaked, status); rerun(case) asks again.
    Every changed answer is printed on the test's output."""
    again = [k for k, a in answers.items() if not agrees(k, a)]
    more = pool_map(lambda k, i: rerun(k),
                    [(k, i) for k in again for i in range(2)])
    out = dict(answers)
    for i, k in enumerate(again):
        three = [answers[k]] + more[2 * i:2 * i + 2]
        if three.count(three[0]) < 3:
            sys.stderr.write("# LeakSanitizer asked again on %s: %s\n"
                             % (" ".join(map(str, k)), three))
        out[k] = majority(three)
    return out


def log_reruns(names):
    """Say where valgrind was asked again, on the test's output."""
    for (name, mode, cc, opt), three in VG_RERUNS:
        if name in names:
            sys.stderr.write("# valgrind asked again on %s %d (%s %s): %s\n"
                             % (name, mode, cc, opt,
                                [(v["definitely lost"], v["possibly lost"])
                                 for v, _ in three]))


def only_possibly(vsum, runs, kinds=KINDS):
    """Does valgrind's summary differ from every leakscope run's only in
    blocks it calls possibly lost that leakscope calls definitely lost
    (the same bytes and blocks moved between those two kinds; the other
    kinds compared equal)?"""
    def moved(lsum):
        d = [a - b for a, b in zip(lsum["definitely lost"],
                                   vsum["definitely lost"])]
        p = [a - b for a, b in zip(vsum["possibly lost"],
                                   lsum["possibly lost"])]
        return (d == p and d[1] > 0 and all(
            lsum[k] == vsum[k] for k in kinds
            if k not in ("definitely lost", "possibly lost")))
    return bool(runs) and all(moved(lsum) for lsum, _ in runs)


def majority(answers):
    """The (summary, status) that at least 2 of 3 answers give, else the
    first (which then differs from leakscope and fails the check)."""
    for a in answers:
        if answers.count(a) >= 2:
            return a
    return answers[0]


def differences(names):
    """Every case of these programs where a run's LEAK SUMMARY or gate is
    not valgrind's, and the count of cases compared."""
    bad, n = [], 0
    for (name, mode, cc, opt), ((vsum, vrc), runs, kinds) in \
            results().items():
        if name not in names:
            continue
        n += 1
        want = {k: vsum[k] for k in kinds}
        for lsum, lrc in runs:
            got = {k: lsum[k] for k in kinds}
            if got != want or (lrc == 99) != (vrc == 42):
                bad.append("%s %d (%s %s): leakscope %s (exit %d), "
                           "valgrind %s (exit %d)" % (
                               name, mode, cc, opt, got, lrc, want, vrc))
                break
    return bad, n


def agree(name, truths=()):
    """Every case of program name as valgrind says, and the truths the
    program states ((mode, cc, opt), kind, (bytes, blocks)) in valgrind's
    and every leakscope run's summary."""
    bad, n = differences((name,))
    ok(n > 0, "%s: cases compared" % name)
    ok(not bad, "%s: %d of %d cases differ from valgrind" % (
        name, len(bad), n), "\n  ".join(bad))
    for (mode, cc, opt), kind, want in truths:
        (vsum, _), runs, _ = results()[(name, mode, cc, opt)]
        for who, got in [("valgrind", vsum)] + [("leakscope", r[0])
                                                 for r in runs]:
            eq(got[kind], want, "%s %d (%s %s): %s %s" % (
                name, mode, cc, opt, who, kind))


@check("exit paths (return from main, exit(), exit() in an atexit "
       "handler, _exit, _Exit): valgrind's LEAK SUMMARY and gate, gcc and "
       "clang at -O0 and -O2, 3 runs each at -O0")
def t_exit_paths():
    agree("exitpath", [((0, "gcc", "-O0"), "definitely lost", (300, 2)),
                       ((1, "gcc", "-O0"), "still reachable", (200, 1)),
                       ((2, "clang", "-O0"), "definitely lost", (300, 2))])


@check("blocks whose last pointer sat in a returned function's frame "
       "(recursion, an array): lost, as valgrind says, every run")
def t_dead_frames():
    agree("deadframe", [((0, cc, opt), "definitely lost", (512, 8))
                        for cc, opt in ALL])


@check("ended threads (joined, detached, a cached stack reused, a __thread "
       "of an ended thread): valgrind's verdict, every run")
def t_ended_threads():
    agree("threadend", [((0, "gcc", "-O0"), "definitely lost", (2048, 4)),
                        ((3, "clang", "-O2"), "definitely lost", (96, 1))])


@check("the caller of exit() or _exit() holds its blocks in registers "
       "(-O2) or its frame (-O0): still reachable, as valgrind says; an "
       "atexit handler's leak is lost")
def t_exit_registers():
    agree("regs", [((0, "clang", "-O2"), "still reachable", (896, 3)),
                   ((1, "gcc", "-O0"), "still reachable", (896, 3))])


@check("zero-byte blocks, a large block, realloc and calloc: valgrind's "
       "summary; malloc(0) never freed trips --fail-on-leak (99)")
def t_gate_sizes():
    agree("gate", [((0, cc, opt), "definitely lost", (0, 1))
                   for cc, opt in ALL])
    for cc, opt in ALL:
        runs = results()[("gate", 0, cc, opt)][1]
        eq([rc for _, rc in runs], [99] * len(runs),
           "gate 0 (%s %s): --fail-on-leak exit status" % (cc, opt))


@check("threads still running at exit (blocked holding blocks on their "
       "stack and TLS; churning 2 MiB blocks): no false leak, valgrind's "
       "summary, 3 runs")
def t_live_threads():
    agree("livethreads", [((0, cc, opt), "still reachable", (790, 2))
                          for cc, opt in ALL])


@check("a thread blocked in read(), a futex wait or nanosleep at exit "
       "holding its only pointer in a callee-saved register (r12, rbx, "
       "r15): still reachable, as valgrind and LeakSanitizer say, 3 runs")
def t_blocked_registers():
    agree("blockedreg", [((m, cc, opt), "still reachable", (400, 1))
                         for m in range(3) for cc, opt in ALL])


@check("main ends with pthread_exit (a thread outlives it, or main is the "
       "last thread), or a thread on a 64 KiB stack calls exit(): the "
       "process ends, its output and exit status are native's, its leaks "
       "valgrind's (gcc and clang, -O0 and -O2)")
def t_pthread_exit_in_main():
    agree("pthexit", [((m, cc, opt), "definitely lost", (123, 1))
                      for m in range(4) for cc, opt in ALL])
    for cc, opt in TWO:
        binary = os.path.join(OUT, "pthexit-%s%s" % (cc, opt))
        for m in range(4):
            native = run_process([binary, str(m)], timeout=20)
            r = leakscope(["--leak-check"], [binary, str(m)],
                          env=agent_env(OUT), timeout=20)
            what = "pthexit %d (%s %s) under leakscope run" % (m, cc, opt)
            eq(r.returncode, native.returncode, what + ": exit status")
            eq(r.stdout, native.stdout, what + ": output")
            ok(b"atexit" in native.stdout, what + ": native ran atexit")


@check("lists, trees, cycles, interior pointers, many blocks: valgrind's "
       "summary (gcc -O0, clang -O2)")
def t_shapes():
    agree("shapes", [((0, "gcc", "-O0"), "indirectly lost", (240, 5)),
                     ((2, "clang", "-O2"), "definitely lost", (104, 2))])


@once
def lsan_results():
    need("clang")
    builds = [(n, "clang", opt, ("-fsanitize=leak",)) for n in LSAN
              for opt in ("-O0", "-O2")]
    bins = dict(zip([b[:3] for b in builds], pool_map(build, builds)))
    keys = [k for k in results() if k[0] in LSAN and k[2] == "clang"]
    rerun = lambda k: run_lsan(bins[k[0], k[2], k[3]], k[1])
    return lsan_settle(dict(zip(keys, pool_map(lambda *k: rerun(k), keys))),
                       lambda k, a: lsan_is_valgrinds(k, *a), rerun)


def lsan_is_valgrinds(key, leaked, rc):
    """Is LeakSanitizer's answer valgrind's (definitely + indirectly lost,
    and the gate)?"""
    vsum, vrc = results()[key][0]
    vg = tuple(a + b for a, b in zip(vsum["definitely lost"],
                                     vsum["indirectly lost"]))
    if key[:2] == ("gate", 0) and leaked[1]:
        leaked = (0, leaked[1])	# it counts a malloc(0) as 1 byte
    return vg == leaked and (vrc == 42) == (rc == 23)


@check("LeakSanitizer (clang -fsanitize=leak), where its verdict is "
       "valgrind's: its leaked bytes and allocations are leakscope's "
       "definitely + indirectly lost, its failure leakscope's gate")
def t_lsan():
    bad, same, differ = [], 0, []
    for key, (leaked, rc) in sorted(lsan_results().items()):
        if key[:2] == ("gate", 0) and leaked[1]:
            leaked = (0, leaked[1])	# it counts a malloc(0) as 1 byte
        if not lsan_is_valgrinds(key, leaked, rc):
            differ.append("%s %d clang %s" % (key[0], key[1], key[3]))
            continue		# the oracles differ: valgrind's case only
        same += 1
        for lsum, lrc in results()[key][1]:
            ours = tuple(a + b for a, b in zip(lsum["definitely lost"],
                                               lsum["indirectly lost"]))
            if ours != leaked or (lrc == 99) != (rc == 23):
                bad.append("%s %d clang %s: leakscope %s (exit %d), "
                           "LeakSanitizer %s (exit %d)" % (
                               key[0], key[1], key[3], ours, lrc, leaked,
                               rc))
                break
    ok(same == LSAN_SAME, "cases where LeakSanitizer and valgrind agree: "
       "%d, expected %d" % (same, LSAN_SAME),
       "where they differ: " + ", ".join(differ))
    ok(not bad, "%d of %d cases differ from LeakSanitizer" % (
        len(bad), same), "\n  ".join(bad))


# Of the 40 cases LeakSanitizer checks here, 26 are valgrind's (the rest:
# the comment above LSAN).
LSAN_SAME = 26


@check("the rule for valgrind's possibly lost: asked again only when it "
       "moved leakscope's definite blocks (nothing else) to possibly "
       "lost, and 2 of 3 answers decide")
def t_possibly_rule():
    def s(d=(0, 0), p=(0, 0), r=(0, 0), i=(0, 0)):
        return {"definitely lost": d, "indirectly lost": i,
                "possibly lost": p, "still reachable": r}
    mib = (1 << 20, 1)
    ls = [(s(d=mib, r=mib), 99)]
    eq([only_possibly(v, ls) for v in (
        s(p=mib, r=mib),		# the gate 2 answer: asked again
        s(d=mib, r=mib),		# the same: not
        s(p=mib),			# the kept block lost too: not
        s(p=mib, r=mib, i=(8, 1)),	# another kind differs: not
        s(p=(1 << 19, 1), r=mib))],	# other bytes: not
       [True, False, False, False, False], "asked again")
    eq(only_possibly(s(p=mib), [(s(d=mib), 99), (s(r=mib), 0)]), False,
       "asked again when one leakscope run calls it reachable")
    eq(only_possibly(s(p=mib), [(s(d=mib, r=mib), 99)], LOST), True,
       "asked again where still reachable is not compared")
    d, p = (s(d=mib), 42), (s(p=mib), 0)
    eq([majority(a) for a in ([p, d, d], [p, p, d], [p, d, p])], [d, p, p],
       "2 of 3 decide")
    # the whole round on made-up cases: only the first is asked again
    answers = {"a": [d, d], "b": [p, d], "c": [d, d]}
    asked = []

    def rerun(k):
        asked.append(k)
        return answers[k].pop()
    held = len(VG_RERUNS)
    got = ask_again({"a": (p, [(s(d=mib), 99)], KINDS),
                     "b": (p, [(s(d=mib), 99)], KINDS),
                     "c": (d, [(s(d=mib), 99)], KINDS)}, rerun)
    del VG_RERUNS[held:]
    eq((got, sorted(asked)), ({"a": d, "b": p}, ["a", "a", "b", "b"]),
       "valgrind's answers settled, and the cases asked again")


@check("suite: every case's LEAK SUMMARY (4 kinds, bytes and blocks) "
       "equals valgrind's")
def t_suite():
    log_reruns(PROGRAMS)
    bad, n = differences(PROGRAMS)
    eq(n, sum(len(c[1]) * len(c[2]) for c in CASES), "cases compared")
    ok(not bad, "%d of %d cases differ from valgrind" % (len(bad), n),
       "\n  ".join(bad))


@once
def tls_binaries():
    lib = os.path.join(OUT, "libvtls.so")
    r = subprocess.run([need("gcc"), "-O2", "-shared", "-fPIC", "-o", lib,
                        os.path.join(SRC, "libvtls.c")], capture_output=True)
    if r.returncode:
        raise Failure("libvtls.so: %s" % r.stderr.decode())
    return {(cc, opt): build("tlsstart", cc, opt) for cc, opt in ALL}, lib


def check_at_ready(binary, args, method):
    """`leakscope check --method METHOD` on binary ARGS once it said
    "ready": its LEAK SUMMARY."""
    e = agent_env(OUT, {"LD_PRELOAD": AGENT})
    p = subprocess.Popen([binary] + args, env=e, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        line = p.stdout.readline()
        if line != b"ready\n":
            raise Failure("%s did not get ready: %r" % (binary, line))
        r = cli(["check", "--method", method, p.pid], agent_env(OUT))
        if r.returncode != 0:
            fail("check %s exit status" % method, 0, r.returncode)
        return summary(r.stdout.decode() + r.stderr.decode(), "check")
    finally:
        p.stdin.close()
        p.wait(timeout=30)


@check("a block held only in a new thread's static or dynamic TLS, checked "
       "at once (both methods, gcc and clang, -O0 and -O2, 2 runs each): "
       "still reachable, never lost")
def t_tls_at_start():
    bins, lib = tls_binaries()
    vsum, _ = run_vg_args(bins["gcc", "-O0"], [lib])
    eq((vsum["definitely lost"], vsum["still reachable"]),
       ((0, 0), (1332, 2)), "valgrind on tlsstart at exit")
    bad = []
    for (cc, opt), binary in bins.items():
        for method in ("concurrent", "fork"):
            for _ in range(2):
                s = check_at_ready(binary, [lib], method)
                if s["definitely lost"] != (0, 0) or \
                   s["still reachable"] != (1332, 2):
                    bad.append("%s %s %s: %s" % (cc, opt, method, s))
    ok(not bad, "TLS-held blocks misjudged", "\n  ".join(bad))


def ls_supp_run(binary, mode, supp):
    r = leakscope(["--leak-check", "--fail-on-leak", "--suppressions", supp],
                  [binary, str(mode)], env=agent_env(OUT))
    text = r.files.get("report", "")
    m = re.search(r"suppressed: ([\d,]+) bytes in ([\d,]+) blocks", text)
    if not m:
        fail("suppscope %d: a suppressed line" % mode, "one", text[-800:])
    return (summary(text, "leakscope suppscope %d" % mode),
            (int(m.group(1)), int(m.group(2))), r.returncode)


@check("suppression scope: the blocks that only a suppressed block holds "
       "(another site's list nodes) are suppressed with it, as "
       "LeakSanitizer does (gcc and clang, -O0 and -O2; LeakSanitizer "
       "with the same file at -O0)")
def t_suppression_scope():
    supp = os.path.join(OUT, "scope.supp")
    with open(supp, "w") as f:
        f.write("leak:site_head\n")
    want = {0: ((24, 1), (0, 0), (224, 5), 99), 1: ((0, 0), (0, 0),
                                                    (224, 5), 0)}
    for cc, opt in ALL:
        binary = build("suppscope", cc, opt)
        for mode, (definite, indirect, suppressed, rc) in want.items():
            s, sup, lrc = ls_supp_run(binary, mode, supp)
            eq((s["definitely lost"], s["indirectly lost"], sup, lrc),
               (definite, indirect, suppressed, rc),
               "suppscope %d (%s %s): definitely, indirectly lost, "
               "suppressed, exit status" % (mode, cc, opt))
    # LeakSanitizer at -O0 (at -O2 its frame-pointer unwinder misses
    # site_head): it reports only site_other's leak and fails exactly
    # then; its "Suppressions used" counts the head alone (64/1), the
    # nodes it took for reachable from it.
    lsan = build("suppscope", "clang", "-O0", ("-fsanitize=leak",))
    for mode, (definite, indirect, suppressed, rc) in want.items():
        r = run_process([lsan, str(mode)], timeout=60, env=dict(
            os.environ, LSAN_OPTIONS="exitcode=23:suppressions=" + supp))
        text = r.stderr.decode("utf-8", "replace")
        m = re.search(r"SUMMARY: LeakSanitizer: (\d+) byte\(s\) leaked in "
                      r"(\d+) allocation", text)
        used = re.search(r"^\s+(\d+)\s+(\d+) site_head$", text, re.M)
        eq(((int(m.group(1)), int(m.group(2))) if m else (0, 0),
            (int(used.group(2)), int(used.group(1))) if used else None,
            r.returncode == 23),
           (tuple(a + b for a, b in zip(definite, indirect)), (64, 1),
            rc == 99),
           "LeakSanitizer on suppscope %d: leaked, the suppression's "
           "matches, failed" % mode)


@check("check PID (both methods) on a program whose ended thread dropped "
       "4 x 512 bytes: 2048/4 definitely lost, as valgrind says at its "
       "exit (gcc and clang, -O0 and -O2, 2 runs each)")
def t_check_ended_threads():
    bad = []
    for cc, opt in ALL:
        (vsum, _), _, _ = results()[("threadend", 4, cc, opt)]
        eq(vsum["definitely lost"], (2048, 4), "valgrind: threadend 4")
        binary = build("threadend", cc, opt)
        for method in ("concurrent", "fork"):
            for _ in range(2):
                s = check_at_ready(binary, ["4"], method)
                if s != vsum:
                    bad.append("%s %s %s: %s, valgrind %s" % (
                        cc, opt, method, s, vsum))
    ok(not bad, "check on ended threads differs from valgrind",
       "\n  ".join(bad))
