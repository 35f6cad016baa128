"""Snapshot format versions: the agent writes version 2 (END's hash 8
bytes a step, SITE_STATS without trailing empty buckets); the reader
still reads version 1 files, which agents wrote before, to the same
report; a damaged file of either version is refused with one line.

Version 1 files come two ways: made here from a fresh version 2
snapshot by an independent writer of the old format (FNV-1a a byte at a
time, every SITE_STATS with 32 buckets), and fixtures/snapshot-v1-sort.lsnap,
the exit snapshot the last version 1 agent (main at 6102060) wrote for
`printf 'pear\napple\nfig\n' | sort` with LEAKSCOPE_EXIT_BLOCKS=1; only the
agent's own module path in it was changed (to the install path, its END
hash recomputed), so that the file names no path of the machine it was
made on."""

import json
import os
import shutil
import struct
import tempfile

from harness import check, once, cli, exit_snapshot, eq, ok, contains

TAG_SITE_STATS = 21
TAG_END = 0xffff
BUCKETS = 32
FNV_INIT = 0xcbf29ce484222325
FNV_PRIME = 0x100000001b3
MASK = (1 << 64) - 1


def fnv1a(data):
    h = FNV_INIT
    for b in data:
        h = ((h ^ b) * FNV_PRIME) & MASK
    return h


def records(data):
    """(offset, tag, payload) of every record after the file header."""
    off, out = 16, []
    while off < len(data):
        tag, ln = struct.unpack_from("<II", data, off)
        out.append((off, tag, data[off + 8:off + 8 + ln]))
        off += 8 + ln
    return out


def as_version1(data):
    """The same snapshot as an agent of version 1 wrote it."""
    out = bytearray(data[:8]) + struct.pack("<II", 1, 0)
    nrec = 0
    for _, tag, p in records(data):
        if tag == TAG_END:
            break
        if tag == TAG_SITE_STATS:
            site, n = struct.unpack_from("<II", p, 0)
            hist = p[40:]
            size = hist[:8 * n] + bytes(8 * (BUCKETS - n))
            life = hist[8 * n:] + bytes(8 * (BUCKETS - n))
            p = struct.pack("<II", site, BUCKETS) + p[8:40] + size + life
        out += struct.pack("<II", tag, len(p)) + p
        nrec += 1
    out += struct.pack("<IIIIQ", TAG_END, 16, nrec, 0, fnv1a(out))
    return bytes(out)


@once
def snaps():
    """The peaks workload's exit snapshot (version 2), and as version 1."""
    prog, path = exit_snapshot("peaks")
    with open(path, "rb") as f:
        v2 = f.read()
    v1_path = path + ".v1.lsnap"
    with open(v1_path, "wb") as f:
        f.write(as_version1(v2))
    return prog, path, v2, v1_path


def report_json(path):
    r = cli(["report", "--format", "json", "--histogram", "--by",
             "allocated", path])
    eq(r.returncode, 0, "report %s" % path)
    return json.loads(r.stdout.decode())


@check("snapshot version 2: written by the agent, stats without trailing empty buckets")
def t_written():
    prog, path, v2, _ = snaps()
    eq(struct.unpack_from("<I", v2, 8)[0], 2, "file header's version")
    stats = [p for _, tag, p in records(v2) if tag == TAG_SITE_STATS]
    ok(len(stats) >= 4, "site stats records", len(stats))
    ns = [struct.unpack_from("<I", p, 4)[0] for p in stats]
    ok(max(ns) < BUCKETS, "every site's buckets end before 32 (peaks has no "
       "size or lifetime of 2^30)", ns)
    for p, n in zip(stats, ns):
        hist = struct.unpack_from("<%dQ" % (2 * n), p, 40)
        ok(n == 0 or hist[n - 1] or hist[2 * n - 1],
           "the last bucket kept is used by one of the histograms", hist)


@check("snapshot version 1 (FNV-1a, 32 buckets) reads to the same report as version 2")
def t_version1_same():
    prog, path, v2, v1_path = snaps()
    a, b = report_json(path), report_json(v1_path)
    eq(a, b, "JSON report of version 2 and of version 1")
    for fmt in ("text", "folded"):
        opts = ["report", "--format", fmt, "--by", "allocated"]
        opts += ["--histogram"] if fmt == "text" else []
        ra, rb = cli(opts + [path]), cli(opts + [v1_path])
        eq(ra.returncode, 0, "report --format %s" % fmt)
        eq(rb.stdout, ra.stdout, "%s report of both versions" % fmt)
    ok(len(a["sites"]) >= 4 and any(any(a["histogram"][k]) for k in
       ("sizes", "lifetimes")), "the report has sites and histograms",
       a["histogram"])


