"""Report options and formats on known ground truth (basic.c, aging.c,
slow.c, noleak.c, patterns.c).

basic.c holds exactly: site_large 65536 B / 1 block, site_medium 8192 / 2
(4096 each), site_ten 1000 / 10 (100 each), site_small 48 / 3 (16 each);
74776 bytes in 16 blocks, nothing else."""

import re

from harness import (parse_json_lines, check, once, workload, leakscope, root_report,
                     json_reports_in_stderr, expect_status, expect_site,
                     expect_totals_consistent, the_site, find_sites,
                     site_function, parse_folded, is_subsequence, marker_line,
                     site_text, valgrind_heap_usage, eq, ok, ge, contains, shorten)

BASIC = [("site_large", 65536, 1, 65536), ("site_medium", 8192, 2, 4096),
         ("site_ten", 1000, 10, 100), ("site_small", 48, 3, 16)]
BASIC_TOTAL = 74776


def basic():
    return workload("basic")


def names(rep, module):
    return [site_function(s, module) for s in rep["sites"]]


@once
def basic_json(*opts):
    r = leakscope(["--format", "json"] + list(opts), [basic()])
    expect_status(r, 0, "basic exit status")
    return r, root_report(r)


# ------------------------------------------------------------ ground truth

@check("basic: exactly the four sites, exact bytes/blocks, in live_bytes order")
def t_basic():
    _, rep = basic_json()
    eq(names(rep, basic()), [n for n, *_ in BASIC], "sites, in order")
    for n, b, k, _ in BASIC:
        expect_site(rep, n, basic(), b, k)
    expect_totals_consistent(rep)
    eq((rep["totals"]["live_bytes"], rep["totals"]["live_blocks"]),
       (BASIC_TOTAL, 16), "totals live_bytes, live_blocks")


# ------------------------------------------------------------------- --top

@check("--top 2: the two biggest sites only, sites_total still 4")
def t_top():
    _, rep = basic_json("--top", "2")
    eq(names(rep, basic()), ["site_large", "site_medium"], "sites with --top 2")
    eq(rep.get("sites_total"), 4, "sites_total with --top 2")
    expect_site(rep, "site_medium", basic(), 8192, 2)


@check("--top 10 with 4 sites lists all 4")
def t_top_more():
    _, rep = basic_json("--top", "10")
    eq(names(rep, basic()), [n for n, *_ in BASIC], "sites with --top 10")


# ------------------------------------------------------ --min/--max-size

def size_filter(opts, expected):
    def t():
        _, rep = basic_json(*opts)
        eq(names(rep, basic()), expected, "sites with %s" % " ".join(opts))
        for n, b, k, _ in BASIC:
            if n in expected:
                expect_site(rep, n, basic(), b, k)
    return t


check("--min-size 1K keeps blocks >= 1 KiB: site_large, site_medium")(
    size_filter(["--min-size", "1K"], ["site_large", "site_medium"]))
check("--max-size 4KiB keeps blocks <= 4096: site_medium, site_ten, site_small")(
    size_filter(["--max-size", "4KiB"], ["site_medium", "site_ten", "site_small"]))
check("--min-size 4096 --max-size 4096 is inclusive: site_medium only")(
    size_filter(["--min-size", "4096", "--max-size", "4096"], ["site_medium"]))
check("--min-size 17 --max-size 100: site_ten only")(
    size_filter(["--min-size", "17", "--max-size", "100"], ["site_ten"]))
check("--max-size 16: site_small only")(
    size_filter(["--max-size", "16"], ["site_small"]))
check("--min-size 1M: no site at all")(
    size_filter(["--min-size", "1M"], []))


@check("--min-size 64MiB on patterns: only the 64 MiB block")
def t_min_size_mib():
    r = leakscope(["--format", "json", "--min-size", "64MiB"],
                  [workload("patterns")], timeout=120)
    expect_status(r, 0, "patterns exit status")
    rep = root_report(r)
    exe = workload("patterns")
    eq(names(rep, exe), ["site_big"], "sites with --min-size 64MiB")
    expect_site(rep, "site_big", exe, 64 << 20, 1)


@check("--max-size 1G keeps everything")
def t_max_size_g():
    _, rep = basic_json("--max-size", "1G")
    eq(names(rep, basic()), [n for n, *_ in BASIC], "sites with --max-size 1G")


# ---------------------------------------------------------------- --min-age

