"""--format pprof: the gzip-compressed protobuf Profile read back by Debian's
`go tool pprof` and by a protobuf decoder of our own.

Ground truth: each workload runs once with the agent preloaded by hand and
writes its exit snapshot into a private directory (LEAKSCOPE_OUT_DIR);
`leakscope report SNAPSHOT` then renders that one snapshot both as JSON and
as pprof, so the two must agree to the byte, and the JSON itself is checked
against the figures the workload documents (basic.c, inlined.c,
cxx-leaks.cc, dlopen-leak.c).  `go tool pprof` runs offline
(-symbolize=none, HOME and GOCACHE in a temporary directory) and is skipped
with a reason when golang-go is not installed.
"""
import gzip
import json
import os
import re
import subprocess
import tempfile

from harness import (cli, check, once, workload, eq, ok, fail, contains,
                     run_process, marker_line, site_function, exit_snapshot,
                     need, LEAKSCOPE, Failure, Skip, shorten)
from gopprof import pprof, pprof_top

TMP = tempfile.mkdtemp(prefix="leakscope-pprof-")
SAMPLE_RATE = 4096


# ------------------------------------------------------------ protobuf

def varint(buf, i):
    v = shift = 0
    while True:
        b = buf[i]
        i += 1
        v |= (b & 0x7f) << shift
        shift += 7
        if b < 0x80:
            return v, i


def fields(buf):
    """[(field, value)] of one message: ints for varints, bytes for
    length-delimited fields; any other wire type is a failure."""
    out, i = [], 0
    while i < len(buf):
        key, i = varint(buf, i)
        wire = key & 7
        if wire == 0:
            v, i = varint(buf, i)
        elif wire == 2:
            n, i = varint(buf, i)
            v = bytes(buf[i:i + n])
            ok(len(v) == n, "field %d runs past its message" % (key >> 3))
            i += n
        else:
            raise Failure("unexpected wire type %d (field %d)" % (wire, key >> 3))
        out.append((key >> 3, v))
    return out


def packed(v):
    if isinstance(v, int):
        return [v]
    out, i = [], 0
    while i < len(v):
        x, i = varint(v, i)
        out.append(x)
    return out


def signed(v):
    return v - (1 << 64) if v >= 1 << 63 else v


def msg(buf):
    d = {}
    for f, v in fields(buf):
        d.setdefault(f, []).append(v)
    return d


def one(d, f, default=0):
    return d.get(f, [default])[-1]


def decode_profile(path):
    """The Profile as plain dicts, strings resolved."""
    with open(path, "rb") as fp:
        raw = fp.read()
    eq(raw[:2], b"\x1f\x8b", "gzip magic of %s" % path)
    p = msg(gzip.decompress(raw))
    st = [s.decode("utf-8") for s in p.get(6, [])]
    s = lambda i: st[i]
    prof = {"strings": st}
    prof["sample_types"] = [(s(one(m, 1)), s(one(m, 2)))
                            for m in map(msg, p.get(1, []))]
    prof["samples"] = []
    for m in map(msg, p.get(2, [])):
        locs = [x for v in m.get(1, []) for x in packed(v)]
        vals = [signed(x) for v in m.get(2, []) for x in packed(v)]
        labels = {s(one(l, 1)): s(one(l, 2)) for l in map(msg, m.get(3, []))}
        prof["samples"].append({"locations": locs, "values": vals,
                                "labels": labels})
    prof["mappings"] = {}
    for m in map(msg, p.get(3, [])):
        prof["mappings"][one(m, 1)] = {
            "start": one(m, 2), "limit": one(m, 3), "offset": one(m, 4),
            "file": s(one(m, 5)), "build_id": s(one(m, 6)),
            "flags": [one(m, f) for f in (7, 8, 9, 10)]}
    prof["functions"] = {}
    for m in map(msg, p.get(5, [])):
        prof["functions"][one(m, 1)] = {
            "name": s(one(m, 2)), "system_name": s(one(m, 3)),
            "file": s(one(m, 4))}
    prof["locations"] = {}
    for m in map(msg, p.get(4, [])):
        lines = [(one(l, 1), one(l, 2)) for l in map(msg, m.get(4, []))]
        prof["locations"][one(m, 1)] = {
            "mapping": one(m, 2), "address": one(m, 3), "lines": lines}
    prof["period_type"] = [(s(one(m, 1)), s(one(m, 2)))
                           for m in map(msg, p.get(11, []))]
    prof["period"] = one(p, 12)
    prof["time_nanos"] = one(p, 9)
    prof["comments"] = [s(i) for i in p.get(13, [])]
    prof["default_sample_type"] = s(one(p, 14))
    return prof


