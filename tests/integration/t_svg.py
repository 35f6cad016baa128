"""Memory flame graphs (--format svg): the frames of the SVG against the
JSON report of the same snapshot (ground truth: basic.c, inlined.c,
cxx-leaks.cc), the options, and the page in headless Chromium: its script
runs, a click zooms, the search button searches, URL state reopens a view,
and a screenshot is kept in build/test-artifacts/."""

import json
import os
import shutil
import subprocess
import tempfile
import xml.etree.ElementTree as ET

import png

from harness import (check, once, workload, leakscope, exit_snapshot, run_process,
                     expect_status, eq, ok, ge, fail, need, Skip, BUILD, LEAKSCOPE,
                     _TMPDIRS)

NS = "{http://www.w3.org/2000/svg}"
ARTIFACTS = os.path.join(BUILD, "test-artifacts")
BROWSER_TIMEOUT = 30
CHROMIUM_FLAGS = ["--headless", "--no-sandbox", "--disable-gpu",
                  "--disable-background-networking", "--disable-component-update",
                  "--disable-sync", "--no-first-run"]


def tmpdir():
    d = tempfile.mkdtemp(prefix="leakscope-svg-")
    _TMPDIRS.append(d)
    return d


@once
def snapshot(name, *args):
    """The exit snapshot of workload NAME (or of a program, by absolute
    path): every format renders the same data from it."""
    return exit_snapshot(name, args)[1]


def report(snap, *options):
    r = run_process([LEAKSCOPE, "report"] + list(options) + [snap])
    expect_status(r, 0, "leakscope report %s" % " ".join(options))
    return r.stdout


def report_svg(snap, *options):
    d = tmpdir()
    out = os.path.join(d, "graph.svg")
    r = run_process([LEAKSCOPE, "report", "--format", "svg", "--output", out] +
                    list(options) + [snap])
    expect_status(r, 0, "leakscope report --format svg %s" % " ".join(options))
    return out


class Frame:
    def __init__(self, g):
        self.id = g.get("id")
        self.o = int(g.get("data-o"))
        self.v = int(g.get("data-v"))
        self.d = int(g.get("data-d"))
        title = g.find(NS + "title").text
        self.label, self.info = title.split("\n")
        rect = g.find(NS + "rect")
        self.x = float(rect.get("x"))
        self.y = float(rect.get("y"))
        self.w = float(rect.get("width"))
        self.h = float(rect.get("height"))
        self.fill = rect.get("fill")
        self.cls = g.get("class")
        self.parent = None

    def path(self):
        f, out = self, []
        while f:
            out.append(f.label)
            f = f.parent
        return tuple(reversed(out))


def parse_svg(path_or_text, text=False):
    """(root element, [Frame] in document order, each with its parent)."""
    try:
        root = ET.fromstring(path_or_text) if text else ET.parse(path_or_text).getroot()
    except ET.ParseError as e:
        fail("the SVG parses as XML", "well-formed", e)
    frames, stack = [], []
    for g in root.iter(NS + "g"):
        if "f" not in (g.get("class") or "").split():
            continue
        f = Frame(g)
        while stack and stack[-1].d >= f.d:
            stack.pop()
        f.parent = stack[-1] if stack else None
        stack.append(f)
        frames.append(f)
    return root, frames


def label_of(fr):
    """A JSON frame named as the SVG names it (lib/render_svg.c)."""
    mod = os.path.basename(fr["module"]) if fr.get("module") else None
    if fr.get("function"):
        return "%s [%s]" % (fr["function"], mod) if mod else fr["function"]
    return "[%s]" % mod if mod else fr["address"]


def expected_tree(rep, count="live_bytes"):
    """{path from the root: value} summed over the JSON sites, without the
    frames narrower than 0.1 pixel of 1180 (the SVG leaves them out)."""
    tree = {}
    for s in rep["sites"]:
        if s[count] <= 0:
            continue
        path = ("all",)
        tree[path] = tree.get(path, 0) + s[count]
        for fr in reversed(s["frames"]):
            path = path + (label_of(fr),)
            tree[path] = tree.get(path, 0) + s[count]
    total = tree.get(("all",), 0)
    return {p: v for p, v in tree.items() if v * 1180.0 / total >= 0.1}


