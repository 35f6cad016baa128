"""Containers: `leakscope attach`, `report`, `check`, `detach` and `serve`
on a process in a container, by the pid our /proc shows it under, give
the figures the same program gives on the host (docs/CONTAINERS.md).

The held-out program (tests/workloads/cont-leaks.c) leaks from four sites
with exact bytes and keeps a cache reachable.  It runs: on the host (the
baseline), in a systemd-nspawn container of a root file system made of
this machine's files (tests/integration/containers.py), in a podman
container of an image imported from the same files, in a chroot with
its own PID and mount namespaces (unshare --root), in another PID
namespace only (unshare --pid), and in the nspawn container again, asked
from a sidecar that shares its PID namespace but not its files.  Each
check names the runtime it used.  Needs root; a runtime this machine
lacks is skipped with the reason.
"""

import json
import pwd
import re
import os
import select
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.request

from harness import (BUILD, LEAKSCOPE, Failure, Skip, at_file_end,
                     bpf_missing, check, cli, contains, eq, fail, ok, once,
                     ptrace_allowed, shorten, workload)
import containers

PROG = "cont-leaks"
# site: (live bytes, live blocks, what check says of them)
EXPECT = {
    "site_request": (8400, 7, "definite"),
    "site_session": (3072, 3, "definite"),
    "site_name": (100, 5, "definite"),
    "site_buffer": (5000, 1, "definite"),
    "cache_fill": (5120, 10, "reachable"),
}
AGENT = os.path.join(BUILD, "libleakscope.so")
_DIRS = []


def _private_dir():
    d = tempfile.mkdtemp(prefix="ls-cont-")
    _DIRS.append(d)
    return d


def _end():
    for d in _DIRS:
        shutil.rmtree(d, ignore_errors=True)
    del _DIRS[:]


at_file_end(_end)


@once
def root():
    """The root file system, built once for the file: the program, and the
    agent's libraries (only what the agent needs is there)."""
    r = containers.rootfs([workload(PROG)], libraries_of=[AGENT])
    _DIRS.append(r)
    return r


def sites(report):
    """{site: (live bytes, live blocks)} by the first frame named like
    one of EXPECT's (frames of the program, by its file's name: inside a
    container its path is its own)."""
    out = {}
    for s in report.get("sites", []):
        fn = next((f["function"] for f in s.get("frames", [])
                   if f.get("function") in EXPECT), None)
        if fn:
            b, n = out.get(fn, (0, 0))
            out[fn] = (b + s["live_bytes"], n + s["live_blocks"])
    return out


def categories(report):
    """{site: category of its bytes} from a check's JSON report."""
    out = {}
    for s in report.get("sites", []):
        fn = next((f["function"] for f in s.get("frames", [])
                   if f.get("function") in EXPECT), None)
        r = s.get("reachability")
        if fn and r:
            out[fn] = sorted(k for k in ("definite", "indirect", "possible",
                                         "reachable")
                             if r.get(k, {}).get("blocks"))
    return out


def _json(r, what):
    if r.returncode != 0:
        fail(what, "status 0", "status %s: %s" % (
            r.returncode, shorten(r.stderr, 600)))
    try:
        return json.loads(r.stdout.decode())
    except ValueError as e:
        raise Failure("%s printed no JSON (%s): %s" % (
            what, e, shorten(r.stdout, 400)))


class Serve:
    """`leakscope serve` on 127.0.0.1, a free port, from the host; with
    metrics, its Prometheus exporter too (self.metrics_url)."""

    def __init__(self, metrics=False):
        extra = ["--metrics", "127.0.0.1:0"] if metrics else []
        self.p = subprocess.Popen([LEAKSCOPE, "serve", "--listen",
                                   "127.0.0.1:0", "--snapshot-dir",
                                   _private_dir()] + extra,
                                  stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE,
                                  start_new_session=True)
        url = self.metrics_url = None
        # it prints its lines at once: wait for the first, then read on
        r, _, _ = select.select([self.p.stdout], [], [], 20)
        for _ in range(3 if r else 0):
            if url and (self.metrics_url or not metrics):
                break
            line = self.p.stdout.readline().decode()
            if line.startswith("leakscope: serving "):
                url = line[len("leakscope: serving "):].strip()
            elif line.startswith("leakscope: metrics at "):
                self.metrics_url = line.split(" at ", 1)[1].strip()
        if not url or (metrics and not self.metrics_url):
            self.stop()
            raise Failure("serve printed no URL (metrics: %s)" % metrics)
        self.base, _, self.token = url.partition("/#token=")

    def get(self, path):
        req = urllib.request.Request(self.base + "/api/v1/" + path, headers={
            "Authorization": "Bearer " + self.token})
        with urllib.request.urlopen(req, timeout=60) as f:
            return json.loads(f.read().decode())

    def scrape(self):
        req = urllib.request.Request(self.metrics_url, headers={
            "X-Prometheus-Scrape-Timeout-Seconds": "4"})
        with urllib.request.urlopen(req, timeout=60) as f:
            return f.read().decode()

    def stop(self):
        self.p.send_signal(signal.SIGTERM)
        try:
            self.p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            self.p.kill()
            self.p.wait()


