"""Attacks on the runtime dir and the control socket (docs/SECURITY.md, "The
CLI, the runtime dir and the server"), each by a second local user,
leakscope-attacker, against a victim user, leakscope-victim (both made here
when missing; root is needed):

- the attacker makes /dev/shm/leakscope-<victim uid> first, writable by
  all, with a fake agent listening there: the victim's agent must use a
  private fallback and say so, the victim's and root's CLI must find the
  real agent and send the fake one nothing;
- with that dir squatted, a root daemon under the agent drops to the
  victim: its socket must move to the victim's fallback, where the
  victim's and root's CLI find it;
- a FIFO planted as the victim's post-mortem file must not hang
  `report --postmortem`;
- the attacker's process names, in its environment, a runtime dir of the
  attacker's where a symlink points at a socket of root's, or where a
  process other than the target listens: root's `reset`/`stats` of the
  attacker's pid must send nothing there.
"""
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
from harness import (check, workload, need_user_reaches, run_process, eq, ok,
                     contains, Skip, BUILD, LEAKSCOPE)

ATTACKER = "leakscope-attacker"
VICTIM = "leakscope-victim"


def user(name):
    """uid of name, made (no home, no login) when missing."""
    if os.geteuid() != 0:
        raise Skip("needs root to make and become the test users")
    try:
        return pwd.getpwnam(name).pw_uid
    except KeyError:
        subprocess.run(["useradd", "-M", "-r", "-s", "/usr/sbin/nologin",
                        name], check=True)
        return pwd.getpwnam(name).pw_uid


def become(uid):
    def preexec():
        os.setgroups([])
        os.setgid(pwd.getpwuid(uid).pw_gid)
        os.setuid(uid)
    return preexec


def clean_env(extra=None):
    e = {k: v for k, v in os.environ.items()
         if k not in ("LD_PRELOAD", "LEAKSCOPE_RUNTIME_DIR", "XDG_RUNTIME_DIR")}
    e.update(extra or {})
    return e


class FakeAgent:
    """A socket listening at path (made by the current process or as uid),
    recording every byte any client sends it."""

    def __init__(self, path, uid=None):
        self.path = path
        self.got = b""
        self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        if uid is None:
            self.sock.bind(path)
        else:
            # bind as uid: the socket file is the attacker's own
            pid = os.fork()
            if pid == 0:
                code = 1
                try:
                    become(uid)()
                    self.sock.bind(path)
                    os.chmod(path, 0o777)
                    code = 0
                finally:
                    os._exit(code)
            eq(os.WEXITSTATUS(os.waitpid(pid, 0)[1]), 0, "fake agent bound")
        self.sock.listen(8)
        self.sock.settimeout(0.2)
        self.done = False
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self):
        while not self.done:
            try:
                c, _ = self.sock.accept()
            except (socket.timeout, OSError):
                continue
            c.settimeout(1)
            try:
                while True:
                    d = c.recv(4096)
                    if not d:
                        break
                    self.got += d
                    c.sendall(b"READY 1\n")   # keep a check talking
            except OSError:
                pass
            c.close()

    def stop(self):
        self.done = True
        self.thread.join()
        self.sock.close()
        return self.got


def reachable_copy(uid):
    """The CLI, the agent and the slow workload in a dir uid can reach."""
    d = tempfile.mkdtemp(prefix="leakscope-sec-")
    os.chmod(d, 0o755)
    for src in (LEAKSCOPE, os.path.join(BUILD, "libleakscope.so"),
                workload("growth")):
        shutil.copy2(src, d)
    need_user_reaches(uid, os.path.join(d, "leakscope"))
    return d


def start_victim(d, uid, extra_env=None):
    p = subprocess.Popen([os.path.join(d, "growth"), "30"],
                         env=clean_env(dict(extra_env or {}, LD_PRELOAD=os.path.join(
                             d, "libleakscope.so"))),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         preexec_fn=become(uid), start_new_session=True)
    return p


def run_as(uid, argv, timeout=30, env=None):
    p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         stdin=subprocess.DEVNULL, env=env or clean_env(),
                         preexec_fn=become(uid) if uid else None,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        return None
    return p.returncode, out.decode(), err.decode()


