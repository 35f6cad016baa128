#!/usr/bin/env python3
"""tools/report-compare.py - are two builds' reports byte-identical?

Renders every snapshot or post-mortem file given with both `leakscope`
binaries, with each of a set of report options (text with histograms,
orders, depths, cut and full names, the runtime hidden, --show-allocs,
--top; JSON, folded, memleak, pprof, SVG), and `leakscope diff` of each
pair of files given in a row, and compares the outputs byte for byte,
with the exit statuses and what went to stderr.

    python3 tools/report-compare.py OLD NEW FILE...

A file ending in .pm is read as a post-mortem file (--postmortem).
Prints each difference and the count of identical outputs; exits 0 when
all are identical, 1 when some differ, 2 on bad arguments.
"""

import os
import subprocess
import sys
import tempfile

OPTION_SETS = [
    [],
    ["--histogram", "--by", "peak"],
    ["--by", "allocated", "--show-allocs"],
    ["--by", "temporary", "--hide-runtime"],
    ["--full-names", "--top", "7"],
    ["--depth", "3"],
    ["--top", "100", "--histogram"],
    ["--format", "json"],
    ["--format", "json", "--histogram", "--by", "peak"],
    ["--format", "json", "--show-allocs", "--top", "50"],
    ["--format", "folded"],
    ["--format", "memleak"],
    ["--format", "pprof"],
    ["--format", "svg"],
]


def render(leakscope, cmd, out):
    """Output bytes, exit status and stderr of one command."""
    if os.path.exists(out):
        os.unlink(out)
    p = subprocess.run([leakscope] + cmd[:1] + ["-o", out] + cmd[1:],
                       stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    data = b""
    if os.path.exists(out):
        with open(out, "rb") as f:
            data = f.read()
    return data, p.returncode, p.stderr


def first_difference(a, b):
    n = min(len(a), len(b))
    i = next((k for k in range(n) if a[k] != b[k]), n)
    return "at byte %d of %d/%d" % (i, len(a), len(b))


def main():
    if len(sys.argv) < 4:
        sys.stderr.write("usage: report-compare.py OLD NEW FILE...\n")
        return 2
    old, new, files = sys.argv[1], sys.argv[2], sys.argv[3:]
    for f in [old, new] + files:
        if not os.path.exists(f):
            sys.stderr.write("report-compare.py: %s: not found\n" % f)
            return 2
    cmds = []
    for f in files:
        src = ["--postmortem", f] if f.endswith(".pm") else [f]
        cmds += [["report"] + opts + src for opts in OPTION_SETS]
    snaps = [f for f in files if not f.endswith(".pm")]
    cmds += [["diff", a, b] for a, b in zip(snaps, snaps[1:])]
    same = 0
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "out")
        for cmd in cmds:
            a = render(old, cmd, out)
            b = render(new, cmd, out)
            if a == b:
                same += 1
                continue
            what = "output %s" % first_difference(a[0], b[0]) \
                if a[0] != b[0] else "status %d/%d" % (a[1], b[1]) \
                if a[1] != b[1] else "stderr"
            print("DIFFERENT (%s): %s" % (what, " ".join(cmd)))
    print("%d of %d identical" % (same, len(cmds)))
    return 0 if same == len(cmds) else 1


if __name__ == "__main__":
    sys.exit(main())
