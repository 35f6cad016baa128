"""Fleet: `leakscope serve --metrics` scraped by a real Prometheus, the
shipped alert rules evaluated by it and delivered to a real Alertmanager,
the heap profiles pushed to a local Pyroscope/Parca stand-in decoded with
go tool pprof, and the deploy files checked by their own tools.

Ground truth: tests/workloads/fleetload.c leaks 4096 bytes every 50 ms
(81920 B/s, on an absolute clock) at site_fleet_leak beside a 32 x 4096
byte cache at site_fleet_cache that stays flat; SIGUSR1 freezes both and
the workload prints how many blocks it leaked.  Everything listens on
127.0.0.1 only.  Served as root, the exporter sees every traced process on
the machine, so every check selects its workload's pid.
"""
import atexit
import base64
import collections
import ctypes
import gzip
import http.client as httpclient
import http.server
import json
import os
import re
import select
import shutil
import signal
import socket
import subprocess
import tempfile
import threading
import time
import urllib.parse
import urllib.request

from harness import kill_group, wait_socket
from harness import (check, once, workload, eq, ok, ge, fail, run_process,
                     agent_env, need, need_user_reaches, free_port,
                     wait_environ, listening_process, at_file_end,
                     marker_line, cli, cli_json, ptrace_allowed,
                     shorten, LEAKSCOPE, BUILD, ROOT, Failure, Skip)
from gopprof import pprof_top

AGENT = os.path.join(BUILD, "libleakscope.so")
RUNTIME = tempfile.mkdtemp(prefix="leakscope-fleet-")
TMP = tempfile.mkdtemp(prefix="leakscope-fleet-tmp-")
os.chmod(RUNTIME, 0o700)
BLOCK, SLOTS = 4096, 32
LEAK_RATE = BLOCK * 20          # bytes per second
CACHE = BLOCK * SLOTS
PERIOD_MS = 250                 # the agents' growth sampling period here
RULES = os.path.join(ROOT, "deploy", "prometheus", "leakscope.rules.yml")
AM_CONFIG = os.path.join(ROOT, "deploy", "prometheus", "alertmanager.yml")
_STARTED = []


def _cleanup():
    for p in _STARTED:
        if p.poll() is None:
            kill_group(p)
    shutil.rmtree(RUNTIME, ignore_errors=True)
    shutil.rmtree(TMP, ignore_errors=True)


atexit.register(_cleanup)
at_file_end(_cleanup)   # Prometheus scrapes every second: not past this file


def _die_with_parent():
    """In the child: SIGKILL when the test dies, even by a signal that
    skips atexit (run-tests' timeout): a server left behind would go on
    asking every agent on the machine."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(1, signal.SIGKILL)       # PR_SET_PDEATHSIG


def spawn(argv, env=None, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
          preexec_fn=None):
    """Unbuffered pipes: a line read leaves the next one to select()."""
    def pre():
        if preexec_fn:      # first: a change of user clears the setting
            preexec_fn()
        _die_with_parent()
    p = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL,
                         stdout=stdout, stderr=stderr, bufsize=0,
                         start_new_session=True, preexec_fn=pre)
    _STARTED.append(p)
    return p


def stop(p):
    if p.poll() is None:
        p.send_signal(signal.SIGTERM)
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
            raise Failure("%d did not stop on SIGTERM" % p.pid)


# ----------------------------------------------------------- processes

class Fleetload:
    """fleetload.c under the agent."""

    def __init__(self, seconds=90):
        e = agent_env(RUNTIME, {"LD_PRELOAD": AGENT,
                                "LEAKSCOPE_PERIOD_MS": str(PERIOD_MS)})
        self.p = spawn([workload("fleetload"), str(seconds)], env=e,
                       stdout=subprocess.PIPE)
        self.pid = self.p.pid
        self.started = time.monotonic()
        if not wait_socket(RUNTIME, self.pid, 5):
            raise Failure("the agent in pid %d never opened its socket in "
                          "%s" % (self.pid, RUNTIME))

    def freeze(self):
        """Stop the leak and the cache; the blocks leaked."""
        self.p.send_signal(signal.SIGUSR1)
        r, _, _ = select.select([self.p.stdout], [], [], 10)
        line = self.p.stdout.readline().decode() if r else ""
        m = re.fullmatch(r"leaked (\d+)\n", line)
        if not m:
            raise Failure("fleetload said %r after SIGUSR1" % line)
        return int(m.group(1))


class Serve:
    """`leakscope serve --no-web` with args; the URL of its metrics."""

    def __init__(self, args, extra_env=None):
        e = agent_env(RUNTIME, extra_env)
        self.p = spawn([LEAKSCOPE, "serve", "--no-web"] + list(args), env=e,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.url = None
        want = 1 if "--metrics" in args else 0
        want += 1 if any(a.startswith("--push-p") for a in args) else 0
        for _ in range(want):
            r, _, _ = select.select([self.p.stdout], [], [], 20)
            line = self.p.stdout.readline().decode() if r else ""
            if line.startswith("leakscope: metrics at "):
                self.url = line.split(" at ", 1)[1].strip()
            elif not line.startswith("leakscope: pushing "):
                self.p.kill()
                raise Failure("serve printed %r, stderr %s" % (
                    line, shorten(self.p.stderr.read(4096))))

    def stop(self):
        stop(self.p)
        return self.p.returncode


def get(url, headers=None, method="GET"):
    """(status, headers, body).  As Prometheus does, says how long it
    waits (4 s): as root the exporter asks every agent on the machine, and
    waits at most half that for another user's stuck one."""
    u = urllib.parse.urlsplit(url)
    conn = httpclient.HTTPConnection(u.hostname, u.port, timeout=30)
    h = {"X-Prometheus-Scrape-Timeout-Seconds": "4"}
    h.update(headers or {})
    conn.request(method, u.path, headers=h)
    r = conn.getresponse()
    body = r.read()
    conn.close()
    return r.status, dict(r.getheaders()), body


SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def samples(text, pid=None):
    """[(name, {labels}, value)] of the exposition, only pid's if given."""
    out = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        m = SAMPLE.match(line)
        if not m:
            fail("an exposition line", "NAME{LABELS} VALUE", line)
        labels = dict(LABEL.findall(m.group(2) or ""))
        if pid is None or labels.get("pid") == str(pid):
            out.append((m.group(1), labels, float(m.group(3))))
    return out


