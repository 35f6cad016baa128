"""leakscope's own failures: the right exit status, exactly one
'leakscope: ...' line on stderr, no report file left behind, and for usage
errors the command is never started."""

import os
import shutil
import stat
import subprocess
import tempfile

from harness import (check, once, workload, run_process, LEAKSCOPE,
                     WORKLOAD_SRC, Failure, Skip, eq, ok, fail, shorten)


def fresh_dir():
    d = tempfile.mkdtemp(prefix="leakscope-err-")
    os.chmod(d, 0o755)
    return d


def failing(args, status, mention=None, env=None, output_in=None,
            probe=False):
    """Run `leakscope ARGS` (ARGS may hold {out} for a report path inside a
    fresh directory and {marker} for a file the command would create) and
    check the failure contract."""
    if not os.path.exists(LEAKSCOPE):
        raise Failure("build/leakscope is not built (run make)")
    d = fresh_dir()
    try:
        out = os.path.join(output_in or d, "report")
        marker = os.path.join(d, "command-ran")
        argv = [LEAKSCOPE] + [a.format(out=out, marker=marker, dir=d)
                              for a in args]
        full_env = dict(os.environ)
        full_env.update(env or {})
        r = run_process(argv, timeout=30, env=full_env, cwd=d)
        where = "\n  command: %s" % " ".join(argv)
        if r.returncode != status:
            fail("exit status" + where, status, "%s\n  stderr: %s" % (
                r.returncode, shorten(r.stderr, 600)))
        lines = r.stderr.decode("utf-8", "replace").splitlines()
        ok(len(lines) == 1 and lines[0].startswith("leakscope: "),
           "stderr must be exactly one line starting 'leakscope: '" + where,
           "got %d lines: %s" % (len(lines), shorten(r.stderr, 600)))
        if mention:
            ok(mention.lower() in lines[0].lower(),
               "the message must mention %r" % mention + where, lines[0])
        left = sorted(os.listdir(d))
        eq(left, [],
           "files left in the working directory" + where)
        if probe:
            ok(not os.path.exists(marker), "the command must not run" + where)
        return lines[0]
    finally:
        shutil.rmtree(d, ignore_errors=True)


RAN = ["sh", "-c", "echo ran > {marker}"]


def usage(name, args, mention=None):
    check(name)(lambda: failing(args, 125, mention, probe=True))


usage("unknown option: 125",
      ["run", "--output", "{out}", "--no-such-option", "--"] + RAN)
usage("no command after --: 125", ["run", "--output", "{out}", "--"])
usage("no command and no --: 125", ["run", "--output", "{out}"])
usage("no subcommand at all: 125", [])
usage("unknown subcommand: 125", ["frobnicate", "--", "true"])
usage("bad --format value: 125, names the value",
      ["run", "--output", "{out}", "--format", "xml", "--"] + RAN, "xml")
usage("bad --top value (abc): 125",
      ["run", "--output", "{out}", "--top", "abc", "--"] + RAN)
usage("bad --top value (-3): 125",
      ["run", "--output", "{out}", "--top", "-3", "--"] + RAN)
usage("bad size suffix (--min-size 12Q): 125",
      ["run", "--output", "{out}", "--min-size", "12Q", "--"] + RAN)
usage("bad --interval value: 125",
      ["run", "--output", "{out}", "--interval", "soon", "--"] + RAN)
usage("--format without a value: 125",
      ["run", "--output", "{out}", "--format"])


@check("command not found (PATH lookup): 127")
def t_not_found():
    failing(["run", "--output", "{out}", "--", "leakscope-no-such-command"],
            127, "leakscope-no-such-command")


@check("command not found (path): 127")
def t_not_found_path():
    failing(["run", "--output", "{out}", "--", "{dir}/missing/prog"], 127)


@check("command not executable: 126")
def t_not_executable():
    d = fresh_dir()
    try:
        prog = os.path.join(d, "prog")
        with open(prog, "w") as f:
            f.write("#!/bin/sh\necho hello\n")
        os.chmod(prog, 0o644)
        failing(["run", "--output", "{out}", "--", prog], 126, "prog")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@check("LEAKSCOPE_AGENT=/nonexistent/libleakscope.so: 125, names the agent path")
def t_agent_missing():
    failing(["run", "--output", "{out}", "--", "true"], 125,
            "/nonexistent/libleakscope.so",
            env={"LEAKSCOPE_AGENT": "/nonexistent/libleakscope.so"})


@check("--output into a missing directory: 125, nothing created")
def t_output_missing_dir():
    d = fresh_dir()
    try:
        missing = os.path.join(d, "no", "such", "dir")
        failing(["run", "--output", os.path.join(missing, "report"), "--",
                 "true"], 125, output_in=None)
        eq(os.listdir(d), [], "entries created next to the missing directory")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@once
def static_binary():
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise Skip("no C compiler")
    d = tempfile.mkdtemp(prefix="leakscope-static-")
    os.chmod(d, 0o755)
    out = os.path.join(d, "basic-static")
    p = subprocess.run([cc, "-static", "-O2", "-o", out,
                        os.path.join(WORKLOAD_SRC, "basic.c")],
                       capture_output=True, timeout=120)
    if p.returncode != 0:
        shutil.rmtree(d, ignore_errors=True)
        raise Skip("cannot link statically here: %s" % shorten(p.stderr, 200))
    return d, out


@check("static binary: 125, the message mentions 'static'")
def t_static():
    d, prog = static_binary()
    try:
        failing(["run", "--output", "{out}", "--", prog], 125, "static")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@check("setuid binary owned by nobody: 125, the message mentions 'setuid'")
def t_setuid():
    if os.geteuid() != 0:
        raise Skip("needs root to chown a copy to nobody")
    try:
        import pwd
        nobody = pwd.getpwnam("nobody")
    except KeyError:
        raise Skip("no user nobody")
    d = fresh_dir()
    try:
        prog = os.path.join(d, "basic-setuid")
        shutil.copy(workload("basic"), prog)
        os.chown(prog, nobody.pw_uid, nobody.pw_gid)
        os.chmod(prog, 0o4755)
        ok(os.stat(prog).st_mode & stat.S_ISUID, "the copy is setuid")
        failing(["run", "--output", "{out}", "--", prog], 125, "setuid")
    finally:
        shutil.rmtree(d, ignore_errors=True)


@check("a failure leaves no report even when --output names an existing directory's file")
def t_no_report_on_failure():
    d = fresh_dir()
    try:
        failing(["run", "--output", os.path.join(d, "r.json"), "--format",
                 "yaml", "--", "true"], 125)
        eq(os.listdir(d), [], "files in the --output directory")
    finally:
        shutil.rmtree(d, ignore_errors=True)
