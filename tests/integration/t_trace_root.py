"""`leakscope trace -p HOSTPID` into a process of another mount namespace
whose files exist nowhere the host can name them: a minimal root made
here (tests/workloads/trace-target, its ldd libraries and the loader,
copied), bind-mounted onto an empty directory in the child's own mount
namespace only, entered by chroot, where `unshare --pid --fork` starts the
program as pid 1 of a new PID namespace.  Seen from the host, its maps name
files under that directory, which is empty on the host, and
/proc/PID/root holds no such path either: the uprobes go on the libc it
really mapped (/proc/PID/map_files), the pid filter is the host's tgid,
and the stacks are unwound and symbolized through the same mapped files.

Ground truth: trace-target.c's exact sites (as in t_trace.py).  Skips,
saying why, where the kernel or the build lacks eBPF support.
"""
import atexit
import ctypes
import json
import os
import re
import select
import shutil
import signal
import subprocess
import tempfile

from harness import (check, once, workload, LEAKSCOPE, Skip, Failure, fail,
                     bpf_missing, need, eq, ok, expect_site,
                     expect_no_temporaries, outer_functions, site_text)

TIMEOUT = 30
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
CLONE_NEWNS = 0x20000
UNSHARE = "/usr/bin/unshare"    # util-linux; needs only libc
SITES = [("site_malloc", 400, 4, "heap"), ("site_calloc", 240, 2, "heap"),
         ("site_realloc_grow", 1000, 1, "heap"),
         ("site_posix_memalign", 256, 1, "heap"),
         ("site_big", 300000, 1, "heap"), ("site_deep", 64, 1, "heap"),
         ("site_mmap", 8192, 1, "mmap")]
_DIRS = []


@atexit.register
def _cleanup():
    for d in _DIRS:
        shutil.rmtree(d, True)


def readline(f, what):
    ready, _, _ = select.select([f], [], [], TIMEOUT)
    if not ready:
        raise Failure("no %s within %d s" % (what, TIMEOUT))
    return f.readline().decode("utf-8", "replace")


def private_root(prog):
    """(root, mountpoint): prog, the libraries ldd names and the loader
    copied into root at their own paths; mountpoint an empty directory
    that root is bind-mounted on in the child's namespace only."""
    need("ldd")
    root = tempfile.mkdtemp(prefix="leakscope-troot-")
    mnt = tempfile.mkdtemp(prefix="leakscope-tmnt-")
    _DIRS.extend([root, mnt])
    out = subprocess.run(["ldd", prog], capture_output=True, text=True,
                         timeout=TIMEOUT).stdout
    for path in [prog, UNSHARE] + sorted(set(re.findall(r"(/\S+)", out))):
        os.makedirs(os.path.dirname(root + path), exist_ok=True)
        shutil.copy2(path, root + path)
    return root, mnt


def entering(root, mnt):
    libc = ctypes.CDLL(None, use_errno=True)

    def enter():
        def call(r, what):
            if r:
                raise OSError(ctypes.get_errno(), what)
        call(libc.unshare(CLONE_NEWNS), "unshare")
        call(libc.mount(None, b"/", None, ctypes.c_ulong(MS_REC | MS_PRIVATE),
                        None), "mount --make-rprivate /")
        call(libc.mount(root.encode(), mnt.encode(), None,
                        ctypes.c_ulong(MS_BIND), None), "bind mount")
        os.chroot(mnt)
        os.chdir("/")
    return enter


@once
def traced():
    why = bpf_missing()
    if why:
        raise Skip(why)
    if os.geteuid() != 0:
        raise Skip("a chroot in a private mount namespace needs root")
    prog = workload("trace-target")
    root, mnt = private_root(prog)
    need(UNSHARE)
    w = subprocess.Popen([UNSHARE, "--pid", "--fork", "--kill-child", prog,
                          "wait"], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env={},
                         preexec_fn=entering(root, mnt))
    t = None
    try:
        eq(readline(w.stdout, "ready from trace-target"), "ready\n",
           "trace-target in its root")
        with open("/proc/%d/task/%d/children" % (w.pid, w.pid)) as f:
            pid = int(f.read().split()[0])
        with open("/proc/%d/status" % pid) as f:
            nspid = re.search(r"^NSpid:\s*(.*)$", f.read(), re.M).group(1)
        with open("/proc/%d/maps" % pid) as f:
            maps = f.read()
        libc = re.findall(r"(/\S*/libc\.so\.6)$", maps, re.M)
        reach = [os.path.exists(p) or
                 os.path.exists("/proc/%d/root%s" % (pid, p)) for p in libc]
        t = subprocess.Popen([LEAKSCOPE, "trace", "-p", str(pid), "--format",
                              "json", "-T", "100"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        line = readline(t.stderr, "line from the tracer")
        if not line.startswith("Attaching to pid %d" % pid):
            t.wait(timeout=TIMEOUT)
            fail("the tracer's first line", "Attaching to pid %d" % pid,
                 line + t.stderr.read().decode())
        w.stdin.write(b"g")
        w.stdin.flush()
        eq(readline(w.stdout, "done from trace-target"), "done\n",
           "trace-target")
        t.send_signal(signal.SIGINT)
        out, err = t.communicate(timeout=TIMEOUT)
        w.stdin.close()
        w.wait(timeout=TIMEOUT)
    finally:
        for p in (w, t):
            if p and p.poll() is None:
                p.kill()
                p.wait()
    if t.returncode != 0:
        fail("leakscope trace -p status", 0, err.decode()[:1500])
    try:
        rep = json.loads(out.decode())
    except ValueError:
        raise Failure("the report is not JSON: %s" % out.decode()[:1500])
    return prog, mnt, (maps, libc, reach, nspid.split()), rep, w.returncode


@check("trace -p into a private root: its libc's path leads nowhere from outside")
def t_paths():
    prog, mnt, (maps, libc, reach, nspid), rep, status = traced()
    eq(nspid[1:], ["1"], "trace-target's pid in its own namespace (NSpid "
       "%s)" % " ".join(nspid))
    ok(libc and all(p.startswith(mnt + "/") for p in libc),
       "maps name the libc under the mount point", maps[:1500])
    eq(reach, [False] * len(libc), "that path here or under /proc/PID/root "
       "exists")
    eq(status, 0, "trace-target's exit status (through unshare)")


@check("trace -p into a private root: every site exact, as on the host")
def t_sites():
    prog, mnt, _, rep, status = traced()
    for name, b, k, kind in SITES:
        expect_site(rep, name, mnt + prog, b, k, kind)
    expect_no_temporaries(rep)


@check("trace -p into a private root: stacks unwound and named through libc and the program")
def t_stacks():
    prog, mnt, _, rep, status = traced()
    site = expect_site(rep, "site_deep", mnt + prog, 64, 1)
    outer = outer_functions(site, mnt + prog)
    eq(outer[:6], ["site_deep", "deep_3", "deep_2", "deep_1", "run_sites",
                   "main"], "site_deep's program frames down to main")
    libc = [fr for fr in site["frames"]
            if os.path.basename(fr.get("module") or "") == "libc.so.6"]
    ok(libc and all(fr.get("function") for fr in libc),
       "libc's frames below main are named (read through the mapped file)",
       site_text(site))
