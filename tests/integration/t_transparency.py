"""Transparency: real programs behave byte for byte the same with and
without the agent (stdout, stderr, exit status, death by signal, stdin),
the agent leaves no trace in the environment, and each traced run still
writes a parseable JSON report."""

import os
import shutil
import signal
import tempfile

from harness import (check, run_process, leakscope, parse_json_lines, Failure,
                     eq, ok, ge, shorten, need, expect_totals_consistent)

TIMEOUT = 120


def clean_env(extra=None):
    env = {k: v for k, v in os.environ.items()
           if k != "LD_PRELOAD" and not k.startswith("LEAKSCOPE_")}
    env.update({"LC_ALL": "C", "TZ": "UTC"})
    env.update(extra or {})
    return env



def first_difference(a, b):
    n = next((i for i, (x, y) in enumerate(zip(a, b)) if x != y),
             min(len(a), len(b)))
    return "lengths %d vs %d, first difference at byte %d:\n" \
        "    plain:  %r\n    traced: %r" % (len(a), len(b), n,
                                           a[max(0, n - 40):n + 80],
                                           b[max(0, n - 40):n + 80])


def line_difference(a, b):
    """Lines only one side printed (order ignored), for readable diffs of
    environments and other line lists."""
    la, lb = a.splitlines(), b.splitlines()
    only_a = [x for x in la if x not in set(lb)][:10]
    only_b = [x for x in lb if x not in set(la)][:10]
    if not only_a and not only_b:
        return ""
    return "\n  lines only without the agent: %r\n  lines only with the " \
        "agent: %r" % (only_a, only_b)


def same(plain, traced, what):
    for field in ("returncode", "stdout", "stderr"):
        a, b = getattr(plain, field), getattr(traced, field)
        if a != b:
            detail = first_difference(a, b) + line_difference(a, b) \
                if isinstance(a, bytes) else "plain %r, traced %r" % (a, b)
            raise Failure("%s: %s differs with the agent\n  %s" % (
                what, field, detail))


def report_ok(traced, what, command=None, min_peak=0):
    """The root report (and any FILE.PID) parse as JSON reports of a
    process that allocated: every program here (dash's `exit 3` included:
    41 blocks) calls malloc, so an empty report is a lost one.  The root
    report names the command run; min_peak is a size the program itself
    printed of a string it held whole, so its peak held at least that."""
    ok("report" in traced.files, "%s: report file written" % what,
       traced.describe())
    for name, text in traced.files.items():
        reps = parse_json_lines(text, "%s %s" % (what, name))
        eq(len(reps), 1, "%s: %s holds one report" % (what, name))
        rep = reps[0]
        eq(rep.get("format"), "leakscope-report", "%s: format" % what)
        ok(isinstance(rep.get("sites"), list), "%s: sites list" % what)
        t = rep["totals"]
        ge(t["allocated_blocks"], 1, "%s: %s: blocks allocated" % (what, name))
        calls = rep.get("calls", {})
        eq(t["allocated_blocks"] > 0, sum(calls.get(k, 0) for k in ("malloc", "calloc", "realloc")) > 0,
           "%s: %s: calls counted" % (what, name))
        ok(t["peak_live_bytes"] >= t["live_bytes"], "%s: peak >= live" % what, str(t))
        expect_totals_consistent(rep)
        if name == "report":
            if command is not None:
                eq(rep["command"], list(command), "%s: the command reported" % what)
            ge(t["peak_live_bytes"], min_peak, "%s: peak live bytes" % what)


def compare(command, what, env=None, input=None, cwd=None, options=(), min_peak=None):
    """min_peak(plain): a peak the program's own output proves."""
    env = env or clean_env()
    plain = run_process(command, timeout=TIMEOUT, env=env, input=input, cwd=cwd)
    traced = leakscope(["--format", "json"] + list(options), command,
                       timeout=TIMEOUT, env=env, input=input, cwd=cwd)
    same(plain, traced, what)
    report_ok(traced, what, command, min_peak(plain) if min_peak else 0)
    return plain, traced


PY_SCRIPT = r"""
import collections, hashlib, json
d = {"k%d" % i: {"n": i, "s": str(i) * 3, "l": list(range(i % 10))}
     for i in range(50000)}
blob = json.dumps(d, sort_keys=True)
back = json.loads(blob)
c = collections.Counter(len(v["s"]) for v in back.values())
print(len(blob), sorted(c.items()))
words = " ".join("w%d" % i for i in range(100000)).split()
print(len(words), words[-1], sum(len(w) for w in words))
print(hashlib.sha256(blob.encode()).hexdigest())
import sys; print("done", file=sys.stderr)
"""


@check("python3: a dict/json/string-heavy script, same output and status")
def t_python():
    py = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else need("python3")
    # the JSON text, len(blob) characters of ASCII, was one str object
    compare([py, "-c", PY_SCRIPT], "python3",
            env=clean_env({"PYTHONHASHSEED": "0", "PYTHONDONTWRITEBYTECODE": "1"}),
            min_peak=lambda plain: int(plain.stdout.split()[0]))


