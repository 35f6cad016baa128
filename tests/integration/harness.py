"""harness.py - run leakscope on the ground-truth workloads and check reports.

A test file tests/integration/t_TOPIC.py imports this module and declares
its checks with the @check("what it proves") decorator; run.py runs them
and prints TAP.  A check passes by returning, fails by raising Failure
(through the assert helpers below, which always print expected and got)
and is skipped by raising Skip("why").

Runs are expensive, so a test file usually runs leakscope once per
configuration inside a function decorated with @once and lets several
checks share the result.

Everything is located relative to this file: the repository root is two
levels up, the binaries are the ones `make tests` builds under build/.
"""

import functools
import json
import os
import pwd
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time
import traceback

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.path.join(ROOT, "build")
LEAKSCOPE = os.path.join(BUILD, "leakscope")
WORKLOADS = os.path.join(BUILD, "tests", "workloads")
WORKLOAD_SRC = os.path.join(ROOT, "tests", "workloads")

RUN_TIMEOUT = 60
REPORT_FORMAT = "leakscope-report"

REGISTRY = {}


class Failure(AssertionError):
    """A check failed; the message says what was expected and what came."""


class Skip(Exception):
    """A check cannot run here (a program is not installed...)."""


def check(name):
    """Register the decorated function as a check of its test file."""
    def deco(fn):
        REGISTRY.setdefault(fn.__module__, []).append((name, fn))
        return fn
    return deco


def once(fn):
    """Cache a function's result, or the exception it raised, so that a run
    that times out is not repeated by every check that shares it."""
    cache = {}

    @functools.wraps(fn)
    def wrapper(*args):
        if args not in cache:
            try:
                cache[args] = (True, fn(*args))
            except (Failure, Skip) as e:
                cache[args] = (False, e)
            except Exception as e:  # noqa: BLE001 - reported as a failure
                cache[args] = (False, Failure("%s raised %s\n%s" % (
                    fn.__name__, e, traceback.format_exc())))
        good, value = cache[args]
        if good:
            return value
        raise value
    return wrapper


# ----------------------------------------------------------------- asserts

def fail(what, expected, got):
    raise Failure("%s\n  expected: %s\n  got:      %s" % (what, expected, got))


def eq(got, expected, what):
    if got != expected:
        fail(what, repr(expected), repr(got))


def ok(cond, what, detail=""):
    if not cond:
        raise Failure(what + ("\n  " + detail if detail else ""))


def ge(got, minimum, what):
    if not isinstance(got, (int, float)) or got < minimum:
        fail(what, ">= %r" % (minimum,), repr(got))


def contains(haystack, needle, what):
    if needle not in haystack:
        fail(what, "to contain %r" % (needle,), shorten(haystack))


def shorten(text, limit=1500):
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    text = str(text)
    return text if len(text) <= limit else text[:limit] + "... (%d more)" % (
        len(text) - limit)


# --------------------------------------------------------------- programs

def workload(name):
    """Absolute path of a built workload; fails when `make tests` did not
    build it."""
    path = os.path.join(WORKLOADS, name)
    if not os.path.exists(path):
        raise Failure("workload %s is not built (run make tests)" % name)
    return path


