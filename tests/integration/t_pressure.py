"""Memory pressure: errno, the program's successful
allocations and the agent's own address space under RLIMIT_AS.

Ground truth: tests/workloads/pressure.c (mallocs made until the limit),
tests/workloads/pressure-errno.c (which successful calls changed errno,
in an order the same in every run), each run natively and traced."""

import json
import os
import resource
import shutil
import signal
import subprocess
import tempfile
import time

from harness import (check, once, workload, leakscope, root_report,
                     expect_status, find_sites, run_process, agent_env,
                     eq, ge, ok, BUILD)

AVG_BLOCK = 528         # pressure.c: 16..1024 bytes, + 8 bytes of header
PER_BLOCK = 48          # the live table's bytes per block, growth included
RESERVE = 1 << 20       # the agent's fixed needs after the program's limit


def native_count(prog, args):
    r = run_process([workload(prog)] + [str(a) for a in args])
    eq(r.returncode, 0, "%s status natively" % prog)
    return r.stdout.decode()


def made_of(out):
    return int(out.split()[1])


def traced_pressure(headroom, options):
    r = leakscope(["--format", "json"] + options,
                  [workload("pressure"), str(headroom)])
    expect_status(r, 0, "pressure exit status (the report must be written)")
    return made_of(r.stdout.decode()), root_report(r)


@once
def native_made():
    return {h: made_of(native_count("pressure", [h])) for h in (2048, 16384, 65536)}


def check_counts(headroom, options, mode):
    native = native_made()[headroom]
    made, rep = traced_pressure(headroom, options)
    # Full tracking needs PER_BLOCK bytes of table per live block: that
    # many fewer mallocs fit under the same limit, and no more.
    allowance = (native * PER_BLOCK + RESERVE) // AVG_BLOCK if not options \
        else RESERVE // AVG_BLOCK
    ok(made >= native - allowance,
       "%s, %d KiB headroom: %d mallocs made, native %d, at most %d fewer"
       % (mode, headroom, made, native, allowance))
    recorded = sum(x["live_blocks"] for x in
                   find_sites(rep, "site_pressure", workload("pressure")))
    if not options:
        eq(recorded + rep["totals"]["dropped"], made,
           "recorded blocks + dropped (recorded %d, dropped %d)"
           % (recorded, rep["totals"]["dropped"]))


@check("pressure, full tracking: mallocs made under 2/16/64 MiB of headroom are native's less the table's 48 B per block")
def t_counts_full():
    for h in (2048, 16384, 65536):
        check_counts(h, [], "full")


@check("pressure, sampled: mallocs made under 2/16/64 MiB of headroom are native's (the agent's arena gave 64 MiB more, its pm file took 288+ MiB)")
def t_counts_sampled():
    for h in (2048, 16384, 65536):
        check_counts(h, ["--sample-rate", "64KiB"], "sampled")


def changed_turns(out):
    """(calls made, turn of the first failure, [(turn, fn) changed])."""
    lines = out.splitlines()
    head = lines[0].split()
    turns = lines[1].split() if len(lines) > 1 else []
    return int(head[1]), int(head[5]), [(int(t[:-1]), t[-1]) for t in turns]


def compare_errno(threads, env_extra=None, options=()):
    native, nfail, nlist = changed_turns(native_count("pressure-errno", [threads, 2048]))
    if env_extra is None:
        r = leakscope(list(options), [workload("pressure-errno"), str(threads), "2048"])
    else:
        rt = tempfile.mkdtemp(prefix="leakscope-pressure-")
        env = agent_env(rt, dict(env_extra, LD_PRELOAD=os.path.join(BUILD, "libleakscope.so")))
        r = run_process([workload("pressure-errno"), str(threads), "2048"], env=env)
        shutil.rmtree(rt, ignore_errors=True)
    expect_status(r, 0, "pressure-errno exit status")
    made, tfail, tlist = changed_turns(r.stdout.decode())
    # Up to the first call that failed in either run (the turns are the
    # same in both), the same calls changed errno.
    last = min(nfail, tfail)
    nl = [t for t in nlist if t[0] < last]
    tl = [t for t in tlist if t[0] < last]
    eq(tl, nl, "successful calls that changed errno, traced vs native, "
       "before turn %d (native made %d, traced %d)" % (last, native, made))
    return nfail, tfail, nlist, tlist


