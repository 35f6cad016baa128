"""Erlang and Elixir: the leakscope NIF module from erl and iex in a VM
running under the agent, and `leakscope beam` on a node that leaks in
every BEAM way beside a steady part.

Ground truth:
- erlang/test/leaky_nif.c: leaky_nif:leak(Bytes) leaves one block of Bytes
  at site leaky_keep (marker @site_leaky_keep), called from leak_nif.  The
  erl script leaks 25 x 1000 bytes, checks them in the VM, resets, and
  leaks 25 x 1000 again for the exit report.
- erlang/test/beam_leaks.erl: per 100 ms tick, 5 leaked processes in
  beam_leaks:leaked_worker/0, 20 messages to bl_mailbox, 50 rows into
  bl_leaky_tab, 16 refc binaries of 4 KiB kept by bl_binholder, 20
  monitors by bl_monitor on bl_target, 20 atoms, 2 ETS tables
  bl_leaked_tab, 1 listen socket, 2 gen_servers (beam_leaks:init/1)
  that never stop, 2 MiB from leaky_nif;
  steady: bl_steady (handles its 50 messages), bl_steady_tab (same 50
  keys), bl_churn (5 short-lived processes), bl_bins_steady.

Every node runs with a private epmd (ERL_EPMD_PORT), a private agent
runtime dir, under `timeout`, and is killed when its check is done.
"""
import atexit
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import tempfile
import time

from harness import agent_env, kill_group
from harness import (check, once, free_port, eq, ge, contains, fail, run_process,
                     marker_line, LEAKSCOPE, BUILD, ROOT, Failure, Skip,
                     shorten)
from harness import ok as harness_ok


def ok(cond, what, detail=""):
    """harness.ok with any detail (a rate, a list) printed as it is."""
    harness_ok(cond, what, detail if isinstance(detail, str) else
               repr(detail))

EBIN = os.path.join(BUILD, "erlang", "ebin")
TEST_EBIN = os.path.join(BUILD, "erlang", "test")
NIF_SRC = os.path.join(ROOT, "erlang", "test", "leaky_nif.c")
RUNTIME = tempfile.mkdtemp(prefix="leakscope-erlang-")
os.chmod(RUNTIME, 0o700)
COOKIE = "leakscope-test-cookie-0451"
NODE_TIMEOUT = 60
_CHILDREN = []


def kill_all():
    for p in _CHILDREN:
        kill_group(p)
    del _CHILDREN[:]


atexit.register(kill_all)


def need_erlang():
    for prog in ("erl", "epmd"):
        if not any(os.access(os.path.join(d, prog), os.X_OK)
                   for d in os.environ.get("PATH", "").split(os.pathsep)):
            raise Skip("%s is not installed (Debian erlang-nox)" % prog)
    if not os.path.exists(os.path.join(EBIN, "leakscope_nif.so")):
        raise Skip("the NIF module is not built (Debian erlang-dev)")
    if not os.path.exists(os.path.join(TEST_EBIN, "leaky_nif.so")):
        raise Skip("the Erlang test workloads are not built (make tests)")


def env(extra=None):
    e = agent_env(RUNTIME)
    e.pop("ERL_EPMD_PORT", None)
    e.update(extra or {})
    return e


def spawn(argv, extra=None):
    p = subprocess.Popen(["timeout", "-k", "2", str(NODE_TIMEOUT)] + argv,
                         env=env(extra), stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, stdin=subprocess.DEVNULL,
                         start_new_session=True)
    _CHILDREN.append(p)
    return p


def stop(p):
    kill_group(p)
    if p in _CHILDREN:
        _CHILDREN.remove(p)


# ------------------------------------------------------------- the NIF

