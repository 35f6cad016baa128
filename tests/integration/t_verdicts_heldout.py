"""Leak verdicts on shapes the programs of t_verdicts.py do not have,
against the same oracles (valgrind's memcheck and LeakSanitizer): the C
library's own buffers (strdup, getline, asprintf, open_memstream),
realloc chains, aligned blocks, hidden pointers; pointers kept only in
anonymous, System V, shared anonymous and memfd mappings, in a
signal handler's malloc'ed alternate stack, in coroutines' malloc'ed
stacks, in a pthread_key value; quick_exit, vfork and exec, exit() from
a coroutine, from a signal handler and from a thread while another
spins, abort(); exit() on stacks the program allocated, a leak in a
dead frame there, the handler's stack installed with SS_AUTODISARM too;
a block held by a dlopen'ed library's static; C++
exceptions, std::thread, static and thread_local objects, shared_ptr
cycles, new[]; Rust's Box::leak, mem::forget, an Rc cycle and an ended
thread; the argument and result an ended thread's descriptor still
holds, and a thread's start routine that tail-calls malloc; a thread
still running at exit whose dropped first block only the allocator's
dead frames in its red zone held (tests/workloads/verdict/: libcbufs.c,
roots.c, exits.c, exitstack.c, dlhold.c, cxx.cc, rs.rs, thrdesc.c,
runthread.c; each documents its truth).

Each case is built with gcc at -O0 and clang at -O2 (g++ and clang++;
exits.c at all four; libcbufs.c with clang at -O2, dlhold.c with gcc
at -O0, rs.rs with rustc at -O2), run once under
`leakscope run --leak-check --fail-on-leak` and under valgrind, and the
four LEAK SUMMARY lines and the gate must be valgrind's.  The campaign
behind these cases ran each 10 times (docs/REACHABILITY.md, "Agreement
with valgrind and LeakSanitizer").  Where the oracles disagree,
docs/REACHABILITY.md says which leakscope follows, and the check says so.
Where valgrind calls possibly lost exactly the blocks leakscope calls
definitely lost, it is asked twice more and 2 of its 3 answers are the
oracle, as in t_verdicts.py (whose docstring says why).
"""
import ctypes
import json
import os
import re
import shutil
import subprocess
import tempfile

from harness import (agent_env, check, cli_json, once, eq, ok, need,
                     leakscope, run_process, BUILD, WORKLOAD_SRC, Failure,
                     Skip)
from t_verdicts import (summary, run_vg_args, pool_map, check_at_ready,
                        ask_again, log_reruns, lsan_settle, KINDS)

SRC = os.path.join(WORKLOAD_SRC, "verdict")
OUT = tempfile.mkdtemp(prefix="leakscope-verdicts-heldout-")
TWO = (("gcc", "-O0"), ("clang", "-O2"))
ALL = (("gcc", "-O0"), ("gcc", "-O2"), ("clang", "-O0"), ("clang", "-O2"))

# (program, modes, builds).  roots 2, exits 4 and exits 7 are where the
# oracles part: their own checks below.
CASES = (
    ("libcbufs", range(6), (("clang", "-O2"),)),
    ("roots", (0, 1, 3, 4, 5, 6), TWO),
    ("exits", (0, 1, 2, 3, 5, 6, 8), ALL),
    ("dlhold", range(3), (("gcc", "-O0"),)),
    ("cxx", range(6), TWO),
    ("rs", range(3), (("rustc", "-O2"),)),
    ("exitstack", range(6), TWO),
    ("exitstack", (6, 7), ALL),
    ("thrdesc", range(4), TWO),
    ("runthread", range(3), ALL),
)

