"""A thread waiting in a system call of the C library whose returned calls
left a dropped block's address in dead words below its stack pointer
(tests/workloads/verdict/blockeddead.c, which documents its truth): its
stack is scanned from its stack pointer, without the red zone
(docs/REACHABILITY.md, "The red zone"), and the block is definitely
lost, as valgrind's memcheck and LeakSanitizer say: at exit (`leakscope
run --leak-check --fail-on-leak`; the thread in read(), in a futex wait
through syscall(), in nanosleep(), in pause(), and in read() after
snprintf() printed the block's address) and by `leakscope check PID`,
both methods.  The controls stay still reachable: a block a live local
of the waiting frame holds, and one a leaf function of the program keeps
in its own red zone across a system call it makes itself (memcheck's
verdict; LeakSanitizer scans from the stack pointer and calls it lost:
leakscope follows memcheck there).

Every mode is built with gcc and clang at -O0 and -O2: the four LEAK
SUMMARY lines and the gate must be valgrind's, and the program's truth
valgrind's and leakscope's (valgrind is asked again, as in
t_verdicts.py, where it calls possibly lost what leakscope calls
definitely lost).  LeakSanitizer (clang -O2) must call each mode's
block lost but the live local's.  `check` runs on the gcc -O0 and clang
-O2 builds.
"""
from harness import check, once, eq, ok, need, ptrace_allowed
from t_verdicts import (run_vg_args, pool_map, ask_again, log_reruns,
                        lsan_settle, check_at_ready, KINDS, ALL, TWO)
from t_verdicts_heldout import build, run_ls, run_lsan

NAME = "blockeddead"
MODES = range(7)
CONTROLS = (5, 6)


def size(mode):
    return 700 + 10 * mode


def truth(mode):
    """(definitely lost, still reachable) as the program states them."""
    block = (size(mode), 1)
    return (((0, 0), block) if mode in CONTROLS else (block, (0, 0)))


@once
def binaries():
    need("valgrind")
    return dict(zip(ALL, pool_map(lambda cc, opt: build(NAME, cc, opt),
                                  ALL)))


@once
def results():
    """(NAME, mode, cc, opt) -> (valgrind's summary and status,
    leakscope's summary, status and stdout)."""
    bins = binaries()
    keys = [(NAME, m, cc, opt) for m in MODES for cc, opt in ALL]
    vg = pool_map(lambda n, m, cc, opt: run_vg_args(bins[cc, opt], [str(m)]),
                  keys)
    ls = pool_map(lambda n, m, cc, opt: run_ls(bins[cc, opt], [str(m)]),
                  keys)
    out = dict(zip(keys, zip(vg, ls)))
    settled = ask_again(
        {k: (v, [l[:2]], KINDS) for k, (v, l) in out.items()
         if not isinstance(l[0], str)},
        lambda k: run_vg_args(bins[k[2], k[3]], [str(k[1])]))
    for k, v in settled.items():
        out[k] = (v, out[k][1])
    return out


def agree(modes):
    bad, n = [], 0
    log_reruns((NAME,))
    for (_, mode, cc, opt), ((vsum, vrc), (lsum, lrc, _)) in \
            sorted(results().items()):
        if mode not in modes:
            continue
        n += 1
        if lsum != vsum or (lrc == 99) != (vrc == 42):
            bad.append("%d (%s %s): leakscope %s (exit %d), valgrind %s "
                       "(exit %d)" % (mode, cc, opt, lsum, lrc, vsum, vrc))
        for who, got in (("valgrind", vsum), ("leakscope", lsum)):
            if isinstance(got, str) or \
               (got["definitely lost"], got["still reachable"]) != \
               truth(mode):
                bad.append("%d (%s %s): %s says %s, the program %s" % (
                    mode, cc, opt, who, got, truth(mode)))
    eq(n, len(modes) * len(ALL), "cases compared")
    ok(not bad, "%s: cases that differ from valgrind or the truth" % NAME,
       "\n  ".join(bad))


@check("a thread waiting in read(), a futex wait through syscall(), "
       "nanosleep() or pause() of the C library at exit, its dropped "
       "block's address left by a returned call in the red zone below its "
       "stack pointer (planted, or printed by snprintf()): definitely "
       "lost, valgrind's summary and gate, gcc and clang at -O0 and -O2")
def t_waiting_dead_words():
    agree([m for m in MODES if m not in CONTROLS])


@check("the controls: the block held by a live local of the waiting frame, "
       "and the block a leaf of the program keeps in its red zone across "
       "a read() it makes itself in assembly: still reachable, valgrind's "
       "summary, gcc and clang at -O0 and -O2")
def t_waiting_controls():
    agree(CONTROLS)


@check("LeakSanitizer (clang -O2 -fsanitize=leak): each waiting thread's "
       "dropped block lost, the live local's still reachable, the leaf's "
       "red-zone word not scanned (lost: memcheck's reachable is followed)")
def t_lsan():
    need("clang")
    binary = build(NAME, "clang", "-O2", lsan=True)
    want = {(NAME, m): ((0, 0), 0) if m == 5 else ((size(m), 1), 23)
            for m in MODES}
    rerun = lambda k: run_lsan(binary, [str(k[1])])
    got = lsan_settle(dict(zip(want, pool_map(lambda *k: rerun(k), want))),
                      lambda k, a: a == want[k], rerun)
    bad = ["%d: LeakSanitizer %s (exit %d), want %s (exit %d)" % (
        k[1], got[k][0], got[k][1], want[k][0], want[k][1])
        for k in sorted(want) if got[k] != want[k]]
    ok(not bad, "LeakSanitizer's verdicts", "\n  ".join(bad))


@check("check PID (both methods) on the live process, each mode's thread "
       "waiting: the program's truth (valgrind's verdict at its exit), "
       "gcc -O0 and clang -O2")
def t_check_live():
    ptrace_allowed()
    bins = binaries()
    bad, n = [], 0
    for cc, opt in TWO:
        for m in MODES:
            for method in ("concurrent", "fork"):
                s = check_at_ready(bins[cc, opt], [str(m), "ready"], method)
                got = (s["definitely lost"], s["still reachable"])
                n += 1
                if got != truth(m):
                    bad.append("%d (%s %s) %s: definitely lost, still "
                               "reachable %s, want %s" % (
                                   m, cc, opt, method, got, truth(m)))
    eq(n, len(TWO) * len(MODES) * 2, "checks run")
    ok(not bad, "checks that differ from the truth", "\n  ".join(bad))
