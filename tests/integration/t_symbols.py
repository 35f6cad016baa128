"""Every frame named as llvm-symbolizer names it: small programs built by
gcc, clang and rustc (C, C++, Rust; -O0 and -O2; DWARF 4 and 5; split
DWARF, compressed sections, a .gnu_debuglink debug file), and every call
site in their .text symbolized through lib/symbolize.c (the
tests/tools/symaddr driver) and compared frame by frame -- function, file,
line and inline chain -- with `llvm-symbolizer --inlining`; the figures
also say on how many frames `addr2line -i -f -C` agrees.  Held out: a
sample of the C library's call sites, named through libc6-dbg's build-id
debug file, and the frames of real `leakscope run` reports of the C
programs.

Each return address R is compared at R - 1, the call instruction, as a
report symbolizes it.  Normalisations, each because the two sides spell
one fact differently (not because either is wrong):
  - " (discriminator N)" after a GNU-style line is dropped;
  - line 0 (code the compiler attributes to no line) counts as no line;
  - demangled names: see compare().
"""

import concurrent.futures
import os
import re
import shutil
import subprocess
import tempfile

import harness
from harness import ROOT, BUILD, check, Skip, Failure, ok

FIX = os.path.join(ROOT, "tests", "integration", "fixtures", "symbols")
SYMADDR = os.path.join(BUILD, "tests", "tools", "symaddr")

C_SRC = ["chain.c", "chain2.c"]
CXX_SRC = ["shapes.cc"]
RS_SRC = ["leak.rs"]

# (name, driver, flags, sources).  Each build costs the suite 0.3-3 s:
# g++ -O0 and gcc's DWARF 4 (both agreed before these checks existed,
# docs/SYMBOLS.md) are left out.
BUILDS = [
    ("gcc-O0", "gcc", ["-O0", "-g"], C_SRC),
    ("gcc-O2", "gcc", ["-O2", "-g"], C_SRC),
    ("clang-O0", "clang", ["-O0", "-g"], C_SRC),
    ("clang-O2", "clang", ["-O2", "-g"], C_SRC),
    ("clang-O2-dwarf4", "clang", ["-O2", "-gdwarf-4"], C_SRC),
    ("clang-O2-split", "clang", ["-O2", "-g", "-gsplit-dwarf"], C_SRC),
    ("gcc-O2-split", "gcc", ["-O2", "-g", "-gsplit-dwarf"], C_SRC),
    ("gcc-O2-gz", "gcc", ["-O2", "-g", "-gz"], C_SRC),
    ("gcc-O2-debuglink", "gcc", ["-O2", "-g"], C_SRC),
    ("g++-O2", "g++", ["-O2", "-g"], CXX_SRC),
    ("clang++-O0", "clang++", ["-O0", "-g"], CXX_SRC),
    ("clang++-O2", "clang++", ["-O2", "-g"], CXX_SRC),
    # -O0 with the standard library linked dynamically: the program's own
    # code and std's generics instantiated in it; -O2 with std's own code
    # linked in too (2800-4000 call sites).
    ("rustc-O0", "rustc", ["-C", "opt-level=0", "-g", "-C",
                           "prefer-dynamic"], RS_SRC),
    ("rustc-O2", "rustc", ["-C", "opt-level=2", "-g"], RS_SRC),
]

_DISCRIM = re.compile(r" \(discriminator \d+\)$")
_CALL = re.compile(r"^\s*([0-9a-f]+):\s+(call|callq)\b")
_INSN = re.compile(r"^\s*([0-9a-f]+):\s")


_DIR = []


def workdir():
    if not _DIR:
        _DIR.append(tempfile.mkdtemp(prefix="leakscope-symbols-"))
        harness._TMPDIRS.append(_DIR[0])
    return _DIR[0]


_BUILT = {}


