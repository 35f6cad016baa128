"""Processes: fork children get their own report, exec is followed only
with --follow-exec, constructors and atexit handlers are seen (ground
truth: forker.c, spawner.c, ctor-atexit.c, basic.c)."""

import re

from harness import (check, once, workload, leakscope, root_report,
                     child_reports, json_reports_in_stderr, expect_status,
                     expect_site, expect_no_site, outer_functions, the_site,
                     site_function, eq, ok, fail, shorten)


def child_pid(r):
    m = re.search(rb"^child (\d+)$", r.stdout, re.M)
    if not m:
        fail("the workload's 'child PID' line on stdout", "child N",
             shorten(r.stdout))
    return int(m.group(1))


# ------------------------------------------------------------------ fork

# forker's child exits at once: it has its own report only with
# --all-children (by default a forked child reports when it lived at least
# a second, as a pre-fork worker does: see t_fork_default below).

@once
def fork_run():
    r = leakscope(["--format", "json", "--all-children"], [workload("forker")])
    expect_status(r, 0, "forker exit status")
    return r, root_report(r), child_reports(r)


@check("fork: --output FILE holds the parent, FILE.PID the child, nothing else")
def t_fork_files():
    r, rep, kids = fork_run()
    pid = child_pid(r)
    eq(sorted(r.files), sorted(["report", "report.%d" % pid]),
       "files written with --output")
    eq(kids[pid].get("pid"), pid, "pid in the child's report")
    eq(kids[pid].get("ppid"), rep.get("pid"), "ppid in the child's report")
    eq(kids[pid].get("reason"), "exit", "reason in the child's report")


@check("fork: parent has site_parent_before 900/3 and site_parent_after 123/1, no site_child")
def t_fork_parent():
    _, rep, _ = fork_run()
    exe = workload("forker")
    expect_site(rep, "site_parent_before", exe, 900, 3)
    expect_site(rep, "site_parent_after", exe, 123, 1)
    expect_no_site(rep, "site_child", exe)


@check("fork: child has site_child 940/2 and the inherited site_parent_before 900/3, no site_parent_after")
def t_fork_child():
    r, _, kids = fork_run()
    exe = workload("forker")
    rep = kids[child_pid(r)]
    expect_site(rep, "site_child", exe, 940, 2)
    expect_site(rep, "site_parent_before", exe, 900, 3)
    expect_no_site(rep, "site_parent_after", exe)
    eq(outer_functions(the_site(rep, "site_child", exe), exe)[:4],
       ["site_child", "child_main", "forker_run", "main"],
       "child's stack for site_child")


@check("fork without --output: root's report first on stderr, then the child's")
def t_fork_stderr():
    r = leakscope(["--format", "json", "--all-children"], [workload("forker")],
                  output=False)
    expect_status(r, 0, "forker exit status")
    reps = [x for x in json_reports_in_stderr(r) if x.get("reason") == "exit"]
    pid = child_pid(r)
    eq(len(reps), 2, "exit reports on stderr")
    eq(reps[0].get("ppid"), r.pid,
       "ppid of the first report (the root's, whose parent is leakscope)")
    eq(reps[1].get("pid"), pid, "pid of the second report (the child's)")


@check("fork, by default: a child that exits at once has no report of its own, a worker that lives on has")
def t_fork_default():
    r = leakscope(["--format", "json"], [workload("forker")])
    expect_status(r, 0, "forker exit status")
    eq(sorted(r.files), ["report"], "files written: only the command's")
    expect_no_site(root_report(r), "site_child", workload("forker"))
    r = leakscope(["--format", "json"], [workload("prefork"), "2"])
    expect_status(r, 0, "prefork exit status")
    worker = int(r.stdout.split()[0])
    eq(sorted(r.files), sorted(["report", "report.%d" % worker]),
       "files written: the command's and its worker's")
    rep = child_reports(r)[worker]
    leak = [s for s in rep["sites"]
            if site_function(s, workload("prefork")) == "site_worker_leak"]
    eq(len(leak), 1, "the worker's report has its leak site")
    ok(leak[0]["live_bytes"] >= 4096 * 20 and leak[0]["live_bytes"] % 4096 == 0,
       "the worker leaked 4096 bytes every 50 ms for 2 s", leak[0]["live_bytes"])


# ------------------------------------------------------------------ exec

@once
def spawn_run(follow):
    opts = ["--format", "json"] + (["--follow-exec"] if follow else [])
    r = leakscope(opts, [workload("spawner"), workload("basic")])
    expect_status(r, 0, "spawner exit status")
    return r, root_report(r), child_reports(r)


@check("exec not followed by default: only the spawner's report, with site_spawner 700/1")
def t_exec_default():
    r, rep, kids = spawn_run(False)
    eq(sorted(r.files), ["report"], "files written with --output")
    expect_site(rep, "site_spawner", workload("spawner"), 700, 1)
    eq(rep.get("command"), [workload("spawner"), workload("basic")],
       "root report's command")


@check("--follow-exec: the exec'd program gets its own report with its own ground truth")
def t_exec_follow():
    r, rep, kids = spawn_run(True)
    pid = child_pid(r)
    ok(pid in kids, "a report for the exec'd child %d" % pid, repr(sorted(r.files)))
    kid = kids[pid]
    basic = workload("basic")
    eq(kid.get("command"), [basic], "command of the exec'd program's report")
    expect_site(kid, "site_ten", basic, 1000, 10)
    expect_site(kid, "site_large", basic, 65536, 1)
    ok(not [s for s in kid["sites"] if any(
        f.get("function") == "site_spawner" for f in s["frames"])],
       "the exec'd image has none of the spawner's sites")
    expect_site(rep, "site_spawner", workload("spawner"), 700, 1)


# ------------------------------------------------------- ctor and atexit

@once
def ctor_run():
    r = leakscope(["--format", "json"], [workload("ctor-atexit")])
    expect_status(r, 0, "ctor-atexit exit status")
    return r, root_report(r)


@check("a constructor's leak before main: site_ctor 111/1 via ctor_step <- early_init")
def t_ctor():
    _, rep = ctor_run()
    exe = workload("ctor-atexit")
    site = expect_site(rep, "site_ctor", exe, 111, 1)
    eq(outer_functions(site, exe)[:3], ["site_ctor", "ctor_step", "early_init"],
       "constructor stack")


@check("main's leak: site_main 222/1")
def t_main():
    _, rep = ctor_run()
    expect_site(rep, "site_main", workload("ctor-atexit"), 222, 1)


@check("an atexit handler's leak: site_atexit 333/1 via atexit_step <- late_fini")
def t_atexit():
    _, rep = ctor_run()
    exe = workload("ctor-atexit")
    site = expect_site(rep, "site_atexit", exe, 333, 1)
    eq(outer_functions(site, exe)[:3], ["site_atexit", "atexit_step", "late_fini"],
       "atexit stack")
