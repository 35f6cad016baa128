"""The growth history of an exit snapshot: its last sample is each site's
live bytes at exit, whether the post-mortem file took that sample
(LEAKSCOPE_KEEP=1: the file stays, and the snapshot copies its history)
or the snapshot added it itself (the default: the file is unlinked at
exit without the sample, which would only have fed the snapshot).

The growth workload runs 1 s with a sample every 20 ms and 8 samples
kept per site, so the ring has wrapped by the exit; its live bytes at exit
are deterministic per site (a fixed seed), so both runs must agree with
each other as well as with their own SITE records.  The slow workload
leaks 1000 B every 100 ms for 2.5 s, sampled each second: only a sample
taken at the exit sees all 25 blocks."""

import struct

from harness import check, once, exit_snapshot, eq, ok

TAG_SITE, TAG_HISTORY, TAG_SITE_HISTORY, TAG_END = 7, 9, 10, 0xffff
HIST_LEN = 8


def records(data):
    off, out = 16, []
    while off < len(data):
        tag, ln = struct.unpack_from("<II", data, off)
        out.append((tag, data[off + 8:off + 8 + ln]))
        off += 8 + ln
        if tag == TAG_END:
            break
    return out


def parse(path):
    """(ticks, hist_len, {site: (live bytes, frames)}, {site: samples})"""
    with open(path, "rb") as f:
        data = f.read()
    sites, hist, head = {}, {}, None
    for tag, p in records(data):
        if tag == TAG_SITE:
            sid, _, _, nf = struct.unpack_from("<IIII", p, 0)
            live = struct.unpack_from("<q", p, 16)[0]
            sites[sid] = (live, nf)
        elif tag == TAG_HISTORY:
            head = struct.unpack_from("<IIQQQ", p, 0)
        elif tag == TAG_SITE_HISTORY:
            sid, n = struct.unpack_from("<II", p, 0)
            hist[sid] = struct.unpack_from("<%dq" % n, p, 8)
    if head is None:
        return None
    return head[2], head[1], sites, hist


@once
def runs():
    env = {"LEAKSCOPE_CONTROL": "1", "LEAKSCOPE_PERIOD_MS": "20",
           "LEAKSCOPE_HISTORY": str(HIST_LEN)}
    out = {}
    for name, extra in (("unread", {}), ("kept", {"LEAKSCOPE_KEEP": "1"})):
        e = dict(env)
        e.update(extra)
        _, path = exit_snapshot("growth", ["1", "7"], extra=e)
        out[name] = parse(path)
    return out


def held(parsed):
    """(live bytes, last sample) of each site holding memory at exit,
    sorted: the runs' addresses differ (ASLR), their figures do not."""
    _, _, sites, hist = parsed
    return sorted((live, hist[sid][-1] if sid in hist else None)
                  for sid, (live, _) in sites.items() if live)


@check("exit history: the last sample of every site is its live bytes at exit, the ring wrapped (file unread and file kept)")
def t_last_sample():
    for name, parsed in runs().items():
        ok(parsed is not None, "%s: the exit snapshot has a history" % name,
           parsed)
        ticks, hist_len, sites, hist = parsed
        eq(hist_len, HIST_LEN, "%s: samples kept per site" % name)
        ok(ticks > 2 * HIST_LEN, "%s: samples taken (the ring wrapped)"
           % name, ticks)
        for sid, (live, _) in sites.items():
            samples = hist.get(sid)
            if samples is None:
                eq(live, 0, "%s: live bytes of site %d, which has no "
                   "history" % (name, sid))
                continue
            eq(len(samples), HIST_LEN, "%s: samples of site %d" % (name, sid))
            eq(samples[-1], live, "%s: last sample of site %d against its "
               "live bytes" % (name, sid))
            ok(any(samples), "%s: site %d with a history held memory at a "
               "sample" % (name, sid), samples)
        ok(sum(1 for s in hist.values() if s[-1] > 0) >= 4,
           "%s: sites holding memory at exit (the growth workload's "
           "leak, cache, doubling, ring)" % name, hist)


@check("exit history: the snapshot's own last sample equals the one the kept file took")
def t_same_as_kept():
    r = runs()
    a, b = held(r["unread"]), held(r["kept"])
    ok(len(a) >= 4, "sites holding memory at exit", a)
    eq(a, b, "live bytes and last sample of each site, file unread and "
       "file kept")


@check("exit history: a sample is taken at exit, after the last periodic one (file unread)")
def t_sample_at_exit():
    _, path = exit_snapshot("slow", extra={"LEAKSCOPE_CONTROL": "1"})
    ticks, _, sites, hist = parse(path)
    leak = [sid for sid, (live, _) in sites.items() if live == 25000]
    eq(len(leak), 1, "sites holding site_tick's 25 blocks of 1000 B")
    samples = hist[leak[0]]
    eq(len(samples), ticks, "samples of site_tick (fewer than kept)")
    ok(ticks >= 3, "samples: at start, each second, at exit", ticks)
    eq(samples[-1], 25000, "the last sample of site_tick")
    ok(0 < samples[-2] < 25000, "the sample before it, a periodic one "
       "(at most 2 s in), saw fewer blocks", samples)