def sample_frames(prof, sample):
    """[(function, file, line)] innermost first, inline chains expanded."""
    out = []
    for lid in sample["locations"]:
        for fid, line in prof["locations"][lid]["lines"]:
            fn = prof["functions"][fid]
            out.append((fn["name"], fn["file"], line))
    return out


# ------------------------------------------------------------- running

def ls(*args, timeout=60):
    return cli(args, None, timeout)


def render_both(snap, tag, *filters):
    """JSON report and pprof file of one snapshot, same filters (pprof
    names functions in full: so does the JSON with --full-names)."""
    r = ls("report", "--format", "json", "--full-names", *filters, snap)
    if r.returncode != 0:
        fail("report --format json", "status 0", r.describe())
    rep = json.loads(r.stdout.decode())
    path = os.path.join(TMP, tag + ".pb.gz")
    r = ls("report", "--format", "pprof", "--output", path, *filters, snap)
    if r.returncode != 0:
        fail("report --format pprof", "status 0", r.describe())
    eq(r.stdout, b"", "stdout of report --output FILE")
    return rep, path


@once
def basic():
    prog, snap = exit_snapshot("basic")
    rep, path = render_both(snap, "basic")
    return {"prog": prog, "snap": snap, "json": rep, "pprof": path}


def pprof_name(frame):
    """A JSON frame as go tool pprof names its node: the function, else
    the module's file name in brackets (a location without lines)."""
    if frame["function"]:
        return frame["function"]
    if frame["module"]:
        return "[%s]" % os.path.basename(frame["module"])
    return None


def json_per_function(rep, key):
    """{function: (flat, cum)} as pprof computes them, from the JSON
    report: flat = sites whose innermost frame is the function, cum = sites
    with the function anywhere in their stack (once per site).  A frame
    without a symbol is named "[module]", as pprof names its location."""
    out = {}
    for site in rep["sites"]:
        names = [n for n in map(pprof_name, site["frames"]) if n]
        v = site[key]
        if names:
            flat, cum = out.get(names[0], (0, 0))
            out[names[0]] = (flat + v, cum)
        for n in set(names):
            flat, cum = out.get(n, (0, 0))
            out[n] = (flat, cum + v)
    return out


def expect_same_functions(got, want, what):
    drop = lambda d: {k: v for k, v in d.items() if v != (0, 0)}
    got, want = drop(got), drop(want)
    if got != want:
        diff = sorted(set(got.items()) ^ set(want.items()))
        fail(what, "the JSON report's per-function (flat, cum)",
             "differences: %s" % shorten(repr(diff)))


# --------------------------------------------------------------- checks

@check("pprof: the profile decodes; sample types, period, string 0, comments")
def t_pprof_structure():
    b = basic()
    prof = decode_profile(b["pprof"])
    eq(prof["strings"][0], "", "string_table[0]")
    eq(prof["sample_types"], [("alloc_objects", "count"),
                              ("alloc_space", "bytes"),
                              ("inuse_objects", "count"),
                              ("inuse_space", "bytes")], "sample types")
    eq(prof["period_type"], [("space", "bytes")], "period type")
    eq(prof["period"], 1, "period in full tracking")
    eq(prof["default_sample_type"], "inuse_space", "default sample type")
    ok(any(c.startswith("leakscope: pid %d:" % b["json"]["pid"]) and
           c.endswith(b["prog"]) for c in prof["comments"]),
       "a comment names the pid and command", repr(prof["comments"]))
    ok(abs(prof["time_nanos"] / 1e9 - __import__("time").time()) < 600,
       "time_nanos is the snapshot's wall clock")
    eq(len(set(prof["strings"])), len(prof["strings"]), "strings are unique")