def _inside_runtime_dir(c):
    """Names in the agent's runtime dir: c.rundir when its environment
    names one, else /dev/shm/leakscope-0 in its own file system; None
    when there is no such dir."""
    d = getattr(c, "rundir", None) or \
        "/proc/%d/root/dev/shm/leakscope-0" % c.pid
    try:
        return sorted(os.listdir(d))
    except FileNotFoundError:
        return None


def drive(c, ask, pid, serve=False):
    """The whole session on c: attach, leak, report (JSON and text),
    check, serve's listing, detach; its answers and what each command
    gave.  ask(args) runs `leakscope ARGS` where the user would; pid is
    the pid that user names it by."""
    got = {"runtime": c.runtime, "pid": pid}
    try:
        got["out"] = [c.send("r")]
        got["given"] = hasattr(c, "rundir")
        got["before"] = _inside_runtime_dir(c)
        a = ask(["attach", pid])
        if a.returncode != 0:
            fail("%s: leakscope attach %d" % (c.runtime, pid), "status 0",
                 "status %s: %s" % (a.returncode, shorten(a.stderr, 600)))
        got["out"].append(c.send("l"))
        got["report"] = _json(ask(["report", "--format", "json", pid]),
                              "%s: report" % c.runtime)
        got["text"] = ask(["report", pid]).stdout.decode()
        got["stats"] = ask(["stats", pid])
        got["olds"] = ask(["olds", pid, "3"])
        got["check"] = _json(ask(["check", "--format", "json", pid]),
                             "%s: check" % c.runtime)
        if serve:
            got["top"] = ask(["top", "-n", "1", pid])
            got["watch"] = ask(["watch", "-n", "1", pid])
            srv = Serve(metrics=True)
            try:
                got["listing"] = srv.get("processes")
                got["served"] = srv.get("processes/%d/report" % pid)
                got["metrics"] = srv.scrape()
            finally:
                srv.stop()
            got["reset"] = ask(["reset", pid])
            got["after_reset"] = _json(ask(["report", "--format", "json",
                                            pid]), "report after reset")
        got["detach"] = ask(["detach", pid])
        got["after"] = ask(["report", pid])
        got["left"] = _inside_runtime_dir(c)
        got["out"].append(c.send("q"))
    finally:
        got["status"] = c.stop()
    return got


def host_ask(args):
    return cli(args)


@once
def baseline():
    """The program on the host, no container: the figures to compare
    with, and its output."""
    if os.geteuid() != 0:
        raise Skip("containers need root")
    ptrace_allowed()
    env = {"PATH": "/usr/bin:/bin", "LEAKSCOPE_RUNTIME_DIR": _private_dir()}

    class Host(containers.Container):
        pass
    c = Host.__new__(Host)
    c.runtime = "host"
    c.p = subprocess.Popen([workload(PROG)], stdin=subprocess.PIPE,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           env=env, start_new_session=True)
    c.pid = c.nspid = c.p.pid
    c.rundir = env["LEAKSCOPE_RUNTIME_DIR"]
    return drive(c, host_ask, c.pid)


@once
def in_nspawn():
    c = containers.nspawn(root(), ["/bin/" + PROG],
                          machine="ls-cont-%d" % os.getpid())
    return drive(c, host_ask, c.pid, serve=True), c


@once
def in_podman():
    c = containers.podman(root(), ["/bin/" + PROG])
    return drive(c, host_ask, c.pid), c