def one(found, what):
    if len(found) != 1:
        fail(what, "one sample", found)
    return found[0]


def site_value(smp, name, function):
    return one([v for n, l, v in smp if n == name and
                l.get("function") == function], "%s of %s" % (name, function))


# ------------------------------------------------- the exporter alone

@once
def frozen():
    """A server and a fleetload frozen after about 2 s: (srv, wl, blocks,
    text of a scrape)."""
    wl = Fleetload()
    srv = Serve(["--metrics", "127.0.0.1:0"])
    time.sleep(2)
    n = wl.freeze()
    time.sleep(2 * PERIOD_MS / 1000)
    status, _, body = get(srv.url)
    eq(status, 200, "GET /metrics")
    return srv, wl, n, body.decode()


@check("metrics: promtool check metrics accepts the exposition")
def t_promtool_metrics():
    need("promtool")
    _, _, _, text = frozen()
    p = subprocess.run(["promtool", "check", "metrics"], input=text.encode(),
                       stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                       timeout=60)
    eq((p.returncode, p.stdout.decode()), (0, ""), "promtool's verdict")


@check("metrics: site live bytes, function and file:line of the leak and the cache")
def t_metrics_sites():
    _, wl, n, text = frozen()
    smp = samples(text, wl.pid)
    ge(n, 20, "blocks leaked in 2 s")
    eq(site_value(smp, "leakscope_site_live_bytes", "site_fleet_leak"),
       n * BLOCK, "the leak's live bytes")
    eq(site_value(smp, "leakscope_site_live_blocks", "site_fleet_leak"), n,
       "the leak's live blocks")
    eq(site_value(smp, "leakscope_site_live_bytes", "site_fleet_cache"),
       CACHE, "the cache's live bytes")
    for fn, marker in (("site_fleet_leak", "site_fleet_leak"),
                       ("site_fleet_cache", "site_fleet_cache")):
        labels = one([l for n_, l, v in smp if n_ == "leakscope_site_live_bytes"
                      and l["function"] == fn], fn)
        eq(labels["location"], "fleetload.c:%d" % marker_line("fleetload.c",
                                                               marker),
           "location of " + fn)
        eq(labels["command"], "fleetload", "command label")
        ok(re.fullmatch(r"[0-9a-f]{16}", labels["site"]), "site id",
           labels["site"])


@check("metrics: process totals equal `leakscope report --format json`'s")
def t_metrics_totals():
    _, wl, n, text = frozen()
    rep = cli_json(["report", "--format", "json", wl.pid],
                   env=agent_env(RUNTIME))
    smp = samples(text, wl.pid)
    t = rep["totals"]
    for name, key in (("leakscope_process_live_bytes", "live_bytes"),
                      ("leakscope_process_live_blocks", "live_blocks"),
                      ("leakscope_process_allocated_bytes_total", "allocated_bytes"),
                      ("leakscope_process_allocated_blocks_total", "allocated_blocks"),
                      ("leakscope_process_peak_live_bytes", "peak_live_bytes"),
                      ("leakscope_process_dropped_events_total", "dropped")):
        eq(one([v for n_, l, v in smp if n_ == name], name), t[key], name)
    eq(t["live_bytes"], n * BLOCK + CACHE, "the report's live bytes: the "
       "workload's two sites and nothing else")
    ge(one([v for n_, l, v in smp if n_ == "leakscope_agent_resident_bytes"],
           "agent resident"), 4096, "the agent's resident bytes")


@check("metrics: OpenMetrics when asked (Accept), counters as _total, # EOF")
def t_openmetrics():
    srv, wl, n, _ = frozen()
    status, hdr, body = get(srv.url, {"Accept": "application/openmetrics-text;"
                                      "version=1.0.0,text/plain;q=0.5"})
    eq(status, 200, "status")
    eq(hdr.get("Content-Type"), "application/openmetrics-text; "
       "version=1.0.0; charset=utf-8", "Content-Type")
    text = body.decode()
    ok(text.endswith("# EOF\n"), "ends with # EOF", text[-80:])
    ok("# TYPE leakscope_process_allocated_bytes counter\n" in text,
       "counter family named without _total")
    smp = samples(text.replace("# EOF\n", ""), wl.pid)
    eq(site_value(smp, "leakscope_site_live_bytes", "site_fleet_leak"),
       n * BLOCK, "the same value in OpenMetrics")
    status, hdr, _ = get(srv.url)
    eq(hdr.get("Content-Type"), "text/plain; version=0.0.4; charset=utf-8",
       "Content-Type without Accept")


@check("metrics: only GET/HEAD /metrics: 405, 404; no token needed")
def t_metrics_http():
    srv, _, _, _ = frozen()
    eq(get(srv.url, method="POST")[0], 405, "POST /metrics")
    eq(get(srv.url.replace("/metrics", "/api/v1/processes"))[0], 404,
       "the web API is not on this listener")
    status, _, body = get(srv.url, method="HEAD")
    eq((status, body), (200, b""), "HEAD /metrics")


# fleetsites' 50 sites, site_sK holding K + 1 blocks of 1000 bytes.
FLEETSITES_BYTES = 1000 * sum(k + 1 for k in range(50))


@check("metrics: --metrics-sites bounds the sites: 20 of fleetsites' 50, the largest; the count of all in leakscope_process_sites")
def t_metrics_cardinality():
    e = agent_env(RUNTIME, {"LD_PRELOAD": AGENT})
    p = spawn([workload("fleetsites"), "30"], env=e)
    wait_socket(RUNTIME, p.pid, 5)
    srv = Serve(["--metrics", "127.0.0.1:0", "--metrics-sites", "20"])
    try:
        # Scrape until main's 50 calls are done (all 50 sites counted, all
        # their 1275 blocks live) and the agent has sampled since, so that
        # every exported site has its growth rate (a site gets one from
        # its first history sample on).  Neither waits on the bound.
        deadline = time.monotonic() + 15
        while True:
            smp = samples(get(srv.url)[2].decode(), p.pid)
            sites = [v for n, l, v in smp if n == "leakscope_process_sites"]
            live = [v for n, l, v in smp
                    if n == "leakscope_process_live_bytes"]
            count = collections.Counter(n for n, l, v in smp if "site" in l)
            if (sites == [50] and live and live[0] >= FLEETSITES_BYTES and
                    count["leakscope_site_growth_bytes_per_second"] ==
                    count["leakscope_site_live_bytes"] or
                    time.monotonic() > deadline):
                break
            time.sleep(0.1)
    finally:
        srv.stop()
        p.kill()
        p.wait()
    got = sorted((l["function"], v) for n, l, v in smp
                 if n == "leakscope_site_live_bytes")
    eq(got, sorted(("site_s%02d" % k, 1000.0 * (k + 1))
                   for k in range(30, 50)), "the 20 largest sites, exact")
    eq(one([v for n, l, v in smp if n == "leakscope_process_sites"],
           "sites"), 50, "leakscope_process_sites counts all 50")
    per_site = {n for n, l, v in smp if "site" in l}
    eq(sum(1 for n, l, v in smp if "site" in l), 20 * len(per_site),
       "every site family has 20 series")


