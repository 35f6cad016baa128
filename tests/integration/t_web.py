"""Web view: `leakscope serve`'s JSON API against live workloads, the page in
headless Chromium, the access token, bad requests, and a load test.

Ground truth: tests/workloads/webload.c, which allocates only when told over
a pipe (site_web_big: 5 x 10000 bytes per 'a', site_web_small: 3 x 100
bytes per 'b') and is blocked in read() otherwise, so the API and
`leakscope report PID --format json` read the same state.  The server keeps
a snapshot for at most CACHE_TTL seconds (docs/WEB-API.md): the checks wait
that long after changing the workload.  Everything listens on 127.0.0.1
only; every agent and the server get a private runtime dir.
"""
import atexit
import html
import http.client as httpclient
import json
import math
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
import urllib.error
import urllib.request

import png

from harness import (check, once, workload, eq, ok, ge, fail, run_process,
                     agent_env, wait_environ, listening_process,
                     expect_site, site_function, need, need_user_reaches,
                     shorten, LEAKSCOPE,
                     BUILD, ROOT, Failure, Skip)

AGENT = os.path.join(BUILD, "libleakscope.so")
ARTIFACTS = os.path.join(BUILD, "test-artifacts")
RUNTIME = tempfile.mkdtemp(prefix="leakscope-web-")
SNAPDIR = tempfile.mkdtemp(prefix="leakscope-web-snaps-")
os.chmod(RUNTIME, 0o700)
CACHE_TTL = 0.6         # the server's 0.5 s, and a margin
PERIOD_MS = 100         # the agents' growth sampling period here
BIG, SMALL = 50000, 300  # bytes per 'a', per 'b'
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
                  "--disable-background-networking",
                  "--disable-component-update", "--disable-sync",
                  "--no-first-run"]
_STARTED = []
world_snapshots = []    # saved by world(), before any reset


def env(extra=None):
    return agent_env(RUNTIME, extra)


def _cleanup():
    for p in _STARTED:
        if p.poll() is None:
            p.kill()
            p.wait()
    shutil.rmtree(RUNTIME, ignore_errors=True)
    shutil.rmtree(SNAPDIR, ignore_errors=True)


atexit.register(_cleanup)


# ----------------------------------------------------------- processes

class Workload:
    """webload.c under the agent, driven through its stdin."""

    def __init__(self):
        e = env({"LD_PRELOAD": AGENT, "LEAKSCOPE_PERIOD_MS": str(PERIOD_MS)})
        self.p = subprocess.Popen([workload("webload")], env=e,
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL,
                                  start_new_session=True)
        _STARTED.append(self.p)
        self.pid = self.p.pid
        sock = os.path.join(RUNTIME, "%d.sock" % self.pid)
        for _ in range(300):
            if os.path.exists(sock):
                return
            time.sleep(0.01)
        raise Failure("the agent in pid %d never opened %s" % (self.pid, sock))

    def cmd(self, chars):
        """Send each command and wait for its acknowledgement."""
        for c in chars:
            self.p.stdin.write(c.encode())
            self.p.stdin.flush()
            r, _, _ = select.select([self.p.stdout], [], [], 20)
            if not r or self.p.stdout.read(1) != c.encode():
                raise Failure("webload %d did not acknowledge %r" % (self.pid, c))


class Server:
    """`leakscope serve` on 127.0.0.1, a free port."""

    def __init__(self, args=(), preexec=None, extra_env=None):
        argv = [LEAKSCOPE, "serve", "--listen", "127.0.0.1:0",
                "--snapshot-dir", SNAPDIR] + list(args)
        self.p = subprocess.Popen(argv, env=env(extra_env),
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE,
                                  start_new_session=True, preexec_fn=preexec)
        _STARTED.append(self.p)
        r, _, _ = select.select([self.p.stdout], [], [], 20)
        line = self.p.stdout.readline().decode() if r else ""
        prefix = "leakscope: serving "
        if not line.startswith(prefix):
            self.p.kill()
            raise Failure("serve printed no URL: %r, stderr %s" % (
                line, shorten(self.p.stderr.read1(4096))))
        self.url = line[len(prefix):].strip()
        self.base, _, self.token = self.url.partition("/#token=")
        self.port = int(self.base.rsplit(":", 1)[1])

    def page(self, query):
        """The page's URL with query, the token in its fragment."""
        return "%s/?%s#token=%s" % (self.base, query, self.token)

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            return self.p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()
            raise Failure("serve did not stop on SIGTERM")


def http(srv, path, method="GET", token=True, cookie=None, body=None,
         headers=None):
    """(status, headers, body bytes); token=True adds the right token
    (Authorization: Bearer), a string adds that one, None none."""
    url = srv.base + path
    headers = dict(headers or {})
    if token:
        tok = srv.token if token is True else token
        headers.setdefault("Authorization", "Bearer " + tok)
    req = urllib.request.Request(url, data=body, method=method,
                                 headers=headers)
    if cookie:
        req.add_header("Cookie", cookie)
    try:
        with urllib.request.urlopen(req, timeout=30) as r:
            return r.status, r.headers, r.read()
    except urllib.error.HTTPError as e:
        return e.code, e.headers, e.read()


def api(srv, path, status=200, **kw):
    got, _, body = http(srv, "/api/v1/" + path, **kw)
    if got != status:
        fail("GET /api/v1/%s status" % path, status, "%s %s" % (
            got, shorten(body, 500)))
    return json.loads(body) if body.startswith(b"{") else body


def cli_json(*args):
    r = run_process([LEAKSCOPE] + [str(a) for a in args], env=env(),
                    timeout=60)
    if r.returncode != 0:
        fail("leakscope %s" % " ".join(map(str, args)), "status 0", r.describe())
    return json.loads(r.stdout.decode())


