"""JIT frames of Node.js: a script whose JS function leaks Buffers
(Buffer.allocUnsafeSlow, which node's own allocator takes from malloc),
run with `--perf-basic-prof --interpreted-frames-native-stack` (V8 keeps
frame pointers and writes /tmp/perf-PID.map, one named copy of the
interpreter's entry per JS function).  The unwinder goes from node's C++
through V8's builtins (in the node binary without CFI) and the JS frames
by their frame pointers; the report must name the JS functions, innermost
first, each frame inside the live map's entry of that name.
"""
import os
import re
import shutil
import subprocess
import tempfile

import harness
from harness import check, once, eq, ok, Skip, BUILD, shorten
from perfmaps import read_map, snapshot_ready

SCRIPT = """\
const keep = [];
function leakyJsFunction(n) { keep.push(Buffer.allocUnsafeSlow(n)); }
function outerJs() { for (let i = 0; i < 20; i++) leakyJsFunction(100000); }
outerJs();
console.log("ready", process.pid);
setTimeout(() => {}, 60000);
"""


@once
def run():
    if not shutil.which("node"):
        raise Skip("node is not installed (Debian nodejs)")
    tmp = tempfile.mkdtemp(prefix="leakscope-jitnode-")
    harness._TMPDIRS.append(tmp)
    os.chmod(tmp, 0o700)
    script = os.path.join(tmp, "leak.js")
    with open(script, "w") as f:
        f.write(SCRIPT)
    env = harness.agent_env(tmp, {"LD_PRELOAD": os.path.join(
        BUILD, "libleakscope.so")})
    p = subprocess.Popen(
        ["timeout", "60", "node", "--perf-basic-prof",
         "--interpreted-frames-native-stack", script],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        start_new_session=True, cwd=tmp)   # V8 logs to isolate-*.log here
    path = None
    try:
        pid, snap, path = snapshot_ready(p, tmp, "node leaked its buffers")
        entries = read_map(path)
    finally:
        os.killpg(p.pid, 9)
        p.wait()
        if path and os.path.exists(path):
            os.unlink(path)
    rep = harness.cli_json(["report", "--format", "json", "--min-size",
                            "100000", snap], timeout=120)
    return rep, entries


@check("node: the 20 Buffers of 100000 bytes are named by the JS "
       "functions that made them, leakyJsFunction <- outerJs, each frame "
       "inside the perf map's entry of its name")
def t_js_named():
    rep, entries = run()
    sites = [s for s in rep["sites"] if s["live_bytes"] == 2000000]
    eq(len(sites), 1, "one site of 2000000 bytes")
    frames = sites[0]["frames"]
    js = [f for f in frames if (f.get("function") or "").startswith("JS:")]
    names = [re.sub(r" .*", "", f["function"]) for f in js]
    ok(names[:3] == ["JS:~allocUnsafeSlow", "JS:~leakyJsFunction",
                     "JS:~outerJs"],
       "the JS frames, innermost first", shorten(str(names), 600))
    for f in js:
        pc = int(f["address"], 16) - 1
        holding = [(lo, name) for lo, size, name in entries
                   if lo <= pc < lo + size]
        eq([(f["function"], f["offset"])],
           [(name, pc + 1 - lo) for lo, name in holding],
           "the map's name and offset at " + f["address"])
        eq(f["module"], "jit", "the runtime's name")
