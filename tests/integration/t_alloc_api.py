"""Every interposed allocator entry point and the libc functions that
allocate for the program: exact outstanding bytes and blocks per site,
names, files and lines, C semantics kept (ground truth: alloc-api.c)."""

import os

from harness import (check, once, workload, leakscope, root_report,
                     expect_status, expect_site, expect_no_temporaries,
                     expect_totals_consistent, the_site, site_text,
                     outer_functions, marker_line, module_base, eq, ok, ge,
                     fail, shorten)

SRC = "alloc-api.c"

# (site, bytes, blocks, frames[0] is the site itself)
SITES = [
    ("site_malloc", 384, 3, True),
    ("site_calloc", 200, 1, True),
    ("site_realloc_null", 300, 1, True),
    ("site_realloc_grow", 2000, 1, True),
    ("site_realloc_shrink", 50, 1, True),
    ("site_realloc_fail_orig", 555, 1, True),
    ("site_reallocarray", 330, 1, True),
    ("site_posix_memalign", 1000, 1, True),
    ("site_aligned_alloc", 512, 1, True),
    ("site_memalign", 700, 1, True),
    ("site_valloc", 900, 1, True),
    ("site_pvalloc", 8192, 1, True),
    ("site_strdup", 30, 1, False),
    ("site_getline", 120, 1, False),
    ("site_asprintf", 20, 1, False),
]

# Successful calls the program itself makes (failed ones not counted).
API_MIN_CALLS = {
    "malloc": 9, "calloc": 3, "realloc": 7, "reallocarray": 2, "free": 13,
    "posix_memalign": 2, "aligned_alloc": 2, "memalign": 2, "valloc": 2,
    "pvalloc": 2, "mmap": 0, "munmap": 0, "mremap": 0,
}


@once
def run():
    r = leakscope(["--format", "json"], [workload("alloc-api")])
    expect_status(r, 0, "alloc-api exit status (2 = a C semantic check "
                  "failed under the agent)")
    return r, root_report(r)


def exe():
    return workload("alloc-api")


@check("alloc-api runs with exit 0 and its semantic checks pass")
def t_status():
    r, _ = run()
    eq(r.stderr, b"", "stderr of the workload (reports went to --output)")


def site_check(name, nbytes, nblocks):
    def t():
        _, rep = run()
        expect_site(rep, name, exe(), nbytes, nblocks)
    return t


for _name, _bytes, _blocks, _ in SITES:
    check("%s: exactly %d bytes in %d blocks" % (_name, _bytes, _blocks))(
        site_check(_name, _bytes, _blocks))


@check("direct allocator calls: frames[0] is the site_ function in the program")
def t_frame0():
    _, rep = run()
    for name, _b, _n, direct in SITES:
        if not direct:
            continue
        site = the_site(rep, name, exe())
        fr = site["frames"][0]
        if fr.get("function") != name or module_base(fr) != "alloc-api":
            fail("%s frames[0]" % name, "%s [alloc-api]" % name,
                 site_text(site))


def libc_frame0(name, libc_functions):
    def t():
        _, rep = run()
        site = the_site(rep, name, exe())
        fr = site["frames"][0]
        base = module_base(fr) or ""
        if fr.get("function") not in libc_functions or not base.startswith("libc.so"):
            fail("%s frames[0]" % name, "one of %s in libc.so.6" % (
                sorted(libc_functions),), site_text(site))
    return t


check("strdup: frames[0] is libc's strdup, the program's caller next")(
    libc_frame0("site_strdup", {"strdup", "__strdup"}))
check("getline: frames[0] is libc's getdelim, first program frame site_getline")(
    libc_frame0("site_getline", {"getdelim", "__getdelim", "getline",
                                 "_IO_getdelim"}))
check("asprintf: frames[0] is in libc, first program frame site_asprintf")(
    libc_frame0("site_asprintf", {"__vasprintf_internal", "vasprintf",
                                  "__vasprintf", "asprintf", "__asprintf",
                                  "___asprintf", "__vasprintf_chk"}))


@check("strdup: the frame after libc's strdup is site_strdup")
def t_strdup_next():
    _, rep = run()
    site = the_site(rep, "site_strdup", exe())
    frames = site["frames"]
    ok(len(frames) >= 2 and frames[1].get("function") == "site_strdup",
       "frames[1] should be site_strdup", site_text(site))


@check("each site's frame carries file alloc-api.c and the allocating call's line")
def t_lines():
    _, rep = run()
    bad = []
    for name, _b, _n, _d in SITES:
        site = the_site(rep, name, exe())
        want = marker_line(SRC, name)
        frs = [f for f in site["frames"] if f.get("function") == name
               and not f.get("inlined")]
        got = [(os.path.basename(f.get("file") or ""), f.get("line"))
               for f in frs]
        if got[:1] != [(SRC, want)]:
            bad.append("%s: expected %s:%d, got %s" % (name, SRC, want, got))
    ok(not bad, "file:line of site frames", "\n  ".join(bad))


