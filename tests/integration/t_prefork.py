"""Pre-fork workers: a child forked without exec is queryable whether or
not it allocates after fork, and after it setuid()s to another user, right
after fork or seconds later (by root and by that user); a switched
worker's exit report reaches `leakscope run`'s 0700 output directory; the
agent's threads do not make unshare(CLONE_NEWUSER) fail in a child."""

import json
import os
import shutil
import signal
import subprocess
import tempfile
import time

from harness import agent_env
from harness import (check, free_port, workload, eq, ok, run_process, site_function,
                     need, need_user_reaches, parse_json_lines,
                     LEAKSCOPE, BUILD, Failure, Skip)

AGENT = os.path.join(BUILD, "libleakscope.so")
RUNTIME = tempfile.mkdtemp(prefix="leakscope-prefork-")
os.chmod(RUNTIME, 0o700)
WAIT_S = 15     # bounded wait for a worker's socket (it comes after ~1 s)


def env(preload=False):
    e = agent_env(RUNTIME)
    if preload:
        e["LD_PRELOAD"] = AGENT
    return e


def report(pid):
    return run_process([LEAKSCOPE, "report", "--format", "json", str(pid)],
                       timeout=60, env=env())


def report_when_ready(pid):
    """The worker's report, polling until its socket exists (bounded)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        r = report(pid)
        if r.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.1)
    eq(r.returncode, 0, "report of worker %d: %s" % (pid, r.stderr.decode()))
    return json.loads(r.stdout.decode())


def start(mode, argv=None, e=None):
    p = subprocess.Popen((argv or []) + [workload("prefork-idle"), mode],
                         env=e or env(True),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    return p, int(p.stdout.readline())


def say(p, line):
    p.stdin.write(line)
    p.stdin.flush()


def unshare_lines(preload):
    """What prefork-idle unshare prints: its two lines, pid line apart."""
    r = run_process([workload("prefork-idle"), "unshare"], input=b"",
                    env=env(preload), timeout=30)
    eq(r.returncode, 0, "prefork-idle unshare status: " + r.describe())
    return [x for x in r.stdout.decode().splitlines()
            if x.startswith("unshare")]


def finish(p, what="prefork-idle exit status", timeout=30):
    p.stdin.close()
    try:
        eq(p.wait(timeout=timeout), 0, what)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


@check("an idle pre-fork worker that never allocates after fork is queryable")
def t_idle_worker():
    p, worker = start("idle")
    try:
        rep = report_when_ready(worker)
        eq(rep["pid"], worker, "report pid")
        ok(os.path.exists(os.path.join(RUNTIME, "%d.sock" % worker)),
           "the worker's socket is in the runtime dir it was given")
    finally:
        finish(p)
    ok(not os.path.exists(os.path.join(RUNTIME, "%d.sock" % worker)),
       "the worker's socket is gone after its exit")


@check("a worker that setuid()s to nobody is found by root and shows its leak")
def t_nobody_worker():
    if os.geteuid() != 0:
        raise Skip("needs root to setuid() to 65534")
    p, worker = start("nobody")
    try:
        eq(p.stdout.readline(), b"leaked\n", "the worker leaked")
        rep = report_when_ready(worker)
        eq(rep["pid"], worker, "report pid")
        prog = workload("prefork-idle")
        leak = [s for s in rep["sites"]
                if site_function(s, prog) == "site_nobody_leak"]
        # The loop of 3 may be unrolled into 3 call sites: sum them.
        ok(leak, "the worker's leak site")
        eq(sum(s["live_bytes"] for s in leak), 3000, "the worker's leaked bytes")
        eq(sum(s["live_blocks"] for s in leak), 3, "the worker's leaked blocks")
        sock = "/dev/shm/leakscope-65534/%d.sock" % worker
        ok(os.path.exists(sock), "the socket is in nobody's runtime dir")
        eq(os.stat(os.path.dirname(sock)).st_uid, 65534, "its dir's owner")
        ok(not os.path.exists(os.path.join(RUNTIME, "%d.sock" % worker)),
           "no socket in root's runtime dir")
    finally:
        finish(p)


def children(pid):
    try:
        with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
            return [int(x) for x in f.read().split()]
    except OSError:
        return []


NGINX_CONF = """
daemon off;
master_process on;
worker_processes 2;
pid %(d)s/nginx.pid;
error_log %(d)s/error.log;
%(user)s
events { worker_connections 64; }
http {
    access_log off;
    client_body_temp_path %(d)s/body;
    proxy_temp_path %(d)s/proxy;
    fastcgi_temp_path %(d)s/fastcgi;
    uwsgi_temp_path %(d)s/uwsgi;
    scgi_temp_path %(d)s/scgi;
    server { listen 127.0.0.1:%(port)d; root %(d)s; }
}
"""


@check("nginx with 2 pre-forked workers under the agent: each worker is queryable")
def t_nginx_workers():
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.access(nginx, os.X_OK):
        raise Skip("nginx is not installed (Debian nginx-light)")
    d = tempfile.mkdtemp(prefix="leakscope-nginx-")
    os.chmod(d, 0o755)
    conf = os.path.join(d, "nginx.conf")
    with open(conf, "w") as f:
        f.write(NGINX_CONF % {"d": d, "port": free_port(),
                              "user": "user nobody nogroup;"
                              if os.geteuid() == 0 else ""})
    p = subprocess.Popen([nginx, "-p", d, "-c", conf], env=env(True),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        deadline = time.monotonic() + WAIT_S
        while len(children(p.pid)) < 2 and time.monotonic() < deadline:
            if p.poll() is not None:
                raise Failure("nginx exited with %d" % p.returncode)
            time.sleep(0.05)
        workers = children(p.pid)
        eq(len(workers), 2, "nginx workers")
        for w in workers:
            rep = report_when_ready(w)
            eq(rep["pid"], w, "report pid of nginx worker")
    finally:
        p.terminate()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
        shutil.rmtree(d, ignore_errors=True)


@check("unshare(CLONE_NEWUSER) in a fresh fork child: as without the agent")
def t_unshare_early():
    native = unshare_lines(False)
    if native != ["unshare 0"]:
        raise Skip("user namespaces are not allowed here: %s" % native)
    # The child's waker thread made it EINVAL (22) for the first second.
    eq(unshare_lines(True), native, "the worker's unshare under the agent")


@check("unshare(CLONE_NEWUSER) once the worker is queryable: works, queryable again")
def t_unshare_late():
    if unshare_lines(False) != ["unshare 0"]:
        raise Skip("user namespaces are not allowed here")
    p, worker = start("unshare-late")
    try:
        eq(report_when_ready(worker)["pid"], worker, "report pid before")
        say(p, b"u\n")
        # The control thread made it EINVAL (22) for good.
        eq(p.stdout.readline(), b"unshare 0\n", "the worker's unshare")
        eq(report_when_ready(worker)["pid"], worker, "report pid after")
    finally:
        finish(p)


def nobody_leak(rep):
    prog = workload("prefork-idle")
    leak = [x for x in rep["sites"]
            if site_function(x, prog) == "site_nobody_leak"]
    return (sum(x["live_bytes"] for x in leak),
            sum(x["live_blocks"] for x in leak))


def as_nobody(*args):
    """leakscope ARGS run as nobody, with nobody's default runtime dir."""
    e = env()
    e.pop("LEAKSCOPE_RUNTIME_DIR", None)
    e.pop("XDG_RUNTIME_DIR", None)
    return run_process([need("setpriv"), "--reuid=65534", "--regid=65534",
                        "--clear-groups", LEAKSCOPE] + list(args),
                       env=e, timeout=60)


