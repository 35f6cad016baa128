"""exec of the command's own process is followed; its children are not.

A shell's `exec`, /usr/bin/env and version-manager shims (pyenv, rbenv)
replace the command's process with the real program: that program is the
command and must be traced (agent/exec.h).  Programs the command starts in
child processes are not, unless --follow-exec.
"""
from harness import (check, leakscope, workload, root_report, child_reports,
                     eq, ok, site_function, expect_status)


def basic_bytes(rep, prog):
    return sum(s["live_bytes"] for s in rep["sites"]
               if (site_function(s, prog) or "").startswith("site_"))


@check("sh -c 'exec PROG': the program that replaces the command is traced, exactly")
def t_shell_exec():
    prog = workload("basic")
    r = leakscope(["--format", "json"], ["sh", "-c", "exec " + prog])
    expect_status(r, 0)
    rep = root_report(r)
    eq(rep["command"], [prog], "the report is the exec'd program's")
    eq(basic_bytes(rep, prog), 74776, "its ground-truth leaks")


@check("env -i PROG through the command's own exec: an emptied environment still carries the agent")
def t_env_i():
    prog = workload("basic")
    r = leakscope(["--format", "json"], ["env", "-i", prog])
    expect_status(r, 0)
    rep = root_report(r)
    eq(basic_bytes(rep, prog), 74776, "basic traced after env -i")


@check("a child the command forks and executes is not traced without --follow-exec")
def t_child_not_followed():
    prog = workload("basic")
    r = leakscope(["--format", "json"], ["sh", "-c", prog + "; true"])
    expect_status(r, 0)
    rep = root_report(r)
    eq(basic_bytes(rep, prog), 0, "no basic sites in sh's report")
    eq(child_reports(r), {}, "no report for the child")
