"""Anonymous mmap/munmap/mremap as sites of kind "mmap" (ground truth:
mmap-sites.c)."""

from harness import (check, once, workload, leakscope, root_report,
                     expect_status, expect_site, expect_no_temporaries,
                     expect_totals_consistent, the_site, marker_line,
                     site_text, eq, ok, ge)

SITES = [
    ("site_mremap_grow", 24576, 1),
    ("site_mmap_head", 16384, 1),
    ("site_mmap_tail", 12288, 1),
    ("site_mmap_keep", 8192, 1),
    ("site_mremap_shrink", 4096, 1),
]


@once
def run():
    r = leakscope(["--format", "json"], [workload("mmap-sites")])
    expect_status(r, 0, "mmap-sites exit status")
    return r, root_report(r)


def exe():
    return workload("mmap-sites")


def site_check(name, nbytes, nblocks):
    def t():
        _, rep = run()
        expect_site(rep, name, exe(), nbytes, nblocks, "mmap")
    return t


for _n, _b, _k in SITES:
    check("%s: exactly %d bytes in %d mapping, kind mmap" % (_n, _b, _k))(
        site_check(_n, _b, _k))


@check("site_mmap_middle: a one-page hole leaves 28672 bytes, kind mmap")
def t_middle():
    _, rep = run()
    site = the_site(rep, "site_mmap_middle", exe())
    eq((site["live_bytes"], site["kind"]), (28672, "mmap"),
       "site_mmap_middle live_bytes, kind")
    ok(site["live_blocks"] in (1, 2), "site_mmap_middle blocks (1 or 2)",
       site_text(site))


@check("mremap re-attributes to the mremap caller at its line")
def t_mremap_line():
    _, rep = run()
    for name in ("site_mremap_grow", "site_mremap_shrink"):
        fr = the_site(rep, name, exe())["frames"][0]
        eq((fr.get("function"), fr.get("line")),
           (name, marker_line("mmap-sites.c", name)), "%s frames[0]" % name)


@check("full munmap, file mappings, failed mmap and the mremap origin leave no site")
def t_none():
    _, rep = run()
    expect_no_temporaries(rep)


@check("totals add up; calls: mmap >= 8, munmap >= 4, mremap >= 2")
def t_calls():
    _, rep = run()
    expect_totals_consistent(rep)
    c = rep.get("calls", {})
    ge(c.get("mmap"), 8, "calls.mmap")
    ge(c.get("munmap"), 4, "calls.munmap")
    ge(c.get("mremap"), 2, "calls.mremap")
