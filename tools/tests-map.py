#!/usr/bin/env python3
"""tools/tests-map.py - write the generated parts of tests/README.md: the
test files with what each proves, and every option of every command (read
from `leakscope COMMAND --help`) with the integration checks that use it.

    python3 tools/tests-map.py            # rewrite tests/README.md in place
    python3 tools/tests-map.py --check    # exit 1 if it is not up to date

Run from the top of the tree after `make`.  The parts between the
"<!-- generated: NAME -->" and "<!-- end: NAME -->" lines are replaced;
the rest of tests/README.md is written by hand.

A check uses an option when the option's string ("--top", or a short
option alone as "-p") is a literal in the check's function or in a
function of the same file it calls, directly or not; a check named after
the option ("--top N" in its name) counts too.  The command is not told
apart: an option shared by several commands lists the checks of all.
"""

import ast
import glob
import os
import re
import subprocess
import sys

TOP = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
README = os.path.join(TOP, "tests", "README.md")
LEAKSCOPE = os.path.join(TOP, "build", "leakscope")
SHOWN = 4   # checks named per option; the rest are counted


def commands():
    out = subprocess.run([LEAKSCOPE, "--help"], stdout=subprocess.PIPE,
                         check=True).stdout.decode()
    body = out.split("commands:", 1)[1].split("\n\n", 1)[0]
    return [l.split()[0] for l in body.splitlines() if l.strip()]


def options(cmd):
    """[(names, help)] of `leakscope CMD --help`, names as ('-p', '--pid')."""
    out = subprocess.run([LEAKSCOPE, cmd, "--help"], stdout=subprocess.PIPE,
                         check=True).stdout.decode()
    if "options:" not in out:
        return []
    body = out.split("options:", 1)[1]
    rows = []
    for line in body.splitlines():
        m = re.match(r"^  (-[^ ].*?)(?:\s{2,}(.*))?$", line)
        if not m:
            if rows and line.startswith("      ") and line.strip():
                rows[-1][1] += " " + line.strip()
            elif line.strip() and not line.startswith(" "):
                break
            continue
        names = tuple(n for n in re.findall(r"(?:^|[ ,])(--?[A-Za-z0-9][A-Za-z0-9-]*)",
                                            m.group(1)))
        rows.append([names, (m.group(2) or "").strip()])
    return [(n, h) for n, h in rows if n and n[-1] not in ("--help",)]


def check_literals():
    """{(file, check name): set of string literals its code may use}."""
    found = {}
    for path in sorted(glob.glob(os.path.join(TOP, "tests", "integration", "t_*.py"))):
        name = os.path.basename(path)[:-3]
        tree = ast.parse(open(path).read(), path)
        funcs = {f.name: f for f in tree.body if isinstance(f, ast.FunctionDef)}

        def strings(node):
            out = set()
            for n in ast.walk(node):
                if isinstance(n, ast.Constant) and isinstance(n.value, str):
                    out.update(w.strip("=,'\"") for w in re.split(r"[\s(]", n.value))
            return out

        def calls(node):
            return {n.id for n in ast.walk(node) if isinstance(n, ast.Name) and n.id in funcs}

        def closure(nodes):
            seen, todo, lits = set(), list(nodes), set()
            while todo:
                g = todo.pop()
                if isinstance(g, str):
                    if g in seen:
                        continue
                    seen.add(g)
                    g = funcs[g]
                lits |= strings(g)
                todo.extend(calls(g) - seen)
            return lits

        for node in tree.body:
            # @check("name") def f(): ...
            if isinstance(node, ast.FunctionDef):
                for d in node.decorator_list:
                    if (isinstance(d, ast.Call) and getattr(d.func, "id", "") == "check"
                            and d.args and isinstance(d.args[0], ast.Constant)):
                        found[(name, d.args[0].value)] = closure([node])
            # check("name")(make_check(...))
            elif (isinstance(node, ast.Expr) and isinstance(node.value, ast.Call)
                  and isinstance(node.value.func, ast.Call)
                  and getattr(node.value.func.func, "id", "") == "check"
                  and node.value.func.args
                  and isinstance(node.value.func.args[0], ast.Constant)):
                found[(name, node.value.func.args[0].value)] = closure(node.value.args)
    return found


def first_line_c(path):
    text = open(path).read()
    m = re.search(r"/\*\s*\n?\s*\*?\s*(\S+\.c) - (.*?)(?:\n \*\s*\n|\*/)", text, re.S)
    what = m.group(2) if m else ""
    return re.sub(r"\s*\n\s*\*\s*", " ", what).strip()


def first_line_py(path):
    doc = ast.get_docstring(ast.parse(open(path).read())) or ""
    return re.sub(r"\s+", " ", doc.split("\n\n")[0]).strip()


def count_checks(path):
    return len(re.findall(r"^@check\(|^check\(", open(path).read(), re.M))


def files_section():
    rows = ["| file | what it tests | checks |", "|---|---|---|"]
    for path in sorted(glob.glob(os.path.join(TOP, "tests", "unit", "t-*.c"))):
        rel = os.path.relpath(path, TOP)
        rows.append("| `%s` | %s | TAP |" % (rel, first_line_c(path).replace("|", "\\|")))
    for path in sorted(glob.glob(os.path.join(TOP, "tests", "integration", "t_*.py"))):
        rel = os.path.relpath(path, TOP)
        rows.append("| `%s` | %s | %d |" % (rel, first_line_py(path).replace("|", "\\|"),
                                           count_checks(path)))
    return "\n".join(rows)


def options_section():
    lits = check_literals()
    out, missing = [], []
    for cmd in commands():
        opts = options(cmd)
        if not opts:
            continue
        out.append("\n### `leakscope %s`\n" % cmd)
        out.append("| option | checks that use it |")
        out.append("|---|---|")
        for names, _ in opts:
            hits = sorted((f, c) for (f, c), l in lits.items()
                          if any(n in l for n in names if n.startswith("--") or
                                 (len(n) == 2 and cmd == "trace")))
            if hits:
                shown = "; ".join("%s: %s" % (f, c.replace("|", "\\|")) for f, c in hits[:SHOWN])
                more = " (+%d more)" % (len(hits) - SHOWN) if len(hits) > SHOWN else ""
                out.append("| `%s` | %s%s |" % (", ".join(names), shown, more))
            else:
                out.append("| `%s` | **no check** |" % ", ".join(names))
                missing.append("%s %s" % (cmd, names[-1]))
    head = ("Options with no check: %s." % ", ".join("`%s`" % m for m in missing)
            if missing else "Every option has at least one check.")
    return head + "\n" + "\n".join(out)


def generate(text):
    for name, fn in (("files", files_section), ("options", options_section)):
        start, end = "<!-- generated: %s -->" % name, "<!-- end: %s -->" % name
        a, b = text.index(start) + len(start), text.index(end)
        text = text[:a] + "\n" + fn() + "\n" + text[b:]
    return text


def main():
    old = open(README).read()
    new = generate(old)
    if "--check" in sys.argv:
        if new != old:
            print("tests-map: tests/README.md is not up to date: run python3 tools/tests-map.py",
                  file=sys.stderr)
            return 1
        return 0
    if new != old:
        tmp = README + ".tmp"
        with open(tmp, "w") as f:
            f.write(new)
        os.replace(tmp, README)
    return 0


if __name__ == "__main__":
    sys.exit(main())