@check("every frame of the program's own code (site up to main) has a file and a positive line")
def t_all_lines():
    _, rep = run()
    bad = []
    for site in rep["sites"]:
        # Frames outside main (_start, from crt1.o) have no debug info.
        for f in site["frames"]:
            if module_base(f) != "alloc-api":
                continue
            if not f.get("file") or not isinstance(f.get("line"), int) \
                    or f["line"] <= 0:
                bad.append("%s: file=%r line=%r" % (f.get("function"),
                                                    f.get("file"), f.get("line")))
            if f.get("function") == "main":
                break
    ok(not bad, "program frames without file:line", "\n  ".join(bad[:20]))


@check("stacks unwind without frame pointers: site <- api_dispatch <- api_stage <- main")
def t_depth():
    _, rep = run()
    bad = []
    for name, _b, _n, _d in SITES:
        site = the_site(rep, name, exe())
        got = outer_functions(site, exe())[:4]
        if got != [name, "api_dispatch", "api_stage", "main"]:
            bad.append("%s: %s" % (name, got))
    ok(not bad, "program frames of each site, innermost first",
       "\n  ".join(bad))


@check("freed temporaries, realloc(p,0), the moved realloc source and failed calls leave no site")
def t_no_temporaries():
    _, rep = run()
    expect_no_temporaries(rep)


@check("no site holds nothing; sites sorted by live_bytes, ids unique")
def t_site_list():
    _, rep = run()
    sites = rep["sites"]
    ok(all(s["live_bytes"] > 0 and s["live_blocks"] > 0 for s in sites),
       "a listed site with no outstanding memory")
    lb = [s["live_bytes"] for s in sites]
    eq(lb, sorted(lb, reverse=True), "live_bytes order of sites")
    ids = [s["id"] for s in sites]
    eq(len(set(ids)), len(ids), "distinct site ids")


@check("totals: sites add up to totals.live_bytes/live_blocks, peak and allocated cover live")
def t_totals():
    _, rep = run()
    expect_totals_consistent(rep)
    t = rep["totals"]
    truth = sum(b for _, b, _n, _d in SITES)
    ge(t["live_bytes"], truth, "totals.live_bytes (ground truth sites alone)")
    ge(t["allocated_bytes"], t["live_bytes"], "totals.allocated_bytes")
    ge(t["allocated_blocks"], t["live_blocks"], "totals.allocated_blocks")
    ge(t["peak_live_bytes"], t["live_bytes"], "totals.peak_live_bytes")
    ok("peak_slack" in t, "totals.peak_slack present", repr(t))
    for s in rep["sites"]:
        ge(s["allocated_bytes"], s["live_bytes"], "site allocated_bytes")
        ge(s["allocated_blocks"], s["live_blocks"], "site allocated_blocks")


@check("calls counters: at least the calls alloc-api made, every counter present")
def t_calls():
    _, rep = run()
    calls = rep.get("calls", {})
    bad = ["%s: %r < %d" % (k, calls.get(k), v)
           for k, v in API_MIN_CALLS.items()
           if not isinstance(calls.get(k), int) or calls[k] < v]
    ok(not bad, "calls counters", "\n  ".join(bad) + "\n  calls: %r" % calls)


@check("report header: format, version, pid/ppid, command, mode, reason")
def t_header():
    r, rep = run()
    eq(rep.get("format"), "leakscope-report", "format")
    eq(rep.get("version"), 1, "version")
    eq(rep.get("ppid"), r.pid, "ppid of the root command (leakscope's pid)")
    ok(isinstance(rep.get("pid"), int) and rep["pid"] > 0, "pid", repr(rep.get("pid")))
    eq(rep.get("command"), [exe()], "command")
    eq(rep.get("mode"), "full", "mode")
    eq(rep.get("reason"), "exit", "reason")


@check("without --show-allocs no site lists blocks")
def t_no_blocks():
    _, rep = run()
    with_blocks = [s for s in rep["sites"] if "blocks" in s]
    eq(len(with_blocks), 0, "sites carrying a blocks list")


@check("the agent's own memory never appears: every frame's module is a loaded object, none is libleakscope")
def t_no_agent_frames():
    _, rep = run()
    bad = [site_text(s) for s in rep["sites"]
           if any("leakscope" in (module_base(f) or "") for f in s["frames"])]
    ok(not bad, "sites with a libleakscope frame", shorten("\n".join(bad)))