def eq_tree(got_frames, want, what):
    """The drawn tree against the expected one, naming what differs."""
    got = {f.path(): f.v for f in got_frames}
    if got != want:
        diff = sorted(set(got.items()) ^ set(want.items()))[:10]
        fail(what, "%d frames, all equal" % len(want), "%d frames; differing "
             "(path, value), first 10:\n    %s" % (len(got), "\n    ".join(
                 "%s %s" % ("svg " if (p, v) in got.items() else "json", (p[-3:], v))
                 for p, v in diff)))


@once
def basic():
    snap = snapshot("basic")
    rep = json.loads(report(snap, "--format", "json"))
    root, frames = parse_svg(report_svg(snap))
    return snap, rep, root, frames


def by_label(frames, label):
    found = [f for f in frames if f.label == label]
    eq(len(found), 1, "frames labelled %r" % label)
    return found[0]


@check("svg: root width = the report's live bytes (74776), each basic.c site its bytes")
def t_basic_sites():
    snap, rep, root, frames = basic()
    eq(frames[0].label, "all", "first frame")
    eq(frames[0].v, rep["totals"]["live_bytes"], "root data-v vs JSON totals")
    eq(frames[0].v, 74776, "root data-v vs basic.c's ground truth")
    eq(int(root.get("data-total")), 74776, "data-total")
    eq(frames[0].w, 1180.0, "root rect width (1200 - 2 x 10 px)")
    for site, size in (("site_large", 65536), ("site_medium", 8192),
                       ("site_ten", 1000), ("site_small", 48)):
        f = by_label(frames, "%s [basic]" % site)
        eq(f.v, size, "%s data-v" % site)
        ok(abs(f.w - size * 1180.0 / 74776) < 0.01, "%s rect width %s" % (site, f.w))
        eq(f.parent.label, "basic_step [basic]", "%s's parent" % site)
        ok(f.info.startswith("{:,} bytes".format(size)), "%s tooltip: %s" % (site, f.info))
    eq(sum(f.v for f in frames if not any(c.parent is f for c in frames)), 74776,
       "sum of the leaves' widths")


@check("svg: every frame's width = the JSON sites through it, by bytes")
def t_basic_tree():
    snap, rep, root, frames = basic()
    eq_tree(frames, expected_tree(rep), "frames (path: bytes)")


@check("svg: --count blocks: widths are blocks (16 in all, site_ten 10)")
def t_blocks():
    snap, rep, _, _ = basic()
    root, frames = parse_svg(report_svg(snap, "--count", "blocks"))
    eq(frames[0].v, 16, "root blocks")
    eq(root.get("data-count"), "blocks", "count name")
    eq_tree(frames, expected_tree(rep, "live_blocks"), "frames (path: blocks)")


@check("svg: --top 2 keeps the root at 74776 with a '[2 other stacks]' frame of 1048 bytes")
def t_top():
    snap, _, _, _ = basic()
    _, frames = parse_svg(report_svg(snap, "--top", "2"))
    eq(frames[0].v, 74776, "root")
    other = by_label(frames, "[2 other stacks]")
    eq((other.v, other.parent.label), (1048, "all"), "other stacks frame")
    ok(not [f for f in frames if f.label == "site_ten [basic]"], "site_ten left out")


@check("svg: --inverted draws the root at the top; --title is escaped text")
def t_inverted_title():
    snap, _, _, frames = basic()
    leaf = by_label(frames, "site_large [basic]")
    ok(frames[0].y > leaf.y, "flame: root below the leaves")
    title = 'Leaks <of> "basic" & co'
    root, inv = parse_svg(report_svg(snap, "--inverted", "--title", title))
    ok(inv[0].y < by_label(inv, "site_large [basic]").y, "icicle: root above the leaves")
    got = [t.text for t in root.iter(NS + "text") if t.get("id") == "title"]
    eq(got, [title], "title text")