# Results come back as "R key value" lines; the JSON report in a file.
NIF_SCRIPT = r"""
P = fun(K, V) -> io:format("R ~s ~100000p~n", [K, V]) end,
Leaky = fun(Olds) -> [O || {_, 1000, _, _, Stack} = O <- Olds,
                      lists:keymember(<<"leaky_keep">>, 2, Stack)] end,
Mangled = fun(Olds) -> length([F || {_, _, _, _, S} <- Olds, {_, F, _, _} <- S,
                          is_binary(F), binary:match(F, <<"_Z">>) =:= {0, 2}]) end,
Plain = fun(Olds) -> length([F || {_, _, _, _, S} <- Olds, {_, F, _, _} <- S,
                        is_binary(F), binary:match(F, <<"operator new">>) =/= nomatch]) end,
All0 = leakscope:olds(100000),
P("mangled_raw", Mangled(All0)),
P("mangled_demangled", Mangled(leakscope:olds(100000, true))),
P("operator_new_demangled", Plain(leakscope:olds(100000, true))),
P("reset1", leakscope:reset()),
ok = leaky_nif:leak_times(25, 1000),
L = Leaky(leakscope:olds(100000)),
P("leaky_blocks", length(L)),
P("leaky_bytes", lists:sum([S || {_, S, _, _, _} <- L])),
[{_, _, Addr, Ns, [Top | _] = Stack} | _] = L,
P("leaky_addr_int", is_integer(Addr) andalso Addr > 0),
P("leaky_ns_int", is_integer(Ns)),
P("leaky_top", Top),
P("leaky_second", lists:nth(2, Stack)),
S = leakscope:stats(),
P("stats_live_bytes_ge", maps:get(live_bytes, S) >= 25000),
P("stats_malloc_ge", maps:get(malloc, maps:get(calls, S)) >= 25),
P("stats_has_mallinfo", is_map(maps:get(mallinfo, S))),
P("stats_mode", maps:get(mode, S)),
P("stats_pid", maps:get(pid, S) =:= list_to_integer(os:getpid())),
ok = file:write_file(os:getenv("REPORT_JSON"), leakscope:report(#{format => json})),
ok = file:write_file(os:getenv("REPORT_FOLDED"), leakscope:report([{format, folded}, {top, 5}])),
ok = file:write_file(os:getenv("REPORT_SVG"), leakscope:report(#{format => svg, top => 5})),
ok = file:write_file(os:getenv("REPORT_PPROF"), leakscope:report(#{format => pprof})),
P("report_text", binary:match(leakscope:report(#{}), <<"leaky_keep">>) =/= nomatch),
P("report_by_allocated", binary:match(leakscope:report(#{by => allocated, histogram => true}), <<"stacks that allocated">>) =/= nomatch),
P("formats", leakscope:formats()),
P("growing_is_list", is_list(leakscope:growing())),
P("badarg_olds", catch leakscope:olds(-1)),
P("badarg_demangle", catch leakscope:olds(3, maybe)),
P("badarg_format", catch leakscope:report(#{format => nosuch})),
P("badarg_key", catch leakscope:report(#{bogus => 1})),
P("badarg_by", catch leakscope:report(#{by => size})),
P("badarg_top0", catch leakscope:report(#{top => 0})),
P("badarg_depth0", catch leakscope:report([{depth, 0}])),
P("badarg_title", catch leakscope:report(#{title => x})),
P("depth_256", is_binary(leakscope:report(#{depth => 256, hide_runtime => true}))),
P("badarg_opts", catch leakscope:report(42)),
P("reset2", leakscope:reset()),
P("after_reset", length(Leaky(leakscope:olds(100000)))),
ok = leaky_nif:leak_times(25, 1000),
halt().
"""


def erl_script(script):
    return ["erl", "-noshell", "-setcookie", COOKIE, "-pa", EBIN, "-pa",
            TEST_EBIN, "-eval", " ".join(script.split("\n"))]


def results(text):
    out = {}
    for line in text.splitlines():
        if line.startswith("R "):
            key, _, value = line[2:].partition(" ")
            out[key] = value.strip()
    return out


@once
def nif_run():
    need_erlang()
    tmp = tempfile.mkdtemp(prefix="leakscope-erlang-nif-")
    extra = {"REPORT_JSON": os.path.join(tmp, "r.json"),
             "REPORT_FOLDED": os.path.join(tmp, "r.folded"),
             "REPORT_SVG": os.path.join(tmp, "r.svg"),
             "REPORT_PPROF": os.path.join(tmp, "r.pprof")}
    exit_report = os.path.join(tmp, "exit.json")
    r = run_process(["timeout", "-k", "2", str(NODE_TIMEOUT), LEAKSCOPE, "run",
                     "--format", "json", "--output", exit_report, "--"] +
                    erl_script(NIF_SCRIPT), timeout=NODE_TIMEOUT + 10,
                    env=env(extra))
    if r.returncode != 0:
        fail("erl under the agent", "status 0", r.describe())
    res = results(r.stdout.decode("utf-8", "replace"))
    with open(extra["REPORT_JSON"]) as f:
        text = f.read()
        res["cookie_in_report"] = COOKIE in text
        live = json.loads(text)
    with open(extra["REPORT_FOLDED"]) as f:
        folded = f.read()
    with open(exit_report) as f:
        exit_json = json.loads(f.read().splitlines()[0])
    with open(extra["REPORT_SVG"], "rb") as f:
        res["svg"] = f.read()
    with open(extra["REPORT_PPROF"], "rb") as f:
        res["pprof"] = f.read()
    return res, live, folded, exit_json


def site_of(report, function):
    return [s for s in report["sites"]
            if any(fr.get("function") == function for fr in s["frames"])]


