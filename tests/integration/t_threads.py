"""Leaks from a second thread, blocks freed by another thread (ground
truth: threads.c)."""

from harness import (check, once, workload, leakscope, root_report,
                     expect_status, expect_site, expect_no_temporaries,
                     the_site, outer_functions, eq, ok)


@once
def run():
    r = leakscope(["--format", "json", "--show-allocs"], [workload("threads")])
    expect_status(r, 0, "threads exit status")
    return r, root_report(r)


def exe():
    return workload("threads")


@check("worker thread leak: site_thread_leak 1050 bytes in 5 blocks")
def t_worker():
    _, rep = run()
    expect_site(rep, "site_thread_leak", exe(), 1050, 5)


@check("worker stack: site_thread_leak <- worker_stage <- worker_main")
def t_worker_stack():
    _, rep = run()
    got = outer_functions(the_site(rep, "site_thread_leak", exe()), exe())[:3]
    eq(got, ["site_thread_leak", "worker_stage", "worker_main"],
       "program frames of the worker's leak")


@check("main thread leak: site_main_leak 660 bytes in 2 blocks")
def t_main():
    _, rep = run()
    expect_site(rep, "site_main_leak", exe(), 660, 2)


@check("blocks carry the allocating thread: worker tid != pid, main tid == pid")
def t_tids():
    _, rep = run()
    pid = rep["pid"]
    w = the_site(rep, "site_thread_leak", exe())
    m = the_site(rep, "site_main_leak", exe())
    wt = {b.get("tid") for b in w.get("blocks", [])}
    mt = {b.get("tid") for b in m.get("blocks", [])}
    eq(len(w.get("blocks", [])), 5, "blocks listed for site_thread_leak")
    ok(len(wt) == 1 and pid not in wt and all(isinstance(t, int) and t > 0
                                               for t in wt),
       "worker blocks' tid: one tid, not the pid %d" % pid, repr(wt))
    eq(mt, {pid}, "main-thread blocks' tid")


@check("blocks freed by another thread than the allocating one leave no site")
def t_cross():
    _, rep = run()
    expect_no_temporaries(rep)
