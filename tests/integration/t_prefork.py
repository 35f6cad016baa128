"""Pre-fork workers: a child forked without exec is queryable whether or
not it allocates after fork, and after it setuid()s to another user."""

import json
import os
import shutil
import subprocess
import tempfile
import time

from harness import (check, free_port, workload, eq, ok, run_process, site_function,
                     LEAKSCOPE, BUILD, Failure, Skip)

AGENT = os.path.join(BUILD, "libleakscope.so")
RUNTIME = tempfile.mkdtemp(prefix="leakscope-prefork-")
os.chmod(RUNTIME, 0o700)
WAIT_S = 15     # bounded wait for a worker's socket (it comes after ~1 s)


def env(preload=False):
    e = dict(os.environ)
    e["LEAKSCOPE_RUNTIME_DIR"] = RUNTIME
    e.pop("LD_PRELOAD", None)
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


def start(mode):
    p = subprocess.Popen([workload("prefork-idle"), mode], env=env(True),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    return p, int(p.stdout.readline())


def finish(p):
    p.stdin.close()
    try:
        eq(p.wait(timeout=30), 0, "prefork-idle exit status")
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