def frames_match_json(name, *args):
    """The graph of workload NAME, checked frame by frame against the JSON
    report of the same snapshot."""
    snap = snapshot(name, *args)
    rep = json.loads(report(snap, "--format", "json"))
    _, frames = parse_svg(report_svg(snap))
    eq_tree(frames, expected_tree(rep), "frames (path: bytes)")
    return frames


def rgb(fill):
    return tuple(int(x) for x in fill[4:-1].split(","))


@check("svg: --colors kind: libc frames yellow, the program's green, with a legend; mem: all green")
def t_colors():
    snap, _, _, mem = basic()
    ok(all(rgb(f.fill)[1] > max(rgb(f.fill)[0], rgb(f.fill)[2]) for f in mem),
       "mem palette: green dominates every frame",
       "\n".join("%s %s" % (f.label, f.fill) for f in mem))
    root, frames = parse_svg(report_svg(snap, "--colors", "kind"))
    libc = rgb(by_label(frames, "__libc_start_main [libc.so.6]").fill)
    ok(libc[0] > libc[1] > libc[2], "libc frame is yellow-orange: %s" % (libc,))
    prog = rgb(by_label(frames, "basic_step [basic]").fill)
    ok(prog[1] > prog[0] and prog[1] > prog[2], "program frame is green: %s" % (prog,))
    legend = [t.text for g in root.iter(NS + "g") if g.get("id") == "legend"
              for t in g.iter(NS + "text")]
    eq(legend, ["code", "runtime (libc, libstdc++, ld.so)"], "legend")


@check("svg: inlined functions are frames between their caller and site_inlined")
def t_inlined():
    frames = frames_match_json("inlined")
    site = by_label(frames, "site_inlined [inlined]")
    chain = [site.parent.label, site.parent.parent.label, site.parent.parent.parent.label]
    eq(chain, ["inl_inner [inlined]", "inl_outer [inlined]", "inline_caller [inlined]"],
       "the frames below site_inlined")
    eq(site.v, 777, "site_inlined bytes")


@check("svg: C++ names with <, &, templates parse back exactly (cxx-leaks)")
def t_cxx():
    frames = frames_match_json("cxx-leaks")
    ok([f for f in frames if "<" in f.label], "a frame with a template argument",
       "\n".join(f.label for f in frames))


@check("svg: run --format svg --output writes the graph; bad --count, --colors, no --output, --interval: status 125")
def t_run_and_errors():
    r = leakscope(["--format", "svg", "--count", "blocks"], [workload("basic")])
    expect_status(r, 0, "run status")
    _, frames = parse_svg(r.files["report"], text=True)
    eq(frames[0].v, 16, "root blocks from run")
    r = leakscope(["--format", "svg"], [workload("noleak")])
    expect_status(r, 0, "noleak run status")
    root, frames = parse_svg(r.files["report"], text=True)
    details = [t.text for t in root.iter(NS + "text") if t.get("id") == "details"]
    eq((len(frames), details), (0, ["no outstanding bytes"]), "noleak's graph")
    for opt in (["--count", "pages"], ["--colors", "hot"], ["--format", "png"]):
        r = run_process([LEAKSCOPE, "run", "--format", "svg"] + opt +
                        ["--", workload("basic")])
        eq(r.returncode, 125, "status with %s" % " ".join(opt))
        err = r.stderr.decode()
        ok(err.startswith("leakscope: invalid value '%s'" % opt[1]), "error line", err)
    for opts, err in ((["--format", "svg"], "leakscope: --format svg needs --output FILE\n"),
                      (["--format", "svg", "--interval", "1", "--output", "x.svg"],
                       "leakscope: --format svg writes one graph per file: "
                       "it cannot take --interval\n")):
        r = run_process([LEAKSCOPE, "run"] + opts + ["--", workload("basic")])
        eq((r.returncode, r.stderr.decode()), (125, err), "run %s" % " ".join(opts))
    r = leakscope(["--interval", "1", "--count", "1", "--format", "json"],
                  [workload("basic")])
    expect_status(r, 0, "--count N still limits periodic reports")