# What each program states, as (kind, (bytes, blocks)) per mode; checked
# in valgrind's summary and leakscope's, every build.
TRUTHS = {
    ("libcbufs", 0): {"definitely lost": (25, 1), "still reachable": (22, 1)},
    ("libcbufs", 3): {"definitely lost": (200000, 1),
                      "still reachable": (200000, 1)},
    ("libcbufs", 4): {"definitely lost": (4096, 1), "possibly lost": (300, 1),
                      "still reachable": (100, 1)},
    ("libcbufs", 5): {"definitely lost": (136, 2)},
    ("roots", 0): {"still reachable": (200, 1)},
    ("roots", 1): {"definitely lost": (0, 0), "still reachable": (210, 1)},
    ("roots", 3): {"definitely lost": (250, 1),
                   "still reachable": (65536 + 240, 2)},
    ("roots", 4): {"definitely lost": (260, 1), "still reachable": (270, 1)},
    ("roots", 5): {"definitely lost": (0, 0), "still reachable": (280, 1)},
    ("roots", 6): {"definitely lost": (0, 0), "still reachable": (290, 1)},
    ("exits", 0): {"definitely lost": (310, 1), "still reachable": (300, 1)},
    ("exits", 1): {"definitely lost": (320, 1), "still reachable": (330, 1)},
    ("exits", 2): {"definitely lost": (360, 1),
                   "still reachable": (65536 + 340 + 350, 3)},
    ("exits", 6): {"definitely lost": (460, 1),
                   "still reachable": (65536 + 450, 2)},
    ("exits", 7): {"definitely lost": (360, 1),
                   "still reachable": (65536 + 340 + 350, 3)},
    ("exits", 8): {"definitely lost": (480, 1),
                   "still reachable": (65536 + 470, 2)},
    ("exits", 3): {"definitely lost": (390, 1),
                   "still reachable": (65536 + 370 + 380, 3)},
    ("exits", 5): {"definitely lost": (440, 1), "still reachable": (850, 2)},
    ("exitstack", 0): {"definitely lost": (520, 1),
                       "still reachable": (65536 + 500 + 510, 3)},
    ("exitstack", 1): {"definitely lost": (540 + 560, 2),
                       "still reachable": (65536 + 530 + 550, 3)},
    ("exitstack", 2): {"definitely lost": (590, 1),
                       "still reachable": (262144 + 570 + 580, 3)},
    ("exitstack", 3): {"definitely lost": (620, 1),
                       "still reachable": (600 + 610, 2)},
    ("exitstack", 4): {"definitely lost": (0, 0),
                       "still reachable": (262144 + 630 + 640, 3)},
    ("exitstack", 5): {"definitely lost": (660 + 680, 2),
                       "still reachable": (650 + 670, 2)},
    ("exitstack", 6): {"definitely lost": (700 + 720, 2),
                       "still reachable": (65536 + 690 + 710, 3)},
    ("exitstack", 7): {"definitely lost": (740 + 760, 2),
                       "still reachable": (730 + 750, 2)},
    ("dlhold", 0): {"definitely lost": (400, 1)},
    ("dlhold", 1): {"definitely lost": (0, 0), "still reachable": (400, 1)},
    ("dlhold", 2): {"definitely lost": (0, 0), "still reachable": (0, 0)},
    ("cxx", 0): {"definitely lost": (200, 1)},
    ("cxx", 1): {"definitely lost": (220, 1), "still reachable": (230, 1)},
    ("cxx", 2): {"definitely lost": (240, 1), "still reachable": (250, 1)},
    ("cxx", 3): {"definitely lost": (260, 1)},
    ("cxx", 4): {"definitely lost": (80, 2), "indirectly lost": (128, 4)},
    ("cxx", 5): {"definitely lost": (0, 0), "still reachable": (88, 1)},
    ("rs", 0): {"definitely lost": (310, 1)},
    ("rs", 1): {"definitely lost": (64, 1), "indirectly lost": (64, 1)},
    ("rs", 2): {"definitely lost": (320, 1)},
    ("thrdesc", 0): {"definitely lost": (780, 6), "still reachable": (0, 0)},
    ("thrdesc", 1): {"definitely lost": (840, 6), "still reachable": (0, 0)},
    ("thrdesc", 2): {"definitely lost": (900, 6), "still reachable": (0, 0)},
    ("thrdesc", 3): {"definitely lost": (0, 0), "still reachable": (960, 6)},
    ("runthread", 0): {"definitely lost": (1337, 1),
                       "still reachable": (0, 0)},
    ("runthread", 1): {"definitely lost": (1344, 1),
                       "still reachable": (0, 0)},
    ("runthread", 2): {"definitely lost": (0, 0),
                       "still reachable": (1350, 1)},
}


