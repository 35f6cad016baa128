"""The command-line layer: one option parser for every command (options in
any position, one error style, one usage status), the output writer (whole
file or nothing; devices, FIFOs and links to devices written in place;
`-` is stdout; a killed writer leaves nothing), every source the library
knows accepted by watch and top, and the manual page.

Ground truth: tests/workloads/growth.c runs for the seconds it is given,
with sites of known shape (site_g_linear leaks steadily), so a snapshot of
it has known sites and a known pid; cxx-leaks.cc has C++ template frames.
"""
import json
import os
import re
import signal
import stat
import subprocess
import tempfile
import threading
import time

from harness import agent_env, wait_socket
from harness import (cli, check, once, workload, eq, ok, contains, fail,
                     run_process, at_file_end, LEAKSCOPE, BUILD, Failure, ROOT)

AGENT = os.path.join(BUILD, "libleakscope.so")
RUNTIME = tempfile.mkdtemp(prefix="leakscope-cli-")
os.chmod(RUNTIME, 0o700)
USAGE = 125
FAILED = 1
COMMANDS = ["run", "report", "olds", "stats", "reset", "snapshot", "watch",
            "top", "help"]


def env():
    return agent_env(RUNTIME)


def ls(*args, timeout=60, input=None):
    return cli(args, env(), timeout, input)


def one_error(r, what, needle="", status=USAGE):
    err = r.stderr.decode()
    lines = [l for l in err.splitlines() if l.strip()]
    eq(r.returncode, status, "%s: exit status" % what)
    ok(len(lines) == 1 and lines[0].startswith("leakscope: "),
       "%s: exactly one 'leakscope:' line on stderr" % what, err)
    contains(lines[0], needle, what)
    return lines[0]


@once
def target():
    """A running growth.c with its agent, and a snapshot file of it."""
    e = env()
    e["LD_PRELOAD"] = AGENT
    p = subprocess.Popen([workload("growth"), "40"], env=e,
                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                         start_new_session=True)
    at_file_end(lambda: (p.kill(), p.wait()))
    if not wait_socket(RUNTIME, p.pid, 3):
        p.kill()
        raise Failure("the agent of pid %d never opened its socket" % p.pid)
    time.sleep(1.5)
    snap = os.path.join(RUNTIME, "growth.lsnap")
    r = ls("snapshot", p.pid, "-o", snap)
    if r.returncode:
        p.kill()
        fail("snapshot of growth", 0, r.describe())
    return p, snap


def json_out(r, what):
    if r.returncode:
        fail(what, "status 0", r.describe())
    return json.loads(r.stdout.decode())


# ------------------------------------------------------------ the parser

@check("parser: options after the target (stats PID --format json) as before it")
def t_options_anywhere():
    p, snap = target()
    after = json_out(ls("stats", p.pid, "--format", "json"), "stats PID --format json")
    before = json_out(ls("stats", "--format", "json", p.pid), "stats --format json PID")
    eq((after["pid"], after["format"]), (p.pid, "leakscope-stats"), "stats after")
    eq((before["pid"], before["format"]), (p.pid, "leakscope-stats"), "stats before")
    rep = json_out(ls("report", snap, "--format=json", "--top", "1"),
                   "report FILE --format=json --top 1")
    eq(len(rep["sites"]), 1, "--top 1 after the file keeps one site")


@check("parser: an unknown option is one line and status 125 in every command")
def t_unknown_everywhere():
    for cmd in COMMANDS:
        line = one_error(ls(cmd, "--no-such-option"), cmd, "--no-such-option")
        contains(line, "leakscope %s --help" % cmd, "%s points to its help" % cmd)


@check("parser: bad values and missing values name the option, status 125")
def t_bad_values():
    p, snap = target()
    one_error(ls("report", snap, "--top=abc"), "--top=abc", "'abc' for --top")
    one_error(ls("report", snap, "--format", "yaml"), "--format yaml",
              "expected one of text, json, folded")
    one_error(ls("stats", snap, "--format", "folded"), "stats --format folded",
              "expected one of text, json")
    one_error(ls("report", snap, "--format"), "--format at the end",
              "needs a value")
    one_error(ls("report", snap, "--show-allocs=yes"), "--show-allocs=yes",
              "takes no value")
    one_error(ls("report"), "report without a target", "expected one PID or FILE")
    one_error(ls("reset", snap), "reset FILE", "is not a pid")
    one_error(ls("olds", snap, "3", "4"), "olds with two counts", "expected")
    one_error(ls("report", snap, "--depth", "0"), "--depth 0", "1 to 256")