@once
def in_unshare_root():
    c = containers.unshare_root(root(), ["/bin/" + PROG],
                                env={"PATH": "/bin"})
    return drive(c, host_ask, c.pid), c


@once
def in_unshare_pid():
    env = {"PATH": "/usr/bin:/bin", "LEAKSCOPE_RUNTIME_DIR": _private_dir()}
    c = containers.unshare_pid([workload(PROG)], env=env)
    c.rundir = env["LEAKSCOPE_RUNTIME_DIR"]
    return drive(c, host_ask, c.pid), c


@once
def from_sidecar():
    c = containers.nspawn(root(), ["/bin/" + PROG],
                          machine="ls-side-%d" % os.getpid())

    def ask(args):
        return containers.beside(c, [LEAKSCOPE] + [str(a) for a in args])
    return drive(c, ask, c.nspid), c


def expect_same(got, what):
    base = baseline()
    want = {k: v[:2] for k, v in EXPECT.items()}
    eq(sites(base["report"]), want, "host: per-site live bytes and blocks")
    eq(sites(got["report"]), want,
       "%s: per-site live bytes and blocks (the host's too)" % what)
    cats = {k: [v[2]] for k, v in EXPECT.items()}
    eq(categories(base["check"]), cats, "host: check's categories")
    eq(categories(got["check"]), cats, "%s: check's categories" % what)
    eq(got["out"], base["out"], "%s: the program's output" % what)
    eq(got["status"], 0, "%s: the program's exit status" % what)
    eq(got["detach"].returncode, 0, "%s: detach status (%s)" % (
        what, shorten(got["detach"].stderr, 300)))
    for cmd in ("stats", "olds"):
        eq(got[cmd].returncode, 0, "%s: %s status (%s)" % (
            what, cmd, shorten(got[cmd].stderr, 300)))
    contains(got["stats"].stdout.decode(), "pid %d," % got["pid"],
             "%s: stats names the pid asked" % what)
    # one thread: every block's is the main one, as the asker numbers it
    tids = re.findall(r" tid (\d+)", got["olds"].stdout.decode())
    eq(sorted(set(tids)), [str(got["pid"])], "%s: olds' thread ids" % what)
    contains(got["after"].stderr.decode(), "is not tracked",
             "%s: report after detach" % what)
    if got["given"]:    # made by the test, empty: the agent leaves it
        eq([got["before"], got["left"]], [[], []], "%s: the runtime dir "
           "it was given, before the attach and after detach" % what)
    else:               # made by the agent: removed again
        eq([got["before"], got["left"]], [None, None], "%s: the runtime "
           "dir in its file system, before the attach and after detach "
           "(None: there is none)" % what)


def expect_pid_one(got, c, what):
    """The host's figures, and the report names the host's pid and the
    pid 1 it has inside."""
    expect_same(got, what)
    eq(got["report"]["pid"], c.pid, "%s: report's pid (the host's)" % what)
    eq(got["report"]["container"]["pid_inside"], 1, "%s: its own pid" % what)


@check("nspawn: attach/report/check/detach from the host by its host pid give the host's exact per-site figures; output unchanged")
def t_nspawn_same():
    got, _ = in_nspawn()
    expect_same(got, "systemd-nspawn")


@check("nspawn: top, watch and reset by the host pid: top and watch show its sites, reset empties them")
def t_nspawn_more():
    got, c = in_nspawn()
    for cmd in ("top", "watch", "reset"):
        eq(got[cmd].returncode, 0, "%s status (%s)" % (
            cmd, shorten(got[cmd].stderr, 300)))
    top = got["top"].stdout.decode()
    contains(top, "leakscope top - pid %d " % c.pid, "top's header")
    for site in EXPECT:    # strdup's site is named by its caller's line
        contains(top, site, "top's line of " + site)
    contains(got["watch"].stdout.decode(), "site_request (",
             "watch names the largest site")
    eq(sites(got["after_reset"]), {}, "sites after reset")