@check("snapshot versions: the size histograms hold the ground truth after the trim")
def t_hist_truth():
    prog, path, v2, v1_path = snaps()
    rep = report_json(v1_path)
    sizes = [0] * BUCKETS
    for s in rep["sites"]:
        if s["frames"] and s["frames"][0].get("function") == "keep_sized":
            for i, v in enumerate(s["size_histogram"]):
                sizes[i] += v
    eq((sizes[5], sizes[10], sizes[17]), (10, 20, 5),
       "keep_sized's size buckets 5, 10, 17 (peaks.c)")
    eq(sum(sizes), 35, "keep_sized's allocations in all")


def expect_refused(path, needle, what):
    r = cli(["report", path])
    eq(r.returncode, 1, "%s: exit status" % what)
    lines = [l for l in r.stderr.decode().splitlines() if l.strip()]
    ok(len(lines) == 1 and lines[0].startswith("leakscope: "),
       "%s: one 'leakscope:' line on stderr" % what, r.stderr.decode())
    contains(r.stderr.decode(), needle, what)
    eq(r.stdout, b"", "%s: nothing on stdout" % what)


@check("snapshot versions: a damaged value or hash is refused with one line, in either version")
def t_damaged():
    prog, path, v2, v1_path = snaps()
    with open(v1_path, "rb") as f:
        v1 = f.read()
    for name, data in (("version 2", v2), ("version 1", v1)):
        site = [off for off, tag, _ in records(data) if tag == 7][0]
        # A site's live bytes: a value no structural rule checks.
        bad = bytearray(data)
        bad[site + 8 + 16 + 2] ^= 0x01
        out = path + ".bad"
        with open(out, "wb") as f:
            f.write(bad)
        expect_refused(out, "corrupt snapshot: checksum mismatch "
                       "(damaged or altered)", "%s, live bytes" % name)
        bad = bytearray(data)
        bad[-1] ^= 0x80     # the hash itself
        with open(out, "wb") as f:
            f.write(bad)
        expect_refused(out, "checksum mismatch", "%s, the hash" % name)
        # The other version's hash over the same bytes.
        bad = bytearray(data)
        bad[8] = 3 - bad[8]
        with open(out, "wb") as f:
            f.write(bad)
        expect_refused(out, "checksum mismatch", "%s relabelled" % name)
    bad = bytearray(v2)
    bad[8] = 3
    with open(path + ".v3", "wb") as f:
        f.write(bad)
    expect_refused(path + ".v3", "unsupported snapshot version 3 (this "
                   "leakscope reads versions 1 to 2)", "version 3")


FIXTURE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "fixtures",
                       "snapshot-v1-sort.lsnap")


def parse_v1(data):
    """An independent reading of the fixture: per site id, (live bytes,
    live blocks, allocated bytes, allocated blocks, size histogram,
    lifetime histogram), and the TOTALS record."""
    sites, totals = {}, None
    for _, tag, p in records(data):
        if tag == 7:
            sid, kind, gen, nf, lb, lk, ab, ak = struct.unpack_from(
                "<IIIIqqQQ", p, 0)
            sites[sid] = [lb, lk, ab, ak, [0] * BUCKETS, [0] * BUCKETS]
        elif tag == TAG_SITE_STATS:
            sid, n = struct.unpack_from("<II", p, 0)
            h = struct.unpack_from("<%dQ" % (2 * n), p, 40)
            sites[sid][4][:n], sites[sid][5][:n] = h[:n], h[n:]
        elif tag == 4:
            totals = struct.unpack_from("<6Q", p, 0)
    return sites, totals


@check("snapshot version 1 written by the agent before version 2 (a committed file): every site's figures as the file holds them")
def t_fixture():
    with open(FIXTURE, "rb") as f:
        data = f.read()
    eq(struct.unpack_from("<I", data, 8)[0], 1, "the fixture's version")
    sites, totals = parse_v1(data)
    rep = report_json(FIXTURE)
    eq(rep["pid"], 2444, "pid")
    eq((rep["totals"]["live_bytes"], rep["totals"]["live_blocks"],
        rep["totals"]["allocated_bytes"], rep["totals"]["allocated_blocks"]),
       totals[:4], "totals")
    eq(len(rep["sites"]), len(sites), "sites listed (--by allocated)")
    got = {s["id"]: [s["live_bytes"], s["live_blocks"], s["allocated_bytes"],
                     s["allocated_blocks"], s["size_histogram"],
                     s["lifetime_histogram"]] for s in rep["sites"]}
    eq(got, sites, "every site's counters and histograms")
    bad = bytearray(data)
    bad[len(data) // 2] ^= 0x04
    out = os.path.join(tempfile.mkdtemp(prefix="leakscope-v1-"), "bad.lsnap")
    with open(out, "wb") as f:
        f.write(bad)
    r = cli(["report", out])
    eq(r.returncode, 1, "a damaged version 1 file: exit status")
    ok(r.stderr.decode().count("\n") == 1 and
       r.stderr.decode().startswith("leakscope: "),
       "a damaged version 1 file: one line", r.stderr.decode())
    shutil.rmtree(os.path.dirname(out))