@once
def aging(*opts):
    r = leakscope(["--format", "json"] + list(opts), [workload("aging")])
    expect_status(r, 0, "aging exit status")
    return root_report(r)


@check("aging without --min-age: site_young 2222 and site_old 1111")
def t_age_all():
    rep = aging()
    exe = workload("aging")
    eq(names(rep, exe), ["site_young", "site_old"], "sites")
    expect_site(rep, "site_old", exe, 1111, 1)
    expect_site(rep, "site_young", exe, 2222, 1)


@check("--min-age 200: only site_old (leaked 300 ms before exit)")
def t_min_age():
    rep = aging("--min-age", "200")
    exe = workload("aging")
    eq(names(rep, exe), ["site_old"], "sites with --min-age 200")
    expect_site(rep, "site_old", exe, 1111, 1)


@check("--show-allocs ages: site_old >= 300 ms, site_young < 200 ms")
def t_ages():
    rep = aging("--show-allocs")
    exe = workload("aging")
    old = the_site(rep, "site_old", exe).get("blocks", [])
    young = the_site(rep, "site_young", exe).get("blocks", [])
    eq((len(old), len(young)), (1, 1), "blocks listed (old, young)")
    ge(old[0].get("age_ms"), 299, "age_ms of the old block")
    ok(isinstance(young[0].get("age_ms"), (int, float)) and
       0 <= young[0]["age_ms"] < 200, "age_ms of the young block in [0, 200)",
       repr(young[0]))


# ------------------------------------------------------------ --show-allocs

@check("--show-allocs: every site lists its blocks, exact sizes, distinct addresses, tid = pid")
def t_show_allocs():
    _, rep = basic_json("--show-allocs")
    pid = rep["pid"]
    seen = set()
    for n, b, k, size in BASIC:
        site = expect_site(rep, n, basic(), b, k)
        blocks = site.get("blocks")
        ok(isinstance(blocks, list), "%s has a blocks list" % n, site_text(site))
        eq(len(blocks), k, "%s: blocks listed" % n)
        eq([x.get("size") for x in blocks], [size] * k, "%s: block sizes" % n)
        for x in blocks:
            ok(isinstance(x.get("address"), str) and
               re.fullmatch(r"0x[0-9a-f]+", x["address"]) is not None,
               "%s: block address is 0x-hex" % n, repr(x))
            ok(x["address"] not in seen, "distinct block addresses", x["address"])
            seen.add(x["address"])
            ok(isinstance(x.get("age_ms"), (int, float)) and x["age_ms"] >= 0,
               "%s: age_ms >= 0" % n, repr(x))
            eq(x.get("tid"), pid, "%s: tid of a main-thread block" % n)


# ------------------------------------------------------------------ --depth

@check("--depth 3: every stack has at most 3 frames; site_ten's are site_ten, basic_step, basic_run")
def t_depth():
    _, rep = basic_json("--depth", "3")
    long = [site_text(s) for s in rep["sites"] if len(s["frames"]) > 3]
    ok(not long, "stacks longer than 3 frames", "\n".join(long[:3]))
    site = expect_site(rep, "site_ten", basic(), 1000, 10)
    eq([f.get("function") for f in site["frames"]],
       ["site_ten", "basic_step", "basic_run"], "site_ten frames with --depth 3")


@check("default depth reaches main for basic's sites")
def t_depth_main():
    _, rep = basic_json()
    site = the_site(rep, "site_ten", basic())
    eq([f.get("function") for f in site["frames"]][:4],
       ["site_ten", "basic_step", "basic_run", "main"], "site_ten frames")


@once
def deep(*opts):
    r = leakscope(["--format", "json"] + list(opts), [workload("deep")])
    expect_status(r, 0, "deep exit status")
    return root_report(r)


@check("default depth is 64: a leak 100 calls deep keeps site_deep and 63 descend frames")
def t_depth_default():
    site = expect_site(deep(), "site_deep", workload("deep"), 4242, 1)
    eq([f.get("function") for f in site["frames"]],
       ["site_deep"] + ["descend"] * 63, "frames with the default depth")


@check("--depth 256: the whole 100-deep stack down to main")
def t_depth_256():
    site = expect_site(deep("--depth", "256"), "site_deep", workload("deep"),
                       4242, 1)
    fns = [f.get("function") for f in site["frames"]]
    eq(fns[:103], ["site_deep"] + ["descend"] * 100 + ["deep_run", "main"],
       "the first 103 frames with --depth 256")


