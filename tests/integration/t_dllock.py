"""The exit check and live checks never wait on the loader's lock
(docs/REACHABILITY.md, "The loader's lock"): a thread sitting in a
dl_iterate_phdr callback that never returns, or that allocates and frees
in a loop (LLVM's libdl_deadlock test), while main leaks and exits.
Before the fix `run --leak-check` hung for ever on both (the check at
exit called dl_iterate_phdr, which waits for that lock).  A plain
snapshot (exit report, periodic report, `snapshot PID`) whose refresh of
the module map was refused that way says so: which thread, how old the
map is; before, it used the earlier map without a word.

Ground truth: tests/workloads/dl-held.c (its opening comment); valgrind
gives the same leak record.  Each run has a timeout of a few seconds,
far over what it takes (well under a second when the machine is idle).
"""
import os
import subprocess
import tempfile
import shutil
import atexit
import signal
import json
import struct
import threading
import time

from harness import (check, eq, ok, fail, need, leakscope, root_report,
                     reach_records, agent_env, cli, ptrace_allowed,
                     valgrind_run, workload, BUILD, LEAKSCOPE)

RUNTIME = tempfile.mkdtemp(prefix="leakscope-dllock-")
os.chmod(RUNTIME, 0o700)
atexit.register(shutil.rmtree, RUNTIME, True)
TIMEOUT = 20
TRUTH = {"site_dl_leak": [("definite", 4000, 0, 1)]}


@check("run --leak-check --fail-on-leak, a thread in a dl_iterate_phdr "
       "callback at exit (one that never returns, one that allocates and "
       "frees in it): exits with status 99, the leak found, the churning "
       "thread's block not lost, the report says the lock was held")
def t_exit():
    prog = workload("dl-held")
    for mode in ("stay", "churn"):
        r = leakscope(["--leak-check", "--fail-on-leak", "--format", "json"],
                      [prog, mode], env=agent_env(RUNTIME), timeout=TIMEOUT)
        eq(r.returncode, 99, "%s: exit status" % mode)
        rep = root_report(r)
        recs = reach_records(rep)
        eq(recs.get("site_dl_leak"), TRUTH["site_dl_leak"],
           "%s: the leak" % mode)
        ok(all(k != "definite" for k, *_ in recs.get("site_churn", [])),
           "%s: the callback's live block is not lost" % mode, str(recs))
        eq(rep["check"]["loader_lock_held"], True,
           "%s: the report says the loader's lock was held" % mode)
        eq(rep["check"]["loader_lock_thread"], holder(r.stdout),
           "%s: the thread that held it" % mode)


@check("without a thread in the loader the report does not say it was "
       "held")
def t_free():
    r = leakscope(["--leak-check", "--format", "json"], [workload("noleak")],
                  env=agent_env(RUNTIME), timeout=TIMEOUT)
    eq(r.returncode, 0, "exit status")
    eq(root_report(r)["check"]["loader_lock_held"], False,
       "loader_lock_held")
    eq(root_report(r)["check"]["loader_lock_thread"], None,
       "loader_lock_thread")
    eq(root_report(r)["stale_modules"], None, "stale_modules")


@check("valgrind on the same program: the same leak record")
def t_oracle():
    vg = need("valgrind")
    got = valgrind_run(vg, [workload("dl-held"), "stay"], timeout=60)
    eq(got, TRUTH, "valgrind")


def holder(out):
    """The holder's thread id the workload wrote ("holder TID")."""
    for line in out.decode("utf-8", "replace").splitlines():
        if line.startswith("holder "):
            return int(line.split()[1])
    fail("the workload's holder line", "holder TID", out)


def finish(p, wait_s):
    """End of input for p, then its exit status within wait_s (None:
    still running); its process group killed either way."""
    p.stdin.close()
    try:
        rc = p.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        rc = None
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()
    return rc


def started(mode, then="release"):
    """dl-held MODE THEN with the agent preloaded, once ready: (process,
    holder's tid)."""
    agent = {"LD_PRELOAD": os.path.join(BUILD, "libleakscope.so")}
    p = subprocess.Popen([workload("dl-held"), mode, then],
                         env=agent_env(RUNTIME, agent),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         start_new_session=True)
    try:
        tid = holder(p.stdout.readline())
        line = p.stdout.readline()
        if not line.startswith(b"ready"):
            fail("dl-held ready", "ready", line)
    except BaseException:
        finish(p, 0)
        raise
    return p, tid


