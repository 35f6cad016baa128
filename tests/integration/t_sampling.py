"""Byte sampling (--sample-rate): estimates are unbiased and found.

Ground truth: tests/workloads/sampled.c.  The theory is docs/SAMPLING.md:
a block of s bytes is recorded with probability p = 1 - exp(-s/T) and then
stands for s/p bytes and 1/p blocks; the variance of a site's byte
estimate is sum(s^2 (1-p)/p), of its block estimate sum((1-p)/p).  Every
run is seeded (--sample-seed) so the test is deterministic.
"""
import math

from harness import (check, once, leakscope, workload, root_report, eq, ok,
                     site_function, expect_status)

T = 512 * 1024
SEEDS = range(1, 31)

MIXED = [16, 100, 1000, 5000, 40000]
# site -> list of block sizes (exact ground truth of sampled.c)
TRUTH = {
    "site_s_small": [48] * 40000,
    "site_s_mixed": [MIXED[i % 5] for i in range(1000)],
    "site_s_large": [262144] * 16,
    "site_s_onemib": [4096] * 256,
}


def p(s):
    return -math.expm1(-s / T)


def moments(sizes):
    bytes_ = sum(sizes)
    var_b = sum(s * s * (1 - p(s)) / p(s) for s in sizes)
    var_k = sum((1 - p(s)) / p(s) for s in sizes)
    return bytes_, len(sizes), var_b, var_k


@once
def runs():
    prog = workload("sampled")
    out = []
    for seed in SEEDS:
        r = leakscope(["--format", "json", "--sample-rate", "512KiB",
                       "--sample-seed", str(seed)], [prog])
        expect_status(r, 0, "sampled run, seed %d" % seed)
        rep = root_report(r)
        per = {}
        for site in rep["sites"]:
            fn = site_function(site, prog)
            if fn in TRUTH:
                b, k = per.get(fn, (0, 0))
                per[fn] = (b + site["live_bytes"], k + site["live_blocks"])
        out.append((rep, per))
    return out


@check("sampled reports say they are estimates (mode, sample_rate)")
def t_mode():
    rep, _ = runs()[0]
    eq(rep["mode"], "sampled", "mode")
    eq(rep["sample_rate"], T, "sample_rate")


@check("over 30 seeds the mean estimate of every site is within 3 standard errors (bytes and blocks)")
def t_unbiased():
    n = len(SEEDS)
    for fn, sizes in TRUTH.items():
        b, k, vb, vk = moments(sizes)
        est_b = [per.get(fn, (0, 0))[0] for _, per in runs()]
        est_k = [per.get(fn, (0, 0))[1] for _, per in runs()]
        mean_b = sum(est_b) / n
        mean_k = sum(est_k) / n
        se_b = math.sqrt(vb / n)
        se_k = math.sqrt(vk / n)
        ok(abs(mean_b - b) <= 3 * se_b + 1,
           "%s: mean byte estimate %.0f vs truth %d (3 SE = %.0f)"
           % (fn, mean_b, b, 3 * se_b))
        ok(abs(mean_k - k) <= 3 * se_k + 1,
           "%s: mean block estimate %.1f vs truth %d (3 SE = %.1f)"
           % (fn, mean_k, k, 3 * se_k))


@check("per run, at least 90% of the site estimates fall within 3 standard errors")
def t_spread():
    inside = total = 0
    for _, per in runs():
        for fn, sizes in TRUTH.items():
            b, _, vb, _ = moments(sizes)
            total += 1
            inside += abs(per.get(fn, (0, 0))[0] - b) <= 3 * math.sqrt(vb)
    ok(inside >= 0.9 * total, "%d of %d estimates within 3 SE" % (inside, total))


@check("sites leaking >= 1 MiB are found: always when P(miss) < 1e-3, else at the expected rate")
def t_found():
    for fn, sizes in TRUTH.items():
        b = sum(sizes)
        # P(no sample point in any of the site's bytes) = exp(-B/T)
        miss = math.exp(-b / T)
        found = sum(1 for _, per in runs() if per.get(fn, (0, 0))[0] > 0)
        n = len(SEEDS)
        if miss < 1e-3:
            eq(found, n, "%s (%d bytes, P(miss)=%.1e): runs that found it"
               % (fn, b, miss))
        else:
            expect = n * (1 - miss)
            sd = math.sqrt(n * miss * (1 - miss))
            ok(found >= expect - 3 * sd,
               "%s (%d bytes, P(miss)=%.3f): found in %d of %d runs, "
               "expected %.1f +- %.1f" % (fn, b, miss, found, n, expect, sd))


@check("sampled totals: allocated estimate near the workload's 300k temporaries plus leaks")
def t_totals():
    # Temporaries: 300,001 blocks of 8 + (x>>16)%2048 bytes from a known LCG.
    x, tmp = 1, 0
    for _ in range(40000 * 7 + 1):
        x = (x * 1103515245 + 12345) & 0xffffffff
        tmp += 8 + (x >> 16) % 2048
    leaked = sum(sum(s) for s in TRUTH.values())
    truth = tmp + leaked
    ests = [rep["totals"]["allocated_bytes"] for rep, _ in runs()]
    mean = sum(ests) / len(ests)
    ok(abs(mean - truth) <= 0.02 * truth,
       "mean allocated estimate %.0f vs truth %d (within 2%%)" % (mean, truth))
