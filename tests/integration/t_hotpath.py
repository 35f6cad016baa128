"""The hook path's shortcuts lose nothing: realloc in sampled mode, whose
common case skips the live table (ground truth: sampled-realloc.c).

The live table's own inline paths (first probe group only, the general
path for collisions, deleted marks and a check's change log) are proved
against a model in tests/unit/t-agent-live.c.
"""
import math

from harness import (check, once, leakscope, workload, root_report, eq, ok,
                     expect_status, expect_site, expect_no_site,
                     expect_no_temporaries, expect_totals_consistent,
                     find_sites)

T = 512 * 1024
SEEDS = range(1, 11)
CALLS = {"malloc": 3000, "realloc": 6500, "free": 2000}


def p(s):
    return -math.expm1(-s / T)


def prog():
    return workload("sampled-realloc")


@once
def full():
    r = leakscope(["--format", "json"], [prog()])
    expect_status(r, 0, "full tracking run")
    return root_report(r)


@once
def sampled():
    out = []
    for seed in SEEDS:
        r = leakscope(["--format", "json", "--sample-rate", "512KiB",
                       "--sample-seed", str(seed)], [prog()])
        expect_status(r, 0, "sampled run, seed %d" % seed)
        out.append(root_report(r))
    return out


@check("full tracking: grown blocks at their last realloc, realloc(NULL) as an allocation, nothing at the sites they left")
def t_full():
    rep = full()
    expect_site(rep, "site_r_grow3", prog(), 16384000, 1000)
    expect_site(rep, "site_r_null", prog(), 1024000, 500)
    expect_no_site(rep, "site_r_grow1", prog())
    expect_no_site(rep, "site_r_grow2", prog())
    expect_no_temporaries(rep, "tmp_r_")
    expect_totals_consistent(rep)
    eq(rep["totals"]["allocated_blocks"], 9500, "allocated blocks")


@check("sampled: every call counted, whether or not it took the fast path")
def t_calls():
    for seed, rep in zip(SEEDS, sampled()):
        for fn, n in CALLS.items():
            eq(rep["calls"][fn], n, "seed %d: %s calls" % (seed, fn))


@check("sampled: no recorded block is left at a site realloc moved it from, in any of 10 seeds")
def t_moved():
    for seed, rep in zip(SEEDS, sampled()):
        for fn in ("site_r_grow1", "site_r_grow2"):
            eq(find_sites(rep, fn, prog()), [],
               "seed %d: sites of %s" % (seed, fn))
        expect_no_temporaries(rep, "tmp_r_")


@check("sampled: over 10 seeds the grown blocks' mean estimate is within 3 standard errors")
def t_estimate():
    size, n = 16384, 1000
    var = n * size * size * (1 - p(size)) / p(size)
    ests = []
    for rep in sampled():
        ests.append(sum(s["live_bytes"] for s in
                        find_sites(rep, "site_r_grow3", prog())))
    mean = sum(ests) / len(ests)
    se = math.sqrt(var / len(ests))
    ok(abs(mean - size * n) <= 3 * se,
       "mean %.0f vs truth %d (3 SE = %.0f)" % (mean, size * n, 3 * se))