def without_moment(rep):
    """A report without what differs between two reads of one frozen
    state: the time it was taken, the blocks' ages (relative to it), the
    allocation rates (over the time since the start), the trends (the
    agent adds a growth sample every period, so the sample count moves),
    and the agent's own resident pages (that sample can also grow the
    post-mortem file by a page between the reads; mapped sizes stay)."""
    rep = dict(rep)
    for k in ("time", "uptime_ms"):
        rep.pop(k, None)
    if isinstance(rep.get("agent_memory"), dict):
        rep["agent_memory"] = {k: v for k, v in rep["agent_memory"].items()
                               if k not in ("resident", "postmortem_resident")}
    if isinstance(rep.get("sites"), list):
        rep["sites"] = [{k: ([{x: y for x, y in b.items() if x != "age_ms"}
                              for b in v] if k == "blocks" else v)
                         for k, v in s.items() if k != "trend" and
                         not k.endswith("_per_second")}
                        for s in rep["sites"]]
    return rep


def same_report(got, expected, what):
    a, b = without_moment(got), without_moment(expected)
    if a != b:
        keys = sorted(k for k in set(a) | set(b) if a.get(k) != b.get(k))
        fail(what + ": differing keys %s" % keys,
             shorten(json.dumps({k: b.get(k) for k in keys}), 1200),
             shorten(json.dumps({k: a.get(k) for k in keys}), 1200))


def by_fn(report, fn):
    prog = workload("webload")
    found = [s for s in report["sites"] if site_function(s, prog) == fn]
    if len(found) != 1:
        fail("sites of %s" % fn, 1, len(found))
    return found[0]


@once
def world():
    """A server and a workload that made 3 'a' and 2 'b' (and churn)."""
    srv = Server()
    wl = Workload()
    wl.cmd("atbatba")
    time.sleep(max(CACHE_TTL, 3 * PERIOD_MS / 1000))
    # saved now, before any check resets the workload (t_snapshot, t_diff)
    world_snapshots.append(api(srv, "processes/%d/snapshot" % wl.pid,
                               status=201, method="POST")["name"])
    return srv, wl


# ------------------------------------------------------------ the API

@check("api: the report equals `leakscope report PID --format json` (3 x 50000 + 2 x 300 bytes)")
def t_report_equal():
    srv, wl = world()
    got = api(srv, "processes/%d/report" % wl.pid)
    cli = cli_json("report", "--format", "json", wl.pid)
    same_report(got, cli, "API report vs CLI report")
    expect_site(got, "site_web_big", workload("webload"), 3 * BIG, 15)
    expect_site(got, "site_web_small", workload("webload"), 2 * SMALL, 6)
    ok(all("trend" in s for s in got["sites"]), "every site has a trend")


@check("api: report filters match the command's (top, min_size, show_allocs, depth, hide_runtime, growing)")
def t_report_filters():
    srv, wl = world()
    got = api(srv, "processes/%d/report?top=1&min_size=5000" % wl.pid)
    cli = cli_json("report", "--format", "json", "--top", "1",
                   "--min-size", "5000", wl.pid)
    same_report(got, cli, "top=1&min_size=5000")
    eq(len(got["sites"]), 1, "sites with top=1")
    eq(got["sites"][0]["live_bytes"], 3 * BIG, "the top site's bytes")
    got = api(srv, "processes/%d/report?show_allocs=1&max_size=100" % wl.pid)
    cli = cli_json("report", "--format", "json", "--show-allocs",
                   "--max-size", "100", wl.pid)
    same_report(got, cli, "show_allocs=1&max_size=100")
    small = by_fn(got, "site_web_small")
    eq(sorted(b["size"] for b in small["blocks"]), [100] * 6, "small blocks")
    got = api(srv, "processes/%d/report?depth=2&hide_runtime=1" % wl.pid)
    cli = cli_json("report", "--format", "json", "--depth", "2",
                   "--hide-runtime", wl.pid)
    same_report(got, cli, "depth=2&hide_runtime=1")
    big = by_fn(got, "site_web_big")
    eq([f["function"] for f in big["frames"]], ["site_web_big", "main"],
       "two frames, the runtime's left out")
    h = api(srv, "processes/%d/history?depth=1" % wl.pid)
    ok(all(len(s["frames"]) == 1 for s in h["sites"]), "history: depth=1")
    got = api(srv, "processes/%d/report?growing=true" % wl.pid)
    cli = cli_json("report", "--format", "json", "--growing", wl.pid)
    eq(sorted(s["id"] for s in got["sites"]),
       sorted(s["id"] for s in cli["sites"]), "growing sites' ids")
    got = api(srv, "processes/%d/report?by=peak&histogram=1" % wl.pid)
    cli = cli_json("report", "--format", "json", "--by", "peak",
                   "--histogram", wl.pid)
    same_report(got, cli, "by=peak&histogram=1")
    eq(got["by"], "peak", "by=peak")
    ok(by_fn(got, "site_web_big")["peak_bytes"] >= 3 * BIG,
       "site_web_big held at least its live bytes at the peak")
    ok(sum(got["histogram"]["sizes"]) > 0, "histogram=1: the sizes")


@check("api: process list has the workload, its live bytes and a sparkline")
def t_processes():
    srv, wl = world()
    lst = api(srv, "processes")
    eq(lst["format"], "leakscope-processes", "format")
    mine = [p for p in lst["processes"] if p["pid"] == wl.pid]
    eq(len(mine), 1, "entries for pid %d" % wl.pid)
    p = mine[0]
    cli = cli_json("report", "--format", "json", wl.pid)
    eq(p["live_bytes"], cli["totals"]["live_bytes"], "live bytes")
    eq(p["live_blocks"], cli["totals"]["live_blocks"], "live blocks")
    eq(p["command"], [workload("webload")], "command")
    eq(p["period_ms"], PERIOD_MS, "period")
    ge(len(p["history"]), 3, "sparkline points")
    ok(len(p["history"]) <= 60, "at most 60 sparkline points")
    # frozen for several periods: the newest sample is the current total
    eq(p["history"][-1], p["live_bytes"], "newest sparkline point")
    ok(os.getpid() not in [q["pid"] for q in lst["processes"]],
       "a process without agent is not listed")


def mann_kendall_rises(y):
    """docs/TRENDS.md step 2 on one series: z > 0 and p < 0.05."""
    m = len(y)
    if m < 2:
        return False
    s = sum((y[j] > y[i]) - (y[j] < y[i]) for i in range(m) for j in range(i + 1, m))
    ties = {}
    for v in y:
        ties[v] = ties.get(v, 0) + 1
    var = (m * (m - 1) * (2 * m + 5) -
           sum(t * (t - 1) * (2 * t + 5) for t in ties.values())) / 18.0
    if s == 0 or var <= 0:
        return False
    z = (s - (1 if s > 0 else -1)) / math.sqrt(var)
    return z > 0 and math.erfc(abs(z) / math.sqrt(2)) < 0.05