@check("pprof: per-stack values equal the basic.c ground truth and the JSON")
def t_pprof_values():
    b = basic()
    prof = decode_profile(b["pprof"])
    got = {}
    for smp in prof["samples"]:
        frames = sample_frames(prof, smp)
        site = frames[0][0] if frames else None
        got[site] = smp["values"]
        eq(smp["labels"], {"kind": "heap"}, "labels of %s" % site)
    # alloc_objects, alloc_space, inuse_objects, inuse_space
    churn = sum((i % 97) * 13 + 1 for i in range(1000))
    want = {"site_large": [1, 65536, 1, 65536],
            "site_medium": [2, 8192, 2, 8192],
            "site_ten": [10, 1000, 10, 1000],
            "site_small": [3, 48, 3, 48],
            "tmp_churn": [1000, churn, 0, 0]}
    eq(got, want, "values per allocating function")
    for site in b["json"]["sites"]:
        fn = site_function(site, b["prog"])
        eq(got[fn], [site["allocated_blocks"], site["allocated_bytes"],
                     site["live_blocks"], site["live_bytes"]],
           "%s: pprof values vs the JSON report" % fn)


@check("pprof: locations carry raw return addresses inside their mapping")
def t_pprof_locations():
    b = basic()
    prof = decode_profile(b["pprof"])
    addrs = {int(fr["address"], 16) for site in b["json"]["sites"]
             for fr in site["frames"]}
    for lid, loc in prof["locations"].items():
        m = prof["mappings"].get(loc["mapping"])
        ok(m is not None, "location %d has a mapping" % lid)
        ok(m["start"] <= loc["address"] < m["limit"],
           "location %d: 0x%x inside [0x%x, 0x%x)" % (
               lid, loc["address"], m["start"], m["limit"]))
    for smp in prof["samples"]:
        if smp["values"][3] <= 0:
            continue
        stack = [prof["locations"][l]["address"] for l in smp["locations"]]
        ok(all(a in addrs for a in stack), "the addresses of a live stack are "
           "those of the JSON report", "%s" % [hex(a) for a in stack])
    ok(all(m["flags"] == [1, 1, 1, 1] for m in prof["mappings"].values()),
       "mappings say functions, files, lines and inlines are resolved")


def pprof_vs_json(rep, path, index, key):
    expect_same_functions(pprof_top(path, index), json_per_function(rep, key),
                          "go tool pprof -top -sample_index=%s" % index)


@check("pprof: go tool pprof -top inuse_space per function equals the JSON")
def t_pprof_top_inuse_space():
    b = basic()
    top = pprof_top(b["pprof"], "inuse_space")
    eq(top.get("site_large"), (65536, 65536), "site_large flat, cum")
    eq(top.get("basic_step"), (0, 74776), "basic_step flat, cum")
    pprof_vs_json(b["json"], b["pprof"], "inuse_space", "live_bytes")


@check("pprof: go tool pprof -top inuse_objects per function equals the JSON")
def t_pprof_top_inuse_objects():
    b = basic()
    eq(pprof_top(b["pprof"], "inuse_objects").get("site_ten"), (10, 10),
       "site_ten objects")
    pprof_vs_json(b["json"], b["pprof"], "inuse_objects", "live_blocks")