@check("a worker that setuid()s seconds after fork: queryable by root and nobody, its exit report delivered")
def t_late_nobody():
    if os.geteuid() != 0:
        raise Skip("needs root to setuid() to 65534")
    need_user_reaches(65534, LEAKSCOPE)
    # In /dev/shm like nobody's own runtime dir, so the files move by
    # rename (across file systems the post-mortem file is dropped).
    rt = tempfile.mkdtemp(prefix="leakscope-late-",
                          dir="/dev/shm" if os.path.isdir("/dev/shm") else None)
    os.chmod(rt, 0o700)
    out = os.path.join(tempfile.mkdtemp(prefix="leakscope-late-out-"), "rep")
    e = env()
    e["LEAKSCOPE_RUNTIME_DIR"] = rt
    p, worker = start("late", [LEAKSCOPE, "run", "--format", "json",
                               "--output", out, "--"], e)
    try:
        deadline = time.monotonic() + WAIT_S
        while not os.path.exists(os.path.join(rt, "%d.sock" % worker)):
            ok(time.monotonic() < deadline, "the worker's socket in root's "
               "runtime dir within %d s" % WAIT_S)
            time.sleep(0.1)
        say(p, b"s\n")
        eq(p.stdout.readline(), b"leaked\n", "the worker leaked as nobody")
        sock = "/dev/shm/leakscope-65534/%d.sock" % worker
        ok(os.path.exists(sock), "the socket moved to nobody's runtime dir")
        eq(os.stat(sock).st_uid, 65534, "the socket's owner")
        ok(not os.path.exists(os.path.join(rt, "%d.sock" % worker)),
           "none left in root's runtime dir")
        eq(nobody_leak(report_when_ready(worker)), (3000, 3),
           "root's report of the worker: its leak")
        r = as_nobody("report", "--format", "json", str(worker))
        eq(r.returncode, 0, "report as nobody: " + r.describe())
        eq(nobody_leak(json.loads(r.stdout.decode())), (3000, 3),
           "nobody's report of the worker: its leak")
    finally:
        finish(p, "leakscope run status", 60)
    ok(os.path.exists("%s.%d" % (out, worker)), "the worker's exit report "
       "in the run's output", str(os.listdir(os.path.dirname(out))))
    with open("%s.%d" % (out, worker)) as f:
        rep = parse_json_lines(f.read(), "worker report")[-1]
    eq(rep["reason"], "exit", "the worker's report is its exit report")
    eq(nobody_leak(rep), (3000, 3), "the worker's exit report: its leak")
    left = [f for d in (rt, "/dev/shm/leakscope-65534")
            for f in os.listdir(d) if f.startswith("%d." % worker)]
    eq(left, [], "files of the worker left in the runtime dirs")
    shutil.rmtree(rt, ignore_errors=True)
    shutil.rmtree(os.path.dirname(out), ignore_errors=True)