def staircase_label(history):
    """The label docs/TRENDS.md gives a series that only steps up and whose
    recent half is flat (site_web_big: three commands, then nothing): unknown
    under 5 samples after the leading zeros; else constant unless it rises
    (Mann-Kendall on the whole series or its older half) by a material
    amount (no churn: any rise), and then saturating (the recent half does
    not grow)."""
    y = list(history)
    while y and y[0] == 0:
        y.pop(0)
    ok(all(a <= b for a, b in zip(y, y[1:])), "a staircase", str(history))
    if not y:
        return "constant"
    if len(y) < 5:
        return "unknown"
    ok(len(y) <= 128, "a short series (no window minima)", str(len(y)))
    h = len(y) // 2
    ok(len(set(y[len(y) - h:])) == 1, "the recent half is flat", str(history))
    third = len(y) // 3
    rise = min(y[len(y) - third:]) - min(y[:third])
    if rise <= 0 or not (mann_kendall_rises(y) or mann_kendall_rises(y[:h])):
        return "constant"
    return "saturating"


@check("api: per-site history ends at the live bytes, windowed delta, trend")
def t_history():
    srv, wl = world()
    h = api(srv, "processes/%d/history?top=2&window=100" % wl.pid)
    eq(h["period_ms"], PERIOD_MS, "period_ms")
    eq(len(h["sites"]), 2, "top=2 sites")
    big = by_fn(h, "site_web_big")
    eq(big["live_bytes"], 3 * BIG, "live bytes")
    eq(big["history"][-1], 3 * BIG, "newest sample")
    ok(all(a <= b for a, b in zip(big["history"], big["history"][1:])),
       "the big site's samples never decrease", str(big["history"]))
    ok(set(big["history"]) <= {0, BIG, 2 * BIG, 3 * BIG},
       "samples are whole commands", str(big["history"]))
    # a window longer than the history: the change since the first sample
    eq(big["window_delta_bytes"], 3 * BIG - big["history"][0], "window delta")
    eq(big["trend"]["label"], staircase_label(big["history"]),
       "trend label of %s" % big["history"])
    one = api(srv, "processes/%d/history?site=%d" % (wl.pid, big["id"]))
    eq([s["id"] for s in one["sites"]], [big["id"]], "site=ID selects one")


@check("api: olds, the oldest blocks first, with stacks; stats equal the command's")
def t_olds_stats():
    srv, wl = world()
    o = api(srv, "processes/%d/olds?n=5" % wl.pid)
    eq(len(o["blocks"]), 5, "n=5 blocks")
    # the first command's five blocks are the oldest the program holds
    eq([b["size"] for b in o["blocks"]], [10000] * 5, "sizes")
    ok(all(site_function({"frames": b["frames"]}, workload("webload")) ==
           "site_web_big" for b in o["blocks"]), "olds come from site_web_big")
    ages = [b["age_ms"] for b in o["blocks"]]
    eq(ages, sorted(ages, reverse=True), "oldest first")
    st = api(srv, "processes/%d/stats" % wl.pid)
    cli = cli_json("stats", "--format", "json", wl.pid)
    same_report(st, cli, "API stats vs CLI stats")


@check("api: the commands' vocabulary: widths= (count= its older spelling) draws the flame graph, a bad value names the option and what it takes; olds equals `olds --format json`")
def t_vocabulary():
    srv, wl = world()
    base = "/api/v1/processes/%d/flamegraph.svg" % wl.pid
    for q in ("?widths=blocks", "?count=blocks", "?widths=bytes&width=400"):
        status, headers, svg = http(srv, base + q)
        eq((status, headers.get("Content-Type")), (200, "image/svg+xml"),
           "flame graph " + q)
        ok(svg.startswith(b"<?xml") or b"<svg" in svg[:400], "an SVG " + q)
    for q, needle in (("?widths=pages", b"expected bytes or blocks"),
                      ("?width=100", b"expected a number from 200 to 20000"),
                      ("?top=0", b"expected a number from 1 to 1000000")):
        status, _, body = http(srv, base + q)
        eq(status, 400, "status of " + q)
        ok(needle in body, "the reason of " + q, shorten(body, 300))
    status, headers, _ = http(srv, "/api/v1/processes/%d/folded" % wl.pid)
    eq((status, headers.get("Content-Type")), (200, "text/plain; charset=utf-8"),
       "folded's media type, from the renderer's row")
    web = api(srv, "processes/%d/olds?n=4&depth=3" % wl.pid)
    cli = cli_json("olds", "--format", "json", "--depth", "3", wl.pid, "4")
    eq((cli["format"], cli["pid"], cli["blocks_total"]),
       (web["format"], web["pid"], web["blocks_total"]), "olds documents' heads")
    strip = lambda bs: [(b["address"], b["size"], b["tid"], b["site"],
                         [f["text"] for f in b["frames"]]) for b in bs]
    eq(strip(cli["blocks"]), strip(web["blocks"]), "the same blocks and stacks")


@check("api: snapshot saved, listed, read back equal to `leakscope report FILE`")
def t_snapshot():
    srv, wl = world()
    name = world_snapshots[0]
    ok(name.startswith("%d-" % wl.pid) and name.endswith(".lsnap"), "name",
       name)
    lst = api(srv, "snapshots")
    ok(name in [s["name"] for s in lst["snapshots"]], "listed", str(lst))
    got = api(srv, "snapshots/%s/report" % name)
    cli = cli_json("report", "--format", "json", os.path.join(SNAPDIR, name))
    same_report(got, cli, "saved snapshot: API vs CLI")
    expect_site(got, "site_web_big", workload("webload"), 3 * BIG, 15)