@check("nspawn: the report names the host pid, the container (hostname = machine name), its own pid 1 and namespaces")
def t_nspawn_named():
    got, c = in_nspawn()
    rep = got["report"]
    eq(rep["pid"], c.pid, "report's pid (the host's)")
    k = rep.get("container") or {}
    eq(k.get("name"), c.machine, "container name")
    eq(k.get("pid_inside"), 1, "its own pid")
    st = os.stat("/proc/%d/ns/pid" % os.getpid())
    ok(k.get("namespaces", {}).get("pid") not in (None, st.st_ino),
       "its PID namespace is named and not ours: %r" % k)
    contains(got["text"], "leakscope: pid %d " % c.pid, "text header")
    contains(got["text"], "In container %s (its pid 1;" % c.machine,
             "text header's container line")
    # the symbols came from its own /bin/cont-leaks, through its root
    mods = {f.get("module") for s in rep["sites"] for f in s["frames"]
            if f.get("function") == "site_request"}
    eq(mods, {"/bin/" + PROG}, "module of site_request (its own path)")


@check("nspawn: serve lists it under its host pid with its container named, never as pid 1; the exporter labels it with the container")
def t_nspawn_serve():
    got, c = in_nspawn()
    procs = got["listing"]["processes"]
    mine = [p for p in procs if p.get("pid") == c.pid]
    eq(len(mine), 1, "entries of host pid %d in serve's listing" % c.pid)
    eq((mine[0].get("container") or {}).get("name"), c.machine,
       "its container in the listing")
    ok(not [p for p in procs if (p.get("container") or {}).get("name") ==
            c.machine and p.get("pid") != c.pid],
       "no other pid listed for the container")
    eq(sites(got["served"]), {k: v[:2] for k, v in EXPECT.items()},
       "per-site figures served for processes/%d" % c.pid)
    live = [l for l in got["metrics"].splitlines()
            if l.startswith("leakscope_process_live_bytes{") and
            'pid="%d"' % c.pid in l]
    eq(len(live), 1, "the exporter's live-bytes series of host pid %d" % c.pid)
    contains(live[0], 'container="%s"' % c.machine,
             "its container label (the machine name)")


