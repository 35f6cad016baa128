"""`leakscope attach` under Yama's ptrace_scope (docs/guide/attach.md):
each refusal is one line that names kernel.yama.ptrace_scope, its value
and what to do, with exit status 1, and the target runs on untouched.

Scopes 1 and 2 are set here, the old value restored in a finally.  A
second user (leakscope-yama, created if absent) attaches to a process of
its own that is not its child: refused under both, each with its line.
Root attaches under both (CAP_SYS_PTRACE) and detaches.  Scope 3 is
never set: it cannot be lowered again until a reboot, and every later
ptrace test would fail; on a machine already at 3, root's refusal is
checked.  A kernel without Yama skips, saying so: the lines themselves,
from the file's text and errno, are checked by tests/unit/t-lib-ptrace.c.
"""
import os
import shutil
import subprocess
import tempfile

from harness import (check, once, workload, eq, ok, contains,
                     system_user, as_user, LEAKSCOPE, Skip)

SCOPE = "/proc/sys/kernel/yama/ptrace_scope"
USER = "leakscope-yama"
TIMEOUT = 60


def scope_now():
    try:
        with open(SCOPE) as f:
            return int(f.read())
    except FileNotFoundError:
        raise Skip("this kernel has no Yama (%s absent): the refusal lines "
                   "are checked by tests/unit/t-lib-ptrace.c" % SCOPE)


def set_scope(v):
    with open(SCOPE, "w") as f:
        f.write("%d\n" % v)


@once
def user():
    """The second user's (uid, gid), created if absent."""
    return system_user(USER, "set ptrace_scope and act as another user")


def attach_as(work, scope, who):
    """`leakscope attach` on a target of who's (None: root's) own, not
    attach's child, under scope: (exit status, stderr, the target's
    answer to a command after it)."""
    pre = as_user(*who) if who else None
    env = dict(os.environ, LEAKSCOPE_RUNTIME_DIR=os.path.join(
        work, "rt-user" if who else "rt-root"))
    env.pop("LD_PRELOAD", None)
    t = subprocess.Popen([os.path.join(work, "attach-target")], env=env,
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, preexec_fn=pre)
    try:
        set_scope(scope)
        r = subprocess.run([os.path.join(work, "leakscope"), "attach",
                            str(t.pid)], env=env, capture_output=True,
                           timeout=TIMEOUT, preexec_fn=pre)
        if r.returncode == 0:
            d = subprocess.run([os.path.join(work, "leakscope"), "detach",
                                str(t.pid)], env=env, capture_output=True,
                               timeout=TIMEOUT, preexec_fn=pre)
            eq(d.returncode, 0, "detach: " + d.stderr.decode())
        t.stdin.write(b"p\n")
        t.stdin.flush()
        answer = t.stdout.readline().decode()
        return r.returncode, r.stderr.decode(), answer
    finally:
        t.kill()
        t.wait()


@check("Yama ptrace_scope 1 and 2: a second user's attach is refused in "
       "one line naming the scope and what to do (exit 1), the target "
       "runs on; root attaches and detaches; at 3, root is refused")
def t_yama_scopes():
    old = scope_now()
    uid, gid = user()
    # where the second user can reach: the build tree may lie in a
    # directory only root can enter
    work = tempfile.mkdtemp(prefix="leakscope-yama-", dir="/dev/shm")
    try:
        os.chmod(work, 0o755)
        for f in (LEAKSCOPE, workload("attach-target")):
            shutil.copy(f, work)
            os.chmod(os.path.join(work, os.path.basename(f)), 0o755)
        shutil.copy(os.path.join(os.path.dirname(LEAKSCOPE),
                                 "libleakscope.so"), work)
        os.chmod(os.path.join(work, "libleakscope.so"), 0o755)
        os.mkdir(os.path.join(work, "rt-user"), 0o700)
        os.chown(os.path.join(work, "rt-user"), uid, gid)
        os.mkdir(os.path.join(work, "rt-root"), 0o700)
        want = {1: ("is 1 (only a parent may trace its children)",
                    "sysctl kernel.yama.ptrace_scope=0"),
                2: ("is 2 (only root may trace)", "CAP_SYS_PTRACE")}
        if old == 3:
            rc, err, answer = attach_as(work, 3, None)
            eq(rc, 1, "root's attach at scope 3: exit status")
            contains(err, "kernel.yama.ptrace_scope is 3", "the line")
            return
        for scope, (what, todo) in want.items():
            rc, err, answer = attach_as(work, scope, (uid, gid))
            eq(rc, 1, "%s's attach at scope %d: exit status" % (USER, scope))
            eq(err.count("\n"), 1, "one line: " + err)
            contains(err, "kernel.yama.ptrace_scope " + what, "the line")
            contains(err, todo, "what to do")
            ok(answer.startswith("ok p"), "the target runs on", answer)
            rc, err, answer = attach_as(work, scope, None)
            eq(rc, 0, "root's attach at scope %d: %s" % (scope, err))
            ok(answer.startswith("ok p"), "the target runs on", answer)
    finally:
        set_scope(old)
        shutil.rmtree(work, ignore_errors=True)