@check("api: post-mortem file of a killed process, equal to `report --postmortem`")
def t_postmortem():
    srv, _ = world()
    dead = Workload()
    dead.cmd("aa")
    time.sleep(4 * PERIOD_MS / 1000)   # a growth sample reaches the file
    dead.p.kill()
    dead.p.wait()
    lst = api(srv, "postmortem")
    # Only this test's runtime dir: root's server also lists the default
    # dirs, where a dead process of an earlier test may have had the same
    # pid (pid_max is 32768 here and the suite starts thousands).
    mine = [p for p in lst["postmortem"] if p["dir"] == RUNTIME]
    eq([p["pid"] for p in mine].count(dead.pid), 1,
       "times the dead pid is listed in the test's runtime dir")
    got = api(srv, "postmortem/%d/report" % dead.pid)
    cli = cli_json("report", "--postmortem", "--format", "json", dead.pid)
    same_report(got, cli, "post-mortem: API vs CLI")
    expect_site(got, "site_web_big", workload("webload"), 2 * BIG, 10)
    api(srv, "postmortem/%d/olds" % dead.pid, status=400)


@check("real program: python3's report, history and flame graph through the API, equal to the command's")
def t_python():
    srv, _ = world()
    py = need("python3")
    e = env({"LD_PRELOAD": AGENT, "LEAKSCOPE_PERIOD_MS": str(PERIOD_MS)})
    # keeps 200 blocks of 5000 bytes, says so, then blocks reading stdin
    code = ("import sys\nkeep = [bytearray(5000) for _ in range(200)]\n"
            "sys.stdout.write('r'); sys.stdout.flush(); sys.stdin.read()\n")
    p = subprocess.Popen([py, "-c", code], env=e, stdin=subprocess.PIPE,
                         stdout=subprocess.PIPE, start_new_session=True)
    _STARTED.append(p)
    try:
        r, _, _ = select.select([p.stdout], [], [], 30)
        eq(p.stdout.read(1) if r else b"", b"r", "python3 ready")
        time.sleep(CACHE_TTL)
        t0 = time.monotonic()
        got = api(srv, "processes/%d/report" % p.pid)
        first = time.monotonic() - t0
        t0 = time.monotonic()
        again = api(srv, "processes/%d/report?top=5" % p.pid)
        second = time.monotonic() - t0
        time.sleep(CACHE_TTL)
        t0 = time.monotonic()
        fresh = api(srv, "processes/%d/report" % p.pid)
        third = time.monotonic() - t0
        cli = cli_json("report", "--format", "json", p.pid)
        same_report(got, cli, "python3: API report vs CLI report")
        same_report(fresh, cli, "python3: a fresh snapshot, the kept symbolizer")
        print("# python3 report: first %.3f s, cached %.3f s, new snapshot "
              "with the kept symbolizer %.3f s" % (first, second, third))
        eq(len(again["sites"]), 5, "top=5")
        # the 200 bytearrays: one site of at least 200 x 5000 bytes
        ge(got["sites"][0]["live_bytes"], 200 * 5000, "the biggest site")
        h = api(srv, "processes/%d/history?top=3" % p.pid)
        eq(len(h["sites"]), 3, "history sites")
        status, headers, svg = http(srv, "/api/v1/processes/%d/flamegraph.svg"
                                    % p.pid)
        eq((status, headers.get("Content-Type")), (200, "image/svg+xml"),
           "python3's flame graph")
        ok(b"[libpython" in svg or b"[python3" in svg,
           "its frames name python's modules", shorten(svg[-600:], 300))
    finally:
        p.kill()
        p.wait()


# ---------------------------------------------------- access and abuse

@check("token: in a header only, never a cookie; none 401, wrong 403; the page and its assets hold no secret")
def t_token():
    srv, wl = world()
    ok("/#token=" in srv.url, "the printed URL carries the token in its fragment",
       srv.url)
    eq(http(srv, "/api/v1/processes", token=None)[0], 401, "no token")
    eq(http(srv, "/api/v1/processes", token="0" * 32)[0], 403, "wrong token")
    eq(http(srv, "/api/v1/processes", token=srv.token[:-1])[0], 403,
       "a prefix of the token")
    eq(http(srv, "/api/v1/processes", token=None,
            headers={"X-Leakscope-Token": srv.token})[0], 200,
       "X-Leakscope-Token")
    eq(http(srv, "/api/v1/processes?token=" + srv.token, token=None)[0], 401,
       "the token in the query is not accepted")
    eq(http(srv, "/api/v1/processes", token=None,
            headers={"Cookie": "leakscope_%d=%s" % (srv.port, srv.token)})[0],
       401, "the token in a cookie is not accepted")
    status, headers, body = http(srv, "/", token=None)
    eq(status, 200, "the page without the token")
    ok(b"<title>leakscope</title>" in body, "the page is served")
    ok(srv.token.encode() not in body, "the page holds no token")
    eq(headers.get("Set-Cookie"), None, "no cookie is set")
    eq(http(srv, "/api/v1/version")[1].get("Set-Cookie"), None,
       "no cookie set by the API")
    view = api(srv, "version")["view_token"]
    ok(len(view) == 32 and view != srv.token, "a separate view token", view)
    eq(http(srv, "/api/v1/processes?view=" + view, token=None)[0], 200,
       "GET with the view token")
    eq(http(srv, "/api/v1/processes/%d/snapshot?view=%s" % (wl.pid, view),
            method="POST", token=None)[0], 403,
       "the view token cannot change anything")
    csp = http(srv, "/")[1].get("Content-Security-Policy", "")
    ok("script-src 'self'" in csp, "the page forbids foreign scripts", csp)


@check("cross-origin: a POST with another Origin or Sec-Fetch-Site, or a foreign Host (DNS rebinding), is refused even with the token")
def t_origin():
    srv, _ = world()
    wl = Workload()     # its own: the resets must not empty the page's
    post = "/api/v1/processes/%d/reset" % wl.pid
    eq(http(srv, post, method="POST",
            headers={"Origin": "http://127.0.0.1:%d" % (srv.port + 1)})[0], 403,
       "Origin of another port")
    eq(http(srv, post, method="POST",
            headers={"Origin": "http://evil.example"})[0], 403, "foreign Origin")
    eq(http(srv, post, method="POST",
            headers={"Sec-Fetch-Site": "same-site"})[0], 403,
       "Sec-Fetch-Site: same-site (another port)")
    eq(http(srv, "/api/v1/processes", headers={"Host": "evil.example:%d" % srv.port})[0],
       421, "a foreign Host")
    eq(http(srv, "/", token=None, headers={"Host": "evil.example"})[0],
       421, "the page under a foreign Host")
    eq(http(srv, post, method="POST",
            headers={"Origin": "http://127.0.0.1:%d" % srv.port,
                     "Sec-Fetch-Site": "same-origin"})[0], 200,
       "the page's own POST")
    eq(http(srv, post, method="POST")[0], 200, "a program's POST (no Origin)")