# ------------------------------------------------------------------ folded

@once
def folded():
    r = leakscope(["--format", "folded"], [basic()])
    expect_status(r, 0, "basic exit status")
    ok("report" in r.files, "report file written", r.describe())
    return parse_folded(r.files["report"])


@check("--format folded: site_ten line 'main;...;basic_run;basic_step;site_ten 1000'")
def t_folded():
    lines = folded()
    mine = [(st, b) for st, b in lines if st and st[-1] == "site_ten"]
    eq(len(mine), 1, "folded lines ending in site_ten")
    stack, nbytes = mine[0]
    eq(nbytes, 1000, "bytes on site_ten's folded line")
    ok(is_subsequence(["main", "basic_run", "basic_step", "site_ten"], stack),
       "outermost-first order main;basic_run;basic_step;site_ten",
       ";".join(stack))


@check("--format folded: one line per site, bytes add up to 74776")
def t_folded_sum():
    lines = folded()
    for n, b, _k, _s in BASIC:
        got = [x for st, x in lines if st and st[-1] == n]
        eq(got, [b], "bytes on %s's folded line(s)" % n)
    eq(sum(b for _, b in lines), BASIC_TOTAL, "sum of folded bytes")


# -------------------------------------------------------------------- text

@once
def text(default_format):
    opts = [] if default_format else ["--format", "text"]
    r = leakscope(opts, [basic()])
    expect_status(r, 0, "basic exit status")
    ok("report" in r.files, "report file written", r.describe())
    return r.files["report"]


def text_check(default_format):
    def t():
        rep = text(default_format)
        contains(rep, "1000 bytes in 10 allocations from stack",
                 "text report")
        ok(re.search(r"^\s*65536 bytes in 1 allocations? from stack$", rep,
                     re.M) is not None,
           "text report has '65536 bytes in 1 allocation(s) from stack'",
           shorten(rep, 600))
        # The frame under the header: function+0xoff [module] file:line
        block = rep.split("1000 bytes in 10 allocations from stack", 1)[1]
        block = block.split("allocations from stack", 1)[0]
        line = marker_line("basic.c", "site_ten")
        pat = r"site_ten\+0x[0-9a-f]+ \[[^\]]*basic\] \S*basic\.c:%d\b" % line
        ok(re.search(pat, block) is not None,
           "frame line 'site_ten+0x.. [.../basic] .../basic.c:%d' under the "
           "1000-byte stack" % line, shorten(block, 800))
        ok(re.search(r"\bmain\b", block) is not None,
           "main in the 1000-byte stack", shorten(block, 800))
    return t


check("--format text: '1000 bytes in 10 allocations from stack' then site_ten+0x.. [basic] basic.c:LINE")(
    text_check(False))
check("default format is text")(text_check(True))


@check("text frames appear in stack order: site_ten before basic_step before main")
def t_text_order():
    rep = text(False)
    block = rep.split("1000 bytes in 10 allocations from stack", 1)[-1]
    block = block.split("allocations from stack", 1)[0]
    pos = [block.find(x) for x in ("site_ten+", "basic_step+", "main+")]
    ok(all(p >= 0 for p in pos) and pos == sorted(pos),
       "positions of site_ten, basic_step, main", "%s\n%s" % (pos, shorten(block, 800)))


# ------------------------------------------------------------------ --output

@check("--output FILE: the report goes to FILE, stderr is the program's alone (empty)")
def t_output():
    r, rep = basic_json()
    eq(r.stderr, b"", "stderr with --output")
    eq(sorted(r.files), ["report"], "files written")


@check("without --output the report goes to stderr")
def t_stderr_default():
    r = leakscope(["--format", "json"], [basic()], output=False)
    expect_status(r, 0, "basic exit status")
    reps = json_reports_in_stderr(r)
    eq(len(reps), 1, "JSON reports on stderr")
    expect_site(reps[0], "site_ten", basic(), 1000, 10)
    eq(r.stdout, b"", "stdout")


# ------------------------------------------------------------ --fail-on-leak

def fail_on_leak(opts, command, status):
    def t():
        r = leakscope(["--format", "json"] + opts, command)
        expect_status(r, status, "exit status with %s" % " ".join(opts))
        root_report(r)
    return t


check("--fail-on-leak: 99 for a leaking program that exits 0")(
    fail_on_leak(["--fail-on-leak"], [workload("basic")], 99))