def lib():
    path = os.path.join(OUT, "libvhold.so")
    if not os.path.exists(path):
        r = subprocess.run([need("gcc"), "-O2", "-g", "-shared", "-fPIC",
                            "-o", path, os.path.join(SRC, "libvhold.c")],
                           capture_output=True, timeout=120)
        if r.returncode:
            raise Failure("libvhold.so: %s" % r.stderr.decode())
    return path


def build(name, cc, opt, lsan=False):
    out = os.path.join(OUT, "%s-%s%s%s" % (name, cc, opt,
                                           "-lsan" if lsan else ""))
    if name == "rs":
        argv = [need("rustc"), "-g", "-C", "opt-level=" + opt[2:], "-o", out,
                os.path.join(SRC, "rs.rs")]
    else:
        src = os.path.join(SRC, name + (".cc" if name == "cxx" else ".c"))
        if name == "cxx":
            cc = {"gcc": "g++", "clang": "clang++"}[cc]
        argv = ([need(cc), opt, "-g", "-pthread", "-o", out, src]
                + (["-fsanitize=leak"] if lsan else []) + ["-ldl"])
    r = subprocess.run(argv, capture_output=True, timeout=120)
    if r.returncode != 0:
        raise Failure("%s: %s" % (" ".join(argv), r.stderr.decode()))
    return out


def args(name, mode):
    return [lib(), str(mode)] if name == "dlhold" else [str(mode)]


def run_ls(binary, argv):
    r = leakscope(["--leak-check", "--fail-on-leak"], [binary] + argv,
                  env=agent_env(OUT))
    if r.returncode not in (0, 99):
        raise Failure("leakscope run %s %s: exit status %d\n%s" % (
            binary, argv, r.returncode, r.stderr.decode()[-800:]))
    try:
        got = summary(r.files.get("report", ""), "leakscope")
    except Failure:
        got = "no LEAK SUMMARY: %r" % r.files.get("report", "")[-300:]
    return got, r.returncode, r.stdout


def run_lsan(binary, argv):
    r = run_process([binary] + argv, timeout=60,
                    env=dict(os.environ, LSAN_OPTIONS="exitcode=23"))
    m = re.search(r"SUMMARY: LeakSanitizer: (\d+) byte\(s\) leaked in "
                  r"(\d+) allocation", r.stderr.decode("utf-8", "replace"))
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0), r.returncode


@once
def binaries():
    need("valgrind")
    lib()
    builds = sorted({(n, cc, opt) for n, _, vs in CASES for cc, opt in vs
                     if n != "rs" or shutil.which("rustc")}
                    | {("roots", "clang", "-O2"), ("exits", "gcc", "-O0")})
    return dict(zip(builds, pool_map(build, builds)))


@once
def results():
    """(program, mode, cc, opt) -> (valgrind's summary and status,
    leakscope's summary, status and stdout)."""
    bins = binaries()
    keys = [(n, m, cc, opt) for n, modes, vs in CASES for m in modes
            for cc, opt in vs
            if (n, cc, opt) in bins]
    vg = pool_map(lambda n, m, cc, opt: run_vg_args(bins[n, cc, opt],
                                                    args(n, m)), keys)
    ls = pool_map(lambda n, m, cc, opt: run_ls(bins[n, cc, opt],
                                               args(n, m)), keys)
    out = dict(zip(keys, zip(vg, ls)))
    # valgrind's "possibly lost" for what leakscope calls definitely
    # lost: asked twice more, as in t_verdicts (its docstring)
    settled = ask_again(
        {k: (v, [l[:2]], KINDS) for k, (v, l) in out.items()
         if not isinstance(l[0], str)},
        lambda k: run_vg_args(bins[k[0], k[2], k[3]], args(k[0], k[1])))
    for k, v in settled.items():
        out[k] = (v, out[k][1])
    return out