@check("bad requests: each refused with its status, nothing followed outside the snapshot dir")
def t_bad_requests():
    srv, wl = world()
    cases = [
        ("/api/v1/processes/abc/report", "GET", 400),
        ("/api/v1/processes/0/report", "GET", 400),
        ("/api/v1/processes/99999999/report", "GET", 400),
        ("/api/v1/processes/%d/report?top=-1" % wl.pid, "GET", 400),
        ("/api/v1/processes/%d/report?top=x" % wl.pid, "GET", 400),
        ("/api/v1/processes/%d/report?min_size=lots" % wl.pid, "GET", 400),
        ("/api/v1/processes/%d/report?growing=maybe" % wl.pid, "GET", 400),
        ("/api/v1/processes/%d/report?by=size" % wl.pid, "GET", 400),
        ("/api/v1/processes/%d/report?by=peak&min_size=1" % wl.pid, "GET",
         400),
        ("/api/v1/processes/%d/report?bogus=1" % wl.pid, "GET", 400),
        ("/api/v1/processes/%d/olds?n=1000001" % wl.pid, "GET", 400),
        ("/api/v1/processes/%d/report" % os.getpid(), "GET", 404),
        ("/api/v1/processes/%d/nothing" % wl.pid, "GET", 404),
        ("/api/v1/nothing", "GET", 404),
        ("/nothing.html", "GET", 404),
        ("/api/v1/processes/%d/report" % wl.pid, "POST", 405),
        ("/api/v1/processes/%d/reset" % wl.pid, "GET", 405),
        ("/api/v1/snapshots/%2e%2e/report", "GET", 400),
        ("/api/v1/snapshots/..%2F..%2Fetc%2Fpasswd/report", "GET", 404),
        ("/api/v1/snapshots/.hidden.lsnap/report", "GET", 400),
        ("/api/v1/snapshots/none.lsnap/report", "GET", 404),
        ("/api/v1/postmortem/%d/report" % wl.pid, "GET", 404),
        ("/api/v1/processes?" + "x" * 1500, "GET", 414),
    ]
    for path, method, status in cases:
        got, _, body = http(srv, path, method=method)
        eq(got, status, "%s %s (%s)" % (method, path[:80], shorten(body, 200)))
        ok(json.loads(body).get("status") == status, "JSON error body", body)
    # a link planted in the snapshot dir is not followed
    os.symlink("/etc/passwd", os.path.join(SNAPDIR, "planted.lsnap"))
    eq(http(srv, "/api/v1/snapshots/planted.lsnap/report")[0], 404, "symlink")
    eq(http(srv, "/api/v1/snapshots/planted.lsnap", method="DELETE")[0], 404,
       "symlink not deleted")
    ok(os.path.islink(os.path.join(SNAPDIR, "planted.lsnap")), "link kept")
    os.unlink(os.path.join(SNAPDIR, "planted.lsnap"))
    got = http(srv, "/api/v1/processes/%d/reset" % wl.pid, method="POST",
               body=b"x" * 4096)[0]
    eq(got, 413, "a 4 KiB body")


def raw(srv, data, wait=15):
    """Send data on a fresh connection; what came back before the server
    closed it or wait seconds passed."""
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=wait)
    out = b""
    try:
        s.sendall(data)
        while True:
            chunk = s.recv(65536)
            if not chunk:
                break
            out += chunk
    except socket.timeout:
        pass
    finally:
        s.close()
    return out


def status_of(resp):
    """The status code of a raw response, "" when the connection was closed
    without one."""
    parts = resp.split(b"\r\n", 1)[0].split(b" ")
    return parts[1].decode() if len(parts) > 1 else ""


@check("malformed HTTP: garbage, huge target, huge header, idle connections; server still answers")
def t_malformed():
    srv, wl = world()
    # libmicrohttpd drops a request line it cannot parse, or answers 400
    ok(status_of(raw(srv, b"HELLO\r\n\r\n")) in ("", "400"), "garbage line")
    ok(status_of(raw(srv, b"\x00\xff\xfe binary\r\n\r\n", wait=1)) in
       ("", "400", "505"), "binary junk")
    big = b"GET /api/v1/processes?" + b"a" * 60000 + b" HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
    ok(status_of(raw(srv, big)) in ("414", "431"), "a 60 KB request target")
    hdr = (b"GET /api/v1/version HTTP/1.1\r\nHost: x\r\nX-Big: " +
           b"b" * 60000 + b"\r\n\r\n")
    ok(status_of(raw(srv, hdr)) in ("431", "413", "400"), "a 60 KB header")
    # a 64 MiB body: the connection is closed after the first MiB
    post = (b"POST /api/v1/processes/%d/reset HTTP/1.1\r\nHost: x\r\n"
            b"Authorization: Bearer %s\r\n"
            b"Content-Length: %d\r\n\r\n" % (wl.pid, srv.token.encode(),
                                              64 << 20))
    s = socket.create_connection(("127.0.0.1", srv.port), timeout=15)
    sent = 0
    try:
        s.sendall(post)
        chunk = b"z" * 65536
        while sent < (64 << 20):
            s.sendall(chunk)
            sent += len(chunk)
    except OSError:
        pass
    finally:
        s.close()
    ok(sent < (8 << 20), "the server stopped reading a 64 MiB body",
       "%d bytes went in" % sent)
    idle = [socket.create_connection(("127.0.0.1", srv.port), timeout=5)
            for _ in range(10)]
    for i, s in enumerate(idle):
        s.sendall(b"GET /api/v1/version HTTP/1.1\r\n" if i % 2 else b"G")
    try:
        t0 = time.monotonic()
        v = api(srv, "version")
        eq(v["version"], 1, "version answered while 10 connections idle")
        ok(time.monotonic() - t0 < 10, "not stalled by idle connections")
    finally:
        for s in idle:
            s.close()
    eq(api(srv, "processes/%d/report" % wl.pid)["pid"], wl.pid,
       "the agent still answers through the server")