check("--fail-on-leak: 0 for a program that frees everything")(
    fail_on_leak(["--fail-on-leak"], [workload("noleak")], 0))
check("--fail-on-leak=74776 (exactly what leaks): 0")(
    fail_on_leak(["--fail-on-leak=74776"], [workload("basic")], 0))
check("--fail-on-leak=74775 (one byte less): 99")(
    fail_on_leak(["--fail-on-leak=74775"], [workload("basic")], 99))
check("--fail-on-leak=73K: 99 (74776 > 73K)")(
    fail_on_leak(["--fail-on-leak=73K"], [workload("basic")], 99))
check("--fail-on-leak=74KiB: 0 (74776 <= 75776)")(
    fail_on_leak(["--fail-on-leak=74KiB"], [workload("basic")], 0))
check("--fail-on-leak keeps a failing command's own status (3, not 99)")(
    fail_on_leak(["--fail-on-leak"], [workload("basic"), "3"], 3))
check("--fail-on-leak=1000 --follow-exec: 99, the exec'd child leaks 74776 (the root only 700)")(
    fail_on_leak(["--fail-on-leak=1000", "--follow-exec"],
                 [workload("spawner"), workload("basic")], 99))
check("--fail-on-leak=1000 without --follow-exec: 0 (only the root's 700 bytes are traced)")(
    fail_on_leak(["--fail-on-leak=1000"],
                 [workload("spawner"), workload("basic")], 0))
check("without --fail-on-leak a leaking program's status 0 passes through")(
    fail_on_leak([], [workload("basic")], 0))


@check("noleak: the report lists no site and zero live bytes")
def t_noleak():
    r = leakscope(["--format", "json"], [workload("noleak")])
    expect_status(r, 0, "noleak exit status")
    rep = root_report(r)
    eq((rep["totals"]["live_bytes"], rep["totals"]["live_blocks"],
        len(rep["sites"])), (0, 0, 0), "live_bytes, live_blocks, sites")
    # noleak.c: 200 rounds of malloc, calloc, strdup, realloc, 3 frees
    eq({k: v for k, v in rep["calls"].items() if v},
       {"malloc": 400, "calloc": 200, "realloc": 200, "free": 600}, "calls")


@check("noleak: allocated blocks, bytes and frees equal valgrind's total heap usage")
def t_noleak_valgrind():
    r = leakscope(["--format", "json"], [workload("noleak")])
    expect_status(r, 0, "noleak exit status")
    rep = root_report(r)
    allocs, frees, nbytes = valgrind_heap_usage([workload("noleak")])
    # valgrind counts a realloc as an alloc and a free
    eq((rep["totals"]["allocated_blocks"], rep["totals"]["allocated_bytes"],
        rep["calls"]["free"] + rep["calls"]["realloc"]),
       (allocs, nbytes, frees), "allocated blocks, bytes, frees vs valgrind")


# --------------------------------------------------------------- --interval

@once
def periodic():
    # Machine formats with --interval go to a file or an explicit '-'
    # (stdout; slow writes nothing there), never into the command's stderr.
    r = leakscope(["--format", "json", "--interval", "1", "--count", "2",
                   "--output", "-"], [workload("slow")], output=False,
                  timeout=60)
    expect_status(r, 0, "slow exit status")
    return r, parse_json_lines(r.stdout.decode("utf-8", "replace"), "stdout")


@check("--interval 1 --count 2 on a 2.5 s program: two periodic reports, then the exit report")
def t_interval():
    r, reps = periodic()
    eq(len(reps), 3, "reports on stderr")
    eq([x.get("reason") == "exit" for x in reps], [False, False, True],
       "which reports are the exit report")
    eq(len({x.get("pid") for x in reps}), 1, "one process reported")


@check("--interval: site_tick grows between reports and ends at exactly 25000/25")
def t_interval_values():
    r, reps = periodic()
    exe = workload("slow")
    got = []
    for x in reps:
        s = find_sites(x, "site_tick", exe)
        got.append((s[0]["live_bytes"], s[0]["live_blocks"]) if s else (0, 0))
    ok(len(got) == 3 and 0 < got[0][1] < got[1][1] < got[2][1],
       "site_tick blocks strictly growing over the 3 reports", repr(got))
    ok(got[1][1] < 25, "the second periodic report comes before the end",
       repr(got))
    eq(got[-1], (25000, 25), "site_tick at exit")
    eq([b for b, k in got], [k * 1000 for b, k in got],
       "1000 bytes per block in every report")
