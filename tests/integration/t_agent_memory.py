"""The agent's own memory, as `leakscope stats` shows it:
its mappings, resident and in all, the live-block table and its bytes per
live block, the arena of site and thread records, the post-mortem file.

Ground truth: python3 with PYTHONMALLOC=malloc holding 400,000 small dicts
(each at least two malloc blocks: the dict and its keys/values storage, so
at least 800,000 live blocks), a real program whose every object goes
through malloc, as users trace Python leaks.  The bound asserted is the
documented one (docs/guide/reports.md, "What the agent itself costs in
memory"): about 21.4 bytes of live table per live block once the shards
are out of step, so at most 22.2 here (21.4-21.5 measured), where a
table grown in step could stand anywhere from 19.5 to 23.4 (22.3-23.1
measured on this program).
"""
import json
import os
import subprocess
import tempfile
import time

from harness import (cli_json, check, once, eq, ok, ge, run_process, need,
                     agent_env, LEAKSCOPE, BUILD, Failure)

AGENT = os.path.join(BUILD, "libleakscope.so")
RUNTIME = tempfile.mkdtemp(prefix="leakscope-mem-")
os.chmod(RUNTIME, 0o700)
DICTS = 400000
SCRIPT = ("import sys, time\n"
          "x = [{'k': i, 'v': str(i)} for i in range(%d)]\n"
          "sys.stdout.write('ready\\n'); sys.stdout.flush()\n"
          "time.sleep(60)\n" % DICTS)


def ls_json(*args):
    return cli_json(args, agent_env(RUNTIME))


def vm_rss(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise Failure("no VmRSS for pid %d" % pid)


@once
def python_stats():
    py = need("python3")
    env = agent_env(RUNTIME, {"PYTHONMALLOC": "malloc",
                              "LD_PRELOAD": AGENT})
    p = subprocess.Popen([py, "-c", SCRIPT], env=env, stdout=subprocess.PIPE,
                         stderr=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.time() + 60
        line = b""
        while time.time() < deadline and not line:
            line = p.stdout.readline()
        if line != b"ready\n":
            raise Failure("python3 under the agent never got ready")
        sock = os.path.join(RUNTIME, "%d.sock" % p.pid)
        while not os.path.exists(sock) and time.time() < deadline:
            time.sleep(0.05)
        stats = ls_json("stats", "--format", "json", p.pid)
        text = run_process([LEAKSCOPE, "stats", str(p.pid)], timeout=60,
                           env=agent_env(RUNTIME))
        rss = vm_rss(p.pid)
        return stats, text.stdout.decode(), rss
    finally:
        p.kill()
        p.wait(timeout=30)


@check("agent memory: stats shows the live table's bytes per live block on python3 (PYTHONMALLOC=malloc), within 22.2")
def t_per_block():
    stats, text, rss = python_stats()
    m = stats.get("agent_memory")
    ok(m is not None, "stats --format json has agent_memory", str(stats)[:500])
    ge(m["live_table_entries"], 2 * DICTS, "live blocks in the table")
    live = stats["totals"]["live_blocks"]
    ok(live - 16 <= m["live_table_entries"] <= live,
       "the table holds every live heap block: %d of %d live blocks (the "
       "rest are the program's mappings)" % (m["live_table_entries"], live))
    per = m["live_table_resident"] / m["live_table_entries"]
    ok(per <= 22.2, "%.2f bytes of live table per live block (at most 22.2)" % per)
    ok(m["live_table_resident"] <= m["live_table_mapped"] + 256 * 4096,
       "resident within mapped (page rounding per shard)")
    ok("bytes a live block" in text and "agent:" in text,
       "the text form says it", text)


@check("agent memory: the parts add up within what the agent maps, and all of it within the process's RSS")
def t_parts():
    stats, text, rss = python_stats()
    m = stats["agent_memory"]
    parts = m["live_table_resident"] + m["postmortem_resident"]
    ok(parts <= m["resident"] <= m["mapped"],
       "live %d + post-mortem %d <= resident %d <= mapped %d" % (
           m["live_table_resident"], m["postmortem_resident"],
           m["resident"], m["mapped"]))
    ok(m["resident"] < rss, "agent resident %d within the process's RSS %d"
       % (m["resident"], rss))
    ok(m["postmortem_resident"] > 0, "the post-mortem file is counted")
    eq(m["thread_records"], 1, "one thread record (python3's main thread)")
    # Per site: records with their frames, 1 MiB arena chunks.
    ok(m["arena_mapped"] <= stats["sites"] * 2048 + (2 << 20),
       "arena %d bytes for %d sites: at most 2 KiB a site" % (
           m["arena_mapped"], stats["sites"]))