def live(mode, held):
    ptrace_allowed()
    p, tid = started(mode, "wait")
    try:
        for m in ("concurrent", "fork"):
            r = cli(("check", "--format", "json", "--method", m,
                     "--pause-budget", "0", p.pid), agent_env(RUNTIME),
                    timeout=TIMEOUT)
            eq(r.returncode, 0, "check --method %s: status" % m)
            rep = json.loads(r.stdout)
            eq(reach_records(rep).get("site_dl_leak"),
               TRUTH["site_dl_leak"], "check --method %s: the leak" % m)
            eq(rep["check"]["loader_lock_held"], held,
               "check --method %s: the lock said held" % m)
            eq(rep["check"]["loader_lock_thread"], tid if held else None,
               "check --method %s: the thread that held it" % m)
    finally:
        stalled = finish(p, TIMEOUT if held else 0.2) is None
    # In dlopen for good, its exit waits natively too (glibc's _dl_fini
    # takes the load lock): only the callback's case must exit.
    if held and stalled:
        fail("dl-held %s exits after the checks" % mode, "exited", "stalled")


@check("check PID (both methods) of the program while a thread sits in "
       "the callback: returns, the leak found, the lock said held")
def t_live():
    live("stay", True)


@check("check PID (both methods) of the program while a thread is inside "
       "dlopen for good (its library's constructor never returns): "
       "returns, the leak found; the loader's list lock is free")
def t_live_dlopen():
    live("dlopen=" + workload("libctorwait.so"), False)


@check("attach to the program while a thread holds the loader's lock for "
       "good (in the callback; inside dlopen): the agent loads when that "
       "thread is the one attach calls on, else attach waits --timeout for "
       "the lock and says which thread holds it (status 1), nothing "
       "loaded, never a dlopen given up midway; the program exits after "
       "as natively (3 runs each)")
def t_attach():
    ptrace_allowed()
    for mode in ("stay", "dlopen=" + workload("libctorwait.so")):
        for _ in range(3):
            attach_held(mode)


def attach_held(mode):
    p = subprocess.Popen([workload("dl-held"), mode, "wait"],
                         env=agent_env(RUNTIME), stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, start_new_session=True)
    try:
        tid = holder(p.stdout.readline())
        line = p.stdout.readline()
        if not line.startswith(b"ready"):
            fail("dl-held ready", "ready", line)
        t0 = time.monotonic()
        r = cli(("attach", "--timeout", "1", p.pid), agent_env(RUNTIME),
                timeout=TIMEOUT)
        took = time.monotonic() - t0
        said = (r.stdout + r.stderr).decode("utf-8", "replace")
        with open("/proc/%d/maps" % p.pid) as f:
            loaded = "libleakscope" in f.read()
        if r.returncode == 0:
            ok("attached to pid %d (thread %d " % (p.pid, tid) in said,
               "%s: attached only on the holder's thread" % mode, said)
            ok(loaded, "%s: the agent mapped once attached" % mode)
        else:
            eq(said.strip(), "leakscope: thread %d of pid %d holds the "
               "loader's lock (inside dlopen, dl_iterate_phdr or a "
               "library's constructor) and did not let go within 1.0 s: "
               "the agent cannot be loaded before it does; nothing in the "
               "process was changed" % (tid, p.pid),
               "%s: attach's one line (status %d)" % (mode, r.returncode))
            eq(r.returncode, 1, "%s: attach's status" % mode)
            ok(took < 4, "%s: attach gave up after its 1 s timeout, "
               "took %.1f s" % (mode, took))
            ok(not loaded, "%s: nothing loaded" % mode)
    finally:
        rc = finish(p, TIMEOUT if mode == "stay" else 0.2)
    # In dlopen for good, the exit waits natively too (glibc's _dl_fini).
    if mode == "stay":
        eq(rc, 0, "dl-held stay: exit status after the attach")


# --- plain snapshots: the module map's refresh refused ---------------------

NOTE = ("Note: thread %d held the loader's lock: the module map is the one "
        "read ")


