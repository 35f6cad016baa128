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
  from common/contract.h, not from a string literal;
- no circle, of any length, in the link graph of the built objects (an
  object uses another when it leaves undefined a symbol the other
  defines, as `nm` says);
- no agent object but the hook files (agent/hooks.c, agent/switch.c)
  references a function the agent exports as a hook (common/interpose.def):
  a call by name would reach the agent's own hook, not the real function;
- no extern symbol that no other object and no unit or fuzz test uses
  (entry points aside: main, leakscope_attach, the hooks, the eBPF
  programs): it would be file-local, or dead.
The checkers run first on synthetic graphs and on objects compiled here
with a circle of three files and a stray call to malloc, so that each is
seen to fail.
"""

import glob
import os
import re
import shutil
import subprocess
import tempfile

from harness import BUILD, ROOT, Skip, check, eq, ok, once

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


# --------------------------------------------------------- the link graph

LINKED = ("agent", "common", "lib", "web", "cli", "bpf", "erlang")
HOOK_FILES = {"agent/hooks.o", "agent/switch.o"}
# The kernel side of the eBPF tracer: libbpf finds its programs and maps
# by name, no object links it.
NOT_LINKED = {"bpf/trace.bpf.o"}
ENTRY_POINTS = {"main", "leakscope_attach"}
DEFINED = set("TDBRCVWGSi")


def interposed(exported_only=True):
    """The symbols of common/interpose.def (with export EXPORT)."""
    row = re.compile(r"^LS_INTERPOSE\((\w+),.*,\s*(\w+)\)\s*$", re.M)
    with open(os.path.join(ROOT, "common", "interpose.def"), encoding="utf-8") as f:
        rows = row.findall(f.read())
    return {sym for sym, export in rows if export == "EXPORT" or not exported_only}


def objects(base):
    """{name relative to base: (defined globals, undefined)} of the linked
    objects, from one nm run."""
    paths = [p for d in LINKED for p in sorted(glob.glob(os.path.join(base, d, "*.o")))
             if os.path.relpath(p, base) not in NOT_LINKED]
    out = {os.path.relpath(p, base): (set(), set()) for p in paths}
    if not paths:
        return out
    text = subprocess.run(["nm", "-P", "-A"] + paths, capture_output=True,
                          text=True, check=True).stdout
    for line in text.splitlines():
        parts = line.split()
        if len(parts) < 3 or not parts[0].endswith(":"):
            continue
        defined, undefined = out[os.path.relpath(parts[0][:-1], base)]
        if parts[2] == "U":
            undefined.add(parts[1])
        elif parts[2] in DEFINED:
            defined.add(parts[1])
    return out


def link_graph(objs):
    """{object: set of objects it uses}; a symbol defined twice names no
    single object and is left out."""
    owner, twice = {}, set()
    for name, (defined, _u) in objs.items():
        for sym in defined:
            if sym in owner:
                twice.add(sym)
            owner[sym] = name
    return {name: {owner[s] for s in undefined
                   if s in owner and s not in twice and owner[s] != name}
            for name, (_d, undefined) in objs.items()}


def circles(graph):
    """The strongly connected components of more than one node, each
    sorted (Tarjan's algorithm, iterative)."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph.get(root, ()))))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on.add(root)
        while work:
            node, edges = work[-1]
            for nxt in edges:
                if nxt not in index:
                    index[nxt] = low[nxt] = counter
                    counter += 1
                    stack.append(nxt)
                    on.add(nxt)
                    work.append((nxt, iter(sorted(graph.get(nxt, ())))))
                    break
                if nxt in on:
                    low[node] = min(low[node], index[nxt])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    comp = []
                    while True:
                        n = stack.pop()
                        on.discard(n)
                        comp.append(n)
                        if n == node:
                            break
                    if len(comp) > 1:
                        out.append(sorted(comp))
    return sorted(out)


def stray_calls(objs, hooked):
    """'object: symbol' for each agent object outside the hook files that
    leaves a hooked symbol undefined."""
    return sorted("%s: %s" % (name, sym) for name, (_d, undefined) in objs.items()
                  if name.startswith("agent/") and name not in HOOK_FILES
                  for sym in undefined & hooked)


def test_sources():
    text = []
    for pattern in ("tests/unit/*.c", "tests/fuzz/*.c"):
        for path in glob.glob(os.path.join(ROOT, pattern)):
            with open(path, encoding="utf-8") as f:
                text.append(f.read())
    return set(re.findall(r"\w+", "\n".join(text)))


def unused_externs(objs, hooked, tested):
    """'object: symbol' for each extern symbol no other object uses."""
    used = set().union(*(u for _d, u in objs.values())) if objs else set()
    return sorted("%s: %s" % (name, sym) for name, (defined, _u) in objs.items()
                  if name not in HOOK_FILES
                  for sym in defined - used - tested - ENTRY_POINTS - hooked)


@once
def built_objects():
    if not os.path.exists(os.path.join(BUILD, "libleakscope.so")):
        raise Skip("no build: the link graph is read from build/'s objects (make first)")
    if not shutil.which("nm"):
        raise Skip("nm (binutils) is not installed")
    return objects(BUILD)


@check("the link-graph checkers fail on a circle of three and a stray hooked call (synthetic graph)")
def t_checkers_synthetic():
    g = {"x/a.o": {"x/b.o"}, "x/b.o": {"x/c.o"}, "x/c.o": {"x/a.o"},
         "x/d.o": {"x/a.o"}}
    eq(circles(g), [["x/a.o", "x/b.o", "x/c.o"]], "circle of three found")
    eq(circles({"x/a.o": {"x/b.o"}, "x/b.o": set()}), [], "a chain is no circle")
    objs = {"agent/attach.o": (set(), {"mprotect", "memcpy"}),
            "agent/hooks.o": ({"mprotect"}, {"malloc"})}
    eq(stray_calls(objs, {"malloc", "mprotect"}), ["agent/attach.o: mprotect"],
       "a stray call outside the hook files found, the hook file's own allowed")


@check("the link-graph checkers fail on real objects: three files in a circle, a stray malloc")
def t_checkers_built():
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise Skip("no C compiler")
    src = {"a": "int b(void); int a(void) { return b(); }",
           "b": "int c(void); int b(void) { return c(); }",
           "c": "int a(void); int c(void) { return a() + 1; }",
           "d": "#include <stdlib.h>\nvoid *d(void) { return malloc(1); }"}
    with tempfile.TemporaryDirectory() as tmp:
        os.mkdir(os.path.join(tmp, "agent"))
        for name, code in src.items():
            c = os.path.join(tmp, name + ".c")
            with open(c, "w", encoding="utf-8") as f:
                f.write(code + "\n")
            subprocess.run([cc, "-c", "-o", os.path.join(tmp, "agent", name + ".o"), c],
                           check=True)
        objs = objects(tmp)
        eq(circles(link_graph(objs)), [["agent/a.o", "agent/b.o", "agent/c.o"]],
           "the circle a -> b -> c -> a, from nm")
        eq(stray_calls(objs, interposed()), ["agent/d.o: malloc"],
           "malloc called by name outside the hook files, from nm")


@check("no circle of any length in the link graph of the built objects")
def t_link_circles():
    found = circles(link_graph(built_objects()))
    eq(found, [], "objects that use each other in a circle")


@check("no agent object but the hook files calls a hooked function by name")
def t_no_stray_hook_calls():
    hooked = interposed()
    ok(len(hooked) > 20 and "malloc" in hooked and "mprotect" in hooked,
       "common/interpose.def read: %d exported rows" % len(hooked))
    eq(stray_calls(built_objects(), hooked), [],
       "references to the agent's own hooks outside agent/hooks.c and agent/switch.c")


@check("no extern symbol that no other object, unit or fuzz test uses")
def t_unused_externs():
    eq(unused_externs(built_objects(), interposed(), test_sources()), [],
       "extern symbols used by nobody else: make them static or remove them")


@check("the agent exports exactly common/interpose.def's EXPORT rows and leakscope_attach")
def t_exports():
    built_objects()
    so = os.path.join(BUILD, "libleakscope.so")
    out = subprocess.run(["nm", "-D", "--defined-only", so], capture_output=True,
                         text=True, check=True).stdout
    got = {line.split()[-1] for line in out.splitlines() if line.strip()}
    eq(sorted(got), sorted(interposed() | {"leakscope_attach"}),
       "exported symbols (a row without its hook body would be missing)")