def build(name):
    """Build one variant (once); its path, or Skip when the compiler is
    absent.  The first call starts every build, two at a time: the
    compilers' time is most of this file's."""
    if not _BUILT:
        with concurrent.futures.ThreadPoolExecutor(2) as pool:
            for b in BUILDS:
                _BUILT[b[0]] = pool.submit(_build, b[0])
    return _BUILT[name].result()


def _build(name):
    _, driver, flags, srcs = next(b for b in BUILDS if b[0] == name)
    if not shutil.which(driver):
        raise Skip("%s is not installed" % driver)
    out = os.path.join(workdir(), name)
    srcs = [os.path.join(FIX, s) for s in srcs]
    argv = [driver] + flags + ["-o", out] + srcs
    # In the work directory: split DWARF's .dwo files land there.
    r = subprocess.run(argv, capture_output=True, text=True, timeout=300,
                       cwd=workdir())
    if r.returncode:
        raise Failure("%s failed:\n%s" % (" ".join(argv), r.stderr[-2000:]))
    if name.endswith("-debuglink"):
        debuglink(out)
    return out


def debuglink(path):
    """Move path's debug information into path.debug beside it, found
    through .gnu_debuglink, as distributions ship it."""
    for argv in (["objcopy", "--only-keep-debug", path, path + ".debug"],
                 ["objcopy", "--strip-debug", "--add-gnu-debuglink=" +
                  path + ".debug", path]):
        r = subprocess.run(argv, capture_output=True, text=True, timeout=120,
                           cwd=os.path.dirname(path))
        if r.returncode:
            raise Failure("%s: %s" % (" ".join(argv), r.stderr))


def return_addresses(path):
    """The address after every call instruction in the file's code."""
    r = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path],
                       capture_output=True, text=True, timeout=120)
    if r.returncode:
        raise Failure("objdump -d %s: %s" % (path, r.stderr))
    out, after_call = [], False
    for line in r.stdout.splitlines():
        m = _INSN.match(line)
        if not m:
            continue
        if after_call:
            out.append(int(m.group(1), 16))
        after_call = bool(_CALL.match(line))
    return sorted(set(out))


def ours(path, addrs):
    """{return address: [(function, symbol, file, line, inlined)...]}"""
    r = subprocess.run([SYMADDR, path], input="".join(
        "%x\n" % a for a in addrs), capture_output=True, text=True,
        timeout=300)
    if r.returncode:
        raise Failure("symaddr %s: %s" % (path, r.stderr))
    res, cur = {}, None
    for line in r.stdout.splitlines():
        if line.startswith("0x"):
            cur = res.setdefault(int(line, 16), [])
        elif line.startswith("F\t"):
            _, fn, sym, f, ln, inl, _off = line.split("\t")
            cur.append((None if fn == "??" else fn,
                        None if sym == "??" else sym,
                        None if f == "??" or ln == "0" else f,
                        int(ln), inl == "1"))
    return res


def _gnu_frames(text):
    """Parse `-a` GNU-style output into {pc: [(function, file, line)]}."""
    res, cur, lines = {}, None, text.splitlines()
    i = 0
    while i < len(lines):
        line = lines[i]
        if line.startswith("0x"):
            cur = res.setdefault(int(line, 16), [])
            i += 1
            continue
        fn, loc = line, lines[i + 1] if i + 1 < len(lines) else "??:0"
        i += 2
        f, _, ln = _DISCRIM.sub("", loc).rpartition(":")
        ln = int(ln) if ln.isdigit() else 0
        cur.append((None if fn == "??" else fn,
                    None if f in ("??", "") or not ln else f, ln))
    return res


def _oracle(argv, pcs):
    r = subprocess.run(argv, input="".join("0x%x\n" % a for a in pcs),
                       capture_output=True, text=True, timeout=300)
    if r.returncode:
        raise Failure("%s: %s" % (" ".join(argv), r.stderr))
    return _gnu_frames(r.stdout)


