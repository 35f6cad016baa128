"""Attacks on the agent and on attach (docs/SECURITY.md, "The agent and
attach"), by an unprivileged user created here (leakscope-attacker), by a
hostile client of the control socket, by a full file system or a signal
at the wrong moment: nobody gains anything, and the traced program lives
with its output unchanged.  Each check failed against the code before its
fix.  tests/security/run-agent-attacks runs them at full length."""

import fcntl
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time

from harness import (check, workload, eq, ok, ge, fail, contains, run_process,
                     need, ptrace_allowed, system_user, as_user, BUILD,
                     LEAKSCOPE, Skip)

AGENT = os.path.join(BUILD, "libleakscope.so")
ATTACKER = "leakscope-attacker"


def attacker():
    """The attacker's (uid, gid), the user created if absent."""
    return system_user(ATTACKER, "create and act as another user")


def own_runtime_dir(uid, gid):
    """The attacker's default runtime dir (common/runtime.h), made by the
    attacker as its own, emptied."""
    d = "/dev/shm/leakscope-%d" % uid
    if os.path.islink(d) or (os.path.exists(d) and not os.path.isdir(d)):
        os.unlink(d)
    if os.path.isdir(d):
        shutil.rmtree(d)
    os.mkdir(d, 0o700)
    os.chown(d, uid, gid)
    return d


def finish(t, last):
    """The target's answer to q starts with last; it exits 0."""
    t.stdin.write(b"q\n")
    t.stdin.flush()
    line = t.stdout.readline().decode().strip()
    ok(line.startswith(last), "the target's last answer", line)
    eq(t.wait(timeout=30), 0, "the target's exit status")


def kill(t):
    if t.poll() is None:
        t.kill()
        t.wait()


def runnable_copy(path, where):
    """A copy of path in where (a directory others can enter) that the
    attacker can run: the build tree may sit in a directory only root
    can enter (a clone made in a mktemp -d directory)."""
    dst = os.path.join(where, os.path.basename(path))
    shutil.copy(path, dst)
    os.chmod(dst, 0o755)
    return dst