@check("metrics: a stuck agent costs a scrape half of Prometheus's timeout, then is skipped; the others are exported")
def t_metrics_stuck():
    _, wl, n, _ = frozen()
    # The target itself listens (the client checks its peer is the
    # target); the test holds the socket and never accepts: connections
    # wait in the backlog, unanswered.
    sleeper, stuck, path = listening_process(RUNTIME, agent_env(RUNTIME))
    wait_environ(sleeper.pid, "LEAKSCOPE_RUNTIME_DIR")
    srv = Serve(["--metrics", "127.0.0.1:0", "--agent-timeout", "20"])
    try:
        times = []
        for _ in range(2):
            t0 = time.monotonic()
            status, _, body = get(srv.url, {
                "X-Prometheus-Scrape-Timeout-Seconds": "4"})
            times.append(time.monotonic() - t0)
            eq(status, 200, "status")
            text = body.decode()
            ok(re.search(r"^leakscope_exporter_unreachable_processes [1-9]",
                         text, re.M), "the stuck agent counted unreachable")
            ok('leakscope_process_live_bytes{pid="%d"' % wl.pid in text,
               "the frozen workload exported beside it")
            ok('pid="%d"' % sleeper.pid not in text, "nothing of the stuck one")
        ok(1.9 < times[0] < 4, "the first scrape waited for the stuck "
           "agent until half of Prometheus's 4 s, answered in %.2f s"
           % times[0])
        ok(times[1] < 1.9, "the next skipped it: %.2f s" % times[1])
    finally:
        srv.stop()
        stuck.close()
        if os.path.exists(path):
            os.unlink(path)
        sleeper.kill()
        sleeper.wait()


def control_thread(pid):
    """The tid of the agent's control thread in pid (named "leakscope")."""
    for tid in os.listdir("/proc/%d/task" % pid):
        with open("/proc/%d/task/%s/comm" % (pid, tid)) as f:
            if f.read().strip() == "leakscope":
                return int(tid)
    raise Failure("no thread named leakscope in pid %d" % pid)


def ptrace(req, tid):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p,
                            ctypes.c_void_p]
    libc.ptrace.restype = ctypes.c_long
    if libc.ptrace(req, tid, None, None) < 0:
        raise Failure("ptrace %#x of %d: %s" % (req, tid,
                                                 os.strerror(ctypes.get_errno())))


PTRACE_DETACH, PTRACE_SEIZE, PTRACE_INTERRUPT = 17, 0x4206, 0x4207


@check("metrics: an agent that answers after the scrape gave up on it is asked again at the next scrape, not skipped for 30 s")
def t_metrics_late():
    ptrace_allowed()
    wl = Fleetload()
    srv = Serve(["--metrics", "127.0.0.1:0", "--agent-timeout", "20"])
    mark = 'leakscope_process_live_bytes{pid="%d"' % wl.pid
    wait4 = {"X-Prometheus-Scrape-Timeout-Seconds": "4"}

    def exported(within, what):
        deadline = time.monotonic() + within
        while mark not in get(srv.url, wait4)[2].decode():
            ok(time.monotonic() < deadline, what)
            time.sleep(0.2)

    try:
        exported(20, "the workload exported before its agent is held")
        # Its control thread held (ptrace) over a scrape: the scrape
        # waits half of its 4 s and gives up on it; released, the agent
        # answers that fetch, and the next scrapes ask it again.
        tid = control_thread(wl.pid)
        ptrace(PTRACE_SEIZE, tid)
        try:
            ptrace(PTRACE_INTERRUPT, tid)
            os.waitpid(tid, 0x40000000)     # __WALL: stopped
            t0 = time.monotonic()
            status, _, body = get(srv.url, wait4)
            took = time.monotonic() - t0
        finally:
            ptrace(PTRACE_DETACH, tid)
        eq(status, 200, "the scrape while the agent was held")
        ok(mark not in body.decode() and took >= 1.9, "the held agent "
           "waited for until half of the 4 s and left out (%.2f s)" % took)
        t0 = time.monotonic()
        exported(10, "exported again within 10 s of its late answer")
        print("# exported again %.1f s after the scrape that gave up"
              % (time.monotonic() - t0))
    finally:
        srv.stop()
        wl.p.kill()
        wl.p.wait()


@check("serve: bad fleet options exit 125 (or 1) with one line")
def t_fleet_errors():
    port = free_port()
    busy = Serve(["--metrics", "127.0.0.1:%d" % port])
    cred = os.path.join(TMP, "cred-open")
    with open(cred, "w") as f:
        f.write("user:pw\n")
    os.chmod(cred, 0o644)
    e = agent_env(RUNTIME)
    cases = [
        (["--metrics", "10.1.2.3:9464"], 125, "not a loopback address"),
        (["--metrics", "localhost"], 125, "invalid listen address"),
        (["--no-web"], 125, "--no-web leaves nothing"),
        (["--metrics-sites", "5"], 125, "--metrics-sites needs --metrics"),
        (["--metrics", "127.0.0.1:0", "--metrics-sites", "0"], 125, "1 to 1000"),
        (["--push-pyroscope", "https://127.0.0.1:4040"], 125, "only http://"),
        (["--push-parca", "http://user@127.0.0.1:7070"], 125, "invalid URL"),
        (["--push-pyroscope", "http://127.0.0.1:4040", "--push-credentials",
          cred], 125, "only its owner may read"),
        (["--push-interval", "5"], 125, "need --push-pyroscope or --push-parca"),
        (["--push-pyroscope", "http://127.0.0.1:4040", "--push-queue", "0"],
         125, "1 to 10000"),
        (["--metrics", "127.0.0.1:%d" % port], 1, "cannot listen"),
    ]
    try:
        for args, status, words in cases:
            r = run_process([LEAKSCOPE, "serve", "--no-web"] + args, env=e,
                            timeout=20)
            err = r.stderr.decode()
            eq(r.returncode, status, "serve %s: status" % " ".join(args))
            ok(words in err and err.count("\n") <= 2 and
               err.startswith("leakscope: "), "serve %s: one line saying %r"
               % (" ".join(args), words), err)
    finally:
        eq(busy.stop(), 0, "serve exits 0 on SIGTERM")


