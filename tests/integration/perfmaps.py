"""perfmaps.py - a runtime's perf map and jitdump read independently of
lib/perfmap.c, the ground truth of the JIT checks (t_jit.py,
t_jitchain.py, t_jitnode.py), and the snapshot those checks take."""
import os
import re
import struct

import harness
from harness import ok, expect_status


def snapshot_ready(proc, runtime, what):
    """Once proc, a JIT program run with the agent in runtime, prints
    "ready PID" (it has leaked and waits), `leakscope snapshot` of it into
    runtime/node.lsnap: returns (pid, the snapshot's path, its perf map's
    path).  The map is removed at the end of the test file at the latest."""
    line = proc.stdout.readline().decode()
    ok(line.startswith("ready "), what, line)
    pid = int(line.split()[1])
    path = "/tmp/perf-%d.map" % pid
    # The caller removes the map; this is for when a check fails first.
    harness.at_file_end(lambda: os.path.exists(path) and os.unlink(path))
    snap = os.path.join(runtime, "node.lsnap")
    r = harness.cli(["snapshot", str(pid), "-o", snap],
                    env=harness.agent_env(runtime))
    expect_status(r, 0, "leakscope snapshot of pid %d" % pid)
    return pid, snap, path


def read_map(path, strip_beam=False):
    """The entries of a perf map, /tmp/perf-PID.map: (start, size, name),
    the BEAM's "$" dropped when strip_beam."""
    entries = []
    with open(path) as f:
        for line in f:
            m = re.match(r"^(?:0x)?([0-9a-f]+) ([0-9a-f]+) (.+)$", line)
            if m:
                name = m.group(3)
                entries.append((int(m.group(1), 16), int(m.group(2), 16),
                                name.lstrip("$") if strip_beam else name))
    return entries


def read_jitdump(path):
    """The JIT_CODE_LOAD records of a jitdump (perf's format), as (code
    address, size, name); None when the magic or version is not perf's."""
    with open(path, "rb") as f:
        d = f.read()
    magic, version, hsize = struct.unpack_from("<III", d, 0)
    if (magic, version) != (0x4A695444, 1):
        return None
    loads, off = [], hsize
    while off + 16 <= len(d):
        rid, total = struct.unpack_from("<II", d, off)
        if total < 16 or off + total > len(d):
            break
        if rid == 0:
            addr, size = struct.unpack_from("<QQ", d, off + 32)
            end = d.index(b"\0", off + 56)
            loads.append((addr, size, d[off + 56:end].decode()))
        off += total
    return loads