@check("parser: --help and -h print the command's help from its table, status 0")
def t_help():
    for cmd in COMMANDS:
        for flag in ("--help", "-h"):
            r = ls(cmd, flag)
            eq(r.returncode, 0, "%s %s status" % (cmd, flag))
            out = r.stdout.decode()
            ok(out.startswith("usage: leakscope %s " % cmd), "%s %s usage line" % (cmd, flag), out[:200])
    out = ls("report", "--help").stdout.decode()
    for opt in ("--format FORMAT", "--output FILE", "--top N", "--depth N",
                "--postmortem", "--growing"):
        contains(out, opt, "report --help lists " + opt)
    top = ls("--help").stdout.decode()
    for cmd in COMMANDS:
        contains(top, "\n  %s " % cmd, "leakscope --help lists " + cmd)
    contains(top, "125", "leakscope --help states the exit statuses")


@check("parser: '--' ends the options: what follows is an argument")
def t_double_dash():
    one_error(ls("report", "--", "--top"), "report -- --top",
              "cannot open '--top'", FAILED)


# ------------------------------------------------------ the output writer

def report_to(path, *extra):
    p, snap = target()
    return ls("report", snap, "--format", "json", "--output", path, *extra)


@check("output: /dev/null is written in place and stays a device")
def t_dev_null():
    r = report_to("/dev/null")
    eq(r.returncode, 0, "status: " + r.stderr.decode())
    ok(stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null is still a device")


@check("output: /dev/full gives one line naming the file and ENOSPC, status 1")
def t_dev_full():
    one_error(report_to("/dev/full"), "--output /dev/full",
              "cannot write '/dev/full': No space left on device", FAILED)


@check("output: a FIFO is written in place (the reader gets the whole report)")
def t_fifo():
    d = tempfile.mkdtemp(dir=RUNTIME)
    fifo = os.path.join(d, "pipe")
    os.mkfifo(fifo)
    got = {}

    def reader():
        with open(fifo, "rb") as f:
            got["data"] = f.read()
    t = threading.Thread(target=reader)
    t.start()
    r = report_to(fifo)
    t.join(30)
    eq(r.returncode, 0, "status: " + r.stderr.decode())
    ok(stat.S_ISFIFO(os.stat(fifo).st_mode), "the FIFO is still a FIFO")
    rep = json.loads(got.get("data", b"{}").decode())
    eq(rep.get("format"), "leakscope-report", "the reader got the report")
    eq(sorted(os.listdir(d)), ["pipe"], "nothing else in the directory")


@check("output: a symlink to a device is written through, a symlink to a file is kept")
def t_symlinks():
    d = tempfile.mkdtemp(dir=RUNTIME)
    to_dev = os.path.join(d, "null")
    os.symlink("/dev/null", to_dev)
    eq(report_to(to_dev).returncode, 0, "report to a link to /dev/null")
    ok(os.path.islink(to_dev), "the link to /dev/null is still a link")
    ok(stat.S_ISCHR(os.stat("/dev/null").st_mode), "/dev/null is still a device")
    real = os.path.join(d, "real.json")
    with open(real, "w") as f:
        f.write("old")
    link = os.path.join(d, "link.json")
    os.symlink("real.json", link)
    eq(report_to(link).returncode, 0, "report to a link to a file")
    ok(os.path.islink(link), "the link is kept")
    with open(real) as f:
        eq(json.load(f)["format"], "leakscope-report", "the linked file got the report")
    eq(sorted(os.listdir(d)), ["link.json", "null", "real.json"],
       "no temporary file left")


@check("output: '-' is stdout; a failing report leaves an existing file as it was")
def t_stdout_and_atomic():
    eq(json.loads(report_to("-").stdout.decode())["format"], "leakscope-report",
       "--output - writes to stdout")
    d = tempfile.mkdtemp(dir=RUNTIME)
    out = os.path.join(d, "report.txt")
    with open(out, "w") as f:
        f.write("previous\n")
    p, snap = target()
    # A post-mortem file has no block list: filtering by age fails once
    # the output is open, and the previous file must stay whole.
    pm = os.path.join(RUNTIME, "%d.pm" % p.pid)
    for _ in range(50):     # until a growth sample has seen the leak
        rep = json.loads(ls("report", pm, "--format", "json").stdout.decode())
        if rep["sites"]:
            break
        time.sleep(0.1)
    r = ls("report", pm, "--min-age", "1", "--output", out)
    one_error(r, "report PMFILE --min-age", "no block list", FAILED)
    with open(out) as f:
        eq(f.read(), "previous\n", "the old file is untouched")
    eq(sorted(os.listdir(d)), ["report.txt"], "no temporary left")


@check("output: `run --output` killed with SIGKILL leaves neither FILE nor FILE.tmp.PID")
def t_killed_writer():
    d = tempfile.mkdtemp(dir=RUNTIME)
    out = os.path.join(d, "report.txt")
    p = subprocess.Popen([LEAKSCOPE, "run", "--output", out, "--", "sleep", "30"],
                         env=env(), stdout=subprocess.DEVNULL,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        time.sleep(1.0)
        eq(p.poll(), None, "leakscope run is still running")
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(10)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    eq(sorted(os.listdir(d)), [], "files left by the killed writer")


# ------------------------------------------------------------ the sources

@check("sources: watch and top read a saved snapshot as they read a pid")
def t_watch_top_files():
    p, snap = target()
    r = ls("top", snap, "--count", "1")
    eq(r.returncode, 0, "top FILE status: " + r.stderr.decode())
    contains(r.stdout.decode(), "leakscope top - pid %d" % p.pid, "top FILE header")
    contains(r.stdout.decode(), "site_g_linear", "top FILE names the leaking site")
    r = ls("watch", snap, "--interval", "0.1", "--slices", "2")
    eq(r.returncode, 0, "watch FILE status: " + r.stderr.decode())
    eq(r.stdout.decode().count("[slice "), 2, "two slices of the file")
    # 2 slices are too few for a label: the file's own history gives them
    contains(r.stdout.decode(), "Trend from the agent's samples", "watch FILE summary")


@check("top --rows N: the N fastest growing sites of the default view, and no more")
def t_top_rows():
    p, snap = target()

    def rows(*extra):
        r = ls("top", snap, "--count", "1", *extra)
        eq(r.returncode, 0, "top %s status: %s" % (" ".join(extra), r.stderr.decode()))
        lines = r.stdout.decode().splitlines()
        head = next(i for i, l in enumerate(lines) if l.lstrip().startswith("B/s"))
        return [l for l in lines[head + 1:] if l.strip()]
    every = rows()
    sites = json_out(ls("report", "--format", "json", snap), "report FILE")["sites_total"]
    eq(len(every), min(20, sites), "rows by default: every site up to 20")
    ok(len(every) > 2, "more sites than --rows 2 shows", "\n".join(every))
    eq(rows("--rows", "2"), every[:2], "--rows 2")
    eq(rows("-r", "1"), every[:1], "-r 1")


@check("frames: olds prints a stack's frames exactly as report does; inlined frames marked alike")
def t_frames_alike():
    p, snap = target()
    olds = ls("olds", snap, "1")
    eq(olds.returncode, 0, "olds FILE 1: " + olds.stderr.decode())
    frames = [l for l in olds.stdout.decode().splitlines() if l.startswith("\t\t")]
    ok(any("site_g_" in l for l in frames), "olds names a growth site", olds.stdout.decode())
    report = ls("report", snap).stdout.decode().splitlines()
    missing = [l for l in frames if l not in report]
    eq(missing, [], "olds frame lines that the report prints differently")
    r = run_process([LEAKSCOPE, "run", "--", workload("inlined")], env=env())
    eq(r.returncode, 0, "run inlined: " + r.stderr.decode()[-300:])
    inl = [l.strip() for l in r.stderr.decode().splitlines() if "(inlined)" in l]
    ok(inl and all(l.endswith("(inlined)") and "+0x" not in l for l in inl),
       "inlined frames end with ' (inlined)' and have no offset",
       "\n".join(inl[:5]))


# ------------------------------------------------------------ man page

@check("man page: `help --man` documents every command, option and format; make install installs it")
def t_man():
    r = ls("help", "--man")
    eq(r.returncode, 0, "help --man status")
    man = r.stdout.decode()
    ok(man.startswith(".TH LEAKSCOPE 1"), "a roff manual page", man[:80])
    for cmd in COMMANDS:
        contains(man, '.SS "leakscope %s ' % cmd, "section of " + cmd)
    for fmt in ("text", "json", "folded", "svg", "pprof", "memleak"):
        contains(man, ".B %s\n" % fmt, "format " + fmt)
    for var in ("LEAKSCOPE_RUNTIME_DIR", "LEAKSCOPE_AGENT", "LEAKSCOPE_UNWIND"):
        contains(man, ".TP\n.B " + var.replace("_", "_") + "\n", "environment " + var)
    contains(man, ".SH \"EXIT STATUS\"", "exit status section")
    ok("\n\\&." not in man, "no control line escaped into text", "")
    for cmd in COMMANDS:
        for line in ls(cmd, "--help").stdout.decode().splitlines():
            line = line.strip()
            if line.startswith("--") and not line.startswith("--help"):
                opt = line.split()[0].split("[")[0]
                contains(man, ".B " + opt.replace("-", "\\-"),
                         "man page has %s of %s" % (opt, cmd))
    prefix = tempfile.mkdtemp(prefix="leakscope-man-")
    r = run_process(["make", "-s", "-C", ROOT, "install", "PREFIX=" + prefix],
                    timeout=300)
    eq(r.returncode, 0, "make install: " + r.stderr.decode()[-300:])
    path = os.path.join(prefix, "share", "man", "man1", "leakscope.1")
    ok(os.path.exists(path), "installed " + path)
    with open(path) as f:
        eq(f.read(), man, "the installed page is the one `help --man` prints")


# ------------------------------------------------------ readable stacks

@once
def cxx_snapshot():
    d = tempfile.mkdtemp(dir=RUNTIME)
    r = run_process([LEAKSCOPE, "run", "--format", "json", "--output",
                     os.path.join(d, "r.json"), "--",
                     workload("cxx-leaks")], env=env())
    eq(r.returncode, 0, "run cxx-leaks: " + r.stderr.decode()[-300:])
    return os.path.join(d, "r.json")


def functions(rep):
    return [f.get("function") or "" for s in rep["sites"] for f in s["frames"]]


@check("stacks: C++ template arguments cut to <…> by default, whole with --full-names, in every view")
def t_short_names():
    rep = json.load(open(cxx_snapshot()))
    fns = functions(rep)
    ok(any("std::vector<…>::vector(" in f for f in fns),
       "std::vector's constructor shortened", "\n".join(fns[:20]))
    ok(not any("std::allocator<int>" in f for f in fns),
       "no template argument left by default", "\n".join(fns[:20]))
    r = run_process([LEAKSCOPE, "run", "--full-names", "--format", "json", "--",
                     workload("cxx-leaks")], env=env())
    full = [json.loads(l) for l in r.stderr.decode().splitlines()
            if l.startswith("{")][0]
    ok(any("std::allocator<int>" in f for f in functions(full)),
       "--full-names keeps them", "\n".join(functions(full)[:20]))
    r = run_process([LEAKSCOPE, "run", "--", workload("cxx-leaks")], env=env())
    contains(r.stderr.decode(), "std::vector<…>::vector(", "text report shortened too")


@check("stacks: --hide-runtime drops libc/libstdc++ frames around the program's own; --depth N on report")
def t_hide_runtime_depth():
    p, snap = target()
    rep = json_out(ls("report", snap, "--format", "json"), "report")
    hidden = json_out(ls("report", snap, "--format", "json", "--hide-runtime"),
                      "report --hide-runtime")
    tick = [s for s in rep["sites"] if any(f.get("function") == "site_g_linear"
                                           for f in s["frames"])][0]
    htick = [s for s in hidden["sites"] if s["live_bytes"] == tick["live_bytes"]
             and any(f.get("function") == "site_g_linear" for f in s["frames"])][0]
    mods = [os.path.basename(f.get("module") or "") for f in tick["frames"]]
    ok(any(m.startswith("libc.so") for m in mods), "the full stack ends in libc", repr(mods))
    hmods = [os.path.basename(f.get("module") or "") for f in htick["frames"]]
    eq([m for m in hmods if m.startswith("libc.so")], [], "no libc frame left")
    eq(htick["frames"][0]["function"], "site_g_linear",
       "innermost frame is the program's")
    eq([f["function"] for f in htick["frames"]],
       [f["function"] for f in tick["frames"] if f["function"] != "_start" and
        not os.path.basename(f.get("module") or "").startswith("libc.so")],
       "only the runtime frames went (libc's, and the start-up code _start)")
    two = json_out(ls("report", snap, "--format", "json", "--depth", "2"), "report --depth 2")
    eq(sorted({len(s["frames"]) for s in two["sites"]}), [2], "two frames per site")
    eq([f["function"] for f in [s for s in two["sites"]
        if s["live_bytes"] == tick["live_bytes"]][0]["frames"]],
       [f["function"] for f in tick["frames"][:2]], "the two innermost")


# ------------------------------------------------------ one vocabulary

ALL_COMMANDS = ["run", "report", "olds", "stats", "reset", "snapshot", "watch",
                "top", "check", "diff", "trace", "serve", "beam", "attach",
                "detach", "help"]
LABEL = re.compile(r"^  (?:-(\w), )?--([\w-]+)(?:\[?[ =](\S+?)\]?)?(?: {2,}(.*))?$")


def help_options(cmd):
    """{long name: (short, ARG, help text)} from `leakscope CMD --help`."""
    r = ls(cmd, "--help")
    eq(r.returncode, 0, "%s --help status" % cmd)
    text = r.stdout.decode()
    opts, last = {}, None
    for line in text.split("\noptions:\n", 1)[-1].split("\n\n")[0].splitlines():
        m = LABEL.match(line)
        if m and m.group(2) != "help":
            last = m.group(2)
            opts[last] = [m.group(1), m.group(3), m.group(4) or ""]
        elif m:
            last = None
        elif last and line.startswith("   "):
            opts[last][2] += " " + line.strip()
    return opts, text


def meaning(help_text):
    """What an option does, without this command's remarks: parenthesized
    parts dropped, up to the first colon (a list of values follows)."""
    t = help_text
    while True:
        s = re.sub(r"\([^()]*\)", "", t)
        if s == t:
            break
        t = s
    return " ".join(t.split(":")[0].split())


@check("vocabulary: in every command's --help one name has one meaning and one value, one meaning has one name, a short name one long name (memleak's under trace, said so)")
def t_help_vocabulary():
    seen, bad = {}, []
    shorts = {}
    texts = {}
    for cmd in ALL_COMMANDS:
        opts, texts[cmd] = help_options(cmd)
        ok(opts or cmd in ("reset", "detach"), "%s --help lists options" % cmd, texts[cmd])
        for name, (short, arg, text) in opts.items():
            seen.setdefault(name, []).append((cmd, arg, meaning(text)))
            if short and cmd != "trace":
                shorts.setdefault(short, set()).add(name)
    for name, uses in seen.items():
        if len({arg for _, arg, _ in uses}) > 1:
            bad.append("--%s takes different values: %s" % (name, uses))
        if len({m for _, _, m in uses}) > 1:
            bad.append("--%s has two meanings: %s" % (name, uses))
    by_meaning = {}
    for name, uses in seen.items():
        for _, _, m in uses:
            by_meaning.setdefault(m, set()).add(name)
    for m, names in by_meaning.items():
        if len(names) > 1:
            bad.append("one meaning, several names %s: %r" % (sorted(names), m))
    for short, names in shorts.items():
        if len(names) > 1:
            bad.append("-%s names %s" % (short, sorted(names)))
    eq(bad, [], "vocabulary conflicts")
    # The shared options exist where the brief of each command says.
    for cmd in ("report", "olds", "check", "diff", "watch", "trace", "beam", "run"):
        for name in ("output", "format"):
            ok(name in help_options(cmd)[0] or (cmd == "olds" and name == "format"),
               "%s takes --%s" % (cmd, name), texts[cmd][:300])
    for cmd in ("report", "check", "diff", "run", "trace"):
        ok("by" in help_options(cmd)[0], "%s takes --by" % cmd)
    eq(help_options("watch")[0]["count"][0], "n", "watch counts with -n, --count")
    eq(help_options("top")[0]["count"][0], "n", "top counts with -n, --count")
    contains(texts["trace"], "bcc memleak's", "trace --help says its short options are memleak's")
    contains(texts["trace"], "-o is --min-age", "trace --help says what -o is")
    eq(help_options("trace")[0]["min-age"][0], "o", "trace -o is --min-age")
    eq(help_options("report")[0]["output"][0], "o", "report -o is --output")


@check("vocabulary: docs/OPTIONS.md is what `leakscope help --markdown` generates from the tables")
def t_options_page():
    r = ls("help", "--markdown")
    eq(r.returncode, 0, "help --markdown status")
    with open(os.path.join(ROOT, "docs", "OPTIONS.md")) as f:
        page = f.read()
    if page != r.stdout.decode():
        import difflib
        fail("docs/OPTIONS.md", "the generated page (make it with "
             "'leakscope help --markdown > docs/OPTIONS.md')",
             "".join(list(difflib.unified_diff(page.splitlines(True),
                                               r.stdout.decode().splitlines(True)))[:40]))
    for cmd in ALL_COMMANDS:
        contains(page, "\n## leakscope %s\n" % cmd, "a table for " + cmd)
    for fmt, mime in (("memleak", "text/plain"), ("svg", "image/svg+xml"),
                      ("json", "application/json")):
        contains(page, "| `%s` | `%s" % (fmt, mime), "format %s with its media type" % fmt)


@check("trace -o: memleak's --older (ms); `trace --format svg -o out.svg` is one line naming the conflict and --output, nothing written")
def t_trace_o():
    d = tempfile.mkdtemp(dir=RUNTIME)
    out = os.path.join(d, "out.svg")
    line = one_error(ls("trace", "-p", "1", "--format", "svg", "-o", out),
                     "trace -o FILE", "for -o (--min-age, memleak's --older)")
    contains(line, "the report's file is --output FILE", "the error points to --output")
    eq(os.listdir(d), [], "nothing written")
    one_error(ls("trace", "-p", "1", "--older", "x"), "trace --older x", "for --min-age")
    one_error(ls("report", "--older", "5", "x"), "report --older",
              "unknown option '--older'")


@check("watch --format json: one JSON object per slice and one for the trends, a line each; --count (-n) and --slices alike; --output FILE 0600")
def t_watch_json():
    p, snap = target()
    stats = json_out(ls("stats", snap, "--format", "json"), "stats FILE")
    r = ls("watch", snap, "--interval", "0.05", "--count", "3", "--format", "json")
    eq(r.returncode, 0, "watch --format json: " + r.stderr.decode())
    lines = r.stdout.decode().splitlines()
    objs = [json.loads(l) for l in lines]
    eq([o["type"] for o in objs], ["slice"] * 3 + ["trends"], "three slices, then the trends")
    eq([o["slice"] for o in objs[:3]], [1, 2, 3], "slices numbered")
    for o in objs[:3]:
        eq((o["live_bytes"], o["live_blocks"], o["changed"]),
           (stats["totals"]["live_bytes"], stats["totals"]["live_blocks"], []),
           "a file read again: the same totals, no site changed")
    eq(objs[3]["from"], "agent-history", "too few slices: the agent's own samples")
    text = ls("watch", snap, "--interval", "0.05", "--count", "3")
    rows = [l.split() for l in text.stdout.decode().splitlines()
            if l.startswith("\t") and " B/s " in l]
    eq([(s["trend"], s["live_bytes"]) for s in objs[3]["sites"]],
       [(r[0], int(r[3])) for r in rows], "the trends as the text summary lists them")
    ok(any("site_g_linear" in s["where"] for s in objs[3]["sites"]),
       "the leaking site is listed", repr(objs[3]))
    for args in (["-n", "3"], ["--slices", "3"]):
        r2 = ls("watch", snap, "--interval", "0.05", "--format", "json", *args)
        eq([json.loads(l)["type"] for l in r2.stdout.decode().splitlines()],
           ["slice"] * 3 + ["trends"], "watch %s" % " ".join(args))
    d = tempfile.mkdtemp(dir=RUNTIME)
    path = os.path.join(d, "w.json")
    r = ls("watch", snap, "--interval", "0.05", "-n", "1", "--format", "json",
           "--output", path)
    eq((r.returncode, r.stdout), (0, b""), "watch --output: status, nothing on stdout")
    eq(stat.S_IMODE(os.stat(path).st_mode), 0o600, "the file's mode")
    eq([json.loads(l)["type"] for l in open(path)], ["slice", "trends"], "the file's lines")


@check("top --format json: one object per refresh, the rows the screen shows; --output FILE 0600")
def t_top_json():
    p, snap = target()
    stats = json_out(ls("stats", snap, "--format", "json"), "stats FILE")
    r = ls("top", snap, "-n", "2", "-i", "0.05", "--rows", "3", "--format", "json")
    eq(r.returncode, 0, "top --format json: " + r.stderr.decode())
    objs = [json.loads(l) for l in r.stdout.decode().splitlines()]
    eq([o["type"] for o in objs], ["refresh", "refresh"], "two refreshes")
    eq((objs[0]["pid"], objs[0]["live_bytes"]), (p.pid, stats["totals"]["live_bytes"]),
       "the file's pid and live bytes")
    text = ls("top", snap, "-n", "1", "--rows", "3").stdout.decode().splitlines()
    rows = [l.split() for l in text if re.match(r"^ *[-+]\d+ ", l)]
    eq([(s["trend"], s["live_bytes"], s["live_blocks"]) for s in objs[0]["sites"]],
       [(r_[1], int(r_[2]), int(r_[3])) for r_ in rows], "the rows of the screen")
    d = tempfile.mkdtemp(dir=RUNTIME)
    path = os.path.join(d, "top.json")
    r = ls("top", snap, "-n", "1", "--format", "json", "-o", path)
    eq((r.returncode, r.stdout), (0, b""), "top -o: status, nothing on stdout")
    eq(stat.S_IMODE(os.stat(path).st_mode), 0o600, "the file's mode")
    eq(json.loads(open(path).read())["type"], "refresh", "the file's object")


@check("olds --format json: the blocks of the text listing, oldest first, with their stacks")
def t_olds_json():
    p, snap = target()
    doc = json_out(ls("olds", snap, "4", "--format", "json"), "olds --format json")
    eq((doc["format"], doc["pid"], len(doc["blocks"])), ("leakscope-olds", p.pid, 4),
       "head and count")
    text = ls("olds", snap, "4").stdout.decode()
    addrs = re.findall(r"\taddr (0x[0-9a-f]+) ", text) or \
        re.findall(r" addr (0x[0-9a-f]+) ", text)
    eq([b["address"] for b in doc["blocks"]], addrs, "the text's blocks, in order")
    ages = [b["age_ms"] for b in doc["blocks"]]
    eq(ages, sorted(ages, reverse=True), "oldest first")


@check("olds --output FILE: the same blocks as on stdout, in a new 0600 file")
def t_olds_output():
    p, snap = target()
    d = tempfile.mkdtemp(dir=RUNTIME)
    path = os.path.join(d, "olds.txt")
    r = ls("olds", snap, "3", "-o", path)
    eq((r.returncode, r.stdout), (0, b""), "olds -o: status, nothing on stdout")
    eq(stat.S_IMODE(os.stat(path).st_mode), 0o600, "the file's mode")
    eq(open(path, "rb").read(), ls("olds", snap, "3").stdout, "file = stdout")


@check("--widths bytes|blocks: the flame graph's measure; --count blocks, its older spelling, draws the same graph")
def t_widths():
    p, snap = target()
    new = ls("report", snap, "--format", "svg", "--widths", "blocks", "-o", "-")
    old = ls("report", snap, "--format", "svg", "--count", "blocks", "-o", "-")
    byte = ls("report", snap, "--format", "svg", "-o", "-")
    eq((new.returncode, old.returncode), (0, 0), "status")
    eq(new.stdout, old.stdout, "--widths blocks = --count blocks")
    ok(new.stdout != byte.stdout, "--widths blocks differs from bytes")
    one_error(ls("report", snap, "--widths", "pages"), "--widths pages",
              "expected bytes or blocks")
    one_error(ls("top", snap, "--count", "blocks"), "top --count blocks",
              "for --count: expected a positive number")