def stuck_agent():
    """A process whose "agent" socket accepts and never answers: the
    process and the listening socket (the test accepts on it)."""
    sleeper, stuck, path = listening_process(RUNTIME, env())
    _STARTED.append(sleeper)
    stuck.settimeout(30)
    return sleeper, stuck, path


def end_stuck(sleeper, stuck, path):
    stuck.close()
    os.unlink(path)
    sleeper.kill()
    sleeper.wait()


@check("stuck agent: a socket that never answers gives 504 after the timeout, then is not asked again")
def t_stuck_agent():
    srv, wl = world()
    sleeper, stuck, path = stuck_agent()
    try:
        t0 = time.monotonic()
        status, _, body = http(srv, "/api/v1/processes/%d/report" %
                               sleeper.pid)
        eq(status, 504, "the stuck agent's status (%s)" % shorten(body, 200))
        ge(time.monotonic() - t0, 2.5, "seconds waited (the 3 s timeout)")
        again = api(srv, "processes/%d/report" % sleeper.pid, status=504)
        ok("not asked again" in again["error"], "a stuck agent is not "
           "waited for again at once", again["error"])
        lst = api(srv, "processes")
        eq([u for u in lst["unreachable"] if u["pid"] == sleeper.pid],
           [{"pid": sleeper.pid, "status": 504}], "listed as unreachable")
        ok(wl.pid in [p["pid"] for p in lst["processes"]],
           "the workload still listed")
    finally:
        end_stuck(sleeper, stuck, path)


# Could flake under load when the others were asked 0.3 s after the stuck
# request on the 3 s timeout: now the others are asked once the server is
# known to wait on the stuck agent (its connection accepted, its request
# read), and the server waits until the test lets the request go.
@check("stuck agent: while one request waits on it, others are served")
def t_stuck_meanwhile():
    _, wl = world()
    srv = Server(["--agent-timeout", "600"])
    sleeper, stuck, path = stuck_agent()
    got = {}

    def ask():
        got["status"], _, got["body"] = http(
            srv, "/api/v1/processes/%d/report" % sleeper.pid)
    t = threading.Thread(target=ask)
    conn = None
    try:
        t.start()
        conn, _ = stuck.accept()
        conn.settimeout(30)
        ok(conn.recv(256).endswith(b"\n"), "the server asked the stuck "
           "agent")
        others = [api(srv, "processes/%d/stats" % wl.pid)["pid"]
                  for _ in range(5)]
        eq(others, [wl.pid] * 5, "another process answered meanwhile")
        ok(t.is_alive(), "the stuck request is still waiting")
        conn.close()    # the agent goes away: the request ends now
        conn = None
        t.join(30)
        ok(not t.is_alive(), "the request ended when the agent closed")
        eq(got.get("status"), 502, "status of an agent that closed without "
           "answering (%s)" % shorten(got.get("body", b""), 200))
    finally:
        if conn:
            conn.close()
        end_stuck(sleeper, stuck, path)
        srv.stop()


@check("listen: a non-loopback address or a bad one is refused (status 125), a port in use fails (1)")
def t_listen_refused():
    for addr, words in (("0.0.0.0:0", "not a loopback"),
                        ("192.0.2.1:8080", "not a loopback"),
                        ("localhost:8080", "invalid listen address"),
                        ("127.0.0.1:99999", "invalid listen address")):
        r = run_process([LEAKSCOPE, "serve", "--listen", addr, "--snapshot-dir",
                         SNAPDIR], env=env(), timeout=20)
        eq(r.returncode, 125, "serve --listen %s status" % addr)
        err = r.stderr.decode()
        ok(err.startswith("leakscope: ") and words in err, "message", err)
    r = run_process([LEAKSCOPE, "serve", "--bogus"], env=env(), timeout=20)
    eq(r.returncode, 125, "unknown option status")
    srv, _ = world()
    r = run_process([LEAKSCOPE, "serve", "--listen", "127.0.0.1:%d" % srv.port,
                     "--snapshot-dir", SNAPDIR], env=env(), timeout=20)
    eq(r.returncode, 1, "a port in use: status")
    ok("cannot listen on" in r.stderr.decode(), "message", r.stderr.decode())


@check("users: a non-root server refuses root's process (403) and does not list it")
def t_other_user():
    if os.getuid() != 0:
        raise Skip("needs root to run a server as another user")
    if not shutil.which("setpriv"):
        raise Skip("setpriv is not installed")
    need_user_reaches(65534, LEAKSCOPE)
    srv, wl = world()
    home = tempfile.mkdtemp(prefix="leakscope-web-nobody-")
    os.chmod(home, 0o777)

    def drop():
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)
    other = Server(preexec=drop, extra_env={"HOME": home,
                                            "LEAKSCOPE_RUNTIME_DIR": home})
    try:
        got = api(other, "processes/%d/report" % wl.pid, status=403)
        ok("another user" in got["error"], "message", got["error"])
        api(other, "processes/%d/reset" % wl.pid, status=403, method="POST")
        lst = api(other, "processes")
        ok(wl.pid not in [p["pid"] for p in lst["processes"]], "not listed")
    finally:
        other.stop()
        shutil.rmtree(home, ignore_errors=True)