# ------------------------------------------------ Prometheus, Alertmanager

def test_rules(scale_to):
    """The shipped rules with every window and `for:` scaled down:
    [15m] -> [10s], [5m] -> [5s], for: 30m/10m -> scale_to."""
    text = open(RULES).read()
    text = text.replace("[15m]", "[10s]").replace("[5m]", "[5s]")
    text = re.sub(r"for: \d+m", "for: " + scale_to, text)
    path = os.path.join(TMP, "rules.yml")
    with open(path, "w") as f:
        f.write(text)
    return path


def wait_http(url, timeout=30):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            pass
        time.sleep(0.1)
    raise Failure("%s never answered" % url)


def prom_query(base, q):
    url = base + "/api/v1/query?" + urllib.parse.urlencode({"query": q})
    with urllib.request.urlopen(url, timeout=10) as r:
        doc = json.load(r)
    if doc.get("status") != "success":
        fail("query %s" % q, "success", doc)
    return doc["data"]["result"]


def am_alerts(base):
    with urllib.request.urlopen(base + "/api/v2/alerts", timeout=10) as r:
        return json.load(r)


@once
def engines():
    """fleetload, the exporter, Alertmanager and Prometheus (scrape and
    rule evaluation every 1 s), started in that order."""
    need("prometheus")
    need("prometheus-alertmanager")
    wl = Fleetload()
    srv = Serve(["--metrics", "127.0.0.1:0"])
    d = tempfile.mkdtemp(prefix="engines-", dir=TMP)
    am_port, prom_port = free_port(), free_port()
    am_cfg = os.path.join(d, "am.yml")
    with open(am_cfg, "w") as f:
        f.write("route:\n  receiver: none\n  group_wait: 1s\n"
                "  group_interval: 1s\nreceivers:\n  - name: none\n")
    am = spawn(["prometheus-alertmanager", "--config.file=" + am_cfg,
                "--storage.path=" + os.path.join(d, "am"),
                "--web.listen-address=127.0.0.1:%d" % am_port,
                "--cluster.listen-address="])
    prom_cfg = os.path.join(d, "prom.yml")
    target = urllib.parse.urlsplit(srv.url).netloc
    with open(prom_cfg, "w") as f:
        f.write("global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\n"
                "rule_files:\n  - %s\n"
                "alerting:\n  alertmanagers:\n    - static_configs:\n"
                "        - targets: ['127.0.0.1:%d']\n"
                "scrape_configs:\n  - job_name: leakscope\n"
                "    static_configs:\n      - targets: ['%s']\n"
                % (test_rules("3s"), am_port, target))
    prom = spawn(["prometheus", "--config.file=" + prom_cfg,
                  "--storage.tsdb.path=" + os.path.join(d, "prom"),
                  "--web.listen-address=127.0.0.1:%d" % prom_port])
    am_base = "http://127.0.0.1:%d" % am_port
    prom_base = "http://127.0.0.1:%d" % prom_port
    wait_http(am_base + "/-/ready")
    wait_http(prom_base + "/-/ready")
    return wl, srv, prom_base, am_base


# The alerts as Alertmanager first showed them, by (alertname, function):
# a later query may find one resolved already (a scrape that skipped a
# slow agent leaves a gap in its series).
FIRED = {}


@once
def leak_alert():
    """Wait for the leak's alert in Alertmanager, watching that the cache
    never fires: (seconds from the workload's start, alerts seen)."""
    wl, srv, prom, am = engines()
    deadline = time.monotonic() + 40
    seen = {}
    while time.monotonic() < deadline:
        for a in am_alerts(am):
            l = a["labels"]
            if l.get("pid") == str(wl.pid):
                seen.setdefault((l["alertname"], l.get("function", "")),
                                time.monotonic() - wl.started)
                FIRED.setdefault((l["alertname"], l.get("function", "")), a)
        for r in prom_query(prom, 'ALERTS{pid="%d"}' % wl.pid):
            l = r["metric"]
            seen.setdefault(("ALERTS:" + l["alertname"] + ":" +
                             l["alertstate"], l.get("function", "")),
                            time.monotonic() - wl.started)
        if ("LeakscopeSiteLeaking", "site_fleet_leak") in seen and \
           ("LeakscopeProcessLeaking", "") in seen:
            return seen
        time.sleep(0.5)
    return seen


@check("prometheus: the scraped series are there with the workload's labels")
def t_prom_series():
    wl, srv, prom, am = engines()
    leak_alert()
    # The series as last scraped in the last minute: an instant query
    # finds none while the exporter skips an agent that answered one
    # scrape too late (docs/FLEET.md, "Slow agents").
    res = prom_query(prom, 'last_over_time(leakscope_site_live_bytes{pid="%d"}'
                     '[1m])' % wl.pid)
    fns = sorted(r["metric"]["function"] for r in res)
    eq(fns, ["site_fleet_cache", "site_fleet_leak"], "sites in Prometheus")
    cache = [r for r in res if r["metric"]["function"] == "site_fleet_cache"]
    eq(float(cache[0]["value"][1]), CACHE, "the cache's bytes in Prometheus")
    eq(cache[0]["metric"]["location"], "fleetload.c:%d" % marker_line(
        "fleetload.c", "site_fleet_cache"), "the cache's location label")
    res = prom_query(prom, 'up{job="leakscope"}')
    eq([r["value"][1] for r in res], ["1"], "the scrape target is up")