@check("errno under RLIMIT_AS, 4 threads, full and sampled: the same successful calls change it as natively")
def t_errno_threads():
    compare_errno(4)
    compare_errno(4, options=("--sample-rate", "64KiB"))


@check("errno under RLIMIT_AS, 1 thread without the control thread: exactly native (agent's allocations and table mmaps keep errno)")
def t_errno_single_nocontrol():
    nfail, tfail, nlist, tlist = compare_errno(1, {"LEAKSCOPE_CONTROL": "0"})
    eq(tlist, [t for t in tlist if t[0] < nfail], "no call that natively failed succeeded")


@check("errno under RLIMIT_AS, 1 thread: as native up to native's last call (beyond it, glibc's multi-thread retry)")
def t_errno_single():
    compare_errno(1)


def vm_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmSize:"):
                return int(line.split()[1])
    return -1


def limited(kib):
    def lim():
        resource.setrlimit(resource.RLIMIT_AS, (kib << 10, kib << 10))
    return lim


@check("the agent's address space: a traced program's VmSize is within 16 MiB of native (was +470 MiB)")
def t_agent_vm():
    prog = workload("growth")
    sizes = []
    for preload in (False, True):
        rt = tempfile.mkdtemp(prefix="leakscope-vm-")
        env = agent_env(rt, {"LD_PRELOAD": os.path.join(BUILD, "libleakscope.so")}
                        if preload else {})
        p = subprocess.Popen([prog, "30"], env=env, stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL, start_new_session=True)
        try:
            time.sleep(1.5)         # the control thread's first sweep and sample
            sizes.append(vm_kib(p.pid))
        finally:
            os.kill(p.pid, signal.SIGKILL)
            p.wait(timeout=30)
            shutil.rmtree(rt, ignore_errors=True)
    ok(sizes[1] - sizes[0] <= 16 << 10, "VmSize traced %d KiB, native %d KiB"
       % (sizes[1], sizes[0]))


@check("a program started under a 64 MiB RLIMIT_AS: the post-mortem file is made and grows (was one 288+ MiB mapping)")
def t_pm_under_limit():
    rt = tempfile.mkdtemp(prefix="leakscope-pmlimit-")
    os.chmod(rt, 0o700)
    env = agent_env(rt, {"LD_PRELOAD": os.path.join(BUILD, "libleakscope.so"),
                         "LEAKSCOPE_PERIOD_MS": "100", "LEAKSCOPE_KEEP": "1"})
    p = subprocess.Popen([workload("growth"), "30"], env=env, stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, start_new_session=True,
                         preexec_fn=limited(64 << 10))
    pm = os.path.join(rt, "%d.pm" % p.pid)
    try:
        time.sleep(2.5)
    finally:
        os.kill(p.pid, signal.SIGKILL)
        err = p.communicate(timeout=30)[1].decode()
    ok(os.path.exists(pm), "post-mortem file %s exists (agent said: %r)" % (pm, err))
    r = run_process([os.path.join(BUILD, "leakscope"), "report", "--format", "json",
                     "--postmortem", pm])
    shutil.rmtree(rt, ignore_errors=True)
    eq(r.returncode, 0, "report --postmortem status: " + r.stderr.decode())
    rep = json.loads(r.stdout.decode())
    rep = rep.get("report", rep) if "sites" not in rep else rep
    ge(len(find_sites(rep, "site_g_linear", workload("growth"))), 1,
       "the growing site is in the post-mortem file")
