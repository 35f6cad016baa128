"""Attacks on the agent and on attach (docs/SECURITY.md, "The agent and
attach"), each run by an unprivileged user created here
(leakscope-attacker) against root: the attacker gains nothing and the
target lives."""

import os
import pwd
import shutil
import signal
import subprocess
import tempfile
import time

from harness import (check, workload, eq, ok, contains, run_process, need,
                     ptrace_allowed, BUILD, LEAKSCOPE, Skip)

AGENT = os.path.join(BUILD, "libleakscope.so")
ATTACKER = "leakscope-attacker"


def attacker():
    """The attacker's (uid, gid), the user created if absent."""
    if os.geteuid() != 0:
        raise Skip("needs root to create and act as another user")
    try:
        pw = pwd.getpwnam(ATTACKER)
    except KeyError:
        subprocess.run([need("useradd"), "-M", "-r", "-s", "/usr/sbin/nologin",
                        ATTACKER], check=True, capture_output=True)
        pw = pwd.getpwnam(ATTACKER)
    return pw.pw_uid, pw.pw_gid


def as_user(uid, gid):
    def become():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    return become


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


def swap_race(uid, gid, where, target, seconds):
    p = subprocess.Popen([workload("swap-race"), where, target, str(seconds)],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE,
                         preexec_fn=as_user(uid, gid))
    eq(p.stdout.readline(), b"ready\n", "the attacker watches " + where)
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
        race = swap_race(uid, gid, rundir, victim, 600)
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
        for args in (["report", "--format", "json"], ["detach"]):
            r = subprocess.run([LEAKSCOPE] + args + [str(t.pid)], env=env,
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