@check("prometheus: the leak's growth rate within 5% of 81920 B/s (deriv and the exported rate)")
def t_prom_rate():
    wl, srv, prom, am = engines()
    leak_alert()
    # a window of steady scrapes: the first ones may queue behind a slow
    # one (cold symbolizer caches; as root, another user's stuck agent
    # waited for), which skews their timestamps
    time.sleep(max(0, wl.started + 19 - time.monotonic()))
    for q in ('deriv(leakscope_site_live_bytes{pid="%d",function="site_fleet_leak"}[8s])',
              'leakscope_site_growth_bytes_per_second{pid="%d",function="site_fleet_leak"}',
              'leakscope:site_live_bytes:deriv15m{pid="%d",function="site_fleet_leak"}'):
        res = prom_query(prom, q % wl.pid)
        eq(len(res), 1, "series of " + q)
        rate = float(res[0]["value"][1])
        ok(abs(rate - LEAK_RATE) <= 0.05 * LEAK_RATE, "%s = %.0f, within 5%% "
           "of %d" % (q % wl.pid, rate, LEAK_RATE))
    res = prom_query(prom, 'deriv(leakscope_site_live_bytes{pid="%d",'
                     'function="site_fleet_cache"}[10s])' % wl.pid)
    eq(float(res[0]["value"][1]), 0.0, "the cache does not grow")


@check("alertmanager: the leak alert fires within the rule's window; the cache never")
def t_am_alert():
    wl, srv, prom, am = engines()
    seen = leak_alert()
    t = seen.get(("LeakscopeSiteLeaking", "site_fleet_leak"))
    ok(t is not None, "LeakscopeSiteLeaking for site_fleet_leak reached "
       "Alertmanager", repr(seen))
    # window 10 s + for 3 s, plus the agent's 5 samples for a trend, a
    # scrape, an evaluation and Alertmanager's group_wait
    ok(t <= 10 + 3 + 8, "fired %.1f s after the workload started "
       "(at most 21 s)" % t)
    print("# LeakscopeSiteLeaking in Alertmanager %.1f s after the start" % t)
    ok(("LeakscopeProcessLeaking", "") in seen,
       "LeakscopeProcessLeaking reached Alertmanager", repr(seen))
    ok(not [k for k in seen if k[1] == "site_fleet_cache"],
       "nothing about the cache, pending or firing", repr(seen))
    # the alert carries what the annotations promise
    a = FIRED[("LeakscopeSiteLeaking", "site_fleet_leak")]
    ok("site_fleet_leak" in a["annotations"]["summary"] and
       "fleetload.c:" in a["annotations"]["summary"],
       "summary names the function and location", a["annotations"])


@check("prometheus: once the workload freezes, its stored values are exact (leak N x 4096, cache, process total)")
def t_prom_exact():
    wl, srv, prom, am = engines()
    leak_alert()
    n = wl.freeze()
    want = {'leakscope_site_live_bytes{pid="%d",function="site_fleet_leak"}':
            n * BLOCK,
            'leakscope_site_live_blocks{pid="%d",function="site_fleet_leak"}': n,
            'leakscope_site_live_bytes{pid="%d",function="site_fleet_cache"}':
            CACHE,
            'leakscope_process_live_bytes{pid="%d"}': n * BLOCK + CACHE}
    # Until a scrape after the last allocation is stored (a scrape every
    # second; a loaded machine may delay or skip some).
    deadline = time.monotonic() + 60
    while True:
        got = {q: [float(r["value"][1]) for r in prom_query(prom, q % wl.pid)]
               for q in want}
        if all(got[q] == [float(v)] for q, v in want.items()) or \
           time.monotonic() > deadline:
            break
        time.sleep(0.2)
    for q, v in want.items():
        eq(got[q], [float(v)], q % wl.pid)


@check("rules: promtool check rules, promtool test rules at the shipped durations, amtool check-config")
def t_rules_static():
    need("promtool")
    need("amtool")
    r = run_process(["promtool", "check", "rules", RULES])
    eq(r.returncode, 0, "promtool check rules: " + shorten(r.stdout + r.stderr))
    r = run_process(["amtool", "check-config", AM_CONFIG])
    eq(r.returncode, 0, "amtool check-config: " + shorten(r.stdout + r.stderr))
    # an hour of synthetic series at 1 m: a site growing 100 B/s with a
    # linear trend, a flat cache, a process that grows, an agent that
    # drops 1 event/s from minute 20 (empty labels are no labels)
    lab = 'instance="h:9464",pid="7",command="svc",container=""'
    site = lab + ',site="%s",function="%s",location="a.c:%d",kind="heap"'
    leak, cache = site % ("aa", "leak", 1), site % ("bb", "cache", 2)
    test = {
        "rule_files": [RULES],
        "evaluation_interval": "1m",
        "tests": [{
            "interval": "1m",
            "input_series": [
                {"series": "leakscope_site_live_bytes{%s}" % leak,
                 "values": "0+6000x60"},
                {"series": 'leakscope_site_trend{%s,trend="linear"}' % leak,
                 "values": "1x60"},
                {"series": "leakscope_site_live_bytes{%s}" % cache,
                 "values": "500000x60"},
                {"series": 'leakscope_site_trend{%s,trend="saturating"}' % cache,
                 "values": "1x60"},
                {"series": "leakscope_process_live_bytes{%s}" % lab,
                 "values": "500000+6000x60"},
                {"series": "leakscope_process_dropped_events_total{%s}" % lab,
                 "values": "0x20 0+60x40"},
            ],
            "alert_rule_test": [
                {"eval_time": "25m", "alertname": "LeakscopeSiteLeaking",
                 "exp_alerts": []},
                {"eval_time": "25m", "alertname": "LeakscopeProcessLeaking",
                 "exp_alerts": []},
                {"eval_time": "35m", "alertname": "LeakscopeSiteLeaking",
                 "exp_alerts": [{"exp_labels": {
                     "severity": "warning", "instance": "h:9464", "pid": "7",
                     "command": "svc", "site": "aa",
                     "function": "leak", "location": "a.c:1", "kind": "heap"},
                     "exp_annotations": {
                         "summary": "svc (pid 7, h:9464) leaks 100B/s at "
                                    "leak (a.c:1)",
                         "description": "Site aa has grown steadily for 30 "
                                        "minutes. `leakscope report 7` on "
                                        "that machine shows its stack."}}]},
                {"eval_time": "35m", "alertname": "LeakscopeProcessLeaking",
                 "exp_alerts": [{"exp_labels": {
                     "severity": "warning", "instance": "h:9464", "pid": "7",
                     "command": "svc"},
                     "exp_annotations": {
                         "summary": "svc (pid 7, h:9464) grows 100B/s "
                                    "with leaking sites"}}]},
                {"eval_time": "25m", "alertname": "LeakscopeDroppingEvents",
                 "exp_alerts": []},
                {"eval_time": "40m", "alertname": "LeakscopeDroppingEvents",
                 "exp_alerts": [{"exp_labels": {
                     "severity": "info", "instance": "h:9464", "pid": "7",
                     "command": "svc"},
                     "exp_annotations": {
                         "summary": "the leakscope agent in svc (pid 7, "
                                    "h:9464) drops 1 events/s (out of "
                                    "memory): its figures are low"}}]},
            ],
        }],
    }
    path = os.path.join(TMP, "rules-test.yml")
    with open(path, "w") as f:
        json.dump(test, f)      # JSON is YAML
    r = run_process(["promtool", "test", "rules", path])
    eq(r.returncode, 0, "promtool test rules: " + shorten(r.stdout + r.stderr,
                                                          4000))


