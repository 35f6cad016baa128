"""stresslib.py - the reliability run: stress patterns and real servers, each
run natively and under leakscope, compared.

Used by tests/stress/run-stress (the long run, by hand) and by
tests/integration/t_stress.py (the quick part, in `make check`).  Each
function returns None when the traced run behaved as the native one, else
a one-line reason; it raises Skip (from the caller's harness) only through
`need`.  Python 3 standard library only; every process has a timeout and
every server listens on 127.0.0.1 only.
"""

import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import urllib.request

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, "build")
LEAKSCOPE = os.path.join(BUILD, "leakscope")
STRESS = os.path.join(BUILD, "tests", "workloads", "stress")
STRESS_CXX = os.path.join(BUILD, "tests", "workloads", "stress-cxx")
LIBLEAKY = os.path.join(BUILD, "tests", "workloads", "libleaky.so")
LIBLAZY = os.path.join(BUILD, "tests", "workloads", "liblazy.so")
MODES = ["signals", "forks", "dlopen", "lazybind", "longjmp", "spawn",
         "xthread", "threads", "nomem", "cxx"]
# The quick part's arguments where the long run's are heavier.
QUICK = {"threads": ["quick"]}


def mode_argv(mode, quick=False):
    """The command of one stress mode."""
    if mode == "cxx":
        return [STRESS_CXX]
    if mode == "dlopen":
        return [STRESS, mode, LIBLEAKY]
    if mode == "lazybind":
        return [STRESS, mode, LIBLAZY]
    return [STRESS, mode] + (QUICK.get(mode, []) if quick else [])


def traced(argv, options=(), output=None):
    """argv under `leakscope run OPTIONS --output FILE --`."""
    out = output or os.path.join(tempfile.mkdtemp(prefix="leakscope-stress-"), "r")
    return [LEAKSCOPE, "run"] + list(options) + ["--output", out, "--"] + argv


def run(argv, timeout=120):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       stdin=subprocess.DEVNULL, timeout=timeout)
    return p.returncode, p.stdout


def stress_mode(mode, options=(), quick=False):
    """One stress mode: same stdout and status traced as native."""
    argv = mode_argv(mode, quick)
    native = run(argv)
    got = run(traced(argv, options))
    if native[0] != 0:
        return "%s: native run failed with status %d" % (mode, native[0])
    if got != native:
        return "%s: traced %r, native %r" % (mode, got, native)
    return None


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_port(port, proc, seconds=20):
    end = time.monotonic() + seconds
    while time.monotonic() < end and proc.poll() is None:
        try:
            socket.create_connection(("127.0.0.1", port), 0.2).close()
            return True
        except OSError:
            time.sleep(0.05)
    return False


def redis_once(under, requests):
    """redis-server on a private loopback port (natively or under
    leakscope), redis-benchmark against it, then shutdown: (benchmark
    status, completed request lines, server status)."""
    port = free_port()
    d = tempfile.mkdtemp(prefix="leakscope-redis-")
    server = [shutil.which("redis-server"), "--port", str(port), "--bind",
              "127.0.0.1", "--save", "", "--appendonly", "no", "--dir", d]
    proc = subprocess.Popen(traced(server, output=os.path.join(d, "r")) if under
                            else server, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        if not wait_port(port, proc):
            return ("no server", 0, proc.poll())
        bench = subprocess.run(
            [shutil.which("redis-benchmark"), "-h", "127.0.0.1", "-p", str(port),
             "-q", "-n", str(requests), "-c", "8", "-t", "set,get,lpush,lpop"],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=300)
        done = sum(1 for l in bench.stdout.decode().splitlines()
                   if "requests per second" in l)
        subprocess.run([shutil.which("redis-cli"), "-h", "127.0.0.1", "-p",
                        str(port), "shutdown", "nosave"],
                       stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                       timeout=30)
        status = proc.wait(timeout=60)
        report = os.path.exists(os.path.join(d, "r")) if under else True
        return (bench.returncode, done, status, report)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(d, ignore_errors=True)


def redis(requests=2000):
    """redis-server under redis-benchmark: every test completes, the
    server exits as natively, and leakscope writes its report."""
    native = redis_once(False, requests)
    got = redis_once(True, requests)
    if got != native:
        return "redis: traced %r, native %r" % (got, native)
    return None


NGINX_CONF = """worker_processes 2;
daemon off;
master_process on;
pid %(d)s/nginx.pid;
error_log %(d)s/error.log;
events { worker_connections 64; }
http {
    access_log %(d)s/access.log;
    client_body_temp_path %(d)s;
    proxy_temp_path %(d)s;
    fastcgi_temp_path %(d)s;
    uwsgi_temp_path %(d)s;
    scgi_temp_path %(d)s;
    server {
        listen 127.0.0.1:%(port)d;
        root %(d)s;
    }
}
"""


def nginx_once(under, requests):
    """nginx with two pre-forked workers on a private loopback port: the
    pages it served (their bodies) and its exit status after SIGQUIT."""
    port = free_port()
    d = tempfile.mkdtemp(prefix="leakscope-nginx-")
    with open(os.path.join(d, "index.html"), "w") as f:
        f.write("leakscope stress page\n" * 50)
    with open(os.path.join(d, "nginx.conf"), "w") as f:
        f.write(NGINX_CONF % {"d": d, "port": port})
    cmd = [shutil.which("nginx"), "-c", os.path.join(d, "nginx.conf"), "-p", d]
    proc = subprocess.Popen(traced(cmd, output=os.path.join(d, "r")) if under
                            else cmd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        if not wait_port(port, proc):
            return ("no server", proc.poll())
        bodies = set()
        for _ in range(requests):
            with urllib.request.urlopen("http://127.0.0.1:%d/" % port,
                                        timeout=10) as r:
                bodies.add(r.read())
        # the master's pid is nginx's own under `leakscope run`
        with open(os.path.join(d, "nginx.pid")) as f:
            os.kill(int(f.read()), signal.SIGQUIT)
        status = proc.wait(timeout=60)
        return (len(bodies), status)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
        shutil.rmtree(d, ignore_errors=True)


def nginx(requests=200):
    """nginx with pre-forked workers: the same pages, the same exit."""
    native = nginx_once(False, requests)
    got = nginx_once(True, requests)
    if got != native:
        return "nginx: traced %r, native %r" % (got, native)
    return None


# Processes, messages, an ETS table, binaries, garbage collection: the
# printed sums must not depend on scheduling.
BEAM_EVAL = """
Self = self(),
Pids = [spawn(fun() -> L = lists:seq(1, 200 + I rem 50),
                        B = binary:copy(<<I:32>>, 64),
                        Self ! {self(), lists:sum(L) + byte_size(B)} end)
        || I <- lists:seq(1, 2000)],
Sum = lists:sum([receive {P, S} -> S end || P <- Pids]),
T = ets:new(t, [set]),
[ets:insert(T, {K, integer_to_list(K)}) || K <- lists:seq(1, 20000)],
Size = ets:info(T, size),
ets:delete(T),
erlang:garbage_collect(),
io:format("beam ok ~p ~p~n", [Sum, Size]),
halt(0).
"""


def beam_once(under):
    argv = [shutil.which("erl"), "-noshell", "-eval", BEAM_EVAL]
    return run(traced(argv) if under else argv, timeout=180)


def beam():
    """beam.smp (21 threads): the same output and status."""
    native = beam_once(False)
    got = beam_once(True)
    if native[0] != 0:
        return "beam: native run failed with status %d" % native[0]
    if got != native:
        return "beam: traced %r, native %r" % (got, native)
    return None