@check("svg: python3 (a real program, hundreds of frames): every frame against the JSON report")
def t_python():
    py = need("python3")
    frames = frames_match_json(os.path.realpath(py), "-S", "-c",
                               "import json; x = [json.dumps({'a': i}) for i in range(500)]")
    ge(len(frames), 100, "frames drawn")
    ok([f for f in frames if "[libpython" in f.label or "[python" in f.label],
       "frames of the interpreter", "\n".join(f.label for f in frames[:30]))


# ---------------------------------------------------------------- browser

def chromium():
    for name in ("chromium", "chromium-browser"):
        path = shutil.which(name)
        if path:
            return path
    raise Skip("chromium is not installed (Debian package chromium)")


def browse(url, *flags):
    """Run headless Chromium once on url; its stdout."""
    profile = tmpdir()
    argv = [chromium()] + CHROMIUM_FLAGS + ["--user-data-dir=" + profile] + \
        list(flags) + [url]
    r = run_process(argv, timeout=BROWSER_TIMEOUT)
    if r.returncode != 0:
        fail("chromium exit status", 0, r.describe())
    return r.stdout.decode("utf-8", "replace")


@once
def graph_file():
    """basic.c's graph, copied where a file: URL reaches it."""
    snap, rep, _, _ = basic()
    d = tmpdir()
    path = os.path.join(d, "basic.svg")
    shutil.copy(report_svg(snap, "--title", "basic.c leaks"), path)
    return path


@check("browser: ?s=REGEX&x=N opens the graph searched and zoomed (script ran, DOM checked)")
def t_url_state():
    _, frames = parse_svg(graph_file())
    medium = by_label(frames, "site_medium [basic]")
    dom = browse("file://%s?s=site_(ten|small)&x=%s" % (graph_file(), medium.id[1:]),
                 "--dump-dom")
    root, drawn = parse_svg(dom, text=True)
    eq(root.get("data-ready"), "1", "the page's script ran")
    eq(root.get("data-zoom"), medium.id, "zoomed frame")
    z = by_label(drawn, "site_medium [basic]")
    eq((z.x, z.w, z.cls), (10.0, 1180.0, "f"), "site_medium fills the width")
    step = by_label(drawn, "basic_step [basic]")
    eq((step.w, step.cls), (1180.0, "f parent"), "its parent spans it, greyed")
    large = by_label(drawn, "site_large [basic]")
    eq(large.cls, "f hide", "a sibling is hidden")
    eq(root.get("data-matched"), "1048", "matched bytes (site_ten + site_small)")
    matched = [t.text for t in root.iter(NS + "text") if t.get("id") == "matched"]
    eq(matched, ["Matched: 1,048 bytes (1.40%)"], "matched line")
    hits = sorted(f.label for f in drawn if f.fill == "rgb(230,0,230)")
    eq(hits, ["site_small [basic]", "site_ten [basic]"], "highlighted frames")


WRAPPER = """<!DOCTYPE html>
<html><body><pre id="out">pending</pre>
<iframe id="g" src="%s" width="1200" height="300"></iframe>
<script>
window.addEventListener("load", function () {
  var w = document.getElementById("g").contentWindow, d = w.document, res = {};
  function state() {
    var out = {}, fs = d.querySelectorAll("g.f");
    for (var i = 0; i < fs.length; i++) {
      var r = fs[i].querySelector("rect");
      out[fs[i].querySelector("title").textContent.split("\\n")[0]] =
        [fs[i].getAttribute("class"), Number(r.getAttribute("x")),
         Number(r.getAttribute("width")), r.getAttribute("fill")];
    }
    return out;
  }
  function click(el) {
    el.dispatchEvent(new w.MouseEvent("click", {bubbles: true}));
  }
  try {
    res.ready = d.documentElement.getAttribute("data-ready");
    var frames = d.querySelectorAll("g.f"), target = null, root = null;
    for (var i = 0; i < frames.length; i++) {
      var label = frames[i].querySelector("title").textContent.split("\\n")[0];
      if (label === "site_ten [basic]") target = frames[i];
      if (label === "basic_step [basic]") root = frames[i];
    }
    click(target.querySelector("rect"));
    res.zoom = state();
    click(d.getElementById("unzoom"));
    res.unzoom = state();
    w.prompt = function () { return "^site_(medium|large) "; };
    click(d.getElementById("search"));
    res.search = state();
    res.matched = d.getElementById("matched").textContent;
    res.button = d.getElementById("search").textContent;
    click(d.getElementById("search"));
    res.cleared = d.getElementById("matched").textContent;
    w.prompt = function () { return "basic"; };
    click(d.getElementById("search"));
    res.nested = d.getElementById("matched").textContent;
    target.dispatchEvent(new w.MouseEvent("mouseover", {bubbles: true}));
    res.details = d.getElementById("details").textContent;
  } catch (e) {
    res.error = String(e);
  }
  document.getElementById("out").textContent = JSON.stringify(res);
});
</script></body></html>
"""