# ------------------------------------------------------------ profiles

class Receiver:
    """A stand-in for Pyroscope and Parca on loopback: records every
    request; answers 503 to the first of each path in fail_first."""

    def __init__(self, fail_first=()):
        self.requests = []
        self.fail_first = set(fail_first)
        self.lock = threading.Lock()
        rec = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                n = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(n)
                u = urllib.parse.urlsplit(self.path)
                with rec.lock:
                    fail = u.path in rec.fail_first
                    rec.fail_first.discard(u.path)
                    rec.requests.append({
                        "path": u.path, "query": urllib.parse.parse_qs(u.query),
                        "raw_query": u.query, "headers": dict(self.headers),
                        "body": body, "status": 503 if fail else 200})
                self.send_response(503 if fail else 200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"{}")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        atexit.register(self.server.shutdown)

    def wait(self, pred, timeout=20):
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            with self.lock:
                got = [r for r in self.requests if pred(r)]
            if got:
                return got
            time.sleep(0.1)
        with self.lock:
            seen = [(r["path"], r["raw_query"][:120], r["status"])
                    for r in self.requests]
        raise Failure("no such request came in %ss; seen: %s" % (
            timeout, shorten(repr(seen))))


def host_label():
    return re.sub(r"[^A-Za-z0-9_.-]", "_", socket.gethostname())[:63]


def pyroscope_name(r):
    return r["query"].get("name", [""])[0]


def parca_labels(r):
    doc = json.loads(r["body"])
    return {l["name"]: l["value"]
            for l in doc["series"][0]["labels"]["labels"]}


@once
def pushed():
    """A frozen fleetload, a receiver, and a server pushing every second
    to both (the first Pyroscope request answered 503): (wl, blocks,
    receiver, server, the JSON report)."""
    wl = Fleetload()
    time.sleep(1)
    n = wl.freeze()
    rcv = Receiver(fail_first=["/ingest"])
    base = "http://127.0.0.1:%d" % rcv.port
    srv = Serve(["--metrics", "127.0.0.1:0", "--push-pyroscope", base,
                 "--push-parca", base + "/parca/", "--push-interval", "1",
                 "--push-service", "svc-a"],
                extra_env={"LEAKSCOPE_PUSH_TOKEN": "s3cret"})
    rep = cli_json(["report", "--format", "json", wl.pid],
                   env=agent_env(RUNTIME))
    mine = "pid=%d" % wl.pid
    rcv.wait(lambda r: r["path"] == "/ingest" and r["status"] == 200 and
             mine in pyroscope_name(r))
    rcv.wait(lambda r: r["path"] == "/parca/api/profiles/writeraw" and
             parca_labels(r).get("pid") == str(wl.pid))
    return wl, n, rcv, srv, rep


def per_function(rep, key):
    """{innermost function: sum of key} of a JSON report's sites."""
    out = {}
    for s in rep["sites"]:
        fn = s["frames"][0].get("function") if s["frames"] else None
        out[fn] = out.get(fn, 0) + s[key]
    return out


def expect_profile(body, rep, what):
    """body (a gzipped pprof) gives, per innermost function, the JSON
    report's live bytes and blocks (go tool pprof -top, flat)."""
    ok(body[:2] == b"\x1f\x8b", what + ": a gzip body", body[:8])
    path = os.path.join(TMP, "pushed-%d.pb.gz" % len(os.listdir(TMP)))
    with open(path, "wb") as f:
        f.write(body)
    for index, key in (("inuse_space", "live_bytes"),
                       ("inuse_objects", "live_blocks")):
        got = {fn: flat for fn, (flat, cum) in pprof_top(path, index).items()
               if flat}
        want = {fn: v for fn, v in per_function(rep, key).items() if v}
        eq(got, want, "%s: go tool pprof -top %s, flat per function" % (
            what, index))
    # alloc_* also count the sites whose blocks were all freed (the
    # cache's first fill): their sums are the report's totals
    for index, key in (("alloc_space", "allocated_bytes"),
                       ("alloc_objects", "allocated_blocks")):
        flat = sum(f for f, c in pprof_top(path, index).values())
        eq(flat, rep["totals"][key], "%s: %s summed, the report's "
           "totals.%s" % (what, index, key))


@check("push: Pyroscope's /ingest, field by field; the body decodes to the report's bytes")
def t_push_pyroscope():
    wl, n, rcv, srv, rep = pushed()
    mine = [r for r in rcv.requests if r["path"] == "/ingest" and
            "pid=%d" % wl.pid in pyroscope_name(r)]
    r = [r for r in mine if r["status"] == 200][0]
    eq(pyroscope_name(r), "svc-a{host=%s,pid=%d}" % (host_label(), wl.pid),
       "name: the service and its labels")
    q = r["query"]
    eq(sorted(q), ["format", "from", "name", "spyName", "until"],
       "query parameters")
    eq((q["format"], q["spyName"]), (["pprof"], ["leakscope"]),
       "format and spyName")
    frm, until = int(q["from"][0]), int(q["until"][0])
    ok(0 <= until - frm <= 1 and abs(until - time.time()) < 30,
       "from %d and until %d: the last interval, now" % (frm, until))
    h = r["headers"]
    eq((h.get("Authorization"), h.get("Content-Type"),
        int(h.get("Content-Length"))),
       ("Bearer s3cret", "application/octet-stream", len(r["body"])),
       "Authorization from LEAKSCOPE_PUSH_TOKEN, type, length")
    eq([x["status"] for x in rcv.requests if x["path"] == "/ingest"].count(503),
       1, "one request refused (the first, whichever process it was for)")
    expect_profile(r["body"], rep, "Pyroscope body")
    eq(per_function(rep, "live_bytes").get("site_fleet_leak"), n * BLOCK,
       "the report itself holds the leak's bytes")