def agree(names, modes=None):
    """modes: a test of the mode, when not all of names' modes."""
    bad, n, cases = [], 0, set()
    log_reruns(names)
    for (name, mode, cc, opt), ((vsum, vrc), (lsum, lrc, _)) in \
            results().items():
        if name not in names or (modes and not modes(mode)):
            continue
        n += 1
        if lsum != vsum or (lrc == 99) != (vrc == 42):
            bad.append("%s %d (%s %s): leakscope %s (exit %d), valgrind %s "
                       "(exit %d)" % (name, mode, cc, opt, lsum, lrc, vsum,
                                      vrc))
        for kind, want in TRUTHS.get((name, mode), {}).items():
            for who, got in (("valgrind", vsum), ("leakscope", lsum)):
                if isinstance(got, str) or got[kind] != want:
                    bad.append("%s %d (%s %s): %s %s %s, the program says "
                               "%s" % (name, mode, cc, opt, who, kind,
                                       got[kind], want))
    cases.update(b.split(":")[0] for b in bad)
    ok(n > 0, "%s: cases compared" % ", ".join(names))
    ok(not bad, "%d of %d cases differ from valgrind or the truth" % (
        len(cases), n), "\n  ".join(bad))


@check("the C library's buffers (strdup, getline, asprintf, "
       "open_memstream), realloc chains and realloc(p, 0), posix_memalign, "
       "aligned_alloc and memalign, XORed and tagged pointers: valgrind's "
       "summary and gate")
def t_libc_buffers():
    agree(("libcbufs",))


@check("a pointer kept only in an anonymous mmap, a System V segment "
       "(shmat), a shared anonymous mapping or a memfd mapping: still "
       "reachable, as valgrind says (coroutine stacks, an ended thread's "
       "pthread_key value: valgrind's summary)")
def t_mapped_roots():
    agree(("roots",))


@check("check PID (both methods) on a process whose blocks are held only "
       "in a System V segment, a shared anonymous mapping and a memfd "
       "mapping: still reachable, never lost (gcc -O0, clang -O2)")
def t_mapped_roots_live():
    bins = binaries()
    bad = []
    for cc, opt in TWO:
        for method in ("concurrent", "fork"):
            s = check_at_ready(bins["roots", cc, opt], ["7"], method)
            if s["definitely lost"] != (0, 0) or \
               s["still reachable"] != (780, 3):
                bad.append("%s %s %s: %s" % (cc, opt, method, s))
    ok(not bad, "blocks held in shared mappings misjudged", "\n  ".join(bad))


@check("check PID (the default method) on a process holding a block only "
       "in a 64 MiB shared anonymous mapping: the stop would scan it whole, "
       "so the prediction takes the fork image at once (fallback budget); "
       "the block still reachable")
