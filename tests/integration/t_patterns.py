"""Big blocks, realloc chains and pure churn (ground truth: patterns.c)."""

from harness import (check, once, workload, leakscope, root_report,
                     expect_status, expect_site, expect_no_site,
                     expect_no_temporaries, expect_totals_consistent,
                     find_sites, outer_functions, marker_line, the_site,
                     site_text, valgrind_heap_usage, eq, ok, ge)

CHURN_PAIRS = 100000


@once
def run():
    r = leakscope(["--format", "json"], [workload("patterns")], timeout=120)
    expect_status(r, 0, "patterns exit status")
    return r, root_report(r)


def exe():
    return workload("patterns")


@check("malloc(64 MiB): one heap block of exactly 67108864 bytes at site_big")
def t_big():
    _, rep = run()
    expect_site(rep, "site_big", exe(), 64 << 20, 1, "heap")


@check("malloc(64 MiB): glibc's internal mmap is not a second (mmap) site")
def t_big_not_mmap():
    _, rep = run()
    mm = [s for s in find_sites(rep, "site_big", exe()) if s.get("kind") != "heap"]
    ok(not mm, "non-heap sites at site_big", "\n".join(site_text(s) for s in mm))
    ok(not [s for s in rep["sites"] if s.get("kind") == "mmap"],
       "mmap sites in a program that never calls mmap",
       "\n".join(site_text(s) for s in rep["sites"] if s.get("kind") == "mmap"))


@check("realloc chain: only the final 32768 bytes, one block, at the realloc site")
def t_chain():
    _, rep = run()
    site = expect_site(rep, "site_chain_grow", exe(), 32768, 1)
    line = marker_line("patterns.c", "site_chain_grow")
    fr = site["frames"][0]
    eq((fr.get("function"), fr.get("line")), ("site_chain_grow", line),
       "frames[0] of the realloc chain (function, line)")


@check("realloc chain: the first malloc's function (tmp_chain_start) holds nothing")
def t_chain_origin():
    _, rep = run()
    expect_no_site(rep, "tmp_chain_start", exe())


@check("100k malloc/free pairs of mixed sizes leave no site")
def t_churn():
    _, rep = run()
    expect_no_temporaries(rep)


@check("stacks: site <- patterns_stage <- patterns_run <- main")
def t_stacks():
    _, rep = run()
    for name in ("site_big", "site_chain_grow"):
        got = outer_functions(the_site(rep, name, exe()), exe())[:4]
        eq(got, [name, "patterns_stage", "patterns_run", "main"],
           "%s program frames" % name)


@check("totals: sites add up, live_bytes covers the ground truth, churn counted")
def t_totals():
    _, rep = run()
    expect_totals_consistent(rep)
    t = rep["totals"]
    ge(t["live_bytes"], (64 << 20) + 32768, "totals.live_bytes")
    ge(t["allocated_blocks"], CHURN_PAIRS + 12, "totals.allocated_blocks")
    ge(t["peak_live_bytes"], (64 << 20) + 32768, "totals.peak_live_bytes")


@check("calls counters: exactly patterns.c's calls (100k+2 mallocs, 10 reallocs, 100k+64 frees: 64 of NULL)")
def t_calls():
    _, rep = run()
    eq({k: v for k, v in rep["calls"].items() if v},
       {"malloc": CHURN_PAIRS + 2, "realloc": 10, "free": CHURN_PAIRS + 64}, "calls")


@check("allocations and bytes allocated equal valgrind's total heap usage")
def t_calls_valgrind():
    _, rep = run()
    allocs, frees, nbytes = valgrind_heap_usage([exe()])
    t, c = rep["totals"], rep["calls"]
    eq((t["allocated_blocks"], t["allocated_bytes"]), (allocs, nbytes),
       "allocated blocks and bytes vs valgrind")
    # valgrind's frees: every free of a block (not of NULL) and every realloc
    eq(c["free"] - 64 + c["realloc"], frees, "frees vs valgrind")
