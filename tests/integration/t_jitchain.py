"""The Erlang functions above a NIF: a node started with `+JPperf true`
(OTP 25: perf map and frame pointers in JIT code) leaks through a NIF
(erlang/test/leaky_nif.c) called under the chain leak_outer/1 ->
leak_middle/1 -> leak_inner/1 -> leak/1 (erlang/test/leaky_nif.erl).  The
unwinder follows the JIT code's frame pointers, so every renderer must
name the chain, innermost first, right after the BEAM's call_nif_shared
fragment: text, JSON, SVG and pprof from one snapshot, and `leakscope
beam`'s native section.  Ground truth: the program's own call chain, each
frame's address inside the live perf map's entry of that name, and `go
tool pprof -traces` reading the pprof file.
"""
import json
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
import xml.etree.ElementTree as ET

import harness
from harness import (check, once, eq, ok, fail, Skip, BUILD, LEAKSCOPE,
                     free_port, run_process, expect_status, shorten)
from gopprof import pprof
from perfmaps import read_map, read_jitdump

TEST_EBIN = os.path.join(BUILD, "erlang", "test")
COOKIE = "leakscope-jitchain-cookie-7731"
CHAIN = ["global::call_nif_shared", "leaky_nif:leak_inner/1",
         "leaky_nif:leak_middle/1", "leaky_nif:leak_outer/1"]


def wait_port(port):
    for _ in range(100):
        s = socket.socket()
        try:
            s.connect(("127.0.0.1", port))
            return
        except OSError:
            time.sleep(0.05)
        finally:
            s.close()
    fail("epmd on port %d" % port, "listening", "never")


@once
def node():
    """Snapshot, live perf map and `leakscope beam` JSON of the node, and
    (node.postmortem) the report of its post-mortem file once killed."""
    if not shutil.which("erl") or not shutil.which("epmd"):
        raise Skip("erl is not installed (Debian erlang-nox)")
    if not os.path.exists(os.path.join(TEST_EBIN, "leaky_nif.so")):
        raise Skip("the Erlang test workloads are not built (make tests)")
    tmp = tempfile.mkdtemp(prefix="leakscope-jitchain-")
    harness._TMPDIRS.append(tmp)
    os.chmod(tmp, 0o700)
    port = free_port()
    epmd_env = {"ERL_EPMD_PORT": str(port)}
    cookie = os.path.join(tmp, "cookie")
    with open(cookie, "w") as f:
        f.write(COOKIE + "\n")
    os.chmod(cookie, 0o400)
    procs = []
    pid = None
    try:
        procs.append(subprocess.Popen(
            ["epmd", "-port", str(port)], env=harness.agent_env(tmp, epmd_env),
            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            start_new_session=True))
        wait_port(port)
        env = harness.agent_env(tmp, dict(epmd_env, LD_PRELOAD=os.path.join(
            BUILD, "libleakscope.so"), LEAKSCOPE_PERIOD_MS="100"))
        procs.append(subprocess.Popen(
            ["timeout", "60", "erl", "+JPperf", "true", "-sname", "lsjit",
             "-setcookie", COOKIE, "-noshell", "-pa", TEST_EBIN, "-eval",
             "leaky_nif:chain_every(20, 65536)."],
            env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            start_new_session=True))
        line = procs[-1].stdout.readline().decode()
        ok(line.startswith("ready "), "the node leaked once", line)
        pid = int(line.split()[1])
        time.sleep(0.5)
        snap = os.path.join(tmp, "node.lsnap")
        r = harness.cli(["snapshot", str(pid), "-o", snap],
                        env=harness.agent_env(tmp))
        expect_status(r, 0, "leakscope snapshot of the node")
        beam = run_process([LEAKSCOPE, "beam", "lsjit", "--cookie-file",
                            cookie, "--interval", "0.3", "--count", "6",
                            "--format", "json"], timeout=60,
                           env=harness.agent_env(tmp, epmd_env))
        entries = read_map("/tmp/perf-%d.map" % pid, strip_beam=True)
    finally:
        for p in reversed(procs):
            os.killpg(p.pid, 9)
            p.wait()
        if pid:
            # Killed: its post-mortem file, reported while the map the
            # BEAM leaves in /tmp is still there.
            pm = harness.cli(["report", "--postmortem", "--format", "json",
                              str(pid)], env=harness.agent_env(tmp))
            for f in ("/tmp/perf-%d.map" % pid, "/tmp/jit-%d.dump" % pid):
                if os.path.exists(f):
                    os.unlink(f)
    expect_status(beam, 0, "leakscope beam lsjit")
    node.postmortem = pm
    return snap, entries, json.loads(beam.stdout), tmp