def llvm(path, pcs):
    return _oracle(["llvm-symbolizer", "--inlining", "--functions=linkage",
                    "--no-demangle",
                    "--output-style=GNU", "-a", "--obj=" + path], pcs)


def addr2line(path, pcs):
    return _oracle(["addr2line", "-a", "-i", "-f", "-C", "-e", path], pcs)


_RUST_HASH = re.compile(r"::h[0-9a-f]{16}$")
_RUST_CRATE_ID = re.compile(r"\[[0-9a-f]{1,16}\]")
_RUST_CONST_TYPE = re.compile(r"(?<=[0-9a-z'])"
                              r": (?:[iu](?:8|16|32|64|128|size)|bool|char)\b")


def demangled(names):
    """{mangled: demangled} by c++filt.  c++filt demangles verbosely,
    the reports do not: the hash of a legacy Rust name and the crate
    disambiguators and const argument types of a v0 one
    ("alloc[fdfd2bd8633a6659]::", "[u8; 32: usize]") are dropped."""
    names = sorted(set(n for n in names if n))
    r = subprocess.run(["c++filt"], input="".join(n + "\n" for n in names),
                       capture_output=True, text=True, timeout=120)
    if r.returncode:
        raise Failure("c++filt: %s" % r.stderr)
    out = r.stdout.splitlines()
    eq_len = len(out) == len(names)
    ok(eq_len, "c++filt answers each name", "%d of %d" % (len(out),
                                                          len(names)))
    return {n: _rust_plain(d) if n.startswith(("_R", "_ZN")) else d
            for n, d in zip(names, out)}


def _rust_plain(name):
    return _RUST_CONST_TYPE.sub("", _RUST_CRATE_ID.sub("", _RUST_HASH.sub(
        "", name)))


def symbol_addresses(path):
    """{symbol: address} of the file's defined functions (nm)."""
    r = subprocess.run(["nm", "--defined-only", path], capture_output=True,
                       text=True, timeout=120)
    res = {}
    for line in r.stdout.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "tTwWi":
            res[parts[2].split("@")[0]] = int(parts[0], 16)
    return res


def same_code(got, want, syms):
    """The frames are equal but for the outermost function's mangled name,
    and the two names are aliases, symbols of the same address (g++ emits
    a constructor's complete and base object versions, C1 and C2, as one
    function with two names: which one a symbolizer prints is
    arbitrary)."""
    if len(got) != len(want) or not got or got[:-1] != want[:-1]:
        return False
    (g, gf, gl), (w, wf, wl) = got[-1], want[-1]
    return (gf, gl) == (wf, wl) and g in syms and syms.get(g) == syms.get(w)


_PART = re.compile(r"(?:\.(?:cold|part\.\d+|constprop\.\d+|isra\.\d+))+$")


def split_part(got, want):
    """The frames are equal but ours names the outermost function's code
    as the clone or split-off part of a function the symbol table says it
    is ("f.cold", "f.part.0", "f.constprop.0") where llvm-symbolizer names
    the function itself ("f").  llvm-symbolizer 14 does name such code by
    its symbol ("build.cold", "die.constprop.0" in chain.c built by gcc
    -O2, asserted by the gcc-O2 check) but not when the symbols sit in a
    separate debug file: it is the oracle that is inconsistent."""
    if len(got) != len(want) or not got or got[:-1] != want[:-1]:
        return False
    (g, gf, gl), (w, wf, wl) = got[-1], want[-1]
    return (gf, gl) == (wf, wl) and g and w and _PART.sub("", g) == w


def text_of(path):
    r = subprocess.run(["objdump", "-d", "--no-show-raw-insn", path],
                       capture_output=True, text=True, timeout=120)
    return r.stdout.split("\n", 2)[-1]