@check("leaky NIF: olds(N) in the VM finds its 25 blocks of 1000 bytes")
def t_nif_olds():
    res = nif_run()[0]
    eq(res.get("leaky_blocks"), "25", "blocks of 1000 bytes from leaky_keep")
    eq(res.get("leaky_bytes"), "25000", "their bytes")
    eq(res.get("leaky_addr_int"), "true", "address is a positive integer")
    eq(res.get("leaky_ns_int"), "true", "symbolization time is an integer")


@check("leaky NIF: olds/1 frames are {Module, Function, File, Line} down to the NIF")
def t_nif_olds_stack():
    res = nif_run()[0]
    line = marker_line(NIF_SRC, "site_leaky_keep")
    m = re.match(r'\{<<"([^"]*)">>,<<"leaky_keep">>,<<"([^"]*)">>,(\d+)\}$',
                 res.get("leaky_top", ""))
    ok(m, "top frame is leaky_keep with file and line", res.get("leaky_top"))
    ok(m.group(1).endswith("/leaky_nif.so"), "module is leaky_nif.so", m.group(1))
    ok(m.group(2).endswith("leaky_nif.c"), "file is leaky_nif.c", m.group(2))
    eq(int(m.group(3)), line, "line of the malloc")
    contains(res.get("leaky_second", ""), '<<"leak_nif">>', "caller frame")


@check("leaky NIF: the exit report has 25000 bytes in 25 blocks at leaky_keep <- leak_nif")
def t_nif_exit_report():
    exit_json = nif_run()[3]
    sites = site_of(exit_json, "leaky_keep")
    eq(len(sites), 1, "sites with leaky_keep")
    s = sites[0]
    eq((s["live_bytes"], s["live_blocks"]), (25000, 25), "bytes, blocks")
    names = [fr.get("function") for fr in s["frames"]]
    eq(names[:2], ["leaky_keep", "leak_nif"], "innermost frames")


@check("NIF report(#{format => json}) and folded carry the leaky site")
def t_nif_report():
    _, live, folded, _ = nif_run()
    sites = site_of(live, "leaky_keep")
    eq(len(sites), 1, "leaky_keep sites in the live JSON report")
    eq(sites[0]["live_bytes"], 25000, "live bytes")
    ok(any("leaky_keep" in line for line in folded.splitlines()),
       "folded report names leaky_keep", shorten(folded, 600))
    eq(nif_run()[0].get("report_text"), "true", "text report names leaky_keep")
    eq(nif_run()[0].get("report_by_allocated"), "true",
       "report(#{by => allocated}) ranks by allocations")


@check("NIF report/1 renders every format of the library: svg and pprof too")
def t_nif_report_formats():
    res = nif_run()[0]
    svg = res["svg"].decode("utf-8", "replace")
    ok(svg.lstrip().startswith(("<?xml", "<svg")), "an SVG document", svg[:80])
    contains(svg, "leaky_keep", "the leaky site in the flame graph")
    pprof = res["pprof"]
    gzip = __import__("gzip")
    body = gzip.decompress(pprof)
    ok(b"leaky_keep" in body, "leaky_keep in the pprof string table",
       len(body))
    ok(b"inuse_space" in body, "pprof sample types", body[:200])


@check("NIF report/1: the VM's -setcookie argument is masked in the command line")
def t_nif_cookie_masked():
    res, live, _, _ = nif_run()
    eq(res["cookie_in_report"], False, "cookie in the JSON report")
    ok("<redacted>" in live["command"], "masked argument", live["command"])


@check("NIF stats() is a map: calls, live figures, mallinfo, full mode, own pid")
def t_nif_stats():
    res = nif_run()[0]
    for key in ("stats_live_bytes_ge", "stats_malloc_ge", "stats_has_mallinfo",
                "stats_pid"):
        eq(res.get(key), "true", key)
    eq(res.get("stats_mode"), "full", "mode")


@check("NIF reset() forgets the blocks: olds shows none of them after")
def t_nif_reset():
    res = nif_run()[0]
    eq(res.get("reset1"), "ok", "first reset")
    eq(res.get("reset2"), "ok", "second reset")
    eq(res.get("after_reset"), "0", "leaky blocks after reset")


@check("NIF olds/2: C++ names mangled by default, demangled with true")
def t_nif_demangle():
    res = nif_run()[0]
    ge(int(res.get("mangled_raw", "0")), 1, "mangled names in olds/1")
    eq(res.get("mangled_demangled"), "0", "mangled names in olds(N, true)")
    ge(int(res.get("operator_new_demangled", "0")), 1,
       "'operator new' frames in olds(N, true)")