def t_shared_memory_predicted():
    binary = binaries()[("roots", "gcc", "-O0")]
    p = subprocess.Popen([binary, "8"], env=agent_env(OUT, {
        "LD_PRELOAD": os.path.join(BUILD, "libleakscope.so")}),
        stdin=subprocess.PIPE, stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        line = p.stdout.readline()
        if line != b"ready\n":
            raise Failure("roots 8 did not get ready: %r" % line)
        d = cli_json(["check", "--format", "json", p.pid], agent_env(OUT))
    finally:
        p.stdin.close()
        p.wait(timeout=30)
    c = d["check"]
    if c.get("fallback") == "kernel":
        raise Skip("the kernel lacks the concurrent mark's userfaultfd")
    r = d["totals"]["reachability"]
    eq((c["method"], c.get("fallback"), r["definite"]["blocks"],
        r["reachable"]["bytes"], r["reachable"]["blocks"]),
       ("fork", "budget", 0, 280, 1),
       "method, fallback, definitely lost blocks, still reachable bytes "
       "and blocks")


@check("quick_exit (at_quick_exit handlers run, then the report), vfork "
       "and exec, exit() from a makecontext coroutine on a malloc'ed "
       "stack (a block main dropped before switching lost, one held by "
       "the frame that called swapcontext or setcontext still reachable), "
       "exit() from "
       "a signal handler on a malloc'ed alternate stack, exit() from a "
       "thread while another spins: valgrind's summary and gate, gcc and "
       "clang at -O0 and -O2")
def t_exits():
    agree(("exits",))
    for cc, opt in ALL:
        _, (_, rc, out) = results()[("exits", 0, cc, opt)]
        eq((out, rc), (b"at_quick_exit\n", 99),
           "exits 0 (%s %s): the program's at_quick_exit handler's output, "
           "the gate" % (cc, opt))


@check("exit() from a makecontext coroutine of a second thread while main "
       "waits to join it (exits 7): the block the thread dropped before "
       "switching lost, those held by the coroutine's frame and by the "
       "thread's frame suspended in swapcontext still reachable, as "
       "LeakSanitizer says (memcheck calls the suspended frame's block "
       "lost: docs/REACHABILITY.md), gcc and clang at -O0 and -O2")
def t_exit_thread_coroutine():
    need("clang")
    bins = binaries()
    want = TRUTHS[("exits", 7)]
    bad = []
    for cc, opt in ALL:
        got, rc, _ = run_ls(bins["exits", cc, opt], ["7"])
        if isinstance(got, str) or rc != 99 or \
           (got["definitely lost"], got["still reachable"]) != \
           (want["definitely lost"], want["still reachable"]):
            bad.append("%s %s: leakscope %s (exit %d)" % (cc, opt, got, rc))
    leaked, rc = run_lsan(build("exits", "clang", "-O2", lsan=True), ["7"])
    if (leaked, rc) != (want["definitely lost"], 23):
        bad.append("LeakSanitizer (clang -O2): %s (exit %d)" % (leaked, rc))
    ok(not bad, "exit from a thread's coroutine misjudged", "\n  ".join(bad))


@check("exit() on a stack the program allocated (a makecontext "
       "coroutine's malloc'ed stack, a signal handler's malloc'ed alternate "
       "stack, a pthread_attr_setstack stack malloc'ed or mmapped), a "
       "block whose only pointer lies in a dead frame below the stack "
       "pointer there (or, for a handler on a malloc'ed or mapped "
       "alternate stack, below the interrupted context's): lost; blocks "
       "held by live frames above: still reachable; a thread that did not "
       "call exit() on a malloc'ed stack: "
       "scanned whole, as both oracles do; valgrind's summary and gate "
       "(gcc -O0, clang -O2); LeakSanitizer's where it agrees (the mmapped "
       "stack, gcc -O0)")
def t_exit_own_stack():
    agree(("exitstack",), lambda m: m < 6)
    leaked, rc = run_lsan(build("exitstack", "gcc", "-O0", lsan=True), ["3"])
    eq((leaked, rc), ((620, 1), 23), "LeakSanitizer on exitstack 3 (gcc -O0)")


def autodisarm_accepted():
    """Does the kernel take sigaltstack's SS_AUTODISARM (Linux 4.7)?
    Asked in this process, whose alternate stack is then put back."""
    class StackT(ctypes.Structure):
        _fields_ = [("ss_sp", ctypes.c_void_p), ("ss_flags", ctypes.c_int),
                    ("ss_size", ctypes.c_size_t)]
    libc = ctypes.CDLL(None, use_errno=True)
    mem = ctypes.create_string_buffer(65536)
    new, old = StackT(ctypes.addressof(mem), -(1 << 31), 65536), StackT()
    if libc.sigaltstack(ctypes.byref(new), ctypes.byref(old)):
        return False
    libc.sigaltstack(ctypes.byref(old), None)
    return True


@check("exit() from a signal handler on an alternate stack installed with "
       "SS_AUTODISARM (sigaltstack() reads it as disabled while the handler "
       "runs), malloc'ed and mapped: the blocks in dead frames below the "
       "exit point and below the interrupted context's stack pointer lost, "
       "those live frames hold reachable; valgrind's summary and gate (of "
       "the same program without the flag, which valgrind refuses), gcc "
       "and clang at -O0 and -O2")
def t_exit_autodisarm():
    if not autodisarm_accepted():
        raise Skip("the kernel refuses sigaltstack's SS_AUTODISARM")
    agree(("exitstack",), lambda m: m >= 6)


@check("a block held by a dlopen'ed library's static: lost once dlclose "
       "unmapped it, reachable without dlclose: valgrind's summary")
def t_dlopen_static():
    agree(("dlhold",))


@check("C++: an exception unwinding a frame that held new[], a std::thread "
       "that ended, static and thread_local objects, shared_ptr cycles, "
       "new[] of objects with a destructor: valgrind's summary and gate")
def t_cxx():
    agree(("cxx",))


@check("ended threads: the argument and the result their descriptors "
       "(kept in glibc's stack cache) still hold are no roots, and a "
       "start routine's `return malloc(n)` (a tail call, no frame of the "
       "program) is the program's block, not the runtime's: valgrind's "
       "summary and gate")
def t_thread_descriptors():
    agree(("thrdesc",))


@check("a thread spinning at exit right after it dropped its first block "
       "(malloc, aligned_alloc): lost, as valgrind says, though the "
       "allocator's dead frames in the thread's red zone held it (the "
       "agent's hooks clear theirs); the control, held by the spinning "
       "frame, reachable; gcc and clang at -O0 and -O2")
def t_running_thread_red_zone():
    agree(("runthread",))


@check("Rust: Box::leak kept in a static, mem::forget, an Rc cycle, an "
       "ended thread's forgotten Vec: valgrind's summary and gate")
def t_rust():
    need("rustc")
    agree(("rs",))


@check("a signal handler's frame on a malloc'ed alternate stack, returned: "
       "its block is still reachable through the stack's block, as "
       "LeakSanitizer says (memcheck alone calls it lost: "
       "docs/REACHABILITY.md)")
def t_altstack_frame():
    binary = binaries()[("roots", "clang", "-O2")]
    lsum, lrc, _ = run_ls(binary, ["2"])
    eq((lsum["definitely lost"], lsum["still reachable"], lrc)
       if isinstance(lsum, dict) else lsum,
       ((0, 0), (65536 + 220 + 230, 3), 0),
       "leakscope on roots 2: definitely lost, still reachable, exit status")
    need("clang")
    leaked, rc = run_lsan(build("roots", "clang", "-O2", lsan=True), ["2"])
    eq((leaked, rc), ((0, 0), 0), "LeakSanitizer on roots 2")


@check("abort(): the process dies of SIGABRT with no exit path, so no "
       "check runs (as under LeakSanitizer); leakscope run dies of the "
       "same signal and prints the post-mortem file's last sample, without "
       "a LEAK SUMMARY")
def t_abort():
    binary = binaries()[("exits", "gcc", "-O0")]
    r = leakscope(["--leak-check", "--fail-on-leak"], [binary, "4"],
                  env=agent_env(OUT))
    text = r.files.get("report", "")
    eq(r.returncode, -6, "leakscope run on abort(): exit status")
    ok("post-mortem" in text and "LEAK SUMMARY" not in text,
       "a post-mortem report without a LEAK SUMMARY", text[-800:])
    # The control thread takes its first sample as soon as it starts,
    # and abort() comes a moment after main begins: which comes first is
    # a race (`leakscope run` gives the agent its own environment, so the
    # control thread cannot be turned off from here).  Where abort() wins
    # the file holds no sample, and the report must say its heap was
    # never recorded, not claim 0 bytes.  It wins nearly always (40 of 40
    # quiet runs); under load the thread can start first, so up to five
    # runs are asked for that case, each of them dying of SIGABRT.
    texts = []
    for _ in range(5):
        r = leakscope(["--leak-check", "--fail-on-leak"], [binary, "4"],
                      env=agent_env(OUT))
        eq(r.returncode, -6, "leakscope run on abort(): exit status")
        texts.append(r.files.get("report", ""))
        if "ended before the agent's first growth sample" in texts[-1]:
            break
    ok("ended before the agent's first growth sample" in texts[-1],
       "a run where abort() came before the first sample: the report says "
       "no sample was taken (its figures are not zero bytes of heap)",
       "\n--\n".join(t[:400] for t in texts))
    for _ in range(5):
        r = leakscope(["--format", "json"], [binary, "4"],
                      env=agent_env(OUT))
        report = json.loads(r.files.get("report", "{}") or "{}")
        eq(report.get("postmortem"), True, "the JSON report: postmortem")
        if report.get("recorded") is False:
            break
    eq(report.get("recorded"), False, "the JSON report of a run where "
       "abort() came before the first sample: recorded")


@once
def lsan_results():
    need("clang")
    names = sorted({n for n, _, vs in CASES if n != "rs"
                    and ("clang", "-O2") in vs})
    bins = dict(zip(names, pool_map(lambda n: build(n, "clang", "-O2",
                                                    lsan=True),
                                    [(n,) for n in names])))
    keys = [k for k in results() if k[0] in bins and
            k[2:] == ("clang", "-O2")]
    rerun = lambda k: run_lsan(bins[k[0]], args(k[0], k[1]))
    return lsan_settle(dict(zip(keys, pool_map(lambda *k: rerun(k), keys))),
                       lambda k, a: lsan_is_valgrinds(k, *a), rerun)


def lost(s):
    """Definitely + indirectly lost of a summary (or the pair itself)."""
    return (tuple(a + b for a, b in zip(s["definitely lost"],
                                        s["indirectly lost"]))
            if isinstance(s, dict) else s)


def lsan_is_valgrinds(key, leaked, rc):
    (vsum, vrc), _ = results()[key]
    return lost(vsum) == leaked and (vrc == 42) == (rc == 23)


@check("LeakSanitizer (clang -O2 -fsanitize=leak), where its verdict is "
       "valgrind's: its leaked bytes and allocations are leakscope's "
       "definitely + indirectly lost, its failure leakscope's gate")
def t_lsan():
    bad, same, differ = [], 0, []
    for key, (leaked, rc) in sorted(lsan_results().items()):
        if not lsan_is_valgrinds(key, leaked, rc):
            differ.append("%s %d" % key[:2])
            continue		# the oracles differ: valgrind's case only
        same += 1
        lsum, lrc, _ = results()[key][1]
        if lost(lsum) != leaked or (lrc == 99) != (rc == 23):
            bad.append("%s %d: leakscope %s (exit %d), LeakSanitizer %s "
                       "(exit %d)" % (key[0], key[1], lost(lsum), lrc,
                                      leaked, rc))
    ok(same == LSAN_SAME, "cases where LeakSanitizer and valgrind agree: "
       "%d, expected %d" % (same, LSAN_SAME),
       "where they differ: " + ", ".join(differ))
    ok(not bad, "%d of %d cases differ from LeakSanitizer" % (
        len(bad), same), "\n  ".join(bad))


# Of the 40 clang -O2 cases LeakSanitizer checks, 25 are valgrind's.
# The rest: it scans no mapping but the globals, stacks and TLS (roots
# 0, 1, 5, 6: lost), runs no check at quick_exit (exits 0), and calls
# reachable the aligned_alloc block, the ended coroutine's block, the
# shared_ptr cycles and the block left in a dead frame of the stack the
# program allocated that exit() was called on (libcbufs 4, roots 3, cxx
# 4, exitstack 0 to 3 and 5 to 7) that memcheck and leakscope call lost.
LSAN_SAME = 25