@check("nspawn: trace -p by the host pid (eBPF, nothing loaded into it) gives the host's exact per-site figures; output unchanged")
def t_nspawn_trace():
    why = bpf_missing()
    if why:
        raise Skip(why)
    base = baseline()
    c = containers.nspawn(root(), ["/bin/" + PROG],
                          machine="ls-trace-%d" % os.getpid())
    t = None
    out = [c.send("r")]
    try:
        t = subprocess.Popen([LEAKSCOPE, "trace", "-p", str(c.pid), "--format",
                              "json"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
        ready, _, _ = select.select([t.stderr], [], [], 30)
        line = t.stderr.readline().decode() if ready else ""
        if not line.startswith("Attaching to pid %d" % c.pid):
            t.kill()
            fail("systemd-nspawn: trace -p %d's first line" % c.pid,
                 "Attaching to pid %d" % c.pid,
                 line + t.communicate(timeout=30)[1].decode()[:600])
        out.append(c.send("l"))
        t.send_signal(signal.SIGINT)
        rep_out, err = t.communicate(timeout=30)
        out.append(c.send("q"))
    finally:
        if t and t.poll() is None:
            t.kill()
            t.wait()
        status = c.stop()
    eq(t.returncode, 0, "systemd-nspawn: trace's status (%s)" %
       shorten(err, 600))
    rep = _json(subprocess.CompletedProcess([], 0, rep_out, err),
                "systemd-nspawn: trace -p's report")
    eq(sites(rep), {k: v[:2] for k, v in EXPECT.items()},
       "systemd-nspawn: trace -p's per-site live bytes and blocks")
    eq(out, base["out"], "systemd-nspawn: the program's output under trace")
    eq(status, 0, "systemd-nspawn: the program's exit status under trace")


@check("podman (rootful, crun, --network none): attach/report/check/detach by its host pid give the host's exact per-site figures; output unchanged")
def t_podman():
    got, c = in_podman()
    expect_pid_one(got, c, "podman")


@check("unshare --root (chroot, own PID and mount ns): the host's exact per-site figures, output unchanged")
def t_unshare_root():
    expect_pid_one(*in_unshare_root(), what="unshare --root")


@check("unshare --pid (same files, own PID ns): the host's exact per-site figures, output unchanged")
def t_unshare_pid():
    expect_pid_one(*in_unshare_pid(), what="unshare --pid")


@check("sidecar (shares the PID ns, not the files): the same commands by the pod's pid give the host's figures")
def t_sidecar():
    got, c = from_sidecar()
    expect_same(got, "sidecar of systemd-nspawn")
    eq(got["report"]["pid"], c.nspid, "report's pid (the pod's)")


def _user(name="cont"):
    """(uid, gid) of an unprivileged user, created if absent."""
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        subprocess.run(["useradd", "-M", "-r", "-s", "/usr/sbin/nologin",
                        name], check=True, capture_output=True)
        pw = pwd.getpwnam(name)
    return pw.pw_uid, pw.pw_gid


@once
def refusals():
    """A root process in an nspawn container, attached by root; then each
    command asked by an unprivileged user and by root of a user namespace
    of its own: {(who, command): (status, stderr)}."""
    uid, gid = _user()
    # copies the other user can reach (the clone may sit in a 0700 dir)
    bindir = _private_dir()
    os.chmod(bindir, 0o755)
    for f in (LEAKSCOPE, AGENT):
        shutil.copy(f, bindir)
    ls = os.path.join(bindir, "leakscope")
    c = containers.nspawn(root(), ["/bin/" + PROG],
                          machine="ls-perm-%d" % os.getpid())
    out = {}
    try:
        c.send("r")
        a = cli(["attach", c.pid])
        eq(a.returncode, 0, "root's attach: %s" % shorten(a.stderr, 300))
        who = {"user": ["setpriv", "--reuid=%d" % uid, "--regid=%d" % gid,
                        "--clear-groups"],
               "userns-root": ["unshare", "--user", "--map-root-user"]}
        for w, pre in who.items():
            for cmd in ("attach", "report", "check", "detach"):
                r = subprocess.run(pre + [ls, cmd, str(c.pid)],
                                   stdout=subprocess.PIPE,
                                   stderr=subprocess.PIPE, timeout=60)
                out[(w, cmd)] = (r.returncode, r.stderr.decode())
        out["still"] = _json(cli(["report", "--format", "json", c.pid]),
                             "root's report after the refusals")
        cli(["detach", c.pid])
        out["answer"] = c.send("l")
    finally:
        out["status"] = c.stop()
    return out


@check("permissions: an unprivileged user is refused attach/report/check/detach of root's process in a container, in one line, status 1")
def t_refused_user():
    got = refusals()
    for cmd in ("attach", "report", "check", "detach"):
        status, err = got[("user", cmd)]
        eq(status, 1, "%s as another user: status (%s)" % (cmd, err))
        eq(len(err.strip().splitlines()), 1, "%s: one line: %r" % (cmd, err))
    contains(got[("user", "report")][1], "belongs to another user",
             "report's reason")
    contains(got[("user", "attach")][1], "run as its owner or root",
             "attach's reason")


@check("permissions: root of a user namespace is not the host's root: refused, and told so in one line, status 1")
def t_refused_userns_root():
    got = refusals()
    for cmd in ("attach", "report", "check", "detach"):
        status, err = got[("userns-root", cmd)]
        eq(status, 1, "%s as root of a user namespace: status (%s)" % (cmd, err))
        eq(len(err.strip().splitlines()), 1, "%s: one line: %r" % (cmd, err))
        contains(err, "root of a user namespace, not the host's root",
                 "%s's reason" % cmd)
    # the refusals changed nothing: root still reads the same figures
    eq(sites(got["still"]), {}, "root's report: nothing leaked yet")
    eq(got["answer"], baseline()["out"][1], "the program's answer after them")
    eq(got["status"], 0, "its exit status")


@once
def run_inside():
    """`leakscope run` inside an nspawn container, asked from the host by
    its child's host pid."""
    r = containers.rootfs([workload(PROG), LEAKSCOPE, AGENT])
    _DIRS.append(r)
    c = containers.nspawn(r, ["/bin/leakscope", "run", "--", "/bin/" + PROG],
                          machine="ls-run-%d" % os.getpid(),
                          match="/bin/" + PROG)
    got = {}
    try:
        got["out"] = [c.send("r"), c.send("l")]
        got["report"] = _json(cli(["report", "--format", "json", c.pid]),
                              "report of leakscope run's child")
        got["out"].append(c.send("q"))
    finally:
        got["status"] = c.stop()
    return got, c


@check("leakscope run inside nspawn: the host finds its child's agent by the host pid; exact per-site figures")
def t_run_inside():
    got, c = run_inside()
    ok(c.nspid != c.pid, "the child's pid differs inside (%d, %d)" % (
        c.nspid, c.pid))
    eq(got["report"]["pid"], c.pid, "report's pid (the host's)")
    eq(got["report"]["container"]["pid_inside"], c.nspid, "its own pid")
    eq(sites(got["report"]), {k: v[:2] for k, v in EXPECT.items()},
       "per-site live bytes and blocks")
    eq(got["out"], baseline()["out"], "the program's output")
    eq(got["status"], 0, "leakscope run's exit status")


@once
def postmortem_inside():
    """A program preloaded with the agent inside an nspawn container
    (nsenter into it: the container's first process keeps it alive) is
    killed after it leaked; its post-mortem file, in the container's own
    /dev/shm, is read from the host with --in."""
    r = containers.rootfs([workload(PROG), AGENT])
    _DIRS.append(r)
    keeper = containers.nspawn(r, ["/bin/" + PROG],
                               machine="ls-pm-%d" % os.getpid())
    got = {}
    try:
        keeper.send("r")
        env = {"PATH": "/bin", "LD_PRELOAD": "/bin/libleakscope.so",
               "LEAKSCOPE_PERIOD_MS": "100"}
        inside = containers.Container(
            "nsenter into systemd-nspawn",
            ["nsenter", "--target", str(keeper.pid), "--mount", "--pid",
             "--uts", "--ipc", "--root", "--wd", "/bin/" + PROG],
            "/bin/" + PROG, env=env)
        got["out"] = [inside.send("r"), inside.send("l")]
        got["inner"] = inside.nspid
        time.sleep(0.6)    # growth samples reach the file
        os.kill(inside.pid, signal.SIGKILL)
        inside.stop()
        got["pm"] = cli(["report", "--postmortem", "--format", "json",
                         "--in", keeper.pid, inside.nspid])
        got["none"] = cli(["report", "--postmortem", "--in", keeper.pid,
                           inside.nspid + 1000])
        got["no_in"] = cli(["report", "--in", keeper.pid, inside.nspid])
        srv = Serve()
        try:
            got["listing"] = srv.get("postmortem")
            got["served"] = srv.get("postmortem/%d:%d/report" % (
                keeper.pid, inside.nspid))
        finally:
            srv.stop()
    finally:
        keeper.stop()
    return got, keeper


@check("post-mortem file of a process killed inside nspawn: report --postmortem N --in HOSTPID gives its exact per-site figures; errors in one line")
def t_postmortem_inside():
    got, keeper = postmortem_inside()
    rep = _json(got["pm"], "report --postmortem --in")
    eq(sites(rep), {k: v[:2] for k, v in EXPECT.items()},
       "per-site live bytes and blocks of the post-mortem file")
    eq(rep["pid"], got["inner"], "its pid (the one it had inside)")
    eq((rep.get("container") or {}).get("name"), keeper.machine,
       "the container it ran in")
    for what, status in (("none", 1), ("no_in", 125)):
        r = got[what]
        eq(r.returncode, status, "%s: status (%s)" % (what, r.stderr))
        eq(len(r.stderr.decode().strip().splitlines()), 1,
           "%s: one line: %r" % (what, r.stderr))
    contains(got["none"].stderr.decode(), "no post-mortem file for pid",
             "a pid that left no file")


@check("post-mortem file of a process killed inside nspawn: serve lists it with its container and the pid it had there, and serves its report")
def t_postmortem_served():
    got, keeper = postmortem_inside()
    mine = [p for p in got["listing"]["postmortem"]
            if p.get("in") == keeper.pid]
    eq([(p["pid"], p["container"]) for p in mine],
       [(got["inner"], keeper.machine)],
       "the container's post-mortem files in serve's listing")
    eq(mine[0]["dir"], "/proc/%d/root/dev/shm/leakscope-0" % keeper.pid,
       "where it lies, as the host reaches it")
    eq(sites(got["served"]), {k: v[:2] for k, v in EXPECT.items()},
       "per-site figures served for postmortem/%d:%d" % (
           keeper.pid, got["inner"]))