@check("NIF: bad arguments raise badarg (the commands' bounds), formats() lists the library's formats")
def t_nif_badargs():
    res = nif_run()[0]
    for key in ("badarg_olds", "badarg_demangle", "badarg_format",
                "badarg_key", "badarg_opts", "badarg_by",
                # the commands' rules (lib/ropt-table.h): top and depth
                # from 1, title a command-line option only
                "badarg_top0", "badarg_depth0", "badarg_title"):
        contains(res.get(key, ""), "badarg", key)
    eq(res.get("depth_256"), "true", "depth 256, the largest, accepted")
    eq(res.get("formats"), "[text,json,folded,svg,pprof,memleak]", "formats")
    eq(res.get("growing_is_list"), "true", "growing() returns a list")


@check("NIF without the agent: {error,no_agent} from erl, no crash")
def t_nif_no_agent():
    need_erlang()
    r = run_process(["timeout", "20"] + erl_script(
        'io:format("R ~p ~p ~p ~p~n", [leakscope:stats(), leakscope:olds(3), '
        'leakscope:reset(), leakscope:report(#{})]), halt().'),
        timeout=30, env=env())
    eq(r.returncode, 0, "erl status")
    eq(r.stdout.decode().strip(), "R {error,no_agent} {error,no_agent} "
       "{error,no_agent} {error,no_agent}", "answers")


@check("iex: Leakscope.olds/stats/reset/report under the agent")
def t_iex():
    need_erlang()
    if not any(os.access(os.path.join(d, "iex"), os.X_OK)
               for d in os.environ.get("PATH", "").split(os.pathsep)):
        raise Skip("iex is not installed (Debian elixir)")
    if not os.path.exists(os.path.join(EBIN, "Elixir.Leakscope.beam")):
        raise Skip("the Elixir module is not built")
    code = ('Leakscope.reset(); :ok = :leaky_nif.leak_times(7, 3000); '
            'olds = Leakscope.olds(100000, true); '
            'mine = for {_, 3000, _, _, [{_, "leaky_keep", _, _} | _]} = o '
            '<- olds, do: o; '
            'IO.puts("R iex_blocks #{length(mine)}"); '
            'IO.puts("R iex_live #{Leakscope.stats().live_bytes >= 21000}"); '
            'IO.puts("R iex_report #{String.contains?(Leakscope.report(format: :folded), "leaky_keep")}"); '
            'IO.puts("R iex_nil #{inspect(elem(hd(hd(mine) |> elem(4)), 0) |> is_binary)}"); '
            'IO.puts("R iex_reset #{inspect(Leakscope.reset())}"); System.halt()')
    r = run_process(["timeout", "-k", "2", str(NODE_TIMEOUT), LEAKSCOPE, "run",
                     "--output", "/dev/null", "--", "iex", "-pa", EBIN, "-pa",
                     TEST_EBIN, "-e", code], timeout=NODE_TIMEOUT + 10,
                    env=env())
    res = results(r.stdout.decode("utf-8", "replace"))
    eq(res.get("iex_blocks"), "7", "Leakscope.olds: leaky blocks of 3000 "
       "bytes\n  stderr: " + shorten(r.stderr, 600))
    eq(res.get("iex_live"), "true", "Leakscope.stats().live_bytes")
    eq(res.get("iex_report"), "true", "Leakscope.report(format: :folded)")
    eq(res.get("iex_nil"), "true", "module path is a binary")
    eq(res.get("iex_reset"), ":ok", "Leakscope.reset()")


# ------------------------------------------------------- leakscope beam

class Epmd:
    def __init__(self):
        self.port = free_port()
        self.proc = spawn(["epmd", "-port", str(self.port)])
        for _ in range(100):
            s = socket.socket()
            try:
                s.connect(("127.0.0.1", self.port))
                return
            except OSError:
                time.sleep(0.05)
            finally:
                s.close()
        raise Failure("epmd did not start on port %d" % self.port)

    def env(self):
        return {"ERL_EPMD_PORT": str(self.port)}


@once
def epmd():
    need_erlang()
    return Epmd()


@once
def cookie_file():
    path = os.path.join(RUNTIME, "cookie")
    with open(path, "w") as f:
        f.write(COOKIE + "\n")
    os.chmod(path, 0o400)
    return path


def beam(*args, extra=None, timeout=40):
    e = dict(epmd().env())
    e.update(extra or {})
    return run_process([LEAKSCOPE, "beam"] + [str(a) for a in args],
                       timeout=timeout, env=env(e))


