"""gopprof.py - Debian's `go tool pprof`, run offline, for the checks of
the pprof output (t_pprof.py, t_diff.py).

Every run has -symbolize=none (the profiles are symbolized already; pprof
must not look for binaries or servers) and a private HOME, GOCACHE and
PPROF_TMPDIR under a temporary directory.  Without Go the checks that need
it are skipped with the reason.
"""
import os
import re
import shutil
import tempfile

from harness import once, fail, run_process, Failure, Skip, shorten, _TMPDIRS


@once
def go_env():
    if not shutil.which("go"):
        raise Skip("go is not installed (Debian golang-go): no go tool pprof")
    home = tempfile.mkdtemp(prefix="leakscope-gohome-")
    _TMPDIRS.append(home)
    env = dict(os.environ)
    env.update({"HOME": home, "GOCACHE": os.path.join(home, "cache"),
                "GOFLAGS": "", "GOPROXY": "off", "GOTOOLCHAIN": "local",
                "PPROF_TMPDIR": home, "PPROF_BINARY_PATH": home})
    return env


def pprof(*args):
    """`go tool pprof -symbolize=none ARGS`: stdout as text."""
    argv = ["go", "tool", "pprof", "-symbolize=none"] + [str(a) for a in args]
    r = run_process(argv, timeout=120, env=go_env())
    if r.returncode != 0:
        fail("go tool pprof %s" % " ".join(map(str, args)), "status 0",
             r.describe())
    return r.stdout.decode("utf-8", "replace")


TOP_ROW = re.compile(r"^\s*(\S+)\s+\S+%\s+\S+%\s+(\S+)\s+\S+%\s+(.+?)\s*$")


def number(text):
    m = re.fullmatch(r"(-?\d+)B?", text)
    if not m:
        raise Failure("unexpected pprof figure %r (expected plain units)" % text)
    return int(m.group(1))


def pprof_top(path, index, *extra):
    """{function: (flat, cum)} from go tool pprof -top, all nodes; extra
    options (-base FILE) go before the profile."""
    out = {}
    text = pprof("-top", "-nodecount=100000", "-nodefraction=0",
                 "-edgefraction=0", "-unit=B" if "space" in index else
                 "-unit=count", "-sample_index=" + index, *extra, path)
    rows = False
    for line in text.splitlines():
        if line.strip().startswith("flat"):
            rows = True
            continue
        m = TOP_ROW.match(line) if rows else None
        if m:
            name = re.sub(r" \(inline\)$", "", m.group(3))
            flat, cum = number(m.group(1)), number(m.group(2))
            old = out.get(name, (0, 0))
            out[name] = (old[0] + flat, max(old[1], cum, key=abs))
    if not out:
        fail("go tool pprof -top rows", "some", shorten(text))
    return out