@check("browser: a click zooms, Reset Zoom restores, the Search button highlights and sums")
def t_click_search():
    svg = graph_file()
    page = os.path.join(os.path.dirname(svg), "page.html")
    with open(page, "w") as f:
        f.write(WRAPPER % os.path.basename(svg))
    dom = browse("file://" + page, "--allow-file-access-from-files", "--dump-dom")
    start, end = dom.find('<pre id="out">'), dom.find("</pre>")
    ok(start >= 0 and end > start, "wrapper output", dom[:500])
    text = dom[start + len('<pre id="out">'):end].replace("&amp;", "&") \
        .replace("&lt;", "<").replace("&gt;", ">").replace("&quot;", '"')
    try:
        res = json.loads(text)
    except ValueError:
        fail("wrapper result is JSON", "JSON", text[:500])
    ok("error" not in res, "no script error", res.get("error"))
    eq(res["ready"], "1", "the graph's script ran")
    z = res["zoom"]
    eq(z["site_ten [basic]"][:3], ["f", 10, 1180], "clicked frame fills the width")
    eq(z["main [basic]"][:3], ["f parent", 10, 1180], "an ancestor spans it")
    eq(z["site_large [basic]"][0], "f hide", "a sibling hides")
    u = res["unzoom"]
    eq(u["site_large [basic]"][0], "f", "reset zoom shows everything")
    ok(abs(u["site_large [basic]"][2] - 65536 * 1180.0 / 74776) < 0.01,
       "reset zoom restores widths", u["site_large [basic]"])
    s = res["search"]
    eq(sorted(k for k, v in s.items() if v[3] == "rgb(230,0,230)"),
       ["site_large [basic]", "site_medium [basic]"], "highlighted by the search button")
    eq(res["matched"], "Matched: 73,728 bytes (98.60%)", "matched line")
    eq(res["button"], "Reset Search", "search button")
    eq(res["cleared"], "", "a second click resets the search")
    eq(res["nested"], "Matched: 74,776 bytes (100.00%)",
       "frames inside matched frames are not counted twice")
    eq(res["details"], "site_ten [basic] (1,000 bytes, 10 blocks, 1.34%)", "hover details")


def near(got, want, tolerance=4):
    return all(abs(a - b) <= tolerance for a, b in zip(got, want))


def shown_frames(image, drawn):
    """[(frame, share of its inner pixels in its fill colour)] for every
    frame at least 8 pixels wide: the inner rectangle (2 pixels in from the
    rounded edges) holds the label's glyphs and, elsewhere, the fill."""
    out = []
    for f in drawn:
        if f.w < 8 or f.cls.endswith("hide"):
            continue
        fill = rgb(f.fill)
        x0, x1 = int(f.x) + 2, int(f.x + f.w) - 2
        y0, y1 = int(f.y) + 2, int(f.y + f.h) - 2
        px = [image.pixel(x, y) for y in range(y0, y1) for x in range(x0, x1)]
        out.append((f, sum(near(p, fill) for p in px) / float(len(px))))
    return out


