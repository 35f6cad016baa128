"""Inlined functions are expanded into frames of their own, innermost
first, each with the line of its call (ground truth: inlined.c)."""

import os

from harness import (check, once, workload, leakscope, root_report,
                     expect_status, expect_site, marker_line, module_base,
                     site_text, eq)

SRC = "inlined.c"


@once
def run():
    r = leakscope(["--format", "json"], [workload("inlined")])
    expect_status(r, 0, "inlined exit status")
    return root_report(r)


@check("site_inlined: 777 bytes in 1 block")
def t_site():
    expect_site(run(), "site_inlined", workload("inlined"), 777, 1)


@check("frames: site_inlined, inl_inner (inlined), inl_outer (inlined), inline_caller, main, each at its call line")
def t_frames():
    rep = run()
    exe = workload("inlined")
    site = expect_site(rep, "site_inlined", exe, 777, 1)
    got = []
    for f in site["frames"]:
        if module_base(f) != "inlined":
            continue
        got.append((f.get("function"), bool(f.get("inlined")),
                    os.path.basename(f.get("file") or ""), f.get("line")))
        if f.get("function") == "main":
            break
    want = [(fn, inl, SRC, marker_line(SRC, fn)) for fn, inl in (
        ("site_inlined", False), ("inl_inner", True), ("inl_outer", True),
        ("inline_caller", False), ("main", False))]
    eq(got, want, "program frames (function, inlined, file, line)\n    " +
       site_text(site))
