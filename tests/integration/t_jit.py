"""JIT frames named from the runtime's perf map: a NIF (erlang/test/
leaky_nif.c) leaking in an Erlang node started with `+JPperf true`, whose
JIT writes /tmp/perf-PID.map.  The return address from the NIF's caller
into JIT code must be named as that map names the code holding it (the
ground truth: the map itself, read here independently), in the module
"beam jit", in the JSON report and in the text line every output prints.
"""
import os
import shutil

import harness
from perfmaps import read_map, snapshot_ready
from harness import (check, once, eq, ok, Skip, BUILD, leakscope,
                     root_report, expect_status)

TEST_EBIN = os.path.join(BUILD, "erlang", "test")


def unlink_dump(pid):
    """+JPperf true writes a jitdump beside the map: not left in /tmp."""
    dump = "/tmp/jit-%d.dump" % pid
    if os.path.exists(dump):
        os.unlink(dump)


@once
def run():
    if not shutil.which("erl"):
        raise Skip("erl is not installed (Debian erlang-nox)")
    if not os.path.exists(os.path.join(TEST_EBIN, "leaky_nif.so")):
        raise Skip("the Erlang test workloads are not built (make tests)")
    r = leakscope(["--format", "json"],
                  ["erl", "+JPperf", "true", "-noshell", "-pa", TEST_EBIN,
                   "-eval", "ok = leaky_nif:leak_times(7, 1000), halt()."],
                  timeout=120)
    expect_status(r, 0, "erl +JPperf true under leakscope run")
    rep = root_report(r)
    path = "/tmp/perf-%d.map" % rep["pid"]
    ok(os.path.exists(path), "the BEAM wrote its perf map", path)
    entries = read_map(path)
    os.unlink(path)
    unlink_dump(rep["pid"])
    return rep, entries


def site():
    rep, _ = run()
    sites = [s for s in rep["sites"] if any(
        f.get("function") == "leaky_keep" for f in s["frames"])]
    eq(len(sites), 1, "sites with leaky_keep")
    return sites[0]


@check("NIF leak under +JPperf true: 7000 bytes in 7 blocks at leaky_keep")
def t_site():
    s = site()
    eq((s["live_bytes"], s["live_blocks"]), (7000, 7), "leaky_keep's site")


@check("the return address into JIT code is named as the perf map names "
       "it, module 'beam jit', in JSON and in the text line")
def t_jit_frame():
    _, entries = run()
    frames = site()["frames"]
    jit = [f for f in frames if f.get("module") == "beam jit"]
    ok(jit, "a frame in JIT code", str(frames))
    for f in jit:
        pc = int(f["address"], 16) - 1
        holding = [(lo, name) for lo, size, name in entries
                   if lo <= pc < lo + size]
        ok(holding, "the map holds the frame's call", f["address"])
        lo, name = holding[-1]
        eq(f["function"], name.lstrip("$"), "the frame's function")
        eq(f["offset"], pc + 1 - lo, "the frame's offset")
        eq(f["text"], "%s+0x%x [beam jit]" % (name.lstrip("$"), pc + 1 - lo),
           "the frame's text line")
    names = [f.get("function") for f in frames]
    ok(names.index("leak_nif") < frames.index(jit[0]),
       "the JIT frame is the NIF's caller's", str(names))


@check("a perf map owned by another user is not read")
def t_other_owner():
    # leakscope reads /tmp/perf-PID.map only when the process's user or
    # the caller owns it: a stranger's map for a PID never names frames.
    rep, _ = run()
    path = "/tmp/perf-%d.map" % rep["pid"]
    ok(not os.path.exists(path), "the node's map was removed", path)
    user = "leakscope-attacker"
    if shutil.which("useradd") and os.geteuid() == 0:
        import pwd
        try:
            uid = pwd.getpwnam(user).pw_uid
        except KeyError:
            harness.run_process(["useradd", "-M", "-r", "-s",
                                 "/usr/sbin/nologin", user])
            uid = pwd.getpwnam(user).pw_uid
    else:
        raise Skip("needs root and useradd")
    r = leakscope(["--format", "json"],
                  ["erl", "+JPperf", "true", "-noshell", "-pa", TEST_EBIN,
                   "-eval", "os:cmd(\"chown %d /tmp/perf-\" ++ os:getpid() ++ "
                   "\".map\"), ok = leaky_nif:leak_times(3, 1000), halt()."
                   % uid], timeout=120)
    expect_status(r, 0, "erl whose perf map a stranger owns")
    rep2 = root_report(r)
    os.unlink("/tmp/perf-%d.map" % rep2["pid"])
    unlink_dump(rep2["pid"])
    frames = [f for s in rep2["sites"] for f in s["frames"]]
    ok(not any(f.get("module") == "beam jit" for f in frames),
       "no frame named from the stranger's map")
    ok(any(f.get("module") is None and f.get("function") is None
           for f in frames), "the JIT frame left unnamed", "")


@check("leakscope snapshot keeps the JIT names: its file, reported after "
       "the node and its perf map are gone, names the frame as the map did")
def t_snapshot_keeps():
    run()       # the Skip conditions
    import subprocess
    import tempfile
    tmp = tempfile.mkdtemp(prefix="leakscope-jit-")
    harness._TMPDIRS.append(tmp)
    os.chmod(tmp, 0o700)
    env = harness.agent_env(tmp, {"LD_PRELOAD": os.path.join(
        BUILD, "libleakscope.so")})
    node = subprocess.Popen(
        ["timeout", "60", "erl", "+JPperf", "true", "-noshell", "-pa",
         TEST_EBIN, "-eval", "ok = leaky_nif:leak_times(4, 1000), "
         "io:format(\"ready ~s~n\", [os:getpid()]), timer:sleep(60000)."],
        env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        start_new_session=True)
    try:
        pid, snap, path = snapshot_ready(node, tmp,
                                         "the node leaked and waits")
        live = {lo: (size, name)
                for lo, size, name in read_map(path, strip_beam=True)}
    finally:
        os.killpg(node.pid, 9)
        node.wait()
    os.unlink(path)
    unlink_dump(pid)
    rep = harness.cli_json(["report", "--format", "json", snap])
    sites = [s for s in rep["sites"] if any(
        f.get("function") == "leaky_keep" for f in s["frames"])]
    eq(len(sites), 1, "leaky_keep's site in the saved snapshot")
    jit = [f for f in sites[0]["frames"] if f.get("module") == "beam jit"]
    ok(jit, "its JIT frame still named", str(sites[0]["frames"]))
    for f in jit:
        pc = int(f["address"], 16) - 1
        want = [(lo, name) for lo, (size, name) in live.items()
                if lo <= pc < lo + size]
        eq([(f["function"], f["offset"])],
           [(name, pc + 1 - lo) for lo, name in want],
           "the kept name and offset, as the live map had them")