@check("browser: screenshot of a flame graph: every bar in its colour where the SVG puts it, labels drawn (build/test-artifacts/flamegraph.png)")
def t_screenshot():
    os.makedirs(ARTIFACTS, exist_ok=True)
    shot = os.path.join(ARTIFACTS, "flamegraph.png")
    if os.path.exists(shot):
        os.unlink(shot)
    url = "file://%s?s=site_t" % graph_file()
    browse(url, "--screenshot=" + shot, "--window-size=1200,%d" % 240, "--hide-scrollbars")
    ok(os.path.exists(shot), "screenshot written")
    image = png.read(shot)
    eq((image.width, image.height), (1200, 240), "screenshot size")
    # The layout the page's script left (the search applied): where each
    # bar is and its colour, to compare with the pixels.
    root, drawn = parse_svg(browse(url, "--dump-dom"), text=True)
    eq(root.get("data-ready"), "1", "the page's script ran")
    eq(sorted(f.label for f in drawn if f.fill == "rgb(230,0,230)"),
       ["site_ten [basic]"], "the search's match is magenta")
    shown = shown_frames(image, drawn)
    ge(len(shown), 8, "frames wide enough to check")
    bad = ["%s %s at %.0f,%.0f: %.0f%% of its pixels" % (f.label, f.fill, f.x, f.y, 100 * share)
           for f, share in shown if share < 0.5]
    eq(bad, [], "bars in their SVG colour and place")
    # Outside the bars, the background; the root frame's label "all" is
    # dark glyphs at its left, none at its right end.
    eq(near(image.pixel(5, 200), (0xf4, 0xf8, 0xf4)), True, "background left of the bars")
    top = by_label(drawn, "all")
    def dark(x0, x1):
        return sum(1 for y in range(int(top.y) + 2, int(top.y + top.h) - 2)
                   for x in range(x0, x1) if sum(image.pixel(x, y)) < 300)
    ge(dark(int(top.x) + 3, int(top.x) + 3 + 20), 10, "the label 'all' drawn")
    eq(dark(int(top.x + top.w) - 100, int(top.x + top.w) - 3), 0, "no glyphs past the label")
    shutil.copy(graph_file(), os.path.join(ARTIFACTS, "flamegraph.svg"))


@once
def diff_graph():
    """The differential graph of phases.c between its two phases (two
    processes: one stopped after phase 1, one after phase 2)."""
    _, base = exit_snapshot("phases", input=b"1")
    _, newer = exit_snapshot("phases", input=b"12")
    d = tmpdir()
    out = os.path.join(d, "phases-diff.svg")
    r = run_process([LEAKSCOPE, "diff", "--format", "svg", "--output", out, base, newer])
    expect_status(r, 0, "leakscope diff --format svg")
    return out


@check("browser: the differential graph of phases.c: red and blue frames, search and zoom work, screenshot kept")
def t_diff_browser():
    svg = diff_graph()
    _, frames = parse_svg(svg)
    shrink = by_label(frames, "site_shrink [phases]")
    dom = browse("file://%s?s=site_grow&x=%s" % (svg, shrink.id[1:]), "--dump-dom")
    root, drawn = parse_svg(dom, text=True)
    eq((root.get("data-ready"), root.get("data-diff")), ("1", "1"), "script ran, differential")
    eq(root.get("data-total"), "247360", "width: phase 2's live bytes")
    eq(root.get("data-matched"), str(196608 + 30000), "matched: the two growing sites")
    z = by_label(drawn, "site_shrink [phases]")
    eq((z.w, z.cls), (1180.0, "f"), "zoomed into site_shrink")
    r, g, b = rgb(z.fill)
    ok(b == 255 and r == g < 255, "site_shrink blue: %s" % z.fill)
    grow = by_label(drawn, "site_grow_big [phases]")
    eq((grow.fill, grow.cls), ("rgb(230,0,230)", "f hide"), "a search hit, hidden by the zoom")
    ok(by_label(drawn, "site_grow_big [phases]").info.startswith("196,608 bytes (+131,072), 3 blocks (+2)"),
       "tooltip with the change", grow.info)
    os.makedirs(ARTIFACTS, exist_ok=True)
    png = os.path.join(ARTIFACTS, "flamegraph-diff.png")
    browse("file://" + svg, "--screenshot=" + png, "--window-size=1200,220",
           "--hide-scrollbars")
    ok(os.path.exists(png), "screenshot written")
    shutil.copy(svg, os.path.join(ARTIFACTS, "flamegraph-diff.svg"))