def chain_after_fragment(names):
    """The four names from the call_nif_shared fragment on, or what is
    there."""
    if CHAIN[0] not in names:
        return names
    i = names.index(CHAIN[0])
    return names[i:i + len(CHAIN)]


def leaky_sites(rep):
    sites = [s for s in rep["sites"] if any(
        f.get("function") == "leaky_keep" for f in s["frames"])]
    ok(sites, "sites at leaky_keep", shorten(json.dumps(rep)[:2000]))
    return sites


@check("JSON: the NIF's site names its Erlang callers, leak_inner/1 <- "
       "leak_middle/1 <- leak_outer/1, each frame inside the perf map's "
       "entry of that name")
def t_json():
    snap, entries, _, _ = node()
    rep = harness.cli_json(["report", "--format", "json", snap])
    for s in leaky_sites(rep):
        frames = s["frames"]
        names = [f.get("function") for f in frames]
        eq(chain_after_fragment(names), CHAIN, "the frames above the NIF")
        i = names.index(CHAIN[0])
        for f in frames[i:i + len(CHAIN)]:
            pc = int(f["address"], 16) - 1
            holding = [name for lo, size, name in entries
                       if lo <= pc < lo + size]
            eq(holding, [f["function"]], "the map's name at " + f["address"])
            eq(f["module"], "beam jit", "the frame's module")


@check("text: the same chain, one line per frame, after the NIF's lines")
def t_text():
    snap, _, _, _ = node()
    r = harness.cli(["report", snap])
    expect_status(r, 0, "leakscope report")
    stacks, cur = [], None
    for line in r.stdout.decode().splitlines():
        if re.match(r"^\s*\d+ bytes in \d+ allocations? from stack", line):
            cur = []
            stacks.append(cur)
        elif cur is not None and line.startswith("\t\t"):
            cur.append(line.strip())
        else:
            cur = None
    stacks = [st for st in stacks if st and st[0].startswith("leaky_keep+")]
    ok(stacks, "a stack starting at leaky_keep", r.stdout.decode()[:3000])
    for st in stacks:
        names = [l.split("+0x")[0] for l in st if l.endswith("[beam jit]")]
        eq(names[:4], CHAIN, "the [beam jit] lines of the stack")


def render_to(fmt, name):
    """The node's snapshot rendered in fmt into a file: its path."""
    snap, _, _, tmp = node()
    path = os.path.join(tmp, name)
    r = harness.cli(["report", "--format", fmt, "--output", path, snap])
    expect_status(r, 0, "leakscope report --format " + fmt)
    return path


def svg_paths(path):
    """Each frame of the flame graph as its path of labels from the root."""
    root = ET.parse(path).getroot()
    ns = "{http://www.w3.org/2000/svg}"
    stack, paths = [], []
    for g in root.iter(ns + "g"):
        if "f" not in (g.get("class") or "").split():
            continue
        d = int(g.get("data-d"))
        label = g.find(ns + "title").text.split("\n")[0]
        del stack[d:]
        stack.append(label)
        paths.append(list(stack))
    return paths


@check("SVG: the flame graph stacks leak_outer/1, leak_middle/1, "
       "leak_inner/1, call_nif_shared under leaky_keep's tower")
