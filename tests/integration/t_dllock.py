"""The exit check and live checks never wait on the loader's lock
(docs/REACHABILITY.md, "The loader's lock"): a thread sitting in a
dl_iterate_phdr callback that never returns, or that allocates and frees
in a loop (LLVM's libdl_deadlock test), while main leaks and exits.
Before the fix `run --leak-check` hung for ever on both (the check at
exit called dl_iterate_phdr, which waits for that lock).

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
import time

from harness import (check, eq, ok, fail, need, leakscope, root_report,
                     reach_records, agent_env, cli, ptrace_allowed,
                     valgrind_run, workload, BUILD)

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


def live(mode, held):
    ptrace_allowed()
    agent = {"LD_PRELOAD": os.path.join(BUILD, "libleakscope.so")}
    p = subprocess.Popen([workload("dl-held"), mode, "wait"],
                         env=agent_env(RUNTIME, agent),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         start_new_session=True)
    try:
        tid = holder(p.stdout.readline())
        line = p.stdout.readline()
        if not line.startswith(b"ready"):
            fail("dl-held ready", "ready", line)
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