def snap_file(path):
    """What a snapshot file says about the loader's lock, read here from
    its bytes as docs/SNAPSHOT-FORMAT.md lays them out (independently of
    lib/snapshot.c): the header's mono_ns, LOADER's tids, MODULE_WALK's
    (walk_mono_ns, refused), the MODULE paths."""
    with open(path, "rb") as f:
        data = f.read()
    eq(data[:8], b"LEAKSCP\0", "%s: the magic" % path)
    out = {"loader": [], "walk": [], "modules": []}
    off = 16
    while off + 8 <= len(data):
        tag, ln = struct.unpack_from("<II", data, off)
        p = data[off + 8:off + 8 + ln]
        off += 8 + ln
        if tag == 0xffff:
            break
        if tag == 1:
            out["mono"] = struct.unpack_from("<Q", p, 16)[0]
        elif tag == 34:
            out["loader"].append(struct.unpack_from("<I", p)[0])
        elif tag == 35:
            out["walk"].append(struct.unpack_from("<QI", p))
        elif tag == 6:
            n = struct.unpack_from("<I", p, 68)[0]
            out["modules"].append(p[72:72 + n].decode("utf-8", "replace"))
    return out


def seconds(ns):
    """ns as the text report writes an age (lib/render_text.c)."""
    return "%d.%03ds" % (ns // 1000000000, ns // 1000000 % 1000)


def snapshot_says(pid, name, tid):
    """`snapshot PID -o FILE`, then FILE reported in text and JSON: with
    tid, the three must name tid and the same age of the module map;
    without (None), none may mention the lock."""
    path = os.path.join(RUNTIME, name)
    r = cli(("snapshot", pid, "-o", path), agent_env(RUNTIME),
            timeout=TIMEOUT)
    eq(r.returncode, 0, "%s: snapshot status" % name)
    f = snap_file(path)
    text = cli(("report", path), agent_env(RUNTIME), timeout=TIMEOUT)
    js = cli(("report", path, "--format", "json"), agent_env(RUNTIME),
             timeout=TIMEOUT)
    eq((text.returncode, js.returncode), (0, 0), "%s: report status" % name)
    text = text.stdout.decode("utf-8", "replace")
    stale = json.loads(js.stdout)["stale_modules"]
    if tid is None:
        eq((f["loader"], f["walk"]), ([], []),
           "%s: no LOADER nor MODULE_WALK record" % name)
        ok("loader's lock" not in text, "%s: no note in text" % name, text)
        eq(stale, None, "%s: JSON stale_modules" % name)
        return f
    eq(f["loader"], [tid], "%s: LOADER names the holder" % name)
    eq(len(f["walk"]), 1, "%s: one MODULE_WALK record" % name)
    walk, refused = f["walk"][0]
    ok(0 < walk <= f["mono"] and refused >= 1, "%s: the walk before the "
       "snapshot, refused since" % name, str(f["walk"]))
    age = f["mono"] - walk
    ok((NOTE % tid) + seconds(age) + " before this snapshot; objects "
       "loaded or unloaded since are not in it\n" in text,
       "%s: the text line names thread %d and the age %s" % (
           name, tid, seconds(age)), text)
    ok(stale is not None and stale["loader_lock_thread"] == tid and
       abs(stale["age_ms"] - age / 1e6) < 1e-6 and
       stale["walks_refused"] == refused,
       "%s: JSON stale_modules names the holder, the age, the refusals" %
       name, json.dumps(stale))
    return f


def release(p, what):
    """'r' to dl-held ... release: its holder leaves the loader."""
    p.stdin.write(b"r")
    p.stdin.flush()
    line = p.stdout.readline()
    if not line.startswith(b"released"):
        fail("%s: released" % what, "released", line)


def ended(p):
    """End of p's input: (its exit status or None, seconds it took)."""
    t0 = time.monotonic()
    rc = finish(p, TIMEOUT)
    return rc, time.monotonic() - t0


def ended_at_once(end, what):
    """The program exited 0 within a few seconds of its input's end."""
    eq(end[0], 0, "%s: exit status" % what)
    ok(end[1] < 5, "%s: exited %.1f s after its input ended" % (what,
                                                                end[1]))


@check("snapshot PID while a thread sits in a dl_iterate_phdr callback: "
       "the snapshot names that thread and the module map's age (text "
       "line, JSON stale_modules, the file's LOADER and MODULE_WALK "
       "records, twice); once it left the loader, a snapshot has none of "
       "it; the program exits 0 at once")
def t_snapshot_held():
    p, tid = started("stay")
    try:
        first = snapshot_says(p.pid, "held-1.lsnap", tid)
        second = snapshot_says(p.pid, "held-2.lsnap", tid)
        eq(second["walk"][0][0], first["walk"][0][0],
           "the second snapshot's map is the same earlier walk's")
        ok(second["walk"][0][1] > first["walk"][0][1],
           "more refusals counted", str((first["walk"], second["walk"])))
        release(p, "stay")
        after = snapshot_says(p.pid, "released.lsnap", None)
        ok(os.path.realpath(workload("dl-held")) in after["modules"],
           "the map walked anew holds the program", str(after["modules"]))
    finally:
        end = ended(p)
    ended_at_once(end, "dl-held stay release")


@check("snapshot PID while a thread is inside dlopen (its library's slow "
       "constructor): the loader's list lock is free, so the map is walked "
       "(no note) and holds the library being loaded; the program exits 0 "
       "once the constructor returns")
def t_snapshot_dlopen():
    lib = workload("libctorwait.so")
    p, _ = started("dlopen=" + lib)
    try:
        f = snapshot_says(p.pid, "in-dlopen.lsnap", None)
        ok(os.path.realpath(lib) in map(os.path.realpath, f["modules"]),
           "the library in dlopen is in the map", str(f["modules"]))
        release(p, "dlopen")
    finally:
        end = ended(p)
    ended_at_once(end, "dl-held dlopen release")


@check("run, a thread in a dl_iterate_phdr callback at exit: the exit "
       "report (text, JSON) names that thread as the loader lock's holder "
       "and the module map as an earlier walk's; status 0")
def t_run_exit():
    prog = workload("dl-held")
    for fmt in ("text", "json"):
        t0 = time.monotonic()
        r = leakscope(["--format", fmt], [prog, "stay"],
                      env=agent_env(RUNTIME), timeout=TIMEOUT)
        took = time.monotonic() - t0
        eq(r.returncode, 0, "%s: exit status" % fmt)
        ok(took < TIMEOUT / 2, "%s: took %.1f s" % (fmt, took))
        tid = holder(r.stdout)
        if fmt == "json":
            stale = root_report(r)["stale_modules"]
            ok(stale is not None and stale["loader_lock_thread"] == tid and
               stale["walks_refused"] >= 1, "json: stale_modules names "
               "thread %d" % tid, json.dumps(stale))
        else:
            ok(NOTE % tid in r.files.get("report", ""),
               "text: the note names thread %d" % tid,
               r.files.get("report", ""))


def reports(text):
    """The text reports in text, each from its "leakscope: pid" line."""
    parts = text.split("leakscope: pid ")
    return ["leakscope: pid " + x for x in parts[1:]]


@check("run --interval: the periodic reports while a thread sits in a "
       "dl_iterate_phdr callback name it as the loader lock's holder; once "
       "it left the loader, the later reports and the exit report do not; "
       "status 0 at once after the input ends")
def t_run_periodic():
    prog = workload("dl-held")
    p = subprocess.Popen([LEAKSCOPE, "run", "--interval", "0.2", "--",
                          prog, "stay", "release"], env=agent_env(RUNTIME),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    err = bytearray()

    def read_stderr():
        for piece in iter(lambda: p.stderr.read1(4096), b""):
            err.extend(piece)

    reader = threading.Thread(target=read_stderr, daemon=True)
    reader.start()

    def text():
        return bytes(err).decode("utf-8", "replace")

    def wait_for(cond, what):
        end = time.monotonic() + TIMEOUT
        while not cond():
            if time.monotonic() > end:
                fail(what, "within %d s" % TIMEOUT, text()[-3000:])
            time.sleep(0.05)

    try:
        tid = holder(p.stdout.readline())
        if not p.stdout.readline().startswith(b"ready"):
            fail("dl-held ready", "ready", text())
        wait_for(lambda: NOTE % tid in text(),
                 "a periodic report naming thread %d" % tid)
        release(p, "run --interval")
        mark = len(reports(text()))
        # The first report after the release may be of a snapshot taken
        # before it; the next were asked for after.  A report is whole
        # once the next one has begun.
        wait_for(lambda: len(reports(text())) >= mark + 3,
                 "three periodic reports after the release")
        later = reports(text())[mark + 1:-1]
        ok(all("loader's lock" not in x for x in later),
           "no note once the thread left the loader", "\n".join(later))
    finally:
        end = ended(p)
        reader.join(TIMEOUT)
    ended_at_once(end, "run --interval dl-held stay release")
    last = reports(text())[-1]
    ok(", at exit," in last.splitlines()[0] and "loader's lock" not in last,
       "the exit report has no note", last)