def wait_for(pred, what, seconds=10):
    end = time.time() + seconds
    while time.time() < end:
        if pred():
            return
        time.sleep(0.02)
    raise AssertionError("timed out waiting for " + what)


def squat(victim_uid, attacker_uid):
    """/dev/shm/leakscope-<victim uid>, made first by the attacker, mode
    0777; the victim's old fallbacks removed."""
    base = "/dev/shm/leakscope-%d" % victim_uid
    for p in [base] + [os.path.join("/dev/shm", n) for n in os.listdir("/dev/shm")
                       if n.startswith(os.path.basename(base) + ".")]:
        shutil.rmtree(p, ignore_errors=True)
    r = run_as(attacker_uid, ["mkdir", "-m", "777", base])
    eq(r[0], 0, "the attacker made " + base)
    return base


def fallbacks(base):
    return [os.path.join("/dev/shm", n) for n in os.listdir("/dev/shm")
            if n.startswith(os.path.basename(base) + ".")]


def ask_past_squat(p, base, d, attacker, victim, root_verb, first=None):
    """With the attacker's fake agent on p's name in the squatted base, once
    p's socket is in a fallback: the victim's `stats` of p and root's
    root_verb of it (run_as results), the bytes the fake agent got and p's
    stderr; p killed and base removed after."""
    fake = None
    try:
        if first:
            first()
        fake = FakeAgent(os.path.join(base, "%d.sock" % p.pid), attacker)
        wait_for(lambda: any(os.path.exists(os.path.join(f, "%d.sock" % p.pid))
                             for f in fallbacks(base)), "the agent's socket")
        st = run_as(victim, [os.path.join(d, "leakscope"), "stats", str(p.pid)])
        root = run_as(0, [os.path.join(d, "leakscope"), root_verb, str(p.pid)])
    finally:
        got = fake.stop() if fake else b""
        os.killpg(p.pid, signal.SIGKILL)
        err = p.communicate(timeout=30)[1].decode()
        shutil.rmtree(base, ignore_errors=True)
    return st, root, got, err


def the_fallback(base, uid):
    """base's one fallback, checked to be uid's, mode 0700: [path]."""
    fb = fallbacks(base)
    eq(len(fb), 1, "one fallback dir")
    s = os.lstat(fb[0])
    eq((s.st_uid, s.st_mode & 0o7777), (uid, 0o700),
       "the fallback's owner and mode")
    return fb


@check("squatted /dev/shm/leakscope-<uid>: the agent uses a private fallback and says so; the victim's stats and root's check reach it; the attacker's fake agent gets nothing")
def t_squatted_default_dir():
    attacker, victim = user(ATTACKER), user(VICTIM)
    d = reachable_copy(victim)
    base = squat(victim, attacker)
    p = start_victim(d, victim)
    st, chk, got, err = ask_past_squat(p, base, d, attacker, victim, "check")
    fb = the_fallback(base, victim)
    contains(err, "runtime dir '%s' is not a directory of this user's that only "
             "it can write (squatted?): using '%s'" % (base, fb[0]), "the agent's note")
    eq(st[0], 0, "the victim's stats: " + st[2])
    contains(st[1], "pid %d," % p.pid, "stats came from the real agent")
    eq(chk[0], 0, "root's check: " + chk[2])
    eq(got, b"", "what the attacker's fake agent received")


# A root daemon under the agent that drops to uid:gid, then idles.
DROPPER = """
import os, sys, time
os.setgid(int(sys.argv[2]))
os.setuid(int(sys.argv[1]))
print("dropped", flush=True)
time.sleep(30)
"""


