"""t_layers - the tree's layers (docs/ARCHITECTURE.md) hold in the code.

- agent/ includes only agent/ and common/ headers (it runs inside other
  programs and links nothing of the CLI);
- lib/ includes only lib/ and common/ (the report library never depends on
  the command-line layer);
- bpf/ (the eBPF tracer's user side, a source beside lib/) includes bpf/,
  lib/ and common/;
- web/ (the server of `leakscope serve`) includes web/, lib/ and common/;
- cli/ includes cli/, web/, bpf/, lib/, common/ and erlang/ (the C node
  behind `leakscope beam`), never agent/;
- erlang/ includes erlang/, lib/ and common/ (the NIF and the C node are
  clients of the report library, like the CLI);
- common/ includes only common/;
- no include circle between modules: X.c including Y.h while Y.c includes
  X.h (agent.c <-> control.c, pmfile.c <-> snapwrite.c and report.c <->
  render_*.c were such circles);
- every LEAKSCOPE_* environment name in agent/, lib/ and cli/ C code comes
  from common/contract.h, not from a string literal.
"""

import glob
import os
import re

from harness import ROOT, check, eq

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
ALLOWED = {
    "agent": {"agent", "common"},
    "lib": {"lib", "common"},
    "bpf": {"bpf", "lib", "common"},
    "web": {"web", "lib", "common"},
    "cli": {"cli", "web", "bpf", "lib", "common", "erlang"},
    "erlang": {"erlang", "lib", "common"},
    "common": {"common"},
}


def sources():
    for layer in ALLOWED:
        for path in sorted(glob.glob(os.path.join(ROOT, layer, "*.[ch]"))):
            yield layer, path


def includes(path):
    with open(path, encoding="utf-8") as f:
        text = f.read()
    here = os.path.dirname(path)
    for inc in INCLUDE.findall(text):
        yield os.path.normpath(os.path.join(here, inc))


def rel(path):
    return os.path.relpath(path, ROOT)


@check("each layer includes only the layers below it")
def t_directions():
    bad = []
    for layer, path in sources():
        for inc in includes(path):
            top = rel(inc).split(os.sep)[0]
            if top not in ALLOWED[layer]:
                bad.append("%s includes %s" % (rel(path), rel(inc)))
    eq(bad, [], "includes that cross the layers the wrong way")


def module(path):
    return os.path.splitext(rel(path))[0]


@check("no include circle between two modules (X.c -> Y.h, Y.c -> X.h)")
def t_circles():
    uses = {}
    for _layer, path in sources():
        if path.endswith(".c"):
            uses.setdefault(module(path), set()).update(
                module(i) for i in includes(path) if module(i) != module(path))
    circles = sorted("%s <-> %s" % (a, b) for a in uses for b in uses[a]
                     if a < b and a in uses.get(b, ()))
    eq(circles, [], "module pairs that include each other")


@check("LEAKSCOPE_* environment names are spelled only in common/contract.h")
def t_env_names():
    pattern = re.compile(r'"LEAKSCOPE_[A-Z_]+')
    bad = []
    for layer, path in sources():
        if rel(path) == os.path.join("common", "contract.h"):
            continue
        with open(path, encoding="utf-8") as f:
            for n, line in enumerate(f, 1):
                if pattern.search(line):
                    bad.append("%s:%d" % (rel(path), n))
    eq(bad, [], "string literals naming a LEAKSCOPE_ variable")