@check("pprof: go tool pprof -top alloc_space counts freed allocations too")
def t_pprof_top_alloc_space():
    b = basic()
    top = pprof_top(b["pprof"], "alloc_space")
    churn = sum((i % 97) * 13 + 1 for i in range(1000))
    eq(top.get("tmp_churn"), (churn, churn), "tmp_churn alloc_space")
    eq(top.get("basic_step"), (0, 74776 + churn), "basic_step alloc_space cum")
    prof = decode_profile(b["pprof"])
    stack = [f[0] for s in prof["samples"] for f in sample_frames(prof, s)
             if sample_frames(prof, s)[0][0] == "tmp_churn"]
    eq(stack[:4], ["tmp_churn", "basic_step", "basic_run", "main"],
       "the stack of the freed temporaries")
    want = json_per_function(b["json"], "allocated_bytes")
    want["tmp_churn"] = (churn, churn)
    for fn in stack[1:]:
        want[fn] = (0, want[fn][1] + churn)
    total = b["json"]["totals"]["allocated_bytes"]
    eq(want["main"][1], total, "JSON totals.allocated_bytes")
    expect_same_functions(top, want, "go tool pprof -top -sample_index=alloc_space")


@check("pprof: -traces shows whole stacks with file:line, inline chains expanded")
def t_pprof_traces():
    prog, snap = exit_snapshot("inlined")
    rep, path = render_both(snap, "inlined")
    text = pprof("-traces", "-lines", "-sample_index=inuse_space", path)
    src = "tests/workloads/inlined.c"
    want = ["site_inlined %s:%d" % (src, marker_line("inlined.c", "site_inlined")),
            "inl_inner %s:%d" % (src, marker_line("inlined.c", "inl_inner")),
            "inl_outer %s:%d" % (src, marker_line("inlined.c", "inl_outer")),
            "inline_caller %s:%d" % (src, marker_line("inlined.c", "inline_caller")),
            "main %s:%d" % (src, marker_line("inlined.c", "main"))]
    for block in text.split("-----------+")[1:]:
        if "site_inlined" not in block:
            continue
        names = [re.sub(r"^\s*(\S+B)?\s+", "", l).replace(" (inline)", "")
                 for l in block.splitlines()[1:] if l.strip() and
                 not l.strip().startswith("kind:")]
        got = [n for n in names if n.split(" ")[0] in
               ("site_inlined", "inl_inner", "inl_outer", "inline_caller", "main")]
        got = [re.sub(r" \S*(tests/workloads/)", r" \1", n) for n in got]
        eq(got, want, "the stack of site_inlined in -traces")
        contains(block, "777B", "site_inlined's 777 bytes")
        return
    fail("a -traces sample through site_inlined", "one", shorten(text))


@check("pprof: C++ functions keep the mangled symbol as system_name")
def t_pprof_system_names():
    prog, snap = exit_snapshot("cxx-leaks")
    rep, path = render_both(snap, "cxx")
    fns = {f["name"]: f for f in decode_profile(path)["functions"].values()}
    make = fns.get("leaktest::Widget::make()")
    ok(make is not None, "a function leaktest::Widget::make()", shorten(repr(list(fns))))
    eq(make["system_name"], "_ZN8leaktest6Widget4makeEv", "its system name")
    ok(make["file"].endswith("tests/workloads/cxx-leaks.cc"), "its file",
       make["file"])
    eq(fns["main"]["system_name"], "main", "a C name is its own system name")
    pprof_vs_json(rep, path, "inuse_space", "live_bytes")


def gnu_build_id(path):
    """The GNU build id note of an ELF file, as hex (ELF64 little-endian)."""
    import struct
    with open(path, "rb") as f:
        data = f.read()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3a)
    for i in range(shnum):
        sh = shoff + i * shentsize
        stype, = struct.unpack_from("<I", data, sh + 4)
        off, size = struct.unpack_from("<QQ", data, sh + 0x18)
        if stype != 7:  # SHT_NOTE
            continue
        pos = off
        while pos + 12 <= off + size:
            nsz, dsz, typ = struct.unpack_from("<III", data, pos)
            name = data[pos + 12:pos + 12 + nsz]
            dpos = pos + 12 + ((nsz + 3) & ~3)
            if typ == 3 and name.rstrip(b"\0") == b"GNU":
                return data[dpos:dpos + dsz].hex()
            pos = dpos + ((dsz + 3) & ~3)
    raise Failure("no GNU build id in %s" % path)


