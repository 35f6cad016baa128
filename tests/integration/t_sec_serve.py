"""Attacks on root's `leakscope serve` by another local user,
leakscope-attacker (made here when missing; root is needed), each timed
(docs/SECURITY.md, "The CLI, the runtime dir and the server"):

- 130 idle connections of the attacker's must not stop root's requests;
- three processes of the attacker's whose agents trickle their replies
  (a byte a second) must not make root's process list take their timeouts
  one after another;
- a fake agent that streams junk without end must not fill root's
  snapshot dir;
- many fake agents whose replies each stay under the per-reply cap must
  not together take more of root's server's memory than its budget.
"""
import atexit
import concurrent.futures
import json
import os
import select
import signal
import socket
import shutil
import subprocess
import tempfile
import time
import urllib.request
from harness import check, eq, ok, contains, fail, shorten, Skip, LEAKSCOPE
from harness import kill_group
from t_sec_rundir import user, become, clean_env, ATTACKER


SNAPDIR = tempfile.mkdtemp(prefix="leakscope-sec-snaps-")
atexit.register(shutil.rmtree, SNAPDIR, True)


class Serve:
    def __init__(self, snapdir, *args):
        self.p = subprocess.Popen([LEAKSCOPE, "serve", "--listen", "127.0.0.1:0",
                                   "--snapshot-dir", snapdir] + list(args),
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=clean_env(), start_new_session=True)
        r, _, _ = select.select([self.p.stdout], [], [], 20)
        line = self.p.stdout.readline().decode() if r else ""
        if "serving " not in line:
            self.p.kill()
            fail("serve's URL", "a line", line)
        url = line.split("serving ", 1)[1].strip()
        self.base, _, self.token = url.partition("/#token=")
        try:
            self.port = int(self.base.rsplit(":", 1)[1])
        except ValueError:
            self.p.kill()
            fail("serve's URL", "http://ADDR:PORT/#token=TOKEN", url)

    def get(self, path, method="GET", timeout=60):
        req = urllib.request.Request(self.base + path, method=method, headers={
            "Authorization": "Bearer " + self.token})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                return r.status, r.read()
        except urllib.error.HTTPError as e:
            return e.code, e.read()

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


# An "agent" of the attacker's: the process listens on its own socket in
# its runtime dir (so that it passes the client's checks) and answers
# every request with what the mode says.
FAKE = r"""
import os, socket, sys, time
d = sys.argv[1]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(os.path.join(d, "%d.sock" % os.getpid()))
s.listen(64)
print("ready", flush=True)
while True:
    c, _ = s.accept()
    if os.fork() == 0:
        c.recv(256)
        try:
            if sys.argv[2] == "trickle":
                for _ in range(120):
                    c.send(b"L")
                    time.sleep(1)
            elif sys.argv[2] == "hold":
                # A snapshot whose first record claims 40 MiB: all but
                # its last KiB sent, then 2 s of silence, then the end.
                c.sendall(b"LEAKSCP\0" + (2).to_bytes(4, "little") +
                          bytes(4) + (1).to_bytes(4, "little") +
                          (40 << 20).to_bytes(4, "little"))
                chunk = b"\1" * 65536
                for _ in range((40 << 20) // 65536 - 1):
                    c.sendall(chunk)
                c.sendall(chunk[:-1024])
                time.sleep(2)
            else:
                chunk = b"\0" * 65536
                while True:
                    c.send(chunk)
        except OSError:
            pass
        os._exit(0)
    c.close()
"""


def fake_agents(uid, n, mode):
    """n attacker processes with fake agents in the attacker's default
    runtime dir."""
    rt = "/dev/shm/leakscope-%d" % uid
    if not os.path.isdir(rt):
        subprocess.run(["runuser", "-u", ATTACKER, "--", "mkdir", "-m", "700", rt],
                       check=True)
    procs = []
    for _ in range(n):
        p = subprocess.Popen(["python3", "-c", FAKE, rt, mode],
                             stdout=subprocess.PIPE, env=clean_env(),
                             preexec_fn=become(uid), start_new_session=True)
        ok(select.select([p.stdout], [], [], 20)[0] and
           p.stdout.readline() == b"ready\n", "fake agent started")
        procs.append(p)
    return procs


