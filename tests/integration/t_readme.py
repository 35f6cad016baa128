"""README.md's examples still say what the binary prints: each `$ command`
of a README block is run as shown (in a directory holding the demo program,
build/ on the PATH) and every output line the README shows must have the
shape of a line the command printed: the same text with its numbers
replaced, in the same order ("..." stands for lines left out).  A line
"exit status N" must match exactly."""
import glob
import importlib.util
import json
import os
import re
import shutil
import signal
import subprocess
import tempfile
import time

from harness import check, once, at_file_end, ROOT, BUILD, eq, ok, fail, ptrace_allowed

DEMO = os.path.join(BUILD, "demo", "leaky-server")
NUMBER = re.compile(r"0x[0-9a-f]+|[0-9]+(?:\.[0-9]+)?")


# Words that change from run to run: the call attach stopped a thread at.
SAFE_POINT = re.compile(r"\(thread \d+ [^)]*\)")


def shape(line):
    return NUMBER.sub("N", SAFE_POINT.sub("(thread T at its safe point)", line.rstrip()))


def blocks():
    """[[(command, [shown output lines])]] for every README block whose
    lines start with '$ '."""
    with open(os.path.join(ROOT, "README.md")) as f:
        text = f.read()
    out = []
    for body in re.findall(r"^```\n(.*?)^```$", text, re.S | re.M):
        if not body.startswith("$ "):
            continue
        steps = []
        for line in body.splitlines():
            if line.startswith("$ "):
                steps.append((line[2:], []))
            else:
                steps[-1][1].append(line)
        out.append(steps)
    return out


def in_order(shown, printed, what):
    """Every shown line's shape among the printed lines' shapes, in order."""
    got = [shape(l) for l in printed]
    at = 0
    for line in shown:
        if line.strip() == "...":
            continue
        want = line.rstrip() if line.startswith("exit status") else shape(line)
        pool = [l.rstrip() for l in printed] if line.startswith("exit status") else got
        try:
            at = pool.index(want, at) + 1
        except ValueError:
            fail("%s: a line shaped like the README's" % what, line,
                 "\n".join(printed[:60]))