def start_node(name, eval_expr, under_agent=False, dist_port=None):
    """A node named name on this host, registered with the private epmd
    (and listening at dist_port when given)."""
    e = epmd().env()
    argv = ["erl", "-sname", name, "-setcookie", COOKIE, "-noshell",
            "-pa", TEST_EBIN, "-eval", eval_expr]
    if dist_port:
        argv[1:1] = ["-kernel", "inet_dist_listen_min", str(dist_port),
                     "inet_dist_listen_max", str(dist_port)]
    if under_agent:
        # By hand rather than `leakscope run`, which keeps its own agent
        # settings: growth samples every 100 ms give the agent's trends
        # enough points within this short test.
        e["LD_PRELOAD"] = os.path.join(BUILD, "libleakscope.so")
        e["LEAKSCOPE_PERIOD_MS"] = "100"
    p = spawn(argv, e)
    for _ in range(200):
        r = run_process(["epmd", "-port", str(epmd().port), "-names"],
                        timeout=10)
        if ("name %s " % name).encode() in r.stdout:
            return p
        if p.poll() is not None:
            raise Failure("node %s exited: %s" % (name, shorten(
                p.stderr.read(), 600)))
        time.sleep(0.05)
    stop(p)
    raise Failure("node %s never registered with epmd" % name)


@once
def leaky_node_report():
    need_erlang()
    p = start_node("lsleaks", "beam_leaks:start(100, #{native => true}).",
                   under_agent=True)
    try:
        time.sleep(1.5)	# some agent growth samples before ours
        r = beam("lsleaks", "--cookie-file", cookie_file(), "--interval",
                 "0.3", "--count", "8", "--top", "5", "--format", "json",
                 "--gc-check")
    finally:
        stop(p)
    if r.returncode != 0:
        fail("leakscope beam", "status 0", r.describe())
    ok(COOKIE.encode() not in r.stdout + r.stderr,
       "the node's -setcookie is masked in the report", "")
    return json.loads(r.stdout)


def growing(rep):
    return [s for s in rep["series"] if s["growing"]]


def ticks_per_s(rep):
    """The workload's real tick rate: bl_mailbox gets exactly 20 messages
    a tick, 10 a second when the node keeps up, fewer when the machine is
    loaded.  Rates are checked against it, so load cannot fail them."""
    mq = [s for s in rep["series"] if s["kind"] == "mailbox" and
          "bl_mailbox" in s["subject"]]
    ok(mq, "bl_mailbox's series", "")
    tick = mq[0]["rate_per_s"] / 20
    ok(2 <= tick <= 11, "ticks per second (10 nominal)", str(tick))
    return tick


def expect_rate(rep, rate, per_tick, what):
    """rate is per_tick per tick, within 35%."""
    want = per_tick * ticks_per_s(rep)
    ok(0.65 * want <= rate <= 1.35 * want,
       "%s: %.1f/s for %s a tick at %.2f ticks/s" % (
           what, rate, per_tick, ticks_per_s(rep)), str(rate))


def expect_growing(rep, kind, subject_part, metric):
    hits = [s for s in growing(rep) if s["kind"] == kind and
            subject_part in s["subject"] and s["metric"] == metric]
    if not hits:
        fail("a growing %s series for %s (%s)" % (kind, subject_part, metric),
             "one", "\n    ".join(["%s %s %s %s" % (s["kind"], s["subject"],
                                                   s["metric"], s["trend"])
                                   for s in growing(rep)]))
    s = hits[0]
    ok(s["trend"] in ("linear", "exponential"), "trend of %s" % subject_part,
       s["trend"])
    ok(s["rate_per_s"] > 0, "rate of %s" % subject_part, s["rate_per_s"])
    ok(s["why"], "the kind of leak is said", s)
    return s


@check("beam: process leak named (count and beam_leaks:leaked_worker/0), 5 a tick")
def t_beam_processes():
    rep = leaky_node_report()
    expect_growing(rep, "process_count", "process_count", "process_count")
    s = expect_growing(rep, "process_group", "beam_leaks:leaked_worker/0",
                       "processes")
    # 5 per 100 ms tick: 50/s, give or take scheduling.
    expect_rate(rep, s["rate_per_s"], 5, "leaked processes")
    ok(s["values"][-1] - s["values"][0] >= 50, "rise", s["values"])


@check("beam: gen_servers that never stop named by their own init, not proc_lib's")
def t_beam_gen_servers():
    rep = leaky_node_report()
    s = expect_growing(rep, "process_group", "processes in beam_leaks:init/1",
                       "processes")
    expect_rate(rep, s["rate_per_s"], 2, "gen_servers")
    eq([x for x in growing(rep) if "proc_lib:init_p/5" in x["subject"]], [],
       "proc_lib:init_p/5 groups growing")


@check("beam: bl_mailbox's growing mailbox named, 20 messages a tick (~200/s)")
def t_beam_mailbox():
    rep = leaky_node_report()
    expect_growing(rep, "mailbox", "bl_mailbox", "message_queue_len")
    ticks_per_s(rep)