def end(procs):
    for p in procs:
        kill_group(p)
        try:
            os.unlink("/dev/shm/leakscope-%d/%d.sock" % (user(ATTACKER), p.pid))
        except OSError:
            pass


@check("serve: 130 idle connections of another user do not stop root's requests")
def t_idle_connections():
    attacker = user(ATTACKER)
    srv = Serve(SNAPDIR)
    holder = subprocess.Popen(["python3", "-c", """
import socket, sys, time
s = [socket.create_connection(("127.0.0.1", int(sys.argv[1]))) for _ in range(130)]
print("held", flush=True)
time.sleep(30)
""", str(srv.port)], stdout=subprocess.PIPE, preexec_fn=become(attacker),
        start_new_session=True)
    try:
        ok(select.select([holder.stdout], [], [], 20)[0] and
           holder.stdout.readline() == b"held\n", "the attacker holds 130")
        time.sleep(0.5)
        t0 = time.monotonic()
        status, body = srv.get("/api/v1/version", timeout=25)
        took = time.monotonic() - t0
    finally:
        os.killpg(holder.pid, signal.SIGKILL)
        holder.wait()
        srv.stop()
    eq(status, 200, "root's request answered: " + shorten(body, 200))
    ok(took < 3, "within 3 s (took %.1f s)" % took)


@check("serve: three agents of another user that trickle their replies cost root's process list one timeout, not three")
def t_slow_agents():
    attacker = user(ATTACKER)
    procs = fake_agents(attacker, 3, "trickle")
    srv = Serve(SNAPDIR,
                "--agent-timeout", "1")
    try:
        t0 = time.monotonic()
        status, body = srv.get("/api/v1/processes", timeout=60)
        took = time.monotonic() - t0
    finally:
        srv.stop()
        end(procs)
    eq(status, 200, "the list: " + shorten(body, 200))
    doc = json.loads(body)
    bad = sorted(u["pid"] for u in doc["unreachable"])
    eq([p.pid for p in procs if p.pid in bad], [p.pid for p in procs],
       "the three are listed as unreachable")
    ok(took < 3, "the list took %.1f s (1 s timeout, 4 s for a whole reply; "
       "one after another: 12 s)" % took)


@check("serve: a fake agent streaming without end: the snapshot POST stops at 256 MiB and leaves nothing in the snapshot dir")
def t_snapshot_stream():
    attacker = user(ATTACKER)
    snapdir = SNAPDIR
    procs = fake_agents(attacker, 1, "stream")
    srv = Serve(snapdir)
    try:
        t0 = time.monotonic()
        status, body = srv.get("/api/v1/processes/%d/snapshot" % procs[0].pid,
                               method="POST", timeout=120)
        took = time.monotonic() - t0
        left = os.listdir(snapdir)
    finally:
        srv.stop()
        end(procs)
    eq(status, 502, "the POST's status: " + shorten(body, 200))
    contains(body.decode(), "larger than the 256 MiB", "its reason")
    eq(left, [], "nothing left in the snapshot dir")
    ok(took < 60, "it took %.1f s" % took)


# Run inside a network namespace of its own (unshare -n): its lo also
# holds 10.200.0.1, an address that is not a loopback address, reachable
# from inside the namespace only.
NETNS_SCRIPT = r"""
import json, re, subprocess, sys, time, urllib.error, urllib.request
ls, snaps = sys.argv[1], sys.argv[2]
for cmd in (["ip", "link", "set", "lo", "up"],
            ["ip", "addr", "add", "10.200.0.1/32", "dev", "lo"]):
    if subprocess.run(cmd, stderr=subprocess.PIPE).returncode:
        print(json.dumps({"skip": " ".join(cmd) + " failed"}))
        sys.exit(0)
out = {}
r = subprocess.run([ls, "serve", "--listen", "10.200.0.1:0", "--snapshot-dir", snaps],
                   stderr=subprocess.PIPE, timeout=20)
out["refused"] = [r.returncode, r.stderr.decode()]
p = subprocess.Popen([ls, "serve", "--listen", "10.200.0.1:0", "--allow-remote",
                      "--snapshot-dir", snaps], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
try:
    line = p.stdout.readline().decode()
    out["banner"] = line
    m = re.search(r"http://10\.200\.0\.1:(\d+)/#token=([0-9a-f]+)", line)
    if m:
        url = "http://10.200.0.1:%s/api/v1/version" % m.group(1)
        def get(headers):
            try:
                with urllib.request.urlopen(urllib.request.Request(url, headers=headers),
                                            timeout=10) as resp:
                    return resp.status
            except urllib.error.HTTPError as e:
                return e.code
        out["no_token"] = get({})
        out["token"] = get({"Authorization": "Bearer " + m.group(2)})
finally:
    p.terminate()
    out["status"] = p.wait(timeout=10)
print(json.dumps(out))
"""