PERL_SCRIPT = r"""
my %h;
for my $i (1..20000) { $h{"key$i"} = join(",", map { $_ * $i } 1..5); }
my @k = sort { $h{$a} cmp $h{$b} or $a cmp $b } keys %h;
print scalar(@k), " $k[0] $k[-1]\n";
my $text = join(" ", map { "word$_" } 1..5000);
my @m = ($text =~ /word(\d*7)\b/g);
print scalar(@m), " $m[0] $m[-1]\n";
(my $t2 = $text) =~ s/word(\d+)/W$1/g;
print length($t2), "\n";
print STDERR "perl done\n";
exit 4;
"""


@check("perl: hashes, regex, sort; same output and exit status 4")
def t_perl():
    perl = need("perl")
    # $text and $t2 (lengths on the third line: $t2 is the shorter) held at once
    plain, _ = compare([perl, "-e", PERL_SCRIPT], "perl",
                       env=clean_env({"PERL_HASH_SEED": "0"}),
                       min_peak=lambda plain: 2 * int(plain.stdout.splitlines()[2]))
    eq(plain.returncode, 4, "perl's own exit status")


def git_env(home):
    return clean_env({
        "HOME": home, "GIT_CONFIG_NOSYSTEM": "1",
        "GIT_AUTHOR_NAME": "Leak Scope", "GIT_AUTHOR_EMAIL": "ls@example.invalid",
        "GIT_COMMITTER_NAME": "Leak Scope",
        "GIT_COMMITTER_EMAIL": "ls@example.invalid",
        "GIT_AUTHOR_DATE": "2024-01-02T03:04:05Z",
        "GIT_COMMITTER_DATE": "2024-01-02T03:04:05Z",
    })


def git_session(git, base, runner):
    """The same git session, each command through runner(argv, cwd, env);
    returns the list of results."""
    repo = os.path.join(base, "repo")
    os.makedirs(repo)
    env = git_env(base)
    results = []

    def g(*args):
        results.append(runner([git, "-c", "init.defaultBranch=main"] +
                              list(args), repo, env))

    g("init")
    for i in range(20):
        with open(os.path.join(repo, "f%02d.txt" % i), "w") as f:
            f.write("line %d\n" % i * (i + 1))
    g("add", ".")
    g("commit", "-m", "first")
    for i in range(0, 20, 3):
        with open(os.path.join(repo, "f%02d.txt" % i), "a") as f:
            f.write("more %d\n" % i)
    g("commit", "-a", "-m", "second")
    g("log", "--stat")
    g("gc", "--quiet")
    g("count-objects", "-v")
    g("rev-list", "--all")
    g("status", "--short", "--branch")
    return results


@check("git: init, add, commit, log --stat, gc in a temp repo; same output per command")
def t_git():
    git = need("git")
    base = tempfile.mkdtemp(prefix="leakscope-git-")
    try:
        plain = git_session(git, base, lambda argv, cwd, env: run_process(
            argv, timeout=TIMEOUT, env=env, cwd=cwd))
        shutil.rmtree(base)
        traced = git_session(git, base, lambda argv, cwd, env: leakscope(
            ["--format", "json"], argv, timeout=TIMEOUT, env=env, cwd=cwd))
        for p, t in zip(plain, traced):
            what = "git " + " ".join(p.argv[3:])
            same(p, t, what)
            report_ok(t, what, p.argv)
        eq(plain[0].returncode, 0, "git init status")
        ok(b"first" in plain[4].stdout, "git log shows the first commit",
           shorten(plain[4].stdout))
    finally:
        shutil.rmtree(base, ignore_errors=True)


SQL = """
CREATE TABLE t(id INTEGER PRIMARY KEY, grp INTEGER, name TEXT);
WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < 10000)
INSERT INTO t SELECT x, x % 7, printf('name-%05d', x) FROM c;
SELECT grp, count(*), sum(id), min(name), max(name) FROM t GROUP BY grp ORDER BY grp;
SELECT count(DISTINCT substr(name, 6, 2)), length(group_concat(name)) FROM t;
"""


@check("sqlite3: 10k rows via a recursive CTE, aggregates; same output")
def t_sqlite():
    sqlite = need("sqlite3")
    # group_concat's result, its length on the last line, was one string
    plain, _ = compare([sqlite, "-batch", ":memory:"], "sqlite3",
                       input=SQL.encode(),
                       min_peak=lambda plain: int(plain.stdout.splitlines()[-1].split(b"|")[1]))
    ok(b"|1428|" in plain.stdout or b"|1429|" in plain.stdout,
       "sqlite3 counted the groups", shorten(plain.stdout))


