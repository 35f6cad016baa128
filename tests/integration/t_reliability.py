"""Reliability under stress patterns (issue 12): thread churn."""

from harness import (check, once, workload, leakscope, root_report,
                     expect_status, expect_site, expect_no_temporaries,
                     ge, ok)

THREADS = 3000
PEAK_BATCH = 64 << 10      # agent/thread.h LS_PEAK_BATCH, slack per record


@once
def churn():
    r = leakscope(["--format", "json"], [workload("thread-churn")], timeout=120)
    expect_status(r, 0, "thread-churn exit status")
    return root_report(r)


@check("thread churn: every 100th of 3000 threads leaks 48 bytes: 1440 bytes in 30 blocks")
def t_churn_leak():
    expect_site(churn(), "site_churn_leak", workload("thread-churn"), 1440, 30)


@check("thread churn: frees run by a key destructor after the agent's own are tracked")
def t_churn_late_free():
    expect_no_temporaries(churn())


@check("thread churn: per-thread records are reused (peak slack of a few records, not 3000)")
def t_churn_records():
    slack = churn()["totals"]["peak_slack"]
    ok(slack <= 16 * PEAK_BATCH, "peak_slack <= 16 records' worth (%d)" % (16 * PEAK_BATCH),
       "%d (%d records)" % (slack, slack // PEAK_BATCH))


@check("thread churn: every thread's malloc is counted (3000 + 30 leaks)")
def t_churn_calls():
    ge(churn()["calls"]["malloc"], THREADS + THREADS // 100, "malloc calls")