@check("a root daemon dropping to a user whose /dev/shm/leakscope-<uid> is squatted: its socket moves to that user's private fallback, which the user's and root's stats reach; the attacker's fake agent gets nothing")
def t_squatted_switch():
    attacker, victim = user(ATTACKER), user(VICTIM)
    gid = pwd.getpwuid(victim).pw_gid
    d = reachable_copy(victim)
    base = squat(victim, attacker)
    p = subprocess.Popen(["python3", "-c", DROPPER, str(victim), str(gid)],
                         env=clean_env({"LD_PRELOAD": os.path.join(
                             d, "libleakscope.so")}),
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    st, root, got, err = ask_past_squat(
        p, base, d, attacker, victim, "stats", lambda: eq(
            p.stdout.readline(), b"dropped\n", "the daemon dropped to the victim"))
    fb = the_fallback(base, victim)
    contains(err, "runtime dir '%s' of uid %d is not a directory of that "
             "user's that only it can write (squatted?): using '%s'" %
             (base, victim, fb[0]), "the agent's note")
    ok("could not move" not in err, "no failed move: " + err[-300:])
    eq(st[0], 0, "the victim's stats: " + st[2])
    contains(st[1], "pid %d," % p.pid, "stats came from the real agent")
    eq(root[0], 0, "root's stats: " + root[2])
    contains(root[1], "pid %d," % p.pid, "root's too")
    eq(got, b"", "what the attacker's fake agent received")
    shutil.rmtree(d, ignore_errors=True)


@check("a FIFO planted as the post-mortem file: report --postmortem fails at once, it does not hang")
def t_pm_fifo():
    attacker, victim = user(ATTACKER), user(VICTIM)
    d = reachable_copy(victim)
    base = squat(victim, attacker)
    # a pid that does not run: the victim looks in its own dirs
    pid = 4000000 - 7
    fifo = os.path.join(base, "%d.pm" % pid)
    eq(run_as(attacker, ["mkfifo", "-m", "666", fifo])[0], 0, "the FIFO made")
    t0 = time.time()
    try:
        r = run_as(victim, [os.path.join(d, "leakscope"), "report",
                            "--postmortem", str(pid)], timeout=10)
    finally:
        shutil.rmtree(base, ignore_errors=True)
    took = time.time() - t0
    ok(r is not None, "report --postmortem returned within 10 s")
    eq(r[0], 1, "its status: " + r[2])
    contains(r[2], "no post-mortem file for pid %d" % pid, "its reason")
    ok(took < 5, "it took %.1f s" % took)


def attacker_process(attacker):
    """A process of the attacker's (no agent) whose environment names a
    runtime dir of the attacker's, mode 0700: (dir, Popen)."""
    adir = tempfile.mkdtemp(prefix="leakscope-attacker-")
    os.chown(adir, attacker, -1)
    p = subprocess.Popen(["sleep", "30"], env=clean_env(
        {"LEAKSCOPE_RUNTIME_DIR": adir}), preexec_fn=become(attacker),
        start_new_session=True)
    return adir, p


@check("the target's LEAKSCOPE_RUNTIME_DIR names the attacker's dir with a symlink to root's socket: root's reset sends it nothing")
def t_env_dir_symlink():
    attacker = user(ATTACKER)
    d = reachable_copy(attacker)
    rootdir = tempfile.mkdtemp(prefix="leakscope-rootsock-")
    victim_sock = os.path.join(rootdir, "root-agent.sock")
    fake = FakeAgent(victim_sock)          # root's "other process"
    adir, p = attacker_process(attacker)
    try:
        r = run_as(attacker, ["ln", "-s", victim_sock,
                              os.path.join(adir, "%d.sock" % p.pid)])
        eq(r[0], 0, "the attacker's symlink")
        rr = run_as(0, [os.path.join(d, "leakscope"), "reset", str(p.pid)])
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        got = fake.stop()
    eq(got, b"", "what root's other socket received")
    ok(rr[0] != 0, "reset fails: " + rr[2])
    contains(rr[2], "is not a socket of uid %d" % attacker, "its reason")
    shutil.rmtree(rootdir)
    shutil.rmtree(adir)


@check("a socket in the target's own dir on which another process listens: root's stats refuses it (SO_PEERCRED pid) and sends nothing")
def t_peer_pid():
    attacker = user(ATTACKER)
    d = reachable_copy(attacker)
    adir, p = attacker_process(attacker)
    fake = FakeAgent(os.path.join(adir, "%d.sock" % p.pid), attacker)
    try:
        r = run_as(0, [os.path.join(d, "leakscope"), "stats", str(p.pid)])
    finally:
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        got = fake.stop()
    eq(got, b"", "what the impostor received")
    eq(r[0], 1, "stats' status: " + r[2])
    contains(r[2], "is not pid %d's agent" % p.pid, "its reason")
    shutil.rmtree(adir)