@check("load: 50 clients x 20 requests on loopback, all answered; agent and server unharmed")
def t_load():
    srv, wl = world()
    before = cli_json("report", "--format", "json", wl.pid)
    paths = ["/api/v1/processes", "/api/v1/processes/%d/report" % wl.pid,
             "/api/v1/processes/%d/history?top=5" % wl.pid,
             "/api/v1/processes/%d/stats" % wl.pid, "/app.js",
             "/api/v1/processes/%d/olds?n=3" % wl.pid]
    results, errors = [], []

    def client(k):
        for i in range(20):
            path = paths[(k + i) % len(paths)]
            try:
                conn = httpclient.HTTPConnection("127.0.0.1", srv.port,
                                                  timeout=60)
                conn.request("GET", path, headers={
                    "Authorization": "Bearer " + srv.token})
                r = conn.getresponse()
                body = r.read()
                results.append((path, r.status, len(body)))
                conn.close()
            except Exception as e:  # noqa: BLE001 - counted
                errors.append("%s: %s" % (path, e))
    threads = [threading.Thread(target=client, args=(k,)) for k in range(50)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    elapsed = time.monotonic() - t0
    eq(errors[:3], [], "client errors")
    eq(len(results), 1000, "answers")
    bad = [r for r in results if r[1] != 200]
    eq(bad[:5], [], "non-200 answers")
    print("# load: 1000 requests from 50 clients in %.2f s" % elapsed)
    ok(srv.p.poll() is None, "the server is still running")
    eq(wl.p.poll(), None, "the workload is still running")
    same_report(cli_json("report", "--format", "json", wl.pid), before,
                "the agent's state after the load")
    wl.cmd("t")                       # the program still runs its commands:
    time.sleep(CACHE_TTL)             # 100 more blocks, none left
    after = api(srv, "processes/%d/report" % wl.pid)
    eq(without_moment(after)["sites"], without_moment(before)["sites"],
       "sites after the load and the churn")
    eq(after["totals"]["allocated_blocks"],
       before["totals"]["allocated_blocks"] + 100, "allocated blocks + churn")
    eq(after["totals"]["live_bytes"], before["totals"]["live_bytes"],
       "live bytes after the churn")


# ------------------------------------------------------------ the page

def chromium(args, timeout=60):
    exe = need("chromium")
    prof = tempfile.mkdtemp(prefix="leakscope-web-chromium-")
    try:
        return run_process([exe] + CHROMIUM_FLAGS + ["--user-data-dir=" + prof]
                           + args, timeout=timeout)
    finally:
        shutil.rmtree(prof, ignore_errors=True)


@once
def page_run():
    """A screenshot of the process view, then the scripted visit (which
    presses reset)."""
    srv, wl = world()
    os.makedirs(ARTIFACTS, exist_ok=True)
    shot = os.path.join(ARTIFACTS, "web-process.png")
    if os.path.exists(shot):
        os.unlink(shot)
    r = chromium(["--window-size=1400,1800", "--virtual-time-budget=8000",
                  "--screenshot=" + shot, srv.page("pid=%d" % wl.pid)])
    rep = cli_json("report", "--format", "json", wl.pid)
    svg = api(srv, "processes/%d/flamegraph.svg" % wl.pid)
    res = {"shot": shot, "shot_run": r, "live": rep["totals"]["live_bytes"],
           "live_web": sum(s["live_bytes"] for s in rep["sites"]
                           if site_function(s, workload("webload"))),
           "labels": [s["trend"]["label"] for s in rep["sites"]],
           "fills": dict(re.findall(r'<g class="f"[^>]*>\s*<title>([^\n<]*)\n.*?fill="([^"]+)"',
                                    svg.decode(), re.S))}
    r = chromium(["--virtual-time-budget=15000", "--dump-dom",
                  srv.page("pid=%d&test=1" % wl.pid)])
    res["out"] = test_out(r.stdout.decode("utf-8", "replace"))
    time.sleep(CACHE_TTL)
    return res


def fmt_bytes(n):
    """As the page writes sizes (app.js bytes())."""
    units = ["B", "KiB", "MiB", "GiB", "TiB"]
    v, u = abs(n), 0
    while v >= 1024 and u < len(units) - 1:
        v /= 1024
        u += 1
    return ("-" if n < 0 else "") + (("%.1f" % v) if u else str(v)) + " " + units[u]


def test_out(dom):
    """The JSON the page's test hook left in <pre id=test-out>."""
    start = dom.find('<pre id="test-out"')
    if start < 0:
        fail("the page's test output", "<pre id=test-out>", shorten(dom, 800))
    text = dom[dom.index(">", start) + 1:dom.index("</pre>", start)]
    text = html.unescape(text)
    try:
        return json.loads(text)
    except ValueError:
        fail("the page's test output is JSON", "JSON", shorten(text, 800))


@check("page: the process list with sparklines, the process's sites, chart and flame graph")
def t_page_view():
    srv, wl = world()
    o = page_run()["out"]
    ok("error" not in o, "the page ran without error", o.get("error", ""))
    ok(wl.pid in o["processes"], "the workload is listed", str(o))
    ok(o["rowFound"], "its row is on the page")
    ge(o["rows"], 1, "process rows")
    idx = o["processes"].index(wl.pid)
    ge(o["sparkInk"][idx], 10, "its sparkline has ink")
    fns = o["before"]["functions"]
    ok("site_web_big" in fns and "site_web_small" in fns, "sites shown", str(fns))
    eq(o["before"]["siteRows"], o["before"]["sites"], "one row per site")
    eq(o["before"]["live"], page_run()["live"], "live bytes on the page")
    # the labels the command gives the same sites, in the page's order
    # (live bytes); the workload has been still since world() made it
    eq(o["before"]["labels"], page_run()["labels"], "trend labels, site by site")
    rates = [float(x) if x != "-" else 0.0 for x in o["sortedByRate"]]
    eq(rates, sorted(rates, reverse=True), "sorted by growth rate")
    ge(o["chart"]["datasets"], 2, "chart datasets")
    ge(o["chart"]["points"], 3, "chart points")
    ge(o["chart"]["ink"], 500, "chart pixels drawn")
    ge(o["olds"], 5, "olds rows")
    fl = o["flame"]
    eq((fl.get("svg"), fl.get("ready")), ("svg", "1"),
       "the flame graph is an SVG whose script ran")
    for label in ("site_web_big [webload]", "site_web_small [webload]", "main [webload]"):
        ok(label in fl["labels"], "frame %s drawn" % label, str(fl["labels"]))
    ok(fl["zoom"], "a click on site_web_big zooms", str(fl))
    eq(fl["matched"], str(page_run()["live_web"]),
       "searching site_web_ matches both sites' bytes")


@once
def after_reset():
    """The page pressed reset (page_run); the API's report then, and after
    one more 'b'."""
    srv, wl = world()
    page_run()
    rep = api(srv, "processes/%d/report" % wl.pid)
    wl.cmd("b")
    time.sleep(CACHE_TTL)
    return rep, api(srv, "processes/%d/report" % wl.pid)


@check("page: pressing reset clears the sites (page and API agree)")
def t_page_reset():
    o = page_run()["out"]
    eq(o["after"]["msg"], "reset done", "the page's message")
    fns = o["after"]["functions"]
    ok("site_web_big" not in fns and "site_web_small" not in fns,
       "the workload's sites are gone from the page", str(fns))
    ge(o.get("timerRefreshes", 0), 2, "refreshes by the page's timer")
    rep, later = after_reset()
    eq(o["listLive"], fmt_bytes(rep["totals"]["live_bytes"]),
       "the process list's live bytes after the timer refreshed it")
    eq([s for s in rep["sites"] if site_function(s, workload("webload"))], [],
       "no site of the workload after reset")
    expect_site(later, "site_web_small", workload("webload"), SMALL, 3)


def without_times(diff):
    diff = dict(diff)
    for side in ("base", "new"):
        diff[side] = {k: v for k, v in diff[side].items()
                      if k not in ("time", "uptime_ms")}
    return diff


@once
def two_snapshots():
    """The world's first snapshot (3 'a', 2 'b') and one after the page's
    reset and one 'b'."""
    srv, wl = world()
    after_reset()
    second = api(srv, "processes/%d/snapshot" % wl.pid, status=201,
                 method="POST")["name"]
    return world_snapshots[0], second


@check("api: diff of two saved snapshots equals `leakscope diff --format json` (big gone, small shrank)")
def t_diff():
    srv, wl = world()
    a, b = two_snapshots()
    got = api(srv, "diff?from=%s&to=%s" % (a, b))
    cli = cli_json("diff", "--format", "json", os.path.join(SNAPDIR, a),
                   os.path.join(SNAPDIR, b))
    eq(without_times(got), without_times(cli), "API diff vs CLI diff")
    prog = workload("webload")
    ch = {site_function(s, prog): (s["change"], s["live_bytes_delta"])
          for s in got["sites"] if site_function(s, prog)}
    eq(ch.get("site_web_big"), ("gone", -3 * BIG), "site_web_big")
    eq(ch.get("site_web_small"), ("shrank", -SMALL), "site_web_small")
    if api(srv, "version")["diff_svg"]:
        status, headers, svg = http(srv, "/api/v1/diff?from=%s&to=%s&format=svg"
                                    % (a, b))
        eq((status, headers.get("Content-Type")), (200, "image/svg+xml"),
           "differential flame graph")
        ok(b"<svg" in svg and b"site_web_small [webload]" in svg,
           "it draws the shrunk site", shorten(svg, 300))
    live = api(srv, "diff?from=%s&to=pid:%d" % (b, wl.pid))
    eq([s["change"] for s in live["sites"] if site_function(s, prog)],
       ["same"], "a snapshot against the live process it was taken of")
    for q, status in (("from=%s" % a, 400), ("from=%s&to=nope.lsnap" % a, 404),
                      ("from=%s&to=pid:abc" % a, 400),
                      ("from=%s&to=%s&format=xml" % (a, b), 400),
                      ("from=../x.lsnap&to=%s" % b, 400)):
        api(srv, "diff?" + q, status=status)


@check("page: the diff view between two snapshots picked in the list")
def t_page_diff():
    srv, wl = world()
    a, b = two_snapshots()
    r = chromium(["--virtual-time-budget=10000", "--dump-dom",
                  srv.page("test=diff&from=%s&to=%s" % (a, b))])
    o = test_out(r.stdout.decode("utf-8", "replace"))
    ok("error" not in o, "the page ran without error", o.get("error", ""))
    ok(a in o["listed"] and b in o["listed"], "both listed", str(o))
    ok(o["buttonEnabled"], "the compare button is enabled once both are picked")
    rows = {r[4]: r for r in o["rows"]}
    eq(rows.get("site_web_big", [None] * 4)[:4],
       ["-146.5 KiB", "gone", "146.5 KiB", "0 B"], "site_web_big's row")
    eq(rows.get("site_web_small", [None] * 4)[:4],
       ["-300 B", "shrank", "600 B", "300 B"], "site_web_small's row")
    if api(srv, "version")["diff_svg"]:
        ok("site_web_small [webload]" in (o.get("diffFlame") or []),
           "the differential flame graph is drawn", str(o.get("diffFlame")))
    shot = os.path.join(ARTIFACTS, "web-diff.png")
    r = chromium(["--window-size=1400,1000", "--virtual-time-budget=10000",
                  "--screenshot=" + shot,
                  srv.page("test=diff&from=%s&to=%s" % (a, b))])
    ok(os.path.exists(shot), "diff screenshot written", r.describe())


@check("page: the screenshot of the process view (build/test-artifacts/web-process.png) "
       "shows the flame graph's frames in the colours of the API's SVG")
def t_page_screenshot():
    res = page_run()
    ok(os.path.exists(res["shot"]), "screenshot written", res["shot_run"].describe())
    image = png.read(res["shot"])
    eq((image.width, image.height), (1400, 1800), "screenshot size")
    want = ("site_web_big [webload]", "main [webload]", "all")
    fills = {k: v for k, v in res["fills"].items() if k in want}
    eq(sorted(fills), sorted(want), "frames of the API's SVG")
    # The page draws the graph about 820 pixels wide (--window-size=1400):
    # each of these frames spans it, so a row holds 300 pixels of its fill.
    missing = []
    for label, fill in sorted(fills.items()):
        run = bytes(int(x) for x in fill[4:-1].split(",")) * 300
        if image.channels != 3 or not any(run in row for row in image.rows):
            missing.append("%s %s" % (label, fill))
    eq(missing, [], "frames whose colour spans 300 pixels of a row")


@check("shutdown: SIGTERM stops the server with status 0, the workload unharmed")
def t_shutdown():
    srv, wl = world()
    eq(srv.stop(), 0, "serve's status")
    wl.cmd("a")
    wl.p.stdin.write(b"q")
    wl.p.stdin.close()
    eq(wl.p.wait(timeout=20), 0, "the workload's status")