def compare(path, addrs=None, symfile=None, separate=False, oracle=None):
    """(frames, frames where addr2line agrees too, mismatch descriptions,
    call sites whose function the two name apart: aliases, clones)

    Every frame's mangled name, file, line and place in the inline chain
    must equal llvm-symbolizer's, and its demangled name c++filt's
    demangling of llvm-symbolizer's mangled one.  (llvm-symbolizer's own
    demangler spells some names otherwise -- "'lambda'(int)" for
    "{lambda(int)#1}", "A<B<C> >" for "A<B<C>>", legacy Rust names
    undecoded -- the same names in another style; the reports use
    libiberty's, as c++filt, gdb and addr2line do.)  With oracle, the
    oracles read that file instead of path: the same code built with its
    debug information in place."""
    if not shutil.which("llvm-symbolizer"):
        raise Skip("llvm-symbolizer is not installed")
    addrs = addrs or return_addresses(path)
    ok(len(addrs) > 10, "call sites found in %s" % path, str(addrs))
    pcs = [a - 1 for a in addrs]
    got, raw = ours(path, addrs), llvm(oracle or path, pcs)
    gnu = addr2line(oracle or path, pcs)
    dem = demangled([fn for fr in raw.values() for fn, _, _ in fr] +
                    [x[1] for fr in got.values() for x in fr])
    syms = symbol_addresses(symfile or path)
    nframes, both, bad, named_apart = 0, 0, [], 0
    for a in addrs:
        g = got.get(a, [])
        w = raw.get(a - 1, [])
        nframes += len(w)
        mine = [(sym, f, ln) for _, sym, f, ln, _ in g]
        inl = [x[4] for x in g]
        names = [fn for fn, _, _, _, _ in g]
        alias = mine != w and (same_code(mine, w, syms) or
                               separate and split_part(mine, w))
        want_names = [dem.get(fn) for fn, _, _ in
                      (w[:-1] + mine[-1:] if alias else w)]
        named_apart += alias
        if (mine != w and not alias) or \
                inl != [True] * (len(g) - 1) + [False] or \
                names != want_names:
            bad.append("0x%x: ours %s\n      llvm %s\n      names %s\n"
                       "      want  %s" % (a, mine, w, names, want_names))
        elif [(dem.get(fn, fn), f, ln) for fn, _, f, ln, _ in g] == \
                [(_RUST_HASH.sub("", fn or "") or None, f, ln)
                 for fn, f, ln in gnu.get(a - 1, [])]:
            both += len(w)
    return nframes, both, bad, named_apart


def run_one(name):
    path, oracle = build(name), None
    if name.endswith("-split"):
        # llvm-symbolizer 14 loses inlined frames of split units (clang
        # -O2 -gsplit-dwarf: chain.c's copy/push inlined into build come
        # out as build alone), so the oracles read the same program built
        # without -gsplit-dwarf, whose code must be the same to the byte.
        oracle = build(name[:-len("-split")])
        ok(text_of(path) == text_of(oracle), "-gsplit-dwarf leaves the "
           "code of %s as it is without" % name)
    n, both, bad, apart = compare(path, oracle=oracle)
    print("    %s: %d frames at %d call sites, %d mismatches with "
          "llvm-symbolizer (%d named by an alias); %d frames where "
          "addr2line agrees too" % (name, n, len(return_addresses(path)),
                                    len(bad), apart, both))
    if bad:
        raise Failure("%s: %d of the frames differ from llvm-symbolizer:\n"
                      "    %s" % (name, len(bad), "\n    ".join(bad[:15])))


def _make_check(name):
    @check("%s: every call site's frames equal llvm-symbolizer's" % name)
    def t():
        run_one(name)
    t.__name__ = "t_" + re.sub(r"\W", "_", name)
    return t


for _b in BUILDS:
    globals()["t_" + re.sub(r"\W", "_", _b[0])] = _make_check(_b[0])


# ------------------------------------------------- held out: the C library

LIBC_SAMPLE = 30        # every 30th call site of libc.so.6: ~440 addresses