@check("serve --allow-remote: a non-loopback address (in a network namespace of "
       "the test's) is refused without it (125, one line), served with it, token required")
def t_allow_remote():
    if os.geteuid() != 0:
        raise Skip("a network namespace needs root")
    unshare = shutil.which("unshare")
    if not unshare or not shutil.which("ip"):
        raise Skip("unshare or ip is missing (util-linux, iproute2)")
    import sys
    r = subprocess.run([unshare, "-n", sys.executable, "-c", NETNS_SCRIPT, LEAKSCOPE,
                        SNAPDIR], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                       timeout=60)
    if r.returncode != 0:
        raise Skip("unshare -n failed: " + r.stderr.decode()[-300:])
    res = json.loads(r.stdout.decode().strip().splitlines()[-1])
    if "skip" in res:
        raise Skip(res["skip"])
    eq(res["refused"][0], 125, "status without --allow-remote")
    eq(res["refused"][1].count("\n"), 1, "one line: " + res["refused"][1])
    contains(res["refused"][1], "'10.200.0.1:0' is not a loopback address", "the reason")
    contains(res["banner"], "leakscope: serving http://10.200.0.1:", "served with --allow-remote")
    eq((res.get("no_token"), res.get("token")), (401, 200),
       "a request without the token, then with it")
    eq(res["status"], 0, "serve's status on SIGTERM")


def vm(pid, field):
    """VmRSS, VmHWM ... of pid in KiB."""
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    fail("/proc/%d/status" % pid, field, "missing")


@check("serve: 8 fake agents each sending a 40 MiB reply (under the 256 MiB cap) at once: the server's memory stays within --memory-budget 64 plus 24 MiB, the requests past it get 503 with one line, it keeps answering and gets the budget back")
def t_memory_budget():
    attacker = user(ATTACKER)
    procs = fake_agents(attacker, 8, "hold")
    srv = Serve(SNAPDIR, "--memory-budget", "64", "--agent-timeout", "10")
    try:
        eq(srv.get("/api/v1/version", timeout=20)[0], 200, "the server")
        rss0 = vm(srv.p.pid, "VmRSS")
        with concurrent.futures.ThreadPoolExecutor(8) as ex:
            got = list(ex.map(lambda p: srv.get(
                "/api/v1/processes/%d/report" % p.pid, timeout=60), procs))
        peak = vm(srv.p.pid, "VmHWM")
        t0 = time.monotonic()
        after = srv.get("/api/v1/version", timeout=20)
        took = time.monotonic() - t0
        again = srv.get("/api/v1/processes/%d/report" % procs[0].pid,
                        timeout=60)
    finally:
        srv.stop()
        end(procs)
    statuses = sorted(st for st, _ in got)
    refused = [b.decode() for st, b in got if st == 503]
    ok(refused and statuses.count(503) < 8,
       "some requests refused with 503, not all: %s" % statuses)
    ok(all(st in (502, 503) for st in statuses),
       "the others read their reply to its cut end (502): %s" % statuses)
    for body in refused:
        contains(body, "memory budget (64 MiB)", "the 503's reason")
        eq(json.loads(body)["error"].count("\n"), 0, "one line")
    grew = (peak - rss0) / 1024
    ok(grew < 64 + 24, "the server's peak RSS grew by %.0f MiB over %.0f MiB "
       "(8 replies of 40 MiB: 320 MiB without a budget)" % (grew, rss0 / 1024))
    eq(after[0], 200, "the server answers afterwards")
    ok(took < 3, "at once (%.2f s)" % took)
    eq(again[0], 502, "the budget was given back: the next request reads "
       "the whole reply again to its cut end: " + shorten(again[1], 200))