@check("beam: bl_leaky_tab ETS growth named (memory and size, 50 rows a tick)")
def t_beam_ets():
    rep = leaky_node_report()
    expect_growing(rep, "ets_memory", "bl_leaky_tab", "memory")
    s = expect_growing(rep, "ets_size", "bl_leaky_tab", "size")
    expect_rate(rep, s["rate_per_s"], 50, "rows")


@check("beam: bl_binholder's binaries named (64 KiB a tick)")
def t_beam_binaries():
    rep = leaky_node_report()
    s = expect_growing(rep, "binary", "bl_binholder", "binary_memory")
    expect_rate(rep, s["rate_per_s"], 65536, "binary bytes")


@check("beam: monitors accumulating named (bl_monitor monitors, bl_target monitored_by)")
def t_beam_monitors():
    rep = leaky_node_report()
    s = expect_growing(rep, "monitors", "bl_monitor", "monitors")
    expect_rate(rep, s["rate_per_s"], 20, "monitors")
    expect_growing(rep, "monitored_by", "bl_target", "monitored_by")


@check("beam: atom leak named against its limit (20 atoms a tick)")
def t_beam_atoms():
    rep = leaky_node_report()
    s = expect_growing(rep, "atom_count", "atom_count", "atom_count")
    ge(s["limit"], 1000000, "atom limit")
    expect_rate(rep, s["rate_per_s"], 20, "atoms")


@check("beam: ETS tables and ports that are never closed: counts and the tables' name")
def t_beam_tables_ports():
    rep = leaky_node_report()
    expect_growing(rep, "ets_count", "ets_count", "ets_count")
    s = expect_growing(rep, "ets_group", "ETS tables named bl_leaked_tab",
                       "tables")
    expect_rate(rep, s["rate_per_s"], 2, "tables")
    s = expect_growing(rep, "port_count", "port_count", "port_count")
    expect_rate(rep, s["rate_per_s"], 1, "ports")
    expect_growing(rep, "links", "bl_ports", "links")


@check("beam: the NIF leak shows as native memory and as the agent's leaky_keep site")
def t_beam_native():
    rep = leaky_node_report()
    expect_growing(rep, "native", "native", "native")
    native = rep.get("native")
    ok(native, "the agent's report is included", rep.get("native_unavailable"))
    sites = site_of(native, "leaky_keep")
    eq(len(sites), 1, "growing native sites at leaky_keep\n  " + shorten(
        json.dumps([(x["live_bytes"], x.get("trend"), [f.get("function") for f in x["frames"]][:2]) for x in native["sites"]]), 1500))
    t = sites[0]["trend"]
    ok(t["label"] in ("linear", "exponential"), "its trend", t)
    # 2 MiB a tick, over the agent's own samples (a longer window).
    want = 2 * 1048576 * ticks_per_s(rep)
    ok(0.5 * want <= t["bytes_per_second"] <= 1.5 * want,
       "rate near %.0f B/s" % want, t["bytes_per_second"])


@check("beam: the steady part stays quiet (bl_steady, bl_steady_tab, bl_churn, bl_bins_steady)")
def t_beam_steady():
    rep = leaky_node_report()
    noisy = [s for s in growing(rep) if any(
        n in s["subject"] for n in ("bl_steady", "churn_worker", "bl_churn",
                                    "bl_bins_steady", "bl_feeder"))]
    eq(noisy, [], "steady series labelled growing")
    tab = [s for s in rep["series"] if "bl_steady_tab" in s["subject"] and
           s["metric"] == "size"]
    eq(len(tab), 1, "bl_steady_tab's size series")
    eq((tab[0]["first"], tab[0]["last"]), (50, 50), "its rows")
    eq(tab[0]["growing"], False, "bl_steady_tab growing")


@check("beam: growing series come first and the report names node and OTP")
def t_beam_order():
    rep = leaky_node_report()
    flags = [s["growing"] for s in rep["series"]]
    eq(flags, sorted(flags, reverse=True), "growing first")
    contains(rep["node"], "lsleaks@", "node")
    eq(rep["samples"], 8, "samples")
    ok(rep["otp_release"].isdigit(), "otp release", rep["otp_release"])


@check("beam --gc-check: bl_bins_lazy's dropped binaries are freed, bl_binholder's are not")
def t_beam_gc_check():
    rep = leaky_node_report()
    gc = rep.get("gc_check")
    ok(gc is not None, "gc_check in the report", list(rep))
    lazy = [g for g in gc if "bl_bins_lazy" in g["process"]]
    eq(len(lazy), 1, "bl_bins_lazy among processes that freed binaries")
    ge(lazy[0]["binaries_freed"], 16, "binaries it let go")
    eq([g for g in gc if "bl_binholder" in g["process"]], [],
       "bl_binholder frees nothing: it holds them all")
    # The growing binary series say it too.
    lazy = expect_growing(rep, "binary", "bl_bins_lazy", "binary_memory")
    ok(lazy.get("gc_check", {}).get("binaries_freed", 0) * 2 >
       lazy["gc_check"]["binaries_before"], "bl_bins_lazy: most were garbage",
       lazy.get("gc_check"))
    held = expect_growing(rep, "binary", "bl_binholder", "binary_memory")
    eq(held.get("gc_check", {}).get("binaries_freed"), 0,
       "bl_binholder: none was garbage")