def debug_file(path):
    """The separate debug file of path under /usr/lib/debug/.build-id, or
    None."""
    r = subprocess.run(["readelf", "-n", path], capture_output=True,
                       text=True, timeout=60)
    m = re.search(r"Build ID: ([0-9a-f]{2})([0-9a-f]+)", r.stdout)
    if not m:
        return None
    f = "/usr/lib/debug/.build-id/%s/%s.debug" % (m.group(1), m.group(2))
    return f if os.path.exists(f) else None


@check("held out: libc.so.6's call sites, named through its build-id debug "
       "file (libc6-dbg, compressed sections), equal llvm-symbolizer's")
def t_libc():
    r = subprocess.run(["ldd", SYMADDR], capture_output=True, text=True,
                       timeout=60)
    m = re.search(r"libc\.so\.6 => (\S+)", r.stdout)
    ok(m, "libc.so.6 found by ldd", r.stdout)
    libc = os.path.realpath(m.group(1))
    dbg = debug_file(libc)
    if not dbg:
        raise Skip("no debug file for %s (install libc6-dbg)" % libc)
    addrs = return_addresses(libc)[::LIBC_SAMPLE]
    n, both, bad, apart = compare(libc, addrs, symfile=dbg, separate=True)
    print("    libc.so.6: %d frames at %d call sites, %d mismatches with "
          "llvm-symbolizer (%d named by an alias or as a clone); %d frames "
          "where addr2line agrees too" % (n, len(addrs), len(bad), apart,
                                          both))
    if bad:
        raise Failure("libc.so.6: %d of the call sites differ from "
                      "llvm-symbolizer:\n    %s" % (
                          len(bad), "\n    ".join(bad[:15])))


# ------------------------------------- a real report of the programs' leaks

def report_frames(path):
    """Every frame of the program's own code in a real `leakscope run`
    report of path: {return address in the file: [(function, file, line,
    inlined)]}.  The file address of a return address is the address of
    its function's symbol plus the report's offset (C: the function is
    the symbol)."""
    r = harness.leakscope(["--format", "json"], [path, "one", "two,three"])
    harness.expect_status(r, 0, "%s exit status" % path)
    syms = symbol_addresses(path)
    res = {}
    for site in harness.root_report(r)["sites"]:
        frames = [f for f in site["frames"] if harness.module_is(f, path)]
        chain = []
        for f in frames:
            chain.append((f["function"], f["file"], f["line"] or 0,
                          f["inlined"]))
            if f["inlined"]:
                continue
            ok(f["function"] in syms, "report frame names a symbol of "
               "%s" % path, str(f))
            res[syms[f["function"]] + f["offset"]] = chain
            chain = []
    return res


def _report_check(name):
    @check("%s: a real report's frames of the program equal "
           "llvm-symbolizer's" % name)
    def t():
        path = build(name)
        got = report_frames(path)
        ok(len(got) >= 3, "program frames in the report", str(got))
        raw = llvm(path, [a - 1 for a in got])
        bad = []
        for a, chain in sorted(got.items()):
            want = [(fn, f, ln, i < len(raw[a - 1]) - 1)
                    for i, (fn, f, ln) in enumerate(raw.get(a - 1, []))]
            if chain != want:
                bad.append("0x%x: report %s\n      llvm %s" % (a, chain,
                                                               want))
        print("    %s: %d return addresses, %d frames in the report" % (
            name, len(got), sum(len(c) for c in got.values())))
        if bad:
            raise Failure("%s: report frames differ from llvm-symbolizer:"
                          "\n    %s" % (name, "\n    ".join(bad)))
    t.__name__ = "t_report_" + re.sub(r"\W", "_", name)
    return t


for _b in ("gcc-O2", "clang-O0", "clang-O2", "clang-O2-dwarf4"):
    globals()["t_report_" + re.sub(r"\W", "_", _b)] = _report_check(_b)
