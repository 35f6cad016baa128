"""A dlopen()ed library that leaks and is dlclose()d before exit; a second
library loaded after it (ground truth: dlopen-leak.c, libleaky.c,
libother.c)."""

import os

from harness import (check, once, workload, leakscope, root_report,
                     expect_status, expect_no_temporaries, marker_line,
                     module_base, site_text, sites_mentioning, eq, ok, fail)


@once
def run():
    workload("libleaky.so")
    workload("libother.so")
    r = leakscope(["--format", "json"], [workload("dlopen-leak")])
    expect_status(r, 0, "dlopen-leak exit status (2: library not unloaded "
                  "or not loadable)")
    return r, root_report(r)


def lib_site(rep, fn, lib):
    found = [s for s in rep["sites"] if s["frames"] and
             s["frames"][0].get("function") == fn]
    if len(found) != 1:
        fail("sites whose frames[0] is %s" % fn, "exactly 1",
             "%d\n    %s" % (len(found), "\n    ".join(
                 site_text(s) for s in rep["sites"][:12])))
    return found[0]


def expect_lib_site(fn, lib, src, nbytes, chain):
    def t():
        _, rep = run()
        site = lib_site(rep, fn, lib)
        eq((site["live_bytes"], site["live_blocks"], site["kind"]),
           (nbytes, 1, "heap"), "%s live_bytes, live_blocks, kind" % fn)
        fr = site["frames"][0]
        eq((module_base(fr), os.path.basename(fr.get("file") or ""),
            fr.get("line")), (lib, src, marker_line(src, fn)),
           "%s frames[0] module, file, line" % fn)
        names = [f.get("function") for f in site["frames"]
                 if not f.get("inlined")][:len(chain)]
        eq(names, chain, "%s stack, innermost first" % fn)
        mods = [module_base(f) for f in site["frames"]
                if not f.get("inlined")][:len(chain)]
        eq(mods, [lib] * 3 + ["dlopen-leak"] * (len(chain) - 3),
           "%s modules along the stack" % fn)
    return t


check("dlclose()d library: 4321 bytes at site_in_libleaky, named with file:line after unload")(
    expect_lib_site("site_in_libleaky", "libleaky.so", "libleaky.c", 4321,
                    ["site_in_libleaky", "leaky_helper", "libleaky_run",
                     "call_lib", "dl_stage", "main"]))

check("library loaded after the unload: 1234 bytes at site_in_libother, its own names")(
    expect_lib_site("site_in_libother", "libother.so", "libother.c", 1234,
                    ["site_in_libother", "other_helper", "libother_run",
                     "call_lib", "dl_stage", "main"]))


@check("no frame of libother.so carries a libleaky name and vice versa")
def t_no_mixup():
    _, rep = run()
    bad = []
    for s in rep["sites"]:
        for f in s["frames"]:
            fn, mod = f.get("function") or "", module_base(f) or ""
            if ("libleaky" in fn or "leaky_helper" in fn) and mod != "libleaky.so":
                bad.append(site_text(s))
            if ("libother" in fn or "other_helper" in fn) and mod != "libother.so":
                bad.append(site_text(s))
    ok(not bad, "frames named after the wrong library", "\n".join(bad[:3]))


@check("the library's freed temporary leaves no site")
def t_temp():
    _, rep = run()
    found = sites_mentioning(rep, lambda f: f == "leaky_helper")
    eq(len(found), 1, "sites with a leaky_helper frame (only the 4321-byte one)")
    expect_no_temporaries(rep)