@check("push: Parca's /api/profiles/writeraw JSON, field by field; rawProfile decodes to the report's bytes")
def t_push_parca():
    wl, n, rcv, srv, rep = pushed()
    r = [r for r in rcv.requests if r["path"] == "/parca/api/profiles/writeraw"
         and parca_labels(r).get("pid") == str(wl.pid)][0]
    eq(r["headers"].get("Content-Type"), "application/json", "Content-Type")
    eq(r["headers"].get("Authorization"), "Bearer s3cret", "Authorization")
    doc = json.loads(r["body"])
    eq(sorted(doc), ["normalized", "series"], "WriteRawRequest members")
    eq(doc["normalized"], False, "normalized")
    eq(len(doc["series"]), 1, "one series")
    names = [l["name"] for l in doc["series"][0]["labels"]["labels"]]
    eq(names, ["__name__", "host", "pid", "service"], "label names, sorted")
    eq(parca_labels(r), {"__name__": "memory", "host": host_label(),
                         "pid": str(wl.pid), "service": "svc-a"},
       "label values")
    eq(len(doc["series"][0]["samples"]), 1, "one sample")
    raw = base64.b64decode(doc["series"][0]["samples"][0]["rawProfile"],
                           validate=True)
    expect_profile(raw, rep, "Parca rawProfile")


@check("push: the pusher's counters in the metrics (sent, one retry after 503, none failed)")
def t_push_metrics():
    wl, n, rcv, srv, rep = pushed()
    status, _, body = get(srv.url)
    smp = {(name, l.get("server")): v for name, l, v in samples(body.decode())
           if name.startswith("leakscope_push_")}
    ge(smp[("leakscope_push_sent_profiles_total", "pyroscope")], 1,
       "profiles sent to Pyroscope")
    ge(smp[("leakscope_push_sent_profiles_total", "parca")], 1,
       "profiles sent to Parca")
    eq(smp[("leakscope_push_retries_total", "pyroscope")], 1,
       "one retry, after the 503")
    eq(smp[("leakscope_push_failed_profiles_total", "pyroscope")], 0,
       "nothing given up on")


@check("push: a server that never answers: its queue fills to --push-queue and drops the rest; scrapes still answer; stop is prompt")
def t_push_queue_full():
    wl, n, rcv, srv, rep = pushed()
    hang = socket.socket()
    hang.bind(("127.0.0.1", 0))
    hang.listen(64)             # accepted by the kernel, never answered
    held = []

    def accept():
        while True:
            try:
                c, _ = hang.accept()
            except OSError:
                return
            held.append(c)
    threading.Thread(target=accept, daemon=True).start()
    s2 = Serve(["--metrics", "127.0.0.1:0", "--push-pyroscope",
                "http://127.0.0.1:%d" % hang.getsockname()[1],
                "--push-interval", "0.05", "--push-queue", "3"])
    try:
        end = time.monotonic() + 30
        while time.monotonic() < end:
            t0 = time.monotonic()
            body = get(s2.url, {"X-Prometheus-Scrape-Timeout-Seconds":
                                "2"})[2]
            smp = {n_: v for n_, l, v in samples(body.decode())
                   if n_.startswith("leakscope_push_")}
            ok(time.monotonic() - t0 < 5, "a scrape answers while the "
               "pusher waits")
            if smp.get("leakscope_push_dropped_profiles_total", 0) > 0:
                break
            time.sleep(0.2)
        eq(smp.get("leakscope_push_queued_profiles"), 3, "the queue is full")
        ge(smp.get("leakscope_push_dropped_profiles_total", 0), 1,
           "profiles dropped")
        eq((smp.get("leakscope_push_sent_profiles_total"),
            smp.get("leakscope_push_failed_profiles_total")), (0, 0),
           "nothing sent, nothing given up on yet (the first send waits)")
    finally:
        hang.close()
        for c in held:
            c.close()           # the send in flight fails now
        t0 = time.monotonic()
        eq(s2.stop(), 0, "serve exits 0 on SIGTERM")
    ok(time.monotonic() - t0 < 5, "stopped in %.1f s" % (time.monotonic() - t0))


