"""Anonymous mmap/munmap/mremap as sites of kind "mmap" (ground truth:
mmap-sites.c)."""

from harness import (check, once, workload, leakscope, root_report,
                     expect_status, expect_site, expect_no_temporaries,
                     expect_totals_consistent, the_site, marker_line,
                     eq)

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


@check("site_mmap_middle: a one-page hole leaves 28672 bytes in 2 mappings, kind mmap")
def t_middle():
    _, rep = run()
    site = the_site(rep, "site_mmap_middle", exe())
    # the unmapped page splits the mapping in two: 3 pages and 4
    eq((site["live_bytes"], site["live_blocks"], site["kind"]), (28672, 2, "mmap"),
       "site_mmap_middle live_bytes, live_blocks, kind")


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


@check("totals add up; calls: exactly mmap-sites.c's 9 mmap (a file mapping and a "
       "failing one included), 4 munmap, 2 mremap, nothing else")
def t_calls():
    _, rep = run()
    expect_totals_consistent(rep)
    eq({k: v for k, v in rep["calls"].items() if v},
       {"mmap": 9, "munmap": 4, "mremap": 2}, "calls")