def marker_line(source, marker):
    """Line number of the '/* @marker */' comment in a workload source
    file: the line of the call the marker sits on."""
    path = os.path.join(WORKLOAD_SRC, source)
    with open(path, encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            if re.search(r"/\*\s*@%s\s*\*/" % re.escape(marker), line):
                return n
    raise Failure("no @%s marker in %s" % (marker, source))


def need(program):
    """The path of an installed program; skips the check without it."""
    path = shutil.which(program)
    if not path:
        raise Skip("%s is not installed" % program)
    return path


def system_user(name, why):
    """The (uid, gid) of system user name, created if absent (no home, no
    shell); skips the check unless root, saying why it needed the user."""
    if os.geteuid() != 0:
        raise Skip("needs root to %s" % why)
    try:
        pw = pwd.getpwnam(name)
    except KeyError:
        subprocess.run([need("useradd"), "-M", "-r", "-s",
                        "/usr/sbin/nologin", name], check=True,
                       capture_output=True)
        pw = pwd.getpwnam(name)
    return pw.pw_uid, pw.pw_gid


def as_user(uid, gid):
    """A preexec_fn that makes the child user uid, group gid only."""
    def become():
        os.setgroups([])
        os.setgid(gid)
        os.setuid(uid)
    return become


def need_user_reaches(uid, *paths):
    """Skips the check unless user uid can reach and run every path (the
    leakscope binary, the agent): a clone inside a 0700 directory, such
    as one made by mktemp -d, is out of reach of user nobody."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            os.setgroups([])
            os.setgid(uid)
            os.setuid(uid)
            code = 0 if all(os.access(p, os.X_OK) for p in paths) else 1
        finally:
            os._exit(code)
    _, status = os.waitpid(pid, 0)
    if os.WEXITSTATUS(status) != 0:
        blocked = next((d for d in _parents(paths[0])
                        if not os.stat(d).st_mode & 0o001), paths[0])
        raise Skip("uid %d cannot reach %s (%s is not searchable by "
                   "others): build in a directory others can enter" % (
                       uid, os.path.relpath(paths[0], ROOT), blocked))


def _parents(path):
    """path's directories from the root down."""
    path = os.path.dirname(os.path.abspath(path))
    out = []
    while True:
        out.append(path)
        up = os.path.dirname(path)
        if up == path:
            return list(reversed(out))
        path = up


# A stand-in for an agent: a process that listens on "<dir>/<its pid>.sock"
# itself (the client checks, by SO_PEERCRED, that the listener is the
# target) and hands the listening socket to the test, which answers on it.
_LISTENER = """
import os, socket, sys, time
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.bind(os.path.join(sys.argv[1], "%d.sock" % os.getpid()))
s.listen(16)
socket.send_fds(socket.socket(fileno=int(sys.argv[2])), [b"x"], [s.fileno()])
time.sleep(60)
"""


def listening_process(runtime, env):
    """(Popen, listening socket, socket path): a process whose "agent"
    socket in runtime the test accepts on, or not."""
    here, there = socket.socketpair()
    p = subprocess.Popen(["python3", "-c", _LISTENER, runtime,
                          str(there.fileno())], env=env,
                         start_new_session=True, pass_fds=[there.fileno()])
    there.close()
    here.settimeout(20)
    _, fds, _, _ = socket.recv_fds(here, 1, 1)
    here.close()
    return p, socket.socket(fileno=fds[0]), os.path.join(
        runtime, "%d.sock" % p.pid)


def wait_socket(runtime, pid, timeout):
    """The path of the socket of pid's agent in runtime once it is there
    (an agent started with its program opens it a moment later), or None
    after timeout seconds."""
    sock = os.path.join(runtime, "%d.sock" % pid)
    deadline = time.monotonic() + timeout
    while not os.path.exists(sock):
        if time.monotonic() > deadline:
            return None
        time.sleep(0.01)
    return sock


def wait_environ(pid, name, timeout=10):
    """Wait until pid's /proc environ holds name=: Popen returns once exec
    has closed its pipe, but the kernel fills in the new environment after
    that, and a leakscope command reading /proc/PID/environ in between
    sees none (no LEAKSCOPE_RUNTIME_DIR: the default runtime dir)."""
    key = name.encode() + b"="
    deadline = time.monotonic() + timeout
    while True:
        try:
            with open("/proc/%d/environ" % pid, "rb") as f:
                if key in f.read():
                    return
        except OSError:
            pass
        ok(time.monotonic() < deadline, "%s in pid %d's environment within "
           "%d s" % (name, pid, timeout))
        time.sleep(0.01)


def free_port():
    """A loopback TCP port free at the time of the call."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def reap(p, timeout=60, end=None):
    """End a test's target: close its stdin (or call end(p)), wait for it
    up to timeout seconds, kill it past that."""
    if end:
        end(p)
    else:
        p.stdin.close()
    try:
        p.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        p.kill()
        p.wait()


def kill_group(p):
    """SIGKILL to the process group p leads (started with
    start_new_session), gone already or not, then reap p."""
    try:
        os.killpg(p.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    p.wait()


def agent_env(runtime, extra=None):
    """This environment for a test's own agents: LEAKSCOPE_RUNTIME_DIR set
    to the test's private runtime dir, no inherited LD_PRELOAD, plus
    extra."""
    e = dict(os.environ)
    e["LEAKSCOPE_RUNTIME_DIR"] = runtime
    e.pop("LD_PRELOAD", None)
    e.update(extra or {})
    return e


class Result:
    """One finished process: argv, returncode, stdout, stderr (bytes), the
    temporary directory it wrote into and, for leakscope runs, the reports
    found there."""

    def __init__(self, argv, returncode, stdout, stderr, pid):
        self.argv = argv
        self.returncode = returncode
        self.stdout = stdout
        self.stderr = stderr
        self.pid = pid
        self.tmpdir = None
        self.output = None
        self.files = {}

    def describe(self):
        return "command: %s\n  exit status: %s\n  stderr: %s" % (
            " ".join(self.argv), self.returncode, shorten(self.stderr, 800))


def bpf_missing():
    """Why `leakscope trace` (eBPF) cannot run here, or None."""
    if os.geteuid() != 0:
        return "needs root (eBPF)"
    if not os.path.exists("/sys/kernel/btf/vmlinux"):
        return "the kernel has no BTF"
    if not os.path.exists("/sys/bus/event_source/devices/uprobe"):
        return "the kernel has no uprobes"
    r = subprocess.run([LEAKSCOPE, "trace", "--help"], capture_output=True,
                       timeout=30)
    if r.returncode != 0 or b"Not available in this build" in r.stdout:
        return "leakscope was built without eBPF (clang, bpftool, " \
               "libbpf-dev or BTF missing at build time)"
    return None


def run_process(argv, timeout=RUN_TIMEOUT, input=None, env=None, cwd=None):
    """Run argv in its own session; kill the whole session on timeout."""
    try:
        p = subprocess.Popen(argv, stdin=subprocess.PIPE if input is not None
                             else subprocess.DEVNULL,
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             env=env, cwd=cwd, start_new_session=True)
    except OSError as e:
        raise Failure("cannot start %s: %s" % (argv[0], e))
    try:
        out, err = p.communicate(input=input, timeout=timeout)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        out, err = p.communicate()
        raise Failure("timed out after %ss: %s\n  stderr so far: %s" % (
            timeout, " ".join(argv), shorten(err, 800)))
    return Result(argv, p.returncode, out, err, p.pid)


def cli(args, env=None, timeout=60, input=None):
    """`leakscope ARGS...` (each argument str()-ed) in env, as a user types
    it: no wrapping `run`, nothing added to the environment."""
    return run_process([LEAKSCOPE] + [str(a) for a in args], timeout=timeout,
                       env=env, input=input)


def cli_json(args, env=None, timeout=60):
    """cli() that must exit 0 and print one JSON document: the document."""
    r = cli(args, env, timeout)
    if r.returncode != 0:
        fail("leakscope %s" % " ".join(map(str, args)), "status 0",
             r.describe())
    try:
        return json.loads(r.stdout.decode())
    except ValueError as e:
        raise Failure("leakscope %s printed no JSON (%s): %s" % (
            " ".join(map(str, args)), e, shorten(r.stdout, 400)))


def leakscope(options, command, output=True, timeout=RUN_TIMEOUT, input=None,
              env=None, cwd=None):
    """Run `leakscope run OPTIONS -- COMMAND`.

    With output=True a fresh temporary directory receives --output
    DIR/report; the result's .files maps every file left there to its
    text and .output is the report path.  The directory is removed at exit
    of the test process (tempfile cleanup is not needed between checks)."""
    if not os.path.exists(LEAKSCOPE):
        raise Failure("%s is not built (run make)" % os.path.relpath(
            LEAKSCOPE, ROOT))
    tmpdir = tempfile.mkdtemp(prefix="leakscope-test-")
    _TMPDIRS.append(tmpdir)
    argv = [LEAKSCOPE, "run"] + list(options)
    out_path = os.path.join(tmpdir, "report")
    if output:
        argv += ["--output", out_path]
    argv += ["--"] + list(command)
    r = run_process(argv, timeout=timeout, input=input, env=env, cwd=cwd)
    r.tmpdir = tmpdir
    r.output = out_path if output else None
    for name in sorted(os.listdir(tmpdir)):
        path = os.path.join(tmpdir, name)
        if os.path.isfile(path):
            with open(path, "rb") as f:
                r.files[name] = f.read().decode("utf-8", "replace")
    return r


_TMPDIRS = []


def exit_snapshot(name, args=(), extra=None, input=None):
    """Run workload `name` (or the program at an absolute path) with the
    agent preloaded by hand (no control thread), `input` on its stdin, and
    return (program path, path of the exit snapshot it wrote into a fresh
    temporary LEAKSCOPE_OUT_DIR, with its block list)."""
    prog = name if os.path.isabs(name) else workload(name)
    out_dir = tempfile.mkdtemp(prefix="leakscope-snap-")
    _TMPDIRS.append(out_dir)
    env = dict(os.environ)
    env.update({"LD_PRELOAD": os.path.join(BUILD, "libleakscope.so"),
                "LEAKSCOPE_OUT_DIR": out_dir, "LEAKSCOPE_EXIT_BLOCKS": "1",
                "LEAKSCOPE_CONTROL": "0"})
    env.update(extra or {})
    r = run_process([prog] + list(args), env=env, input=input)
    if r.returncode != 0:
        fail("%s exit status" % name, 0, r.describe())
    snaps = [f for f in os.listdir(out_dir) if f.endswith(".lsnap")]
    if len(snaps) != 1:
        fail("exit snapshots written by %s" % name, 1, snaps)
    return prog, os.path.join(out_dir, snaps[0])


_AT_END = []


def at_file_end(fn):
    """Call fn once the current test file's checks are done (run.py calls
    cleanup() after each file): a server or workload a file keeps for its
    checks must not outlive them, or it goes on asking the agents of the
    files that follow (t_tick counts its agent's wakeups)."""
    _AT_END.append(fn)


def cleanup():
    while _AT_END:
        _AT_END.pop()()
    for d in _TMPDIRS:
        shutil.rmtree(d, ignore_errors=True)
    del _TMPDIRS[:]


def expect_status(r, status, what="exit status"):
    if r.returncode != status:
        fail(what, status, "%s\n  %s" % (r.returncode, r.describe()))


# ---------------------------------------------------------------- reports

def parse_json_lines(text, where):
    """Every non-empty line must be one JSON object."""
    reports = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as e:
            raise Failure("%s line %d is not JSON (%s): %s" % (
                where, n, e, shorten(line, 300)))
        if not isinstance(obj, dict):
            raise Failure("%s line %d is not an object" % (where, n))
        reports.append(obj)
    return reports


def json_reports_in_stderr(r):
    """JSON reports written to stderr (no --output): the lines that start
    with '{'; anything else there is the command's own stderr."""
    text = r.stderr.decode("utf-8", "replace")
    lines = [l for l in text.splitlines() if l.startswith("{")]
    return parse_json_lines("\n".join(lines), "stderr")


def root_report(r):
    """The single JSON report in --output FILE (the root process)."""
    if "report" not in r.files:
        raise Failure("no report file written\n  " + r.describe())
    reps = parse_json_lines(r.files["report"], "report file")
    exit_reps = [x for x in reps if x.get("reason") == "exit"]
    if len(exit_reps) != 1:
        fail("exit reports in the report file", 1,
             "%d (%d lines)\n  %s" % (len(exit_reps), len(reps), r.describe()))
    return exit_reps[0]


def child_reports(r):
    """{pid: report} for every FILE.PID written next to the root's FILE."""
    out = {}
    for name, text in r.files.items():
        m = re.fullmatch(r"report\.(\d+)", name)
        if m:
            reps = parse_json_lines(text, name)
            ok(len(reps) >= 1, "%s holds no report" % name)
            out[int(m.group(1))] = reps[-1]
    return out


def module_is(frame, path):
    mod = frame.get("module")
    if not mod:
        return False
    try:
        return os.path.realpath(mod) == os.path.realpath(path)
    except (TypeError, ValueError):
        return False


def module_base(frame):
    mod = frame.get("module")
    return os.path.basename(mod) if isinstance(mod, str) else None


def site_function(site, module):
    """The function that allocated, seen from the program: the first
    non-inlined frame of `module`."""
    for fr in site.get("frames", []):
        if module_is(fr, module) and not fr.get("inlined"):
            return fr.get("function")
    return None


def outer_functions(site, module):
    """Names of the non-inlined frames of `module`, innermost first."""
    return [fr.get("function") for fr in site.get("frames", [])
            if module_is(fr, module) and not fr.get("inlined")]


def frame_text(fr):
    return "%s%s [%s] %s:%s%s" % (
        fr.get("function"), "+%s" % fr.get("offset")
        if fr.get("offset") is not None else "", module_base(fr),
        fr.get("file"), fr.get("line"), " (inlined)" if fr.get("inlined") else "")


def site_text(site, max_frames=12):
    lines = ["%s bytes in %s blocks (kind %s)" % (
        site.get("live_bytes"), site.get("live_blocks"), site.get("kind"))]
    for fr in site.get("frames", [])[:max_frames]:
        lines.append("      " + frame_text(fr))
    return "\n    ".join(lines)


def sites_text(report, limit=15):
    sites = report.get("sites", [])
    parts = [site_text(s, 6) for s in sites[:limit]]
    if len(sites) > limit:
        parts.append("... %d more sites" % (len(sites) - limit))
    return "\n    ".join(parts) if parts else "(no sites)"


def find_sites(report, function, module):
    return [s for s in report.get("sites", [])
            if site_function(s, module) == function]


def the_site(report, function, module):
    """The one site whose first program frame is `function`."""
    found = find_sites(report, function, module)
    if len(found) != 1:
        fail("sites whose first frame in %s is %s" % (
            os.path.basename(module), function), "exactly 1",
            "%d; the report's sites:\n    %s" % (len(found), sites_text(report)))
    return found[0]


def sites_mentioning(report, predicate):
    """Sites with any frame whose function name satisfies predicate."""
    return [s for s in report.get("sites", [])
            if any(isinstance(fr.get("function"), str) and
                   predicate(fr["function"]) for fr in s.get("frames", []))]


def expect_site(report, function, module, live_bytes, live_blocks, kind="heap"):
    site = the_site(report, function, module)
    got = (site.get("live_bytes"), site.get("live_blocks"), site.get("kind"))
    if got != (live_bytes, live_blocks, kind):
        fail("%s: live_bytes, live_blocks, kind" % function,
             (live_bytes, live_blocks, kind), "%s\n    %s" % (
                 got, site_text(site)))
    return site


def expect_no_site(report, function, module):
    found = find_sites(report, function, module)
    if found:
        fail("sites of %s" % function, "none",
             "\n    ".join(site_text(s) for s in found))


def expect_no_temporaries(report, prefix="tmp_"):
    bad = sites_mentioning(report, lambda f: f.startswith(prefix))
    if bad:
        fail("sites with a %s* frame (freed temporaries)" % prefix, "none",
             "\n    ".join(site_text(s) for s in bad))


def expect_totals_consistent(report):
    sites = report.get("sites", [])
    t = report.get("totals", {})
    eq(sum(s.get("live_bytes", 0) for s in sites), t.get("live_bytes"),
       "sum of sites' live_bytes vs totals.live_bytes")
    eq(sum(s.get("live_blocks", 0) for s in sites), t.get("live_blocks"),
       "sum of sites' live_blocks vs totals.live_blocks")
    eq(report.get("sites_total"), len(sites),
       "sites_total vs the number of sites listed (no --top)")


def parse_folded(text):
    """[(frames outermost first, bytes)] from folded lines."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        stack, sep, num = line.rpartition(" ")
        if not sep or not re.fullmatch(r"\d+", num):
            raise Failure("folded line %d is not 'stack BYTES': %s" % (
                n, shorten(line, 300)))
        out.append((stack.split(";"), int(num)))
    return out


def is_subsequence(needles, haystack):
    it = iter(haystack)
    return all(any(n == h for h in it) for n in needles)


# --- reachability against valgrind's memcheck ------------------------------

REACH_KINDS = ("definite", "indirect", "possible", "reachable")
_VG_KINDS = {"definitely lost": "definite", "indirectly lost": "indirect",
             "possibly lost": "possible", "still reachable": "reachable"}
_VG_RECORD = re.compile(r"==\d+== ([\d,]+)(?: \(([\d,]+) direct, ([\d,]+) "
                        r"indirect\))? bytes in ([\d,]+) blocks are "
                        r"(definitely lost|indirectly lost|possibly lost|"
                        r"still reachable) in loss record")


def valgrind_records(text, prefix="site_"):
    """memcheck's loss records by the first frame named prefix*: function
    -> sorted [(kind, direct bytes, indirect bytes, blocks)]."""
    recs, cur = {}, None
    frame = re.compile(r"by 0x[0-9A-F]+: (%s\w+)[( ]" % re.escape(prefix))
    num = lambda s: int(s.replace(",", "")) if s else 0
    for line in text.splitlines():
        m = _VG_RECORD.search(line)
        if m:
            direct = num(m.group(2)) if m.group(2) else num(m.group(1))
            cur = (_VG_KINDS[m.group(5)], direct, num(m.group(3)),
                   num(m.group(4)))
            continue
        m = frame.search(line)
        if cur and m:
            recs.setdefault(m.group(1), []).append(cur)
            cur = None
    return {k: sorted(v) for k, v in recs.items()}


def reach_records(report, prefix="site_"):
    """The same from a leakscope JSON report: one record per site (stack)
    and category, named by the site's first function named prefix*
    (without a C++ name's parameters)."""
    recs = {}
    for s in report["sites"]:
        fn = next((re.match(r"\w+", f["function"]).group(0)
                   for f in s["frames"]
                   if (f.get("function") or "").startswith(prefix)), None)
        r = s.get("reachability")
        if not fn or not r:
            continue
        for k in REACH_KINDS:
            if r[k]["blocks"]:
                held = r["held_indirect"]["bytes"] if k == "definite" else 0
                recs.setdefault(fn, []).append(
                    (k, r[k]["bytes"], held, r[k]["blocks"]))
    return {k: sorted(v) for k, v in recs.items()}


def vgdb_live_records(prog):
    """valgrind's live leak check on prog running under memcheck: prog is
    started with --vgdb=yes, and once it says "ready", `vgdb leak_check
    full reachable any` asks memcheck for its records (valgrind_records);
    then prog's stdin is closed so that it exits."""
    vg = need("valgrind")
    vgdb = need("vgdb")
    p = subprocess.Popen([vg, "--vgdb=yes", prog],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, start_new_session=True)
    try:
        ok(p.stdout.readline().startswith(b"ready"),
           "%s under valgrind" % os.path.basename(prog))
        r = run_process([vgdb, "--pid=%d" % p.pid, "leak_check", "full",
                         "reachable", "any"], timeout=60)
    finally:
        p.stdin.close()
        try:
            p.wait(timeout=30)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()
    return valgrind_records((r.stdout + r.stderr).decode("utf-8", "replace"))


def agent_checks(prog, runtime, methods=("concurrent", "fork"), text=False):
    """prog started under the agent (runtime dir runtime) until it says
    "ready", then `leakscope check --format json --method M PID` for each
    of methods: {M: the JSON report}; with text, also "text": the fork
    method's text report.  prog's stdin is closed at the end, so that it
    exits."""
    agent = {"LD_PRELOAD": os.path.join(BUILD, "libleakscope.so")}
    p = subprocess.Popen([prog], env=agent_env(runtime, agent),
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                         start_new_session=True)
    out = {}
    try:
        line = p.stdout.readline()
        if not line.startswith(b"ready"):
            fail("%s ready" % os.path.basename(prog), "ready", line)
        for m in methods:
            out[m] = cli_json(("check", "--format", "json", "--method", m,
                               p.pid), agent_env(runtime))
        if text:
            r = cli(("check", "--method", "fork", p.pid), agent_env(runtime))
            out["text"] = r.stdout.decode()
    finally:
        p.stdin.close()
        p.wait(timeout=30)
    return out


def libjemalloc():
    """Debian's libjemalloc.so.2 (libjemalloc2), or Skip."""
    for d in ("/usr/lib/x86_64-linux-gnu", "/usr/lib64", "/usr/lib"):
        p = os.path.join(d, "libjemalloc.so.2")
        if os.path.exists(p):
            return p
    raise Skip("libjemalloc.so.2 is not installed (Debian libjemalloc2)")


def ask(p, c, timeout=60):
    """Send command line c (bytes) to workload p's stdin; its answer,
    which must start with "done c", as words."""
    import select
    p.stdin.write(c + b"\n")
    p.stdin.flush()
    ready, _, _ = select.select([p.stdout], [], [], timeout)
    line = p.stdout.readline() if ready else b""
    if not line.startswith(b"done " + c):
        fail("the workload answering %r" % c, "done", line)
    return line.split()


def check_pid_json(pid, method, runtime, timeout=60):
    """`leakscope check --format json --method M --pause-budget 0 PID`
    (no pause budget: the method asked for is the one that runs)."""
    r = cli(("check", "--format", "json", "--method", method,
             "--pause-budget", "0", pid), agent_env(runtime), timeout)
    if r.returncode != 0:
        fail("check --method %s" % method, 0, r.describe())
    return json.loads(r.stdout)


def ptrace_allowed():
    """Skip unless this process may ptrace its children's siblings (Yama's
    ptrace_scope: 0, or 1 as root)."""
    try:
        with open("/proc/sys/kernel/yama/ptrace_scope") as f:
            scope = int(f.read())
    except OSError:
        scope = 0
    if scope >= 2 or (scope == 1 and os.geteuid() != 0):
        raise Skip("ptrace is not allowed here (kernel.yama.ptrace_scope=%d)" % scope)


def valgrind_run(vg, argv, input=b"", timeout=120, heuristics=False):
    """memcheck --leak-check=full --show-leak-kinds=all on argv, at exit:
    its loss records (valgrind_records); with heuristics, also its "of
    which reachable via heuristic" lines: {name: (bytes, blocks)}."""
    r = run_process([vg, "--leak-check=full", "--show-leak-kinds=all"]
                    + list(argv), input=input, timeout=timeout)
    text = r.stderr.decode("utf-8", "replace")
    if not heuristics:
        return valgrind_records(text)
    heur = {}
    for m in re.finditer(r"(stdstring|length64|newarray|multipleinheritance)"
                         r"\s*: ([\d,]+) bytes in ([\d,]+) blocks", text):
        heur[m.group(1)] = (int(m.group(2).replace(",", "")),
                            int(m.group(3).replace(",", "")))
    return valgrind_records(text), heur


def valgrind_heap_usage(argv, timeout=120):
    """memcheck's "total heap usage: A allocs, F frees, B bytes allocated"
    for argv (skipped without valgrind): (A, F, B).  realloc counts as an
    alloc and a free; free(NULL) is not counted."""
    vg = need("valgrind")
    r = run_process([vg, "--leak-check=no"] + list(argv), timeout=timeout)
    m = re.search(r"total heap usage: ([\d,]+) allocs, ([\d,]+) frees, ([\d,]+) bytes allocated",
                  r.stderr.decode("utf-8", "replace"))
    if not m:
        fail("valgrind's total heap usage line", "present", shorten(r.stderr))
    return tuple(int(g.replace(",", "")) for g in m.groups())


def expect_same_records(ours, theirs, where, only=None):
    """Per site function, the same loss records; only: those functions."""
    if only is not None:
        ours = {k: v for k, v in ours.items() if k in only}
        theirs = {k: v for k, v in theirs.items() if k in only}
    eq(sorted(ours), sorted(theirs), "%s: sites with records" % where)
    for fn in ours:
        eq(ours[fn], theirs[fn], "%s: records of %s" % (where, fn))
