"""The agent loads into any image that has glibc: it needs nothing beyond
libc and the loader (a distroless or slim image may carry nothing else),
and binds to glibc symbol versions no newer than GLIBC_2.17 (so that a
program of glibc 2.17..2.35 can load it, not only one of the glibc it was
built against).  Ground truth: readelf -d and objdump -T of
build/libleakscope.so (binutils, independent of leakscope); the exact
leaks of tests/workloads/basic.c and attach-target.c, tracked inside a
minimal root file system made here (the program, the libraries ldd names
and the loader, nothing else: no libm), entered by chroot in a private
mount namespace with /proc mounted, via LD_PRELOAD and via `leakscope
attach` from outside.  A program built with musl-gcc (musl's loader
named in its PT_INTERP, as `file` says) is refused by attach and by run
with one line, and runs on unharmed.  `leakscope run` of a program that
is pid 1 of its own PID and mount namespaces (`unshare --pid --fork
--mount-proc`) reports it exactly, with the namespaces `readlink
/proc/self/ns/*` gives inside.
"""
import atexit
import ctypes
import json
import os
import re
import select
import shutil
import subprocess
import tempfile

from harness import (check, once, workload, eq, ok, fail, need, expect_site,
                     expect_no_temporaries, cli, ptrace_allowed, BUILD,
                     Skip)

AGENT = os.path.join(BUILD, "libleakscope.so")
TIMEOUT = 60
MS_BIND, MS_REC, MS_PRIVATE = 0x1000, 0x4000, 0x40000
CLONE_NEWNS = 0x20000
_DIRS = []


def tmpdir(prefix):
    d = tempfile.mkdtemp(prefix=prefix)
    _DIRS.append(d)
    return d


@atexit.register
def _cleanup():
    for d in _DIRS:
        shutil.rmtree(d, True)


def tool(*argv):
    """What a binutils or libc tool prints about a file."""
    need(argv[0])
    return subprocess.run(argv, capture_output=True, text=True,
                          timeout=TIMEOUT).stdout


def ldd_paths(path):
    """The absolute paths ldd names for path: its libraries and loader."""
    return sorted(set(re.findall(r"(/\S+)", tool("ldd", path))))


def copy_in(root, path):
    dst = root + path
    os.makedirs(os.path.dirname(dst), exist_ok=True)
    shutil.copy2(path, dst)


def minimal_root(*programs):
    """A root file system holding each program and the agent at their own
    paths, the libraries ldd names for the programs and the loader, an
    empty /proc and nothing else."""
    root = tmpdir("leakscope-root-")
    copy_in(root, AGENT)    # not what it needs: that must be there already
    for p in programs:
        copy_in(root, p)
        for lib in ldd_paths(p):
            if not os.path.exists(root + lib):
                copy_in(root, lib)
    os.makedirs(root + "/proc")
    # Seen from outside, a chroot's /proc/PID/maps names files by their
    # paths outside (root + path); the injector opens them through
    # /proc/PID/root, so root's own path leads back to root inside.
    inside = root + os.path.dirname(root)
    os.makedirs(inside, exist_ok=True)
    os.symlink("/".join([".."] * (root.count("/") - 1)),
               root + root)
    return root


def entering(root, binds=()):
    """A preexec_fn: a private mount namespace, /proc mounted, each path
    of binds bind-mounted at the same path inside, then chroot."""
    libc = ctypes.CDLL(None, use_errno=True)

    def enter():
        def mount(src, dst, fstype, flags):
            if libc.mount(src, dst, fstype, ctypes.c_ulong(flags), None):
                raise OSError(ctypes.get_errno(), "mount %s" % dst)
        if libc.unshare(CLONE_NEWNS):
            raise OSError(ctypes.get_errno(), "unshare")
        mount(None, b"/", None, MS_REC | MS_PRIVATE)
        mount(b"proc", (root + "/proc").encode(), b"proc", 0)
        for b in binds:
            os.makedirs(root + b, exist_ok=True)
            mount(b.encode(), (root + b).encode(), None, MS_BIND)
        os.chroot(root)
        os.chdir("/")
    return enter


def need_root():
    if os.geteuid() != 0:
        raise Skip("a chroot in a private mount namespace needs root")


@check("agent: NEEDs only libc.so.6 and the loader (no libm, libdl, libpthread)")
def t_needed():
    out = tool("readelf", "-d", AGENT)
    needed = re.findall(r"\(NEEDED\)\s+Shared library: \[(\S+)\]", out)
    ok(needed, "readelf -d names the agent's dependencies", out)
    eq(sorted(set(needed) - {"libc.so.6", "ld-linux-x86-64.so.2"}), [],
       "libraries the agent needs beyond libc and the loader")