@check("pprof: mappings carry each module's file and build id (dlclose()d too)")
def t_pprof_build_ids():
    prog, snap = exit_snapshot("dlopen-leak")
    rep, path = render_both(snap, "dlopen")
    prof = decode_profile(path)
    files = {}
    for m in prof["mappings"].values():
        files.setdefault(os.path.basename(m["file"]), []).append(m)
    for name in ("dlopen-leak", "libleaky.so", "libother.so"):
        ok(name in files, "a mapping of %s" % name, repr(sorted(files)))
        for m in files[name]:
            eq(m["build_id"], gnu_build_id(os.path.join(
                os.path.dirname(prog), name)), "build id of %s" % name)
    libc = [m for n, ms in files.items() if n.startswith("libc.so")
            for m in ms]
    for m in libc:
        eq(m["build_id"], gnu_build_id(m["file"]), "build id of libc")
    main = prof["mappings"][min(prof["mappings"])]
    eq(os.path.basename(main["file"]), "dlopen-leak",
       "the first mapping is the program")
    text = pprof("-raw", path)
    contains(text, gnu_build_id(prog), "go tool pprof -raw shows the build id")
    top = pprof_top(path, "inuse_space")
    eq(top.get("site_in_libleaky"), (4321, 4321), "site_in_libleaky")
    eq(top.get("site_in_libother"), (1234, 1234), "site_in_libother")


@check("pprof: sampled mode: period is the rate, values the JSON's estimates")
def t_pprof_sampled():
    prog, snap = exit_snapshot("basic", extra={
        "LEAKSCOPE_SAMPLE_RATE": str(SAMPLE_RATE), "LEAKSCOPE_SAMPLE_SEED": "7"})
    rep, path = render_both(snap, "sampled")
    eq(rep["mode"], "sampled", "JSON mode")
    prof = decode_profile(path)
    eq(prof["period"], SAMPLE_RATE, "period")
    ok(any("sampled" in c for c in prof["comments"]), "a comment says sampled")
    pprof_vs_json(rep, path, "inuse_space", "live_bytes")
    pprof_vs_json(rep, path, "inuse_objects", "live_blocks")


@check("pprof: filters apply: --min-size keeps what the JSON keeps, nothing freed")
def t_pprof_filtered():
    b = basic()
    rep, path = render_both(b["snap"], "minsize", "--min-size", "4096")
    prof = decode_profile(path)
    got = sorted(sample_frames(prof, s)[0][0] for s in prof["samples"])
    eq(got, ["site_large", "site_medium"], "allocating functions kept")
    pprof_vs_json(rep, path, "inuse_space", "live_bytes")


@check("pprof: the same report gives the same bytes")
def t_pprof_deterministic():
    b = basic()
    again = os.path.join(TMP, "again.pb.gz")
    r = ls("report", "--format", "pprof", "--output", again, b["snap"])
    eq(r.returncode, 0, "status")
    with open(b["pprof"], "rb") as x, open(again, "rb") as y:
        ok(x.read() == y.read(), "two renderings are identical")