@check("nginx under leakscope run, workers as nobody: each worker's exit report delivered")
def t_nginx_reports():
    nginx = shutil.which("nginx") or "/usr/sbin/nginx"
    if not os.access(nginx, os.X_OK):
        raise Skip("nginx is not installed (Debian nginx-light)")
    if os.geteuid() != 0:
        raise Skip("needs root for nginx's user nobody")
    d = tempfile.mkdtemp(prefix="leakscope-nginx-")
    os.chmod(d, 0o755)
    conf = os.path.join(d, "nginx.conf")
    port = free_port()
    with open(conf, "w") as f:
        f.write(NGINX_CONF % {"d": d, "port": port,
                              "user": "user nobody nogroup;"})
    out = os.path.join(d, "report")
    p = subprocess.Popen([LEAKSCOPE, "run", "--format", "json", "--output",
                          out, "--", nginx, "-p", d, "-c", conf], env=env(),
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    try:
        deadline = time.monotonic() + WAIT_S
        master = []
        while time.monotonic() < deadline and not master:
            master = children(p.pid)
            time.sleep(0.05)
        ok(master, "nginx master started")
        master = master[0]
        while len(children(master)) < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        workers = children(master)
        eq(len(workers), 2, "nginx workers")
        for w in workers:
            eq(report_when_ready(w)["pid"], w, "worker %d queryable" % w)
        import urllib.request
        with urllib.request.urlopen("http://127.0.0.1:%d/nginx.conf" % port,
                                    timeout=10) as r:
            eq(r.status, 200, "nginx serves as nobody")
        os.kill(master, signal.SIGQUIT)      # graceful: workers exit()
        eq(p.wait(timeout=60), 0, "leakscope run status (nginx's 0)")
        for w in workers:
            path = "%s.%d" % (out, w)
            ok(os.path.exists(path), "worker %d's exit report" % w,
               str(sorted(os.listdir(d))))
            with open(path) as f:
                rep = parse_json_lines(f.read(), "worker report")[-1]
            eq((rep["pid"], rep["reason"]), (w, "exit"), "its pid and reason")
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
        shutil.rmtree(d, ignore_errors=True)