class Session:
    """The shell the README's reader types into: one directory, the
    programs started with '&' tracked and killed at the end."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="leakscope-readme-")
        os.symlink(DEMO, os.path.join(self.dir, "leaky-server"))
        self.env = dict(os.environ, PATH=BUILD + ":" + os.environ.get("PATH", ""))
        self.env.pop("LEAKSCOPE_AGENT", None)
        self.background = []
        self.last = None        # $!
        self.server = None      # $(pidof leaky-server): the traced demo

    def pid_of_server(self, parent):
        """The leaky-server process below a `leakscope run` parent."""
        end = time.time() + 10
        while time.time() < end:
            for pid in os.listdir("/proc"):
                if not pid.isdigit():
                    continue
                try:
                    with open("/proc/%s/stat" % pid) as f:
                        st = f.read()
                except OSError:
                    continue
                if "(leaky-server)" in st and int(st.rsplit(")", 1)[1].split()[1]) == parent:
                    return int(pid)
            time.sleep(0.05)
        fail("the traced leaky-server", "running", "not found")

    def wait_growing(self):
        """Until the traced demo has a site labelled growing (samples every
        0.2 s: about 2 s), as a reader who waits a moment has it."""
        end = time.time() + 30
        while time.time() < end:
            r = subprocess.run(["leakscope", "report", "--growing", "--format", "json",
                                str(self.server)], env=self.env, stdout=subprocess.PIPE,
                               stderr=subprocess.DEVNULL, timeout=30)
            if r.returncode == 0 and json.loads(r.stdout.decode())["sites"]:
                return
            time.sleep(0.3)
        fail("a growing site in the demo", "within 30 s", "none")

    def run(self, command):
        """(output lines) of one command."""
        command = re.sub(r"^sleep \d+$", "sleep 1", command)
        if self.server:
            command = command.replace("$(pidof leaky-server)", str(self.server))
        if self.last:
            command = command.replace("$!", str(self.last))
        if command.endswith("&"):
            # growth sampled every 0.2 s, so that trends come in 2 s, not 5
            p = subprocess.Popen(["sh", "-c", "exec " + command[:-1].strip()],
                                 cwd=self.dir, env=dict(self.env, LEAKSCOPE_PERIOD_MS="200"), stdout=subprocess.DEVNULL,
                                 stderr=subprocess.DEVNULL)
            self.background.append(p)
            self.last = p.pid
            if command.startswith("leakscope run"):
                self.server = self.pid_of_server(p.pid)
                self.wait_growing()
            else:
                time.sleep(1)
            return []
        r = subprocess.run(["sh", "-c", command], cwd=self.dir, env=self.env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, timeout=120)
        return r.stdout.decode("utf-8", "replace").splitlines()

    def close(self):
        for p in self.background:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
            try:
                p.wait(timeout=10)
            except subprocess.TimeoutExpired:
                p.kill()
                p.wait()
        if self.server:
            try:
                os.kill(self.server, signal.SIGKILL)
            except ProcessLookupError:
                pass
        shutil.rmtree(self.dir, ignore_errors=True)


@once
def session():
    if not os.path.exists(DEMO):
        fail("the demo program", DEMO, "missing: make tests builds it")
    s = Session()
    at_file_end(s.close)
    return s


@check("README: it shows the commands its blocks run, six blocks of examples")
def t_blocks():
    got = [[c for c, _ in b] for b in blocks()]
    eq(len(got), 6, "README example blocks: %s" % got)
    ok(all(c.split()[0] in ("leakscope", "./leaky-server", "sleep") for b in got for c in b),
       "each command is leakscope, the demo or sleep", str(got))


def check_block(index):
    b = blocks()[index]
    s = session()
    if s.server is None and any("$(pidof leaky-server)" in c for c, _ in b):
        # the demo the first live block started, as the reader has it
        live = next(x for x in blocks() if x[0][0].endswith("&"))
        s.run(live[0][0])
    for command, shown in b:
        printed = s.run(command)
        in_order(shown, printed, "README `%s`" % command)


@check("README: `leakscope run --top 3` on the demo prints the shown report's lines")
def t_run():
    check_block(0)


@check("README: the CI gate prints the shown lines and exits 99")
def t_ci():
    check_block(1)


@check("README: `report --growing` on the running demo prints the shown lines")
def t_growing():
    check_block(2)


@check("README: `check` on the running demo prints the shown LEAK SUMMARY")
def t_check():
    ptrace_allowed()
    check_block(3)


@check("README: `snapshot` then `diff` print the shown lines")
def t_diff():
    check_block(4)


@check("README: `attach` to a demo started without leakscope prints the shown lines")
def t_attach():
    ptrace_allowed()
    check_block(5)


@once
def tests_map():
    """tools/tests-map.py as a module: the commands and options it reads
    from --help."""
    spec = importlib.util.spec_from_file_location(
        "tests_map", os.path.join(ROOT, "tools", "tests-map.py"))
    tm = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tm)
    return tm


@check("tests/README.md lists every test file and every option of every command's --help")
def t_tests_readme():
    tm = tests_map()
    with open(os.path.join(ROOT, "tests", "README.md")) as f:
        text = f.read()
    opts = text.split("<!-- generated: options -->", 1)[1]
    missing = []
    for cmd in tm.commands():
        part = opts.split("### `leakscope %s`" % cmd, 1)
        for names, _ in tm.options(cmd):
            row = "| `%s` |" % ", ".join(names)
            if len(part) < 2 or row not in part[1].split("\n### ", 1)[0]:
                missing.append("%s %s" % (cmd, names[-1]))
    eq(missing, [], "options missing from tests/README.md (run python3 tools/tests-map.py)")
    files = [os.path.relpath(p, ROOT) for d, pat in (("unit", "t-*.c"), ("integration", "t_*.py"))
             for p in glob.glob(os.path.join(ROOT, "tests", d, pat))]
    eq(sorted(p for p in files if "`%s`" % p not in text), [],
       "test files missing from tests/README.md (run python3 tools/tests-map.py)")


def shown_invocations():
    """(file, command, [options]) of every `leakscope COMMAND ...` the README
    and the user guide show, in code blocks and in backquotes."""
    paths = [os.path.join(ROOT, "README.md")] + sorted(
        glob.glob(os.path.join(ROOT, "docs", "guide", "*.md")))
    out = []
    for path in paths:
        with open(path) as f:
            text = f.read()
        pieces = re.findall(r"^```\n(.*?)^```$", text, re.S | re.M)
        pieces = [l for b in pieces for l in b.splitlines()]
        pieces += re.findall(r"`([^`\n]*leakscope [^`\n]*)`", text)
        for piece in pieces:
            # at the start of a command: a line, after a prompt, ;, &&, | or $(
            for m in re.finditer(r"(?:^\s*|\$ |# |; |&& |\| |\$\()leakscope ([a-z]+)"
                                 r"((?: +[^ #;|&]+)*)", piece):
                opts = []
                for tok in m.group(2).split():
                    if tok == "--":
                        break
                    if tok.startswith("--") and len(tok) > 2:
                        opts.append(tok.split("=", 1)[0].rstrip(",.)"))
                out.append((os.path.relpath(path, ROOT), m.group(1), opts))
    return out


@check("README and docs/guide: every `leakscope COMMAND --option` shown is a command and an option its --help lists")
def t_shown_options():
    tm = tests_map()
    cmds = set(tm.commands())
    known = {c: {n for names, _ in tm.options(c) for n in names} | {"--help"} for c in cmds}
    shown = shown_invocations()
    ok(len(shown) > 50, "invocations found in the docs", str(len(shown)))
    bad = sorted({"%s: leakscope %s %s" % (f, c, o)
                  for f, c, opts in shown if c in cmds for o in opts if o not in known[c]} |
                 {"%s: leakscope %s (no such command)" % (f, c)
                  for f, c, _ in shown if c not in cmds})
    eq(bad, [], "commands and options the docs show that --help does not list")