@check("pprof: binary output needs --output; '-' writes stdout (not a terminal)")
def t_pprof_output_rules():
    b = basic()
    r = ls("report", "--format", "pprof", b["snap"])
    eq(r.returncode, 125, "status without --output (a usage error)")
    eq(r.stdout, b"", "nothing on stdout")
    err = r.stderr.decode()
    eq(err.count("\n"), 1, "one line on stderr: %r" % err)
    ok(err.startswith("leakscope: ") and "--output" in err, "says --output", err)
    r = ls("report", "--format", "pprof", "--output", "-", b["snap"])
    eq(r.returncode, 0, "status with --output -")
    with open(b["pprof"], "rb") as f:
        eq(r.stdout, f.read(), "stdout holds the same profile")
    if os.path.exists("/dev/full"):
        r = ls("report", "--format", "pprof", "--output", "/dev/full",
               b["snap"])
        eq(r.returncode, 1, "status when the output is full")
        err = r.stderr.decode()
        ok(err.count("\n") == 1 and "No space left" in err,
           "one line naming the write error", err)
    r = run_process([LEAKSCOPE, "run", "--format", "pprof", "--",
                     workload("basic")])
    eq(r.returncode, 125, "run --format pprof without --output")
    ok(r.stderr.decode().startswith("leakscope: ") and
       r.stderr.decode().count("\n") == 1, "one line", r.stderr.decode())
    r = run_process([LEAKSCOPE, "run", "--format", "pprof", "--output",
                     os.path.join(TMP, "x.pb.gz"), "--interval", "1", "--",
                     workload("basic")])
    eq(r.returncode, 125, "run --format pprof --interval")
    ok(not os.path.exists(os.path.join(TMP, "x.pb.gz")), "no file written")


@check("pprof: a terminal on stdout is refused")
def t_pprof_tty():
    b = basic()
    try:
        import pty
        master, slave = pty.openpty()
    except OSError as e:
        raise Skip("no pseudo-terminal: %s" % e)
    try:
        p = subprocess.run([LEAKSCOPE, "report", "--format", "pprof",
                            "--output", "-", b["snap"]], stdout=slave,
                           stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(slave)
        os.close(master)
    eq(p.returncode, 125, "status (a usage error)")
    contains(p.stderr.decode(), "terminal", "the error says why")


@check("pprof: run --format pprof --output FILE gives go tool pprof the leaks")
def t_pprof_run():
    path = os.path.join(TMP, "run.pb.gz")
    r = run_process([LEAKSCOPE, "run", "--format", "pprof", "--output", path,
                     "--", workload("basic")])
    eq(r.returncode, 0, "status")
    top = pprof_top(path, "inuse_space")
    for fn, v in (("site_large", 65536), ("site_medium", 8192),
                  ("site_ten", 1000), ("site_small", 48)):
        eq(top.get(fn), (v, v), fn)
    eq(top.get("main"), (0, 74776), "main cum")


@check("pprof: python3 (a real program, unnamed frames): go tool pprof equals the JSON")
def t_pprof_python():
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") \
        else need("python3")
    prog, snap = exit_snapshot(py, ["-c", "import json, re, collections; "
                                    "x = [bytearray(1000) for i in range(1000)]"])
    rep, path = render_both(snap, "python3")
    ok(len(rep["sites"]) > 20, "python3 leaves many stacks",
       str(len(rep["sites"])))
    pprof_vs_json(rep, path, "inuse_space", "live_bytes")
    pprof_vs_json(rep, path, "inuse_objects", "live_blocks")
    prof = decode_profile(path)
    eq(sum(s["values"][3] for s in prof["samples"]),
       rep["totals"]["live_bytes"], "inuse_space total vs JSON totals")
    eq(sum(s["values"][1] for s in prof["samples"]),
       rep["totals"]["allocated_bytes"], "alloc_space total vs JSON totals")


@check("pprof: mappings carry the label kind=mmap (go tool pprof -tagfocus)")
def t_pprof_mmap_label():
    prog, snap = exit_snapshot("mmap-sites")
    rep, path = render_both(snap, "mmap")
    top = pprof_top(path, "inuse_space", "-tagfocus=kind=mmap")
    want = {"site_mmap_middle": 28672, "site_mremap_grow": 24576,
            "site_mmap_head": 16384, "site_mmap_tail": 12288,
            "site_mmap_keep": 8192, "site_mremap_shrink": 4096}
    eq({fn: v[0] for fn, v in top.items() if v[0]}, want,
       "flat inuse_space of the kind=mmap samples (mmap-sites.c's truth)")
    eq(top["main"][1], sum(want.values()), "main's cumulative bytes")
    mmap_json = sum(s["live_bytes"] for s in rep["sites"] if s["kind"] == "mmap")
    eq(mmap_json, sum(want.values()), "the JSON report's mmap sites")