@check("beam text report (--output FILE, a new 0600 file): growing section first, kinds of leak spelt out")
def t_beam_text():
    need_erlang()
    path = os.path.join(tempfile.mkdtemp(), "beam.txt")
    p = start_node("lstext", "beam_leaks:start(100).")
    try:
        r = beam("lstext", "--cookie-file", cookie_file(), "--interval",
                 "0.2", "--count", "6", "--top", "3", "--output", path)
    finally:
        stop(p)
    eq((r.returncode, r.stdout), (0, b""), "status, stdout\n  " + r.describe())
    eq(stat.S_IMODE(os.stat(path).st_mode), 0o600, "the file's mode")
    with open(path) as f:
        out = f.read()
    ok(out.startswith("leakscope beam: node lstext@"), "header", out[:200])
    ok(out.index("Growing:") < out.index("Counts:"), "growing first",
       shorten(out, 800))
    for text in ("mailbox build-up", "process leak", "atom leak",
                 "monitor leak", "ETS table growth", "binary leak"):
        contains(out, text, "kind of leak")
    contains(out, "Native sites (the node's leakscope agent):\n  none: ",
             "no agent in this node")


@check("beam errors: wrong cookie 3, unknown node 2, closed --port 2, silent hang 4")
def t_beam_errors():
    need_erlang()
    p = start_node("lscookie", "ok.")
    try:
        r = beam("lscookie", "--cookie", "not-the-cookie", "--count", "1",
                 "--timeout", "5")
    finally:
        stop(p)
    eq(r.returncode, 3, "wrong cookie\n  " + r.describe())
    contains(r.stderr.decode(), "leakscope: node 'lscookie@", "message")
    contains(r.stderr.decode(), "refused the handshake", "message")
    ok(b"not-the-cookie" not in r.stderr + r.stdout, "cookie not printed",
       r.stderr)
    eq(r.stderr.decode().count("\n"), 1, "one line")

    r = beam("nosuchnode", "--cookie-file", cookie_file(), "--count", "1",
             "--timeout", "5")
    eq(r.returncode, 2, "unknown node\n  " + r.describe())
    contains(r.stderr.decode(), "is not running", "message")

    r = beam("x@127.0.0.1", "--cookie-file", cookie_file(), "--port",
             free_port(), "--count", "1", "--timeout", "5")
    eq(r.returncode, 2, "closed port\n  " + r.describe())

    # A port that accepts and never says a word: the handshake times out.
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen(4)
    try:
        r = beam("x@127.0.0.1", "--cookie-file", cookie_file(), "--port",
                 s.getsockname()[1], "--count", "1", "--timeout", "1",
                 timeout=20)
    finally:
        s.close()
    eq(r.returncode, 4, "silent peer\n  " + r.describe())
    contains(r.stderr.decode(), "did not answer within 1000 ms", "message")


@check("beam usage errors: 125 for bad options, 1 for a cookie file unreadable or others can read")
def t_beam_usage():
    bad = os.path.join(RUNTIME, "open-cookie")
    with open(bad, "w") as f:
        f.write("secret\n")
    os.chmod(bad, 0o644)
    for args, status, text in (
            (["n", "--cookie-file", bad], 1, "readable by its owner only"),
            (["n", "--cookie-file", os.path.join(RUNTIME, "none")], 1,
             "cannot read the cookie file"),
            (["n", "--interval", "0"], 125, "--interval"),
            (["n", "--count", "x"], 125, "--count"),
            (["n", "--format", "xml"], 125, "--format"),
            (["n", "--port", "70000"], 125, "--port"),
            (["n", "--bogus"], 125, "unknown option '--bogus'"),
            ([], 125, "expected one NODE"),
            (["n", "--cookie", "a", "--cookie-file", bad], 125, "exclude")):
        r = run_process([LEAKSCOPE, "beam"] + args, timeout=10, env=env())
        eq(r.returncode, status, "status of %s\n  %s" % (args, r.describe()))
        contains(r.stderr.decode(), text, "message for %s" % args)
        ok(r.stderr.decode().startswith("leakscope: "), "prefix", r.stderr)
        eq(r.stderr.decode().count("\n"), 1, "one line for %s" % args)