def t_svg():
    out = render_to("svg", "graph.svg")
    want = ["%s [beam jit]" % n for n in reversed(CHAIN)]
    towers = [p for p in svg_paths(out) if p[-1].startswith("leaky_keep")]
    ok(towers, "a frame of leaky_keep in the flame graph", out)
    for p in towers:
        labels = [re.sub(r"\+0x[0-9a-f]+", "", l) for l in p]
        ok(any(labels[i:i + 4] == want for i in range(len(labels))),
           "the chain, outermost first, in its path", str(labels))


@check("pprof: go tool pprof -traces shows the Erlang chain in the "
       "NIF's samples")
def t_pprof():
    path = render_to("pprof", "node.pb.gz")
    text = pprof("-traces", "-sample_index=inuse_space", path)
    blocks = [b for b in text.split("-----------+")[1:] if "leaky_keep" in b]
    ok(blocks, "a -traces sample through leaky_keep", shorten(text))
    for b in blocks:
        names = [re.sub(r"^\s*(\S+B)?\s+", "", l).strip()
                 for l in b.splitlines()[1:] if l.strip()]
        eq(chain_after_fragment(names), CHAIN, "the sample's functions")


@check("leakscope beam: the native section's leaky_keep site names the "
       "Erlang chain above the NIF")
def t_beam():
    _, _, rep, _ = node()
    native = rep.get("native")
    ok(native, "the agent's report is in beam's JSON",
       rep.get("native_unavailable"))
    for s in leaky_sites(native):
        names = [f.get("function") for f in s["frames"]]
        eq(chain_after_fragment(names), CHAIN, "the native site's frames")


@check("without frame pointers (+JPperf dump: a jitdump, no perf map, no "
       "frame pointers in OTP 25) the stack ends at the JIT fragment, named "
       "from the jitdump, with a stop frame saying why, not a stale frame")
def t_no_fp():
    node()      # the Skip conditions
    r = harness.leakscope(
        ["--format", "json"],
        ["erl", "+JPperf", "dump", "-noshell", "-pa", TEST_EBIN, "-eval",
         "ok = leaky_nif:chain_times(3, 1000), halt()."], timeout=120)
    expect_status(r, 0, "erl +JPperf dump under leakscope run")
    rep = harness.root_report(r)
    dump = "/tmp/jit-%d.dump" % rep["pid"]
    ok(os.path.exists(dump), "the BEAM wrote its jitdump", dump)
    try:
        loads = read_jitdump(dump)
        ok(loads is not None, "a jitdump of perf's format", dump)
    finally:
        os.unlink(dump)
    for s in leaky_sites(rep):
        frames = s["frames"]
        names = [f.get("function") for f in frames]
        i = names.index("beam_jit_call_nif(process*, void const*, unsigned "
                        "long*, unsigned long (*)(enif_environment_t*, int, "
                        "unsigned long*), erl_module_nif*)")
        eq(len(frames), i + 3, "the NIF's frames, the fragment, the stop "
           "frame: " + str(names))
        pc = int(frames[i + 1]["address"], 16) - 1
        eq([(frames[i + 1]["function"], frames[i + 1]["module"],
             frames[i + 1]["offset"])],
           [(name, "jit", pc + 1 - lo) for lo, size, name in loads
            if lo <= pc < lo + size],
           "the fragment, named as the jitdump's code load names it")
        eq((frames[-1]["function"], frames[-1]["module"], frames[-1]["text"]),
           ("unwinding stopped: code without CFI or frame pointers",
            "leakscope",
            "unwinding stopped: code without CFI or frame pointers "
            "[leakscope]"), "the stop frame")


@check("report --postmortem of the killed node names the same chain")
def t_postmortem():
    node()
    expect_status(node.postmortem, 0, "leakscope report --postmortem")
    rep = json.loads(node.postmortem.stdout)
    for s in leaky_sites(rep):
        names = [f.get("function") for f in s["frames"]]
        eq(chain_after_fragment(names), CHAIN, "the post-mortem site's frames")
