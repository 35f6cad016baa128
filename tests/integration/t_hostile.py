"""Hostile snapshots and post-mortem files through the real command (the
production build, not the fuzzers' sanitized one).

Every regression input the fuzzers of tests/fuzz/ found
(tests/fuzz/corpus/*/regress-*, docs/SECURITY.md "Findings fixed"), with
its END record made to agree as the fuzzers make it, goes through
`report` in every format, `diff` and `olds`: each answers (0) or refuses
with one 'leakscope:' line (1), never dies of a signal.  And the readers'
bound on figures (2^60 summed over the sites, lib/snapshot.h) is exact:
a site that brings the sum to 2^60 is reported, one byte more is refused
with one line."""

import glob
import os
import struct
import tempfile

from harness import check, cli, exit_snapshot, eq, ok, contains, ROOT

CORPUS = os.path.join(ROOT, "tests", "fuzz", "corpus")
TAG_MODULE, TAG_SITE, TAG_END = 6, 7, 0xffff
MODULE_SIZE = 72        # sizeof(struct lsnap_module): the path follows
MUL = 0x9e3779b97f4a7c15
MASK = (1 << 64) - 1
FORMATS = ["text", "json", "folded", "svg", "pprof", "memleak"]


def mix(h, w):
    h = ((h ^ w) * MUL) & MASK
    return h ^ (h >> 32)


def lsnap_hash(data):
    """common/lsnap.h's version 2 hash, written again from its comment."""
    h, n = 0xcbf29ce484222325, len(data)
    whole = n - n % 8
    for i in range(0, whole, 8):
        h = mix(h, int.from_bytes(data[i:i + 8], "little"))
    if n % 8:
        h = mix(h, int.from_bytes(data[whole:] + bytes(8 - n % 8), "little"))
    return mix(h, n)


def fixed(data):
    """data with its END record's count and hash made to agree with the
    records before it, and module paths blanked (tests/fuzz/fuzz-util.c's
    fuzz_fix_snapshot_blank, for a version 2 snapshot)."""
    out, off, count = bytearray(data), 16, 0
    while len(out) - off >= 8:
        tag, ln = struct.unpack_from("<II", out, off)
        if tag == TAG_END:
            if len(out) - off - 8 >= 16:
                struct.pack_into("<I", out, off + 8, count)
                struct.pack_into("<Q", out, off + 16, lsnap_hash(bytes(out[:off])))
            break
        if ln > len(out) - off - 8:
            break
        if tag == TAG_MODULE and ln > MODULE_SIZE:
            out[off + 8 + MODULE_SIZE:off + 8 + ln] = b"_" * (ln - MODULE_SIZE)
        off += 8 + ln
        count += 1
    return bytes(out)


def answered(r, what):
    """0, or 1 with one 'leakscope:' line; never a signal."""
    lines = [l for l in r.stderr.decode("utf-8", "replace").splitlines() if l]
    ok(r.returncode in (0, 1), "%s: exit status 0 or 1" % what, r.returncode)
    if r.returncode == 1:
        ok(len(lines) == 1 and lines[0].startswith("leakscope: "),
           "%s: one 'leakscope:' line" % what, lines[:3])


def regress_snapshots(tmp):
    """The regression inputs that are snapshots, fixed, as files."""
    out = []
    for path in sorted(glob.glob(os.path.join(CORPUS, "snapshot", "regress-*")) +
                       glob.glob(os.path.join(CORPUS, "web", "regress-*"))):
        with open(path, "rb") as f:
            data = f.read()
        if b"\n@SNAP\n" in data:
            data = data.split(b"\n@SNAP\n", 1)[1]
        name = os.path.join(tmp, os.path.basename(path) + ".lsnap")
        with open(name, "wb") as f:
            f.write(fixed(data))
        out.append(name)
    return out


@check("hostile inputs: the fuzzers' regression snapshots and post-mortem files are reported or refused with one line in every format, diff and olds")
def t_regressions():
    tmp = tempfile.mkdtemp(prefix="leakscope-hostile-")
    snaps = regress_snapshots(tmp)
    pms = sorted(glob.glob(os.path.join(CORPUS, "postmortem", "regress-*")))
    ok(len(snaps) >= 4 and len(pms) >= 3, "regression inputs found",
       (snaps, pms))
    for src in snaps + pms:
        what = os.path.basename(src)
        pm = ["--postmortem"] if src.endswith(".pm") else []
        for fmt in FORMATS:
            r = cli(["report"] + pm + [src, "--format", fmt, "--output",
                                      os.path.join(tmp, "out")])
            answered(r, "%s --format %s" % (what, fmt))
        if not pm:
            answered(cli(["diff", src, src]), "diff %s" % what)
            answered(cli(["olds", src]), "olds %s" % what)


def site_offsets(data):
    """Offsets of the live_bytes field of every SITE record."""
    off, out = 16, []
    while off < len(data):
        tag, ln = struct.unpack_from("<II", data, off)
        if tag == TAG_SITE:
            out.append(off + 8 + 16)
        if tag == TAG_END:
            break
        off += 8 + ln
    return out


@check("hostile inputs: figures summing to exactly 2^60 are reported, one byte more is refused with one line")
def t_figure_bound():
    prog, path = exit_snapshot("basic")
    with open(path, "rb") as f:
        data = f.read()
    sites = site_offsets(data)
    others = sum(abs(struct.unpack_from("<q", data, o)[0]) for o in sites[1:])
    ok(len(sites) >= 4 and others > 0, "basic's sites", (len(sites), others))
    for extra, status in ((0, 0), (1, 1)):
        bad = bytearray(data)
        struct.pack_into("<q", bad, sites[0], (1 << 60) - others + extra)
        out = path + ".%d" % extra
        with open(out, "wb") as f:
            f.write(fixed(bytes(bad)))
        r = cli(["report", out, "--format", "json"])
        eq(r.returncode, status, "2^60 %+d: exit status (%s)" %
           (extra, r.stderr.decode().strip()))
        if status:
            answered(r, "2^60 + 1")
            contains(r.stderr.decode(), "figures add up to more than 2^60",
                     "the reason")