@check("agent: every glibc symbol version it binds is GLIBC_2.17 or older, none private")
def t_versions():
    out = tool("objdump", "-T", AGENT)
    refs = re.findall(r"\*UND\*\s+\S+\s+\(?(GLIBC_[0-9.A-Z_]+)\)?\s+(\S+)", out)
    ok(len(refs) > 50, "objdump -T lists the agent's glibc references",
       out[:1500])
    private = [s for v, s in refs if not re.match(r"GLIBC_[0-9.]+$", v)]
    eq(private, [], "symbols bound to a private glibc version")

    def key(v):
        return tuple(int(x) for x in v[6:].split("."))
    newer = sorted("%s@%s" % (s, v) for v, s in refs
                   if re.match(r"GLIBC_[0-9.]+$", v) and key(v) > (2, 17))
    eq(newer, [], "symbols bound to a glibc version above 2.17")


@once
def preload_run():
    need_root()
    prog = workload("basic")
    root = minimal_root(prog)
    out = tmpdir("leakscope-out-")
    env = {"LD_PRELOAD": AGENT, "LEAKSCOPE_OUT_DIR": out,
           "LEAKSCOPE_CONTROL": "0", "PATH": "/nonexistent"}
    p = subprocess.run([prog], env=env, capture_output=True, timeout=TIMEOUT,
                       preexec_fn=entering(root, binds=[out]))
    snaps = [f for f in os.listdir(out) if f.endswith(".lsnap")]
    return prog, root, p, [os.path.join(out, s) for s in snaps]


@check("minimal root, LD_PRELOAD: the agent loads (no libm inside) and basic's four sites are exact")
def t_preload_minimal_root():
    prog, root, p, snaps = preload_run()
    ok(not os.path.exists(root + "/lib/x86_64-linux-gnu/libm.so.6") and
       not any(f.startswith("libm.") for d, _, fs in os.walk(root) for f in fs),
       "the minimal root holds no libm")
    eq(p.returncode, 0, "basic's exit status inside the root")
    eq(p.stderr.decode(), "", "basic's stderr (no loader complaint, no agent note)")
    eq(len(snaps), 1, "exit snapshots the agent wrote")
    r = cli(["report", "--format", "json", snaps[0]], None, TIMEOUT)
    eq(r.returncode, 0, "leakscope report of the snapshot")
    rep = json.loads(r.stdout.decode())
    for fn, b, k in [("site_large", 65536, 1), ("site_medium", 8192, 2),
                     ("site_ten", 1000, 10), ("site_small", 48, 3)]:
        expect_site(rep, fn, prog, b, k)
    expect_no_temporaries(rep)
    eq(rep["totals"]["live_bytes"], 74776, "live bytes at exit")


def readline(pipe, what):
    ready, _, _ = select.select([pipe], [], [], TIMEOUT)
    if not ready:
        fail(what, "a line within %d s" % TIMEOUT, "nothing")
    return pipe.readline().decode()


@once
def attach_run():
    need_root()
    ptrace_allowed()
    prog = workload("attach-target")
    root = minimal_root(prog)
    rt = tmpdir("leakscope-rt-")
    os.chmod(rt, 0o700)
    env = {"LEAKSCOPE_RUNTIME_DIR": rt, "PATH": "/nonexistent"}
    t = subprocess.Popen([prog], env=env, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         preexec_fn=entering(root, binds=[rt]),
                         start_new_session=True)
    lines = []

    def cmd(c):
        t.stdin.write((c + "\n").encode())
        t.stdin.flush()
        lines.append(readline(t.stdout, "attach-target answering '%s'" % c))
    try:
        cmd("p")
        e = dict(os.environ, LEAKSCOPE_RUNTIME_DIR=rt)
        e.pop("LD_PRELOAD", None)
        a = cli(["attach", str(t.pid)], e, TIMEOUT)
        cmd("l")
        rep = cli(["report", "--format", "json", str(t.pid)], e, TIMEOUT)
        d = cli(["detach", str(t.pid)], e, TIMEOUT)
        cmd("l")
        cmd("q")
        status = t.wait(timeout=TIMEOUT)
        err = t.stderr.read().decode()
    finally:
        if t.poll() is None:
            t.kill()
            t.wait()
    return prog, a, rep, d, status, lines, err


@check("minimal root, attach from outside: it loads, post-attach leaks exact, target unharmed")
def t_attach_minimal_root():
    prog, a, rep, d, status, lines, err = attach_run()
    eq(a.returncode, 0, "leakscope attach into the minimal root (%s)" %
       a.describe())
    eq(rep.returncode, 0, "leakscope report (%s)" % rep.describe())
    r = json.loads(rep.stdout.decode())
    for fn, b, k in [("site_malloc", 10000, 10), ("site_calloc", 3000, 5),
                     ("site_realloc_new", 777, 1), ("site_memalign", 333, 1),
                     ("site_pvalloc", 4096, 1)]:
        expect_site(r, fn, prog, b, k)
    expect_site(r, "site_mmap", prog, 12288, 1, kind="mmap")
    expect_no_temporaries(r)
    eq(d.returncode, 0, "leakscope detach (%s)" % d.describe())
    eq(status, 0, "the target's exit status")
    eq(len(lines), 4, "the target's answers")
    ok("agent" not in err and "ld.so" not in err, "the target's stderr is "
       "free of loader and agent complaints", err)