@check("sh pipelines: seq | sort | head, tr, a subshell, here-doc; same output")
def t_sh():
    compare(["sh", "-c", "seq 1 3000 | sort -r | head -5; "
             "printf '%s\\n' alpha beta gamma | tr a-z A-Z; "
             "( echo sub; echo shell >&2 ); "
             "cat <<EOF\nhere $((6 * 7))\nEOF\n"
             "echo end >&2"], "sh pipelines")


@check("sh pipelines with --follow-exec: every exec'd program traced, same output, every report parses")
def t_sh_follow():
    _, traced = compare(["sh", "-c", "seq 1 3000 | sort -r | head -5; "
                         "printf '%s\\n' alpha beta | tr a-z A-Z; "
                         "ls / >/dev/null; echo end >&2"],
                        "--follow-exec sh pipelines", options=["--follow-exec"])
    ok(len(traced.files) >= 4, "reports for the exec'd programs (sh, seq, "
       "sort, head, printf/tr, ls)", repr(sorted(traced.files)))


@check("env: the traced program sees exactly the environment it would see without the agent")
def t_env():
    plain, traced = compare(["env"], "env")
    lines = traced.stdout.decode("utf-8", "replace").splitlines()
    bad = [l for l in lines if l.startswith("LD_PRELOAD=") or
           l.startswith("LEAKSCOPE_")]
    ok(not bad, "agent variables visible to the program", "\n".join(bad))


@check("env | sort through sh: same environment for the shell's children")
def t_env_sh():
    compare(["sh", "-c", "env | sort"], "sh -c 'env | sort'")


@check("--follow-exec: children see the native environment plus exactly the documented agent variables")
def t_env_follow():
    # Following exec needs LD_PRELOAD and the agent's settings to reach
    # every child, so they stay visible in this mode (docs/guide/run.md, "--follow-exec").
    command = ["sh", "-c", "env | sort"]
    env = clean_env()
    plain = run_process(command, timeout=TIMEOUT, env=env)
    traced = leakscope(["--follow-exec"], command, timeout=TIMEOUT, env=env)
    eq(traced.returncode, plain.returncode, "exit status")
    native = set(plain.stdout.decode().splitlines())
    seen = set(traced.stdout.decode().splitlines())
    eq(sorted(native - seen), [], "native variables missing under --follow-exec")
    extra = sorted(seen - native)
    names = sorted(l.split("=", 1)[0] for l in extra)
    ok(all(n == "LD_PRELOAD" or n.startswith("LEAKSCOPE_") for n in names),
       "only LD_PRELOAD and LEAKSCOPE_* variables added", "\n".join(extra))
    ok("LD_PRELOAD" in names, "LD_PRELOAD reaches the children", "\n".join(extra))


@check("exit status propagates: sh -c 'exit 3' -> 3")
def t_exit3():
    plain, _ = compare(["sh", "-c", "exit 3"], "exit 3")
    eq(plain.returncode, 3, "plain status")


@check("death by signal propagates: sh -c 'kill -TERM $$' -> killed by SIGTERM, same output, "
       "the post-mortem report holds its allocations")
def t_signal():
    # The report of a process killed by a signal comes from its post-mortem
    # file, as current as its last growth sample (one a second): the shell
    # lives 2 s so that one is taken (killed at once, it would be empty).
    command = ["sh", "-c", "echo before; sleep 2; kill -TERM $$; echo after"]
    env = clean_env()
    plain = run_process(command, timeout=TIMEOUT, env=env)
    traced = leakscope(["--format", "json"], command, timeout=TIMEOUT, env=env)
    eq(plain.returncode, -signal.SIGTERM, "plain status (killed by SIGTERM)")
    problems = []
    if traced.returncode != -signal.SIGTERM:
        problems.append("leakscope's status: expected %d, got %d" % (
            -signal.SIGTERM, traced.returncode))
    if traced.stdout != plain.stdout:
        problems.append("stdout: " + first_difference(plain.stdout, traced.stdout))
    if traced.stderr != plain.stderr:
        problems.append("stderr: " + first_difference(plain.stderr, traced.stderr))
    if "report" not in traced.files:
        problems.append("no report written to --output (files: %s)" % sorted(
            traced.files))
    ok(not problems, "death by SIGTERM under leakscope", "\n  ".join(problems))
    report_ok(traced, "kill -TERM", command)


@check("stdin passes through: 1.2 MB piped into cat comes out unchanged")
def t_stdin():
    data = b"".join(b"%08d data line\n" % i for i in range(65536))
    plain, traced = compare(["cat"], "cat", input=data)
    eq(len(traced.stdout), len(data), "bytes out of cat")
    ok(traced.stdout == data, "cat's output equals its input")


@check("stdin passes through: echo data | leakscope run -- cat")
def t_stdin_small():
    _, traced = compare(["cat"], "cat", input=b"data\n")
    eq(traced.stdout, b"data\n", "cat's output")