def swap_race(uid, gid, where, target, seconds, prog):
    p = subprocess.Popen([prog, where, target, str(seconds)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE,
                         preexec_fn=as_user(uid, gid))
    line = p.stdout.readline()
    if line != b"ready\n":
        p.kill()
        _, err = p.communicate(timeout=30)
        fail("the attacker watches " + where, repr(b"ready\n"),
             "%r, status %s, stderr %r" % (line, p.returncode, err[-300:]))
    return p


def swap_count(p):
    out, err = p.communicate(b"", timeout=30)
    eq(p.returncode, 0, "the attacker's status (%s)" % err.decode())
    return int(out.split()[-1])


DROPS = int(os.environ.get("LEAKSCOPE_SEC_DROPS", "40"))


@check("a root daemon dropping to the attacker: no symlink swap in its runtime dir gets a root file chowned or chmodded")
def t_drop_priv_swap():
    uid, gid = attacker()
    rundir = own_runtime_dir(uid, gid)
    work = tempfile.mkdtemp(prefix="leakscope-sec-")
    try:
        os.chmod(work, 0o755)
        victim = os.path.join(work, "victim")
        with open(victim, "w") as f:
            f.write("root's\n")
        os.chmod(victim, 0o644)
        private = os.path.join(work, "root-runtime")
        os.mkdir(private, 0o700)
        env = dict(os.environ, LD_PRELOAD=AGENT, LEAKSCOPE_RUNTIME_DIR=private)
        race = swap_race(uid, gid, rundir, victim, 600,
                         runnable_copy(workload("swap-race"), work))
        try:
            moved = 0
            for i in range(DROPS):
                r = run_process([workload("drop-priv"), str(uid), str(gid)],
                                env=env, timeout=30)
                eq(r.returncode, 0, "drop-priv %d: %s" % (i, r.describe()))
                st = os.lstat(victim)
                eq((st.st_uid, st.st_gid, st.st_mode & 0o7777),
                   (0, 0, 0o644), "root's file after drop %d" % i)
                moved += any(n.startswith("%d." % r.pid) and n.endswith(".aside")
                             for n in os.listdir(rundir))
        finally:
            swapped = swap_count(race)
        ok(swapped > 0, "the attacker swapped a name in its dir",
           "no .sock or .pm ever appeared in %s" % rundir)
        ok(moved > 0, "the agent moved a file into the attacker's dir",
           "in none of %d drops" % DROPS)
    finally:
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(rundir, ignore_errors=True)


@check("a full file system under the post-mortem file: the program exits 0 with its output unchanged, the file readable")
def t_full_runtime_fs():
    if os.geteuid() != 0:
        raise Skip("needs root to mount a tmpfs")
    prog = [workload("many-sites"), "400"]
    native = run_process(prog, timeout=30)
    eq((native.returncode, native.stderr), (0, b""), "native many-sites")
    # A 1 MiB tmpfs in a mount namespace of its own: 256 sites with a
    # 4096-sample history each need 8 MiB of history rows.
    script = ('mount -t tmpfs -o size=1m,mode=0700 tmpfs "$1" || exit 99; '
              'shift; LD_PRELOAD=%s "$@"; echo "status $?"; '
              'echo "free $(stat -f -c %%a "$LEAKSCOPE_RUNTIME_DIR")"; '
              'set -- "$LEAKSCOPE_RUNTIME_DIR"/*.pm; unset LD_PRELOAD; '
              '%s report "$1" | grep -E "post-mortem|stacks|Dropped"' % (AGENT, LEAKSCOPE))
    where = tempfile.mkdtemp(prefix="leakscope-fullfs-")
    try:
        env = dict(os.environ, LEAKSCOPE_RUNTIME_DIR=where,
                   LEAKSCOPE_PERIOD_MS="10", LEAKSCOPE_HISTORY="4096",
                   LEAKSCOPE_KEEP="1")
        r = run_process([need("unshare"), "-m", "--propagation", "private",
                         "sh", "-c", script, "sh", where] + prog,
                        env=env, timeout=60)
    finally:
        os.rmdir(where)
    if r.returncode == 99:
        raise Skip("cannot mount a tmpfs here: " + r.stderr.decode())
    lines = r.stdout.decode().splitlines()
    eq(lines[0], native.stdout.decode().strip(), "the traced program's output")
    eq(lines[1], "status 0", "the traced program's exit status")
    ok(int(lines[2].split()[1]) < 16, "the file system filled up", lines[2])
    report = "\n".join(lines[3:])
    ok("post-mortem after exit" in report and "stacks with outstanding" in report,
       "the post-mortem file is read", report)


ROUNDS = int(os.environ.get("LEAKSCOPE_SEC_ROUNDS", "1"))


def tracer_of(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("TracerPid:"):
                return int(line.split()[1])
    return -1


def untraced(pid, timeout=10):
    """Wait until nobody traces pid (bounded); the last tracer pid seen."""
    end = time.monotonic() + timeout
    while tracer_of(pid) and time.monotonic() < end:
        time.sleep(0.02)
    return tracer_of(pid)


@check("attach interrupted by SIGINT, SIGTERM, SIGHUP or SIGKILL while it waits for a safe point: the target lives on, unchanged, and attaches later")
def t_interrupted_attach():
    ptrace_allowed()
    rt = tempfile.mkdtemp(prefix="leakscope-sec-attach-")
    env = dict(os.environ, LEAKSCOPE_RUNTIME_DIR=rt)
    env.pop("LD_PRELOAD", None)
    t = subprocess.Popen([workload("attach-target")], stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, env=env)

    def cmd(c):
        t.stdin.write(c.encode() + b"\n")
        t.stdin.flush()
        return t.stdout.readline().decode().strip()

    try:
        checksum = 0
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP,
                    signal.SIGKILL):
            for i in range(ROUNDS):
                what = "%s, round %d" % (sig.name, i + 1)
                eq(cmd("s"), "spinning", "the target spins (%s)" % what)
                a = subprocess.Popen([LEAKSCOPE, "attach", "--timeout", "30",
                                      str(t.pid)], env=env,
                                     start_new_session=True,
                                     stdout=subprocess.PIPE,
                                     stderr=subprocess.PIPE)
                # No malloc, no system call: attach waits, breakpoints in.
                time.sleep(0.5)
                os.kill(a.pid, sig)
                out, err = a.communicate(timeout=60)
                eq(untraced(t.pid), 0, "the target's tracer after " + what)
                os.kill(t.pid, signal.SIGUSR1)
                checksum = ord("s")
                eq(t.stdout.readline().decode().strip(), "ok s %d" % checksum,
                   "the target ends its spin (%s)" % what)
                checksum = checksum * 31 + ord("l")
                eq(cmd("l"), "ok l %d" % checksum,
                   "the target mallocs after " + what)
                eq(a.returncode, -sig, "attach's status after %s: %s" %
                   (what, err.decode()))
                if sig != signal.SIGKILL:
                    contains(err.decode(), "interrupted by " + sig.name[3:],
                             "attach's message (%s)" % what)
        with open("/proc/%d/maps" % t.pid) as f:
            ok("libleakscope" not in f.read(), "no agent was loaded")
        r = run_process([LEAKSCOPE, "attach", str(t.pid)], env=env, timeout=60)
        eq(r.returncode, 0, "a plain attach after them: " + r.describe())
        r = run_process([LEAKSCOPE, "detach", str(t.pid)], env=env, timeout=60)
        eq(r.returncode, 0, "detach: " + r.describe())
        finish(t, "bye %d" % checksum)
    finally:
        kill(t)
        shutil.rmtree(rt, ignore_errors=True)


@check("attach to another user's process in its own user and mount namespace: its /tmp link redirects no write of root's; the agent arrives as a memfd")
def t_attach_planted_tmp():
    ptrace_allowed()
    uid, gid = attacker()
    work = tempfile.mkdtemp(prefix="leakscope-sec-ns-")
    shm = tempfile.mkdtemp(prefix="leakscope-sec-ns-", dir="/dev/shm")
    os.chmod(shm, 0o755)
    rt = os.path.join(work, "runtime")
    os.mkdir(rt, 0o700)
    victim_dir = os.path.join(work, "victim")
    os.mkdir(victim_dir, 0o755)
    os.chmod(work, 0o755)
    victim = os.path.join(victim_dir, "libleakscope.so")
    with open(victim, "w") as f:
        f.write("root's\n")
    prog_copy = os.path.join(shm, "attach-target")
    shutil.copy(workload("attach-target"), prog_copy)
    env = dict(os.environ, LEAKSCOPE_RUNTIME_DIR=rt)
    env.pop("LD_PRELOAD", None)
    # The attacker's process, root of its own user namespace: a tmpfs of
    # its own on /tmp and over the agent's directory (hidden from it),
    # then a link to a directory of root's at the name under which an
    # attach that copied the agent into the target's /tmp would put it
    # (/tmp/leakscope-attach-<attach's pid>, followed against root's own
    # root through /proc/PID/root).
    top = "/" + BUILD.strip("/").split("/")[0]
    script = ('mount -t tmpfs none /tmp && mount -t tmpfs none "$1" && '
              'read apid && ln -s "$2" /tmp/leakscope-attach-$apid && '
              'echo planted && exec "$3"')
    t = subprocess.Popen([need("unshare"), "-U", "-r", "-m", "sh", "-c", script,
                          "sh", top, victim_dir, prog_copy],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, env=env,
                         preexec_fn=as_user(uid, gid))
    try:
        # attach's pid, known before it runs: sh execs it on a line.
        a = subprocess.Popen(["sh", "-c", 'read x; exec "$@"', "sh", LEAKSCOPE,
                              "attach", str(t.pid)], env=env,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        t.stdin.write(b"%d\np\n" % a.pid)
        t.stdin.flush()
        line = t.stdout.readline()
        if line != b"planted\n":
            a.kill()
            raise Skip("no user namespace for %s here: %s" %
                       (ATTACKER, t.stderr.read1().decode()))
        eq(t.stdout.readline().split()[:2], [b"ok", b"p"], "the target runs")
        ok(not os.path.exists("/proc/%d/root%s" % (t.pid, AGENT)),
           "the agent's path is hidden from the target")
        out, err = a.communicate(b"go\n", timeout=60)
        ok(os.path.exists(victim), "root's file behind the link still exists")
        with open(victim) as f:
            eq(f.read(), "root's\n", "root's file behind the link")
        eq(sorted(os.listdir(victim_dir)), ["libleakscope.so"],
           "nothing created behind the link")
        eq(a.returncode, 0, "attach: " + err.decode())
        with open("/proc/%d/maps" % t.pid) as f:
            contains(f.read(), "/memfd:libleakscope.so", "the agent's mapping")
        t.stdin.write(b"l\n")
        t.stdin.flush()
        t.stdout.readline()
        # Asked by its own user (the agent in a user namespace takes
        # requests from its uid there, the attacker's).
        env.pop("LEAKSCOPE_RUNTIME_DIR")
        own = runnable_copy(LEAKSCOPE, shm)
        for args in (["report", "--format", "json"], ["detach"]):
            r = subprocess.run([own] + args + [str(t.pid)], env=env,
                               capture_output=True, timeout=60,
                               preexec_fn=as_user(uid, gid))
            eq(r.returncode, 0, "%s as %s: %s" % (args[0], ATTACKER,
                                                   r.stderr.decode()))
            if args[0] == "report":
                contains(r.stdout.decode(), "site_malloc", "the report")
        finish(t, "bye")
    finally:
        kill(t)
        shutil.rmtree(work, ignore_errors=True)
        shutil.rmtree(shm, ignore_errors=True)


def wait_for(path, timeout=15):
    end = time.monotonic() + timeout
    while not os.path.exists(path) and time.monotonic() < end:
        time.sleep(0.02)
    ok(os.path.exists(path), "%s appears" % path)


def sockets(d):
    return sorted(x for x in os.listdir(d) if x.endswith(".sock"))


def free_pids(n):
    """n pids that no process has here (near the top of the pid range)."""
    with open("/proc/sys/kernel/pid_max") as f:
        top = int(f.read())
    pids = [p for p in range(top - 1, top - 1000, -1)
            if not os.path.exists("/proc/%d" % p)]
    return pids[:n]


@check("a traced process in a child PID namespace neither removes nor takes over a host process's socket or post-mortem file; no sweep removes a socket that answers; a dead one goes")
def t_sweep():
    if os.geteuid() != 0:
        raise Skip("needs root for a PID namespace")
    rt = tempfile.mkdtemp(prefix="leakscope-sec-sweep-")
    env = dict(os.environ, LEAKSCOPE_RUNTIME_DIR=rt, LD_PRELOAD=AGENT)
    host = subprocess.Popen([workload("attach-target")], env=env,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    listener = None
    try:
        host_sock = os.path.join(rt, "%d.sock" % host.pid)
        wait_for(host_sock)
        # A live agent's socket named by a pid that does not exist here
        # (an agent in another PID namespace), and a dead one's.
        alive_pid, dead_pid = free_pids(2)
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(os.path.join(rt, "%d.sock" % alive_pid))
        listener.listen(1)
        dead = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        dead.bind(os.path.join(rt, "%d.sock" % dead_pid))
        dead.close()
        inner = dict(env)
        inner.pop("LD_PRELOAD")     # unshare itself stays out here
        # The program there is pid 1 in its namespace: the socket and the
        # post-mortem file of a live agent of pid 1 here are not its own.
        one = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        one.bind(os.path.join(rt, "1.sock"))
        one.listen(1)
        pm_one = os.path.join(rt, "1.pm")
        with open(pm_one, "w") as f:
            f.write("pid 1's\n")
        held = open(pm_one)
        fcntl.flock(held, fcntl.LOCK_EX)     # as its live agent does
        r = run_process([need("unshare"), "-p", "-f", "--mount-proc", "env",
                         "LD_PRELOAD=" + AGENT, workload("many-sites"), "300"],
                        env=inner, timeout=60)
        eq(r.returncode, 0, "a traced program in a child PID namespace: " +
           r.describe())
        eq(sockets(rt), sorted("%d.sock" % p for p in
                               (1, host.pid, alive_pid, dead_pid)),
           "the sockets after a sweep in a child PID namespace")
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.connect(os.path.join(rt, "1.sock"))
        one.settimeout(5)
        one.accept()[0].close()     # still the one listening here
        probe.close()
        with open(pm_one) as f:
            eq(f.read(), "pid 1's\n", "the live post-mortem file of pid 1")
        held.close()
        one.close()
        r = run_process([workload("many-sites"), "300"], env=env, timeout=60)
        eq(r.returncode, 0, "a traced program here: " + r.describe())
        eq(sockets(rt), sorted("%d.sock" % p for p in (1, host.pid, alive_pid)),
           "the sockets after a sweep here: the dead one gone")
        r = run_process([LEAKSCOPE, "stats", str(host.pid)], env=env,
                        timeout=60)
        eq(r.returncode, 0, "the host process still answers: " + r.describe())
        finish(host, "bye")
    finally:
        kill(host)
        if listener:
            listener.close()
        shutil.rmtree(rt, ignore_errors=True)


@check("a set-user-ID root program under a system-wide agent: LEAKSCOPE_* paths from its caller are ignored")
def t_secure_exec():
    uid, gid = attacker()
    cc = need("cc")
    work = tempfile.mkdtemp(prefix="leakscope-sec-suid-")
    try:
        os.chmod(work, 0o755)
        # The agent linked in, as /etc/ld.so.preload would put it in every
        # program (this machine's own preload is left alone).
        agent = os.path.join(work, "libleakscope.so")
        shutil.copy(AGENT, agent)
        src = os.path.join(work, "suid.c")
        with open(src, "w") as f:
            f.write('#include <dlfcn.h>\n#include <stdio.h>\n#include <stdlib.h>\n'
                    'int main(void) { void *p = malloc(100);\n'
                    '  printf("agent %d euid %d\\n", '
                    'dlsym(RTLD_DEFAULT, "leakscope_attach") != NULL, '
                    '(int)geteuid());\n  free(p); return 0; }\n')
        prog = os.path.join(work, "suid")
        r = subprocess.run([cc, "-w", "-o", prog, src, agent, "-ldl",
                            "-Wl,-rpath," + work], capture_output=True)
        eq(r.returncode, 0, "cc: " + r.stderr.decode())
        os.chmod(prog, 0o4755)
        made = os.path.join(work, "made-by-root")
        out = os.path.join(work, "out")
        os.mkdir(out, 0o755)
        env = dict(os.environ, LEAKSCOPE_RUNTIME_DIR=made,
                   LEAKSCOPE_OUT_DIR=out, LEAKSCOPE_RUN="1")
        env.pop("LD_PRELOAD", None)
        r = subprocess.run([prog], env=env, capture_output=True, timeout=60,
                           preexec_fn=as_user(uid, gid))
        eq((r.returncode, r.stdout), (0, b"agent 1 euid 0\n"),
           "the set-user-ID program as %s, with the agent (%s)" %
           (ATTACKER, r.stderr.decode()))
        ok(not os.path.exists(made), "no directory made where its caller said",
           str(os.listdir(made)) if os.path.isdir(made) else "")
        eq(os.listdir(out), [], "nothing written where its caller said")
    finally:
        shutil.rmtree(work, ignore_errors=True)


@check("a client sending its request a byte every 1.9 s is cut off after 2 s; other requests are served meanwhile")
def t_slow_client():
    rt = tempfile.mkdtemp(prefix="leakscope-sec-slow-")
    env = dict(os.environ, LEAKSCOPE_RUNTIME_DIR=rt, LD_PRELOAD=AGENT)
    t = subprocess.Popen([workload("attach-target")], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        sock = os.path.join(rt, "%d.sock" % t.pid)
        wait_for(sock)
        env.pop("LD_PRELOAD")
        slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        slow.connect(sock)
        t0 = time.monotonic()
        stats = subprocess.Popen([LEAKSCOPE, "stats", str(t.pid)], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        cut = None
        for c in b"snapshot":
            try:
                slow.send(bytes([c]))
            except OSError:
                cut = time.monotonic() - t0
                break
            slow.settimeout(1.9)
            try:
                if slow.recv(256) is not None:
                    cut = time.monotonic() - t0
                    break
            except socket.timeout:
                pass
        out, err = stats.communicate(timeout=60)
        served = time.monotonic() - t0
        eq(stats.returncode, 0, "stats meanwhile: " + err.decode())
        ok(cut is not None and cut < 4, "the slow client is cut off within 4 s",
           "after %s s" % cut)
        ok(served < 5, "the other request is served within 5 s",
           "after %.1f s" % served)
        slow.close()
        finish(t, "bye")
    finally:
        kill(t)
        shutil.rmtree(rt, ignore_errors=True)


LONG = os.environ.get("LEAKSCOPE_SEC_LONG") == "1"


@check("a client reading its snapshot 4 KiB every 0.9 s is cut off after 5 s blocked; other requests are served (long: tests/security/run-agent-attacks)")
def t_slow_reader():
    if not LONG:
        raise Skip("takes 10 s: tests/security/run-agent-attacks runs it")
    rt = tempfile.mkdtemp(prefix="leakscope-sec-reader-")
    env = dict(os.environ, LEAKSCOPE_RUNTIME_DIR=rt, LD_PRELOAD=AGENT)
    # Some 100k live blocks after 2 s: a snapshot with its blocks of
    # megabytes, far more than a socket buffer.
    t = subprocess.Popen([workload("many-sites"), "30000"], env=env,
                         stdout=subprocess.DEVNULL)
    try:
        sock = os.path.join(rt, "%d.sock" % t.pid)
        wait_for(sock)
        time.sleep(2)
        env.pop("LD_PRELOAD")
        slow = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        slow.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        slow.connect(sock)
        slow.sendall(b"snapshot blocks\n")
        t0 = time.monotonic()
        stats = subprocess.Popen([LEAKSCOPE, "stats", str(t.pid)], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        got = 0
        slow.settimeout(1)
        while stats.poll() is None and time.monotonic() - t0 < 60:
            time.sleep(0.9)
            try:
                got += len(slow.recv(4096))
            except socket.timeout:
                pass
        served = time.monotonic() - t0
        out, err = stats.communicate(timeout=60)
        eq(stats.returncode, 0, "stats meanwhile: " + err.decode())
        ok(served < 12, "the other request is served within 12 s",
           "after %.1f s" % served)
        # What the agent queued before it gave up, read at once: far
        # less than the whole snapshot (megabytes).
        slow.settimeout(10)
        while True:
            data = slow.recv(1 << 20)
            if not data:
                break
            got += len(data)
        slow.close()
        ok(got < 2 << 20, "the slow reader's snapshot was abandoned",
           "%d bytes came" % got)
    finally:
        kill(t)
        shutil.rmtree(rt, ignore_errors=True)


@check("a program started under ulimit -v 64 MiB: no successful malloc changes errno in full tracking, as natively; it makes at least 75% of native's mallocs")
def t_ulimit_errno():
    import resource

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (64 << 20, 64 << 20))

    counts = {}
    for mode, extra in (("native", None), ("full", {}),
                        ("sampled", {"LEAKSCOPE_SAMPLE_RATE": "65536"})):
        rt = tempfile.mkdtemp(prefix="leakscope-sec-ulimit-")
        env = dict(os.environ, LEAKSCOPE_RUNTIME_DIR=rt)
        env.pop("LD_PRELOAD", None)
        if extra is not None:
            env.update(extra, LD_PRELOAD=AGENT)
        try:
            r = subprocess.run([workload("ulimit-errno")], env=env,
                               capture_output=True, timeout=120,
                               preexec_fn=limit)
        finally:
            shutil.rmtree(rt, ignore_errors=True)
        eq(r.returncode, 0, "%s run: %s" % (mode, r.stderr.decode()))
        f = r.stdout.split()
        counts[mode] = (int(f[1]), int(f[3]))
    eq(counts["native"][1], 0, "natively, successful mallocs that changed errno")
    # Sampled, the calls between sample points go straight to glibc, which
    # the agent's thread makes take its multi-threaded path (docs/SECURITY.md).
    eq(counts["full"][1], 0, "full tracking, successful mallocs that changed "
       "errno (made %d, native %d)" % (counts["full"][0], counts["native"][0]))
    for mode in ("full", "sampled"):
        ge(counts[mode][0], counts["native"][0] * 3 // 4,
           "%s tracking, successful mallocs (native %d)" %
           (mode, counts["native"][0]))