@check("beam --cookie: the cookie is gone from the command line (ps) while it runs")
def t_beam_cookie_hidden():
    need_erlang()
    p = start_node("lsps", "ok.")
    secret = COOKIE
    e = env(epmd().env())
    q = subprocess.Popen([LEAKSCOPE, "beam", "lsps", "--cookie", secret,
                          "--interval", "5", "--count", "3"], env=e,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                         start_new_session=True)
    _CHILDREN.append(q)
    try:
        cmdline = b""
        for _ in range(100):
            time.sleep(0.05)
            with open("/proc/%d/cmdline" % q.pid, "rb") as f:
                cmdline = f.read()
            if b"xxxx" in cmdline:
                break
        ok(secret.encode() not in cmdline, "cookie not in cmdline", cmdline)
        contains(cmdline.decode(), "x" * len(secret), "overwritten")
    finally:
        stop(q)
        stop(p)


@check("make install: the installed module finds its NIF under PREFIX/lib/leakscope/erlang and reaches the agent")
def t_install_module():
    need_erlang()
    prefix = tempfile.mkdtemp(prefix="leakscope-erlang-prefix-")
    try:
        r = run_process(["make", "-s", "-C", ROOT, "install",
                         "PREFIX=" + prefix], timeout=300)
        eq(r.returncode, 0, "make install\n  " + r.describe())
        ebin = os.path.join(prefix, "lib", "leakscope", "erlang", "ebin")
        for name in ("leakscope.beam", "leakscope_nif.so"):
            ok(os.path.exists(os.path.join(ebin, name)), "installed " + name,
               sorted(os.listdir(ebin)))
        r = run_process(["timeout", str(NODE_TIMEOUT),
                         os.path.join(prefix, "bin", "leakscope"), "run",
                         "--output", "/dev/null", "--", "erl", "-noshell",
                         "-pa", ebin, "-eval",
                         'io:format("R ~p~n", [maps:get(pid, leakscope:stats()) '
                         '=:= list_to_integer(os:getpid())]), halt().'],
                        timeout=NODE_TIMEOUT + 10, env=env())
        contains(r.stdout.decode(), "R true", "stats() of its own VM\n  " +
                 r.describe())
    finally:
        shutil.rmtree(prefix, ignore_errors=True)


@check("NIF: 8 processes calling olds/report/growing/stats at once, the VM survives")
def t_nif_concurrent():
    need_erlang()
    r = run_process(["timeout", "-k", "2", str(NODE_TIMEOUT), LEAKSCOPE, "run",
                     "--output", "/dev/null", "--"] + erl_script(
        'Self = self(), '
        '[spawn(fun() -> [begin true = is_list(leakscope:olds(5, I rem 2 =:= 0)), '
        'true = is_binary(leakscope:report(#{format => folded, top => 5})), '
        'true = is_list(leakscope:growing()), '
        'true = is_map(leakscope:stats()) end || _ <- lists:seq(1, 3)], '
        'Self ! {done, I} end) || I <- lists:seq(1, 8)], '
        '[receive {done, I} -> ok after 60000 -> exit(timeout) end '
        '|| I <- lists:seq(1, 8)], io:format("R concurrent ok~n"), halt().'),
        timeout=NODE_TIMEOUT + 10, env=env())
    eq(results(r.stdout.decode()).get("concurrent"), "ok",
       "every call answered\n  " + r.describe())


@check("beam: a node that dies while sampled gives status 4, one line, no report")
def t_beam_node_dies():
    need_erlang()
    p = start_node("lsdies", "ok.")
    e = env(epmd().env())
    q = subprocess.Popen([LEAKSCOPE, "beam", "lsdies", "--cookie-file",
                          cookie_file(), "--interval", "0.5", "--count", "20"],
                         env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    _CHILDREN.append(q)
    try:
        time.sleep(1.5)
        stop(p)
        out, err = q.communicate(timeout=30)
    finally:
        stop(q)
    eq(q.returncode, 4, "status\n  stderr: " + err.decode())
    eq(out, b"", "nothing on stdout")
    eq(err.decode().count("\n"), 1, "one line")
    contains(err.decode(), "connection lost", "message")


@check("beam --port: the node reached at its distribution port, no epmd asked")
def t_beam_port():
    need_erlang()
    port = free_port()
    p = start_node("lsport", "ok.", dist_port=port)
    try:
        # ERL_EPMD_PORT names a port where nothing listens: only --port
        # can reach the node.
        r = beam("lsport", "--port", port, "--cookie-file", cookie_file(),
                 "--interval", "0.1", "--count", "2",
                 extra={"ERL_EPMD_PORT": str(free_port())})
    finally:
        stop(p)
    eq(r.returncode, 0, "status\n  " + r.describe())
    contains(r.stdout.decode(), "leakscope beam: node lsport@", "report")