@once
def musl_program():
    need("musl-gcc")
    d = tmpdir("leakscope-musl-")
    src, prog = os.path.join(d, "echo.c"), os.path.join(d, "echo-musl")
    with open(src, "w") as f:
        f.write("#include <stdio.h>\n#include <stdlib.h>\n"
                "int main(void) { char b[64];\n"
                "  while (fgets(b, sizeof b, stdin)) {\n"
                "    char *p = malloc(100); p[0] = b[0];\n"
                "    printf(\"got %c\\n\", p[0]); fflush(stdout);\n"
                "    if (b[0] == 'q') break; }\n  return 0; }\n")
    r = subprocess.run(["musl-gcc", "-O2", "-o", prog, src],
                       capture_output=True, timeout=TIMEOUT)
    if r.returncode:
        fail("musl-gcc", "status 0", r.stderr.decode())
    interp = tool("readelf", "-l", prog)
    ok("ld-musl" in interp, "the program's PT_INTERP is musl's loader", interp)
    return prog


@check("musl program: attach refuses with one line naming musl; the target goes on unharmed")
def t_attach_musl():
    ptrace_allowed()
    prog = musl_program()
    t = subprocess.Popen([prog], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         start_new_session=True)
    try:
        t.stdin.write(b"a\n")
        t.stdin.flush()
        first = readline(t.stdout, "the musl program answering")
        a = cli(["attach", str(t.pid)], None, TIMEOUT)
        t.stdin.write(b"b\nq\n")
        t.stdin.flush()
        rest = t.stdout.read().decode()
        status = t.wait(timeout=TIMEOUT)
    finally:
        if t.poll() is None:
            t.kill()
            t.wait()
    eq(a.returncode, 1, "leakscope attach's status (1: could not)")
    err = a.stderr.decode()
    eq(len(err.splitlines()), 1, "lines leakscope attach wrote (%r)" % err)
    ok("musl" in err and "glibc" in err, "the line names musl and glibc", err)
    eq(first + rest, "got a\ngot b\ngot q\n", "the target's output")
    eq(status, 0, "the target's exit status")


@check("musl program: run refuses with one line before starting it")
def t_run_musl():
    prog = musl_program()
    r = cli(["run", prog], None, TIMEOUT, input=b"x\nq\n")
    err = r.stderr.decode()
    eq(r.returncode, 125, "leakscope run's status (125: cannot run that)")
    eq(len(err.splitlines()), 1, "lines leakscope run wrote (%r)" % err)
    ok("musl" in err and "glibc" in err, "the line names musl and glibc", err)
    eq(r.stdout.decode(), "", "the program did not run")


@check("run, the program pid 1 of new PID and mount namespaces: exact sites, its namespaces recorded")
def t_run_pid_namespace():
    need_root()
    need("unshare")
    prog = workload("basic")
    r = cli(["run", "--follow-exec", "--format", "json", "--", "unshare",
             "--pid", "--fork", "--mount-proc", "sh", "-c",
             "readlink /proc/self/ns/pid /proc/self/ns/mnt; exec " + prog],
            None, TIMEOUT)
    eq(r.returncode, 0, "leakscope run's status (%s)" % r.describe())
    inside = re.findall(r"^(pid|mnt):\[(\d+)\]$", r.stdout.decode(), re.M)
    eq([k for k, _ in inside], ["pid", "mnt"], "readlink's lines inside")
    reps = [json.loads(line) for line in r.stderr.decode().splitlines()
            if line.startswith("{")]
    mine = [x for x in reps if x.get("command") == [prog]]
    eq(len(mine), 1, "reports of %s among %d" % (prog, len(reps)))
    rep = mine[0]
    eq(rep["pid"], 1, "its pid in its namespace")
    eq(rep.get("namespaces"), {"pid": int(inside[0][1]),
                               "mnt": int(inside[1][1])},
       "the namespaces its report records")
    ok(inside[0][1] != str(os.stat("/proc/self/ns/pid").st_ino),
       "a PID namespace other than ours")
    for fn, b, k in [("site_large", 65536, 1), ("site_medium", 8192, 2),
                     ("site_ten", 1000, 10), ("site_small", 48, 3)]:
        expect_site(rep, fn, prog, b, k)