@check("push: credentials from a file only its owner reads (Basic), not the environment's")
def t_push_credentials():
    wl, n, rcv, srv, rep = pushed()
    cred = os.path.join(TMP, "cred")
    fd = os.open(cred, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    os.write(fd, b"user:pw\n")
    os.close(fd)
    s2 = Serve(["--push-pyroscope", "http://127.0.0.1:%d" % rcv.port,
                "--push-interval", "1", "--push-service", "svc-b",
                "--push-credentials", cred],
               extra_env={"LEAKSCOPE_PUSH_TOKEN": "not-this"})
    try:
        got = rcv.wait(lambda r: pyroscope_name(r).startswith("svc-b{"))
        eq(got[0]["headers"].get("Authorization"), "Basic dXNlcjpwdw==",
           "HTTP Basic from the file, not the environment")
    finally:
        eq(s2.stop(), 0, "serve exits 0 on SIGTERM")


# ------------------------------------------------------------- deploy

UNIT = os.path.join(ROOT, "deploy", "systemd", "leakscope-serve.service")
DAEMONSET = os.path.join(ROOT, "deploy", "kubernetes",
                         "leakscope-daemonset.yaml")
TEST_USER = "leakscope-fleet"


def unit_caps():
    """The unit's CapabilityBoundingSet, lower case without CAP_."""
    m = re.search(r"^CapabilityBoundingSet=(.*)$", open(UNIT).read(), re.M)
    return sorted(c.lower()[4:] for c in m.group(1).split())


@check("deploy: systemd-analyze verify accepts the unit (and rejects a broken copy)")
def t_systemd_unit():
    need("systemd-analyze")
    text = open(UNIT).read().replace("/usr/local/bin/leakscope", LEAKSCOPE)
    good = os.path.join(TMP, "leakscope-serve.service")
    with open(good, "w") as f:
        f.write(text)
    r = run_process(["systemd-analyze", "verify", "--man=no", good])
    eq((r.returncode, r.stdout + r.stderr), (0, b""), "verify the unit")
    bad = os.path.join(TMP, "broken", "leakscope-serve.service")
    os.makedirs(os.path.dirname(bad), exist_ok=True)
    with open(bad, "w") as f:
        f.write(text.replace(LEAKSCOPE, LEAKSCOPE + "-missing"))
    r = run_process(["systemd-analyze", "verify", "--man=no", bad])
    ok(r.returncode != 0, "verify rejects an ExecStart that is not there",
       (r.stdout + r.stderr).decode())


def test_user():
    """An unprivileged user of the tests' own, made if missing."""
    import pwd
    try:
        return pwd.getpwnam(TEST_USER).pw_uid
    except KeyError:
        r = run_process(["useradd", "-M", "-r", "-s", "/usr/sbin/nologin",
                         TEST_USER])
        if r.returncode not in (0, 9):
            fail("useradd " + TEST_USER, "status 0", r.describe())
        return pwd.getpwnam(TEST_USER).pw_uid


def capped_scrape(uid, caps):
    """A scrape by root holding only caps (setpriv's bounding set), with
    no LEAKSCOPE_RUNTIME_DIR of its own: each agent's comes from its
    process's environment."""
    e = dict(os.environ)
    e.pop("LEAKSCOPE_RUNTIME_DIR", None)
    p = spawn(["setpriv", "--bounding-set=-all," +
               ",".join("+" + c for c in caps), "--inh-caps=-all", "--",
               LEAKSCOPE, "serve", "--no-web", "--metrics", "127.0.0.1:0"],
              env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    r, _, _ = select.select([p.stdout], [], [], 20)
    line = p.stdout.readline().decode() if r else ""
    if not line.startswith("leakscope: metrics at "):
        p.kill()
        fail("setpriv ... serve", "the metrics URL", line)
    try:
        return get(line.split(" at ", 1)[1].strip())[2].decode()
    finally:
        stop(p)


@check("deploy: root with only the unit's two capabilities exports another user's process; without either it cannot")
def t_least_privilege():
    need("setpriv")
    if os.geteuid() != 0:
        raise Skip("needs root (the service runs as root)")
    uid = test_user()
    need_user_reaches(uid, workload("fleetload"), AGENT)
    runtime = tempfile.mkdtemp(prefix="leakscope-fleet-user-")
    os.chown(runtime, uid, uid)
    e = agent_env(runtime, {"LD_PRELOAD": AGENT,
                            "LEAKSCOPE_PERIOD_MS": str(PERIOD_MS)})

    def as_user():
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)

    p = spawn([workload("fleetload"), "30"], env=e, preexec_fn=as_user)
    try:
        wait_socket(runtime, p.pid, 5)
        time.sleep(0.5)         # a few ticks: both sites exist
        caps = unit_caps()
        eq(caps, ["dac_override", "sys_ptrace"], "the unit's capabilities")
        smp = samples(capped_scrape(uid, caps), p.pid)
        # the cache's first fill is another stack until every slot has
        # been replaced (one call site in main's fill loop, one in its tick)
        fns = sorted(set(l["function"] for n, l, v in smp
                         if n == "leakscope_site_live_bytes"))
        eq(fns, ["site_fleet_cache", "site_fleet_leak"],
           "the other user's sites, symbolized, with the two capabilities")
        for cap in caps:
            fewer = [c for c in caps if c != cap] + ["dac_read_search"]
            eq(samples(capped_scrape(uid, fewer), p.pid), [],
               "nothing of the other user's process without %s" % cap)
    finally:
        p.kill()
        p.wait()
        shutil.rmtree(runtime, ignore_errors=True)


@check("deploy: the DaemonSet is valid YAML with the unit's capabilities, read-only mounts, hostPID; its arguments start serve")
def t_daemonset():
    try:
        import yaml
    except ImportError:
        raise Skip("PyYAML is not installed (Debian python3-yaml, "
                   "tools/install-deps.sh installs it)")
    docs = list(yaml.safe_load_all(open(DAEMONSET)))
    eq([d["kind"] for d in docs], ["Namespace", "DaemonSet", "NetworkPolicy"],
       "the manifest's objects")
    ds = docs[1]
    eq(ds["apiVersion"], "apps/v1", "DaemonSet apiVersion")
    spec = ds["spec"]["template"]["spec"]
    eq(ds["spec"]["selector"]["matchLabels"],
       ds["spec"]["template"]["metadata"]["labels"], "selector matches")
    eq((spec["hostPID"], spec["automountServiceAccountToken"]), (True, False),
       "hostPID, no service account token")
    c = spec["containers"][0]
    sc = c["securityContext"]
    eq(sc["capabilities"]["drop"], ["ALL"], "every capability dropped")
    eq(sorted(x.lower() for x in sc["capabilities"]["add"]), unit_caps(),
       "the unit's two capabilities added back")
    eq((sc["readOnlyRootFilesystem"], sc["allowPrivilegeEscalation"],
        sc["privileged"]), (True, False, False), "read-only, no escalation")
    ok(all(m["readOnly"] for m in c["volumeMounts"]),
       "every host mount read-only", c["volumeMounts"])
    eq(sorted(m["name"] for m in c["volumeMounts"]),
       sorted(v["name"] for v in spec["volumes"]), "mounts match volumes")
    eq(c["ports"][0]["containerPort"], 9464, "the metrics port")
    eq(docs[2]["spec"]["ingress"][0]["ports"][0]["port"], 9464,
       "the NetworkPolicy lets in the metrics port only")
    # the container's arguments, on loopback here
    args = [("127.0.0.1:0" if a == "0.0.0.0:9464" else a) for a in c["args"]]
    srv = Serve(args[2:] if args[:2] == ["serve", "--no-web"] else
                fail("the container's command", "serve --no-web ...", args))
    ok(srv.url, "serve started with the container's arguments")
    eq(srv.stop(), 0, "and stopped on SIGTERM")
