/*
 * app.js - the leakscope web view: process list with sparklines, a
 * process's sites (sortable, with trends and stacks), their live bytes
 * over time (Chart.js), the flame graph, the oldest blocks, statistics,
 * reset and snapshot, and the diff of two saved snapshots.  Talks only to
 * the server it came from (docs/WEB-API.md); refreshes every 2 s.
 *
 * Test hook: ?test=1 (with ?pid=N) runs a scripted visit and writes what
 * it saw as JSON into #test-out (tests/integration/t_web.py).
 */
"use strict";

const API = "/api/v1/";
const REFRESH_MS = 2000;
const CHART_SITES = 8;
const PM_SHOWN = 10;
const params = new URLSearchParams(location.search);

/* The access token comes in the URL's fragment (never sent to a server),
 * is kept for this tab only (sessionStorage, not a cookie, which the
 * browser would send to every port of the host), and leaves the address
 * bar at once.  API requests carry it in a header; the frames, which
 * cannot send headers, carry the read-only view token the server gives. */
const TOKEN = (() => {
  const h = new URLSearchParams(location.hash.slice(1));
  if (h.has("token")) {
    sessionStorage.setItem("leakscope-token", h.get("token"));
    if (history.replaceState)
      history.replaceState(null, "", location.pathname + location.search);
  }
  return sessionStorage.getItem("leakscope-token") || "";
})();

function viewUrl(path) {
  return API + path + (path.includes("?") ? "&" : "?") + "view=" +
    encodeURIComponent((state.caps && state.caps.view_token) || "");
}

const state = {
  pid: null,           /* the process shown */
  sort: "live_bytes",  /* or "rate" */
  report: null,
  history: null,
  chart: null,
  open: new Set(),     /* site ids whose stack is unfolded */
  picks: { from: null, to: null },
  caps: {},
  busy: false,
  refreshes: 0,        /* completed timer refreshes */
};

function $(id) { return document.getElementById(id); }

function el(tag, attrs, ...kids) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === "class") e.className = v;
    else if (k === "text") e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const k of kids) e.append(k);
  return e;
}

function bytes(n) {
  const units = ["B", "KiB", "MiB", "GiB", "TiB"];
  let v = Math.abs(n), u = 0;
  while (v >= 1024 && u < units.length - 1) { v /= 1024; u++; }
  return (n < 0 ? "-" : "") + (u ? v.toFixed(1) : String(v)) + " " + units[u];
}

async function api(path, opts) {
  const o = Object.assign({ credentials: "omit", cache: "no-store" }, opts);
  o.headers = Object.assign({ "Authorization": "Bearer " + TOKEN }, o.headers || {});
  const r = await fetch(API + path, o);
  const type = r.headers.get("Content-Type") || "";
  const body = type.startsWith("application/json") ? await r.json() : await r.text();
  if (!r.ok) throw new Error((body && body.error) || ("HTTP " + r.status));
  return body;
}

/* ------------------------------------------------------------ frames */

/* The frame that says most: the first outside the C library and the
 * allocator wrappers, else the first. */
function mainFrame(frames) {
  const skip = /(^|\/)(libc|libstdc\+\+|ld-linux)[^/]*$/;
  for (const f of frames || [])
    if (f.function && !(f.module && skip.test(f.module))) return f;
  return (frames || [])[0] || {};
}

function base(p) { return p ? p.split("/").pop() : ""; }

function where(f) {
  return f.file ? base(f.file) + ":" + (f.line || "?") : "[" + base(f.module) + "]";
}

/* The line every text report prints for the frame (the server's one
 * frame formatter, lib/stack.h's ls_frame_format). */
function frameLine(f) {
  return f.text;
}

/* --------------------------------------------------------- sparklines */

function sparkline(canvas, points) {
  const dpr = window.devicePixelRatio || 1;
  const w = 120, h = 24;
  canvas.width = w * dpr; canvas.height = h * dpr;
  const g = canvas.getContext("2d");
  g.scale(dpr, dpr);
  g.clearRect(0, 0, w, h);
  if (!points || points.length < 2) return;
  const max = Math.max(...points, 1);
  g.strokeStyle = "#d9480f";
  g.lineWidth = 1.5;
  g.beginPath();
  points.forEach((v, i) => {
    const x = i * (w - 2) / (points.length - 1) + 1;
    const y = h - 2 - (v / max) * (h - 4);
    if (i) g.lineTo(x, y); else g.moveTo(x, y);
  });
  g.stroke();
}

/* ------------------------------------------------------- side panels */

/* "[NAME] " for a process in a container (docs/CONTAINERS.md), else "". */
function inContainer(p) {
  return p.container ? "[" + p.container.name + "] " : "";
}

function renderProcs(list) {
  const tb = $("procs").tBodies[0];
  tb.replaceChildren();
  for (const p of list.processes) {
    const spark = el("canvas", { class: "spark" });
    const tr = el("tr", { "data-pid": p.pid },
      el("td", { text: p.pid }),
      el("td", { class: "cmd", text: inContainer(p) + p.command.join(" "),
                 title: inContainer(p) + p.command.join(" ") }),
      el("td", { class: "num", text: bytes(p.live_bytes) }),
      el("td", {}, spark));
    if (p.pid === state.pid) tr.classList.add("selected");
    tr.addEventListener("click", () => select(p.pid));
    tb.append(tr);
    sparkline(spark, p.history);
  }
  for (const u of list.unreachable || [])
    tb.append(el("tr", { class: "muted", "data-pid": u.pid },
      el("td", { text: u.pid }),
      el("td", { colspan: 3, text: u.status === 504 ? "its agent does not answer"
                 : "unreachable (HTTP " + u.status + ")" })));
  $("procs-empty").hidden = list.processes.length + (list.unreachable || []).length > 0;
}

function renderPms(list) {
  const tb = $("pms").tBodies[0];
  tb.replaceChildren();
  /* the most recent few: old files stay for 7 days */
  const recent = list.postmortem.slice().sort((a, b) => b.mtime - a.mtime).slice(0, PM_SHOWN);
  for (const p of recent) {
    /* one of a container's: the pid it had there, beside live pid "in" */
    const where = p.in ? "[" + p.container + "] " : "";
    const tr = el("tr", {},
      el("td", { text: where + p.pid }),
      el("td", { class: "num", text: bytes(p.bytes) }),
      el("td", { text: new Date(p.mtime * 1000).toLocaleString() }));
    tr.addEventListener("click", () => select(p.in ? p.in + ":" + p.pid : p.pid,
                                              "postmortem"));
    tb.append(tr);
  }
}

function renderSnaps(list) {
  const tb = $("snaps").tBodies[0];
  tb.replaceChildren();
  for (const s of list.snapshots) {
    const mk = (side) => {
      const r = el("input", { type: "radio", name: side, value: s.name });
      r.checked = state.picks[side] === s.name;
      r.addEventListener("change", () => { state.picks[side] = s.name; diffButton(); });
      return el("td", {}, r);
    };
    const view = el("a", { href: "#", text: s.name });
    view.addEventListener("click", (e) => { e.preventDefault(); select(s.name, "snapshots"); });
    tb.append(el("tr", {}, mk("from"), mk("to"), el("td", {}, view),
                 el("td", { class: "num", text: bytes(s.bytes) })));
  }
  diffButton();
}

function diffButton() {
  $("diff-btn").disabled = !state.caps.diff || !state.picks.from ||
    !state.picks.to || state.picks.from === state.picks.to;
}

/* ------------------------------------------------------ process view */

function sourcePath(view, query) {
  const kind = state.kind || "processes";
  /* a container's post-mortem file is "IN:PID" */
  const id = String(state.pid).split(":").map(encodeURIComponent).join(":");
  return kind + "/" + id + "/" + view +
         (query ? "?" + query : "");
}

function rate(site) {
  return site.trend ? site.trend.bytes_per_second : 0;
}

function renderSummary(rep) {
  const t = rep.totals || {};
  const cards = [
    ["live", bytes(t.live_bytes || 0)], ["blocks", t.live_blocks],
    ["allocated", bytes(t.allocated_bytes || 0)], ["peak", bytes(t.peak_live_bytes || 0)],
    ["sites", rep.sites_total], ["threads", rep.threads],
    ["up", ((rep.uptime_ms || 0) / 1000).toFixed(1) + " s"], ["mode", rep.mode],
  ];
  $("summary").replaceChildren(...cards.map(([k, v]) =>
    el("div", { class: "card" }, el("span", { class: "muted", text: k }),
       el("b", { text: v === undefined ? "-" : String(v) }))));
  $("proc-title").textContent = (rep.postmortem ? "post-mortem " : "") + "pid " +
    rep.pid + "  " + inContainer(rep) + (rep.command || []).join(" ");
}

function siteRow(s) {
  const f = mainFrame(s.frames);
  const label = s.trend ? s.trend.label : "unknown";
  const tr = el("tr", { class: "site", "data-site": s.id },
    el("td", { class: "num", text: bytes(s.live_bytes) }),
    el("td", { class: "num", text: s.live_blocks }),
    el("td", { class: "num", text: s.trend ? s.trend.bytes_per_second.toFixed(1) : "-" }),
    el("td", {}, el("span", { class: "label " + label, text: label })),
    el("td", { class: "fn", text: f.function || f.address || "?" }),
    el("td", { text: where(f) }));
  tr.addEventListener("click", () => {
    if (state.open.has(s.id)) state.open.delete(s.id); else state.open.add(s.id);
    renderSites();
  });
  return tr;
}

function renderSites() {
  const rep = state.report;
  const tb = $("sites").tBodies[0];
  if (!rep) return;
  const sites = rep.sites.slice();
  if (state.sort === "rate") sites.sort((a, b) => rate(b) - rate(a));
  tb.replaceChildren();
  for (const s of sites) {
    tb.append(siteRow(s));
    if (state.open.has(s.id))
      tb.append(el("tr", { class: "stack" }, el("td", { colspan: 6,
        text: (s.frames || []).map(frameLine).join("\n") })));
  }
  for (const th of $("sites").querySelectorAll("th.sort"))
    th.classList.toggle("sorted", th.dataset.key === state.sort);
  $("sites-count").textContent = rep.sites.length + " of " + rep.sites_total +
    " sites holding memory";
}

const COLORS = ["#d9480f", "#1971c2", "#2f9e44", "#c2255c", "#6741d9",
                "#e67700", "#0c8599", "#5c940d"];

function renderChart(hist) {
  const period = (hist.period_ms || 1000) / 1000;
  const n = Math.max(0, ...hist.sites.map((s) => s.history.length));
  const labels = [];
  const digits = period < 1 ? 1 : 0;
  for (let i = 0; i < n; i++) labels.push(((i - n + 1) * period).toFixed(digits) + " s");
  const datasets = hist.sites.map((s, i) => {
    const pad = new Array(n - s.history.length).fill(null);
    const f = mainFrame(s.frames);
    return { label: (f.function || "site " + s.id) + " (" + (s.trend ? s.trend.label : "?") + ")",
             data: pad.concat(s.history), borderColor: COLORS[i % COLORS.length],
             backgroundColor: COLORS[i % COLORS.length], pointRadius: 0,
             borderWidth: 2, spanGaps: true };
  });
  if (!state.chart) {
    state.chart = new Chart($("chart"), {
      type: "line", data: { labels, datasets },
      options: { animation: false, maintainAspectRatio: false,
                 interaction: { mode: "nearest", intersect: false },
                 scales: { y: { ticks: { callback: (v) => bytes(v) } } },
                 plugins: { legend: { position: "right" } } },
    });
  } else {
    state.chart.data.labels = labels;
    state.chart.data.datasets = datasets;
    state.chart.update("none");
  }
}

function renderOlds(olds) {
  const tb = $("olds").tBodies[0];
  tb.replaceChildren();
  for (const b of olds.blocks) {
    const f = mainFrame(b.frames);
    tb.append(el("tr", {},
      el("td", { class: "num", text: (b.age_ms / 1000).toFixed(1) + " s" }),
      el("td", { class: "num", text: bytes(b.size) }),
      el("td", { class: "fn", text: b.address }),
      el("td", { class: "num", text: b.tid }),
      el("td", { class: "fn", text: (f.function || "?") + "  " + where(f) })));
  }
}

function renderStats(st) {
  const lines = [];
  const t = st.totals || {};
  lines.push("live " + bytes(t.live_bytes || 0) + " in " + t.live_blocks +
             " blocks, peak " + bytes(t.peak_live_bytes || 0));
  lines.push("allocated " + bytes(t.allocated_bytes || 0) + " in " +
             t.allocated_blocks + " blocks");
  lines.push("sites " + st.sites + ", " + st.sites_live + " holding memory");
  lines.push("calls " + Object.entries(st.calls || {}).map(([k, v]) => k + " " + v).join(", "));
  if (st.mallinfo) lines.push("allocator: arena " + bytes(st.mallinfo.arena) +
    ", in use " + bytes(st.mallinfo.uordblks) + ", free " + bytes(st.mallinfo.fordblks));
  if (st.unwind) lines.push("stacks: " + st.unwind.walks + " walked, " +
    st.unwind.memo_hits + " from the walk memo (" + st.unwind.unwinder + ")");
  $("stats").textContent = lines.join("\n");
}

function reportQuery() {
  const q = new URLSearchParams();
  const top = parseInt($("top").value, 10);
  if (top > 0) q.set("top", String(top));
  if ($("growing").checked) q.set("growing", "1");
  return q.toString();
}

function flameFrame() {
  if (!state.caps.flamegraph) {
    $("flame").hidden = true;
    $("flame-none").hidden = false;
    return;
  }
  const q = new URLSearchParams(reportQuery());
  q.set("width", String(Math.max(400, Math.min(4000, $("flame").clientWidth - 24))));
  const src = viewUrl(sourcePath("flamegraph.svg", q.toString()));
  /* reloaded only when the process or filters change or after an
   * action: a reload every 2 s would lose the user's zoom */
  const f = $("flame");
  if (f.dataset.src !== src) {
    f.dataset.src = src;
    f.src = src;
  } else if (state.reloadFlame && f.contentWindow) {
    f.contentWindow.location.reload();
  }
  state.reloadFlame = false;
}

async function refreshProcess() {
  if (state.pid === null) return;
  const [rep, hist, stats] = await Promise.all([
    api(sourcePath("report", reportQuery())),
    api(sourcePath("history", "top=" + CHART_SITES)),
    api(sourcePath("stats")),
  ]);
  state.report = rep;
  state.history = hist;
  renderSummary(rep);
  renderSites();
  renderChart(hist);
  renderStats(stats);
  flameFrame();
  try {
    renderOlds(await api(sourcePath("olds", "n=10")));
  } catch (e) {   /* post-mortem files have no block list */
    $("olds").tBodies[0].replaceChildren(el("tr", {}, el("td", { colspan: 5,
      class: "muted", text: e.message })));
  }
}

async function refreshLists() {
  const [procs, pms, snaps] = await Promise.all([
    api("processes"), api("postmortem"), api("snapshots")]);
  renderProcs(procs);
  renderPms(pms);
  renderSnaps(snaps);
  return procs;
}

async function refresh() {
  if (state.busy) return;
  state.busy = true;
  try {
    await refreshLists();
    await refreshProcess();
    state.refreshes++;
    $("status").textContent = "updated " + new Date().toLocaleTimeString();
  } catch (e) {
    $("status").textContent = "error: " + e.message;
  } finally {
    state.busy = false;
  }
}

function select(pid, kind) {
  state.pid = pid;
  state.kind = kind || "processes";
  state.open.clear();
  state.reloadFlame = true;
  $("pick").hidden = true;
  $("diff").hidden = true;
  $("proc").hidden = false;
  const live = state.kind === "processes";
  $("reset-btn").hidden = !live;
  $("snap-btn").hidden = !live;
  for (const tr of $("procs").tBodies[0].rows)
    tr.classList.toggle("selected", tr.dataset.pid === String(pid));
  return refreshProcess().catch((e) => { $("status").textContent = "error: " + e.message; });
}

async function doAction(what) {
  $("action-msg").textContent = "…";
  try {
    const r = await api("processes/" + state.pid + "/" + what, { method: "POST" });
    $("action-msg").textContent = what === "reset" ? "reset done" : "saved " + r.name;
    state.reloadFlame = true;
    await refreshLists();
    await refreshProcess();
  } catch (e) {
    $("action-msg").textContent = what + " failed: " + e.message;
  }
}

/* ------------------------------------------------------------- diff */

function diffQuery(from, to) {
  return "from=" + encodeURIComponent(from) + "&to=" + encodeURIComponent(to);
}

async function showDiff(from, to) {
  const d = await api("diff?" + diffQuery(from, to));
  $("proc").hidden = true;
  $("pick").hidden = true;
  $("diff").hidden = false;
  $("diff-title").textContent = "Diff " + from + " → " + to;
  const t = d.totals;
  $("diff-summary").replaceChildren(...[["before", bytes(t.base.live_bytes)],
    ["after", bytes(t.new.live_bytes)], ["change", bytes(t.live_bytes_delta)],
    ["stacks grew", t.stacks.grew], ["new", t.stacks.new], ["shrank", t.stacks.shrank],
    ["gone", t.stacks.gone]].map(
    ([k, v]) => el("div", { class: "card" }, el("span", { class: "muted", text: k }),
                   el("b", { text: String(v) }))));
  const tb = $("diff-sites").tBodies[0];
  tb.replaceChildren();
  for (const s of d.sites) {
    const f = mainFrame(s.frames);
    tb.append(el("tr", { class: "diff-site" },
      el("td", { class: "num " + (s.live_bytes_delta > 0 ? "delta-up" : "delta-down"),
                 text: bytes(s.live_bytes_delta) }),
      el("td", {}, el("span", { class: "label " + s.change, text: s.change })),
      el("td", { class: "num", text: bytes(s.base.live_bytes) }),
      el("td", { class: "num", text: bytes(s.new.live_bytes) }),
      el("td", { class: "fn", text: f.function || "?" }),
      el("td", { text: where(f) })));
  }
  $("diff-flame").hidden = !state.caps.diff_svg;
  if (state.caps.diff_svg)
    $("diff-flame").src = viewUrl("diff?" + diffQuery(from, to) + "&format=svg&width=" +
      Math.max(400, Math.min(4000, $("diff").clientWidth - 40)));
  return d;
}

/* ------------------------------------------------------------- test */

function sleep(ms) { return new Promise((r) => setTimeout(r, ms)); }

async function until(cond, tries) {
  for (let i = 0; i < (tries || 50); i++) {
    if (cond()) return true;
    await sleep(100);
  }
  return false;
}

function canvasInk(c) {
  const g = c.getContext("2d");
  const d = g.getImageData(0, 0, c.width, c.height).data;
  let ink = 0;
  for (let i = 3; i < d.length; i += 4) if (d[i]) ink++;
  return ink;
}

function svgReady(f) {
  const d = f.contentDocument;
  return d && d.documentElement && d.documentElement.getAttribute("data-ready") === "1";
}

/* The flame graph as drawn: its frames, a click on site_web_big (zoom),
 * then a search through the graph's own URL state (?s=). */
async function flameInfo() {
  const f = $("flame");
  await until(() => svgReady(f), 80);
  const doc = f.contentDocument, root = doc.documentElement;
  const groups = Array.from(doc.querySelectorAll("g.f"));
  const label = (g) => g.querySelector("title").textContent.split("\n")[0];
  const out = { svg: root.tagName, ready: root.getAttribute("data-ready"),
                labels: groups.map(label) };
  const big = groups.find((g) => label(g).startsWith("site_web_big"));
  if (big) big.querySelector("rect").dispatchEvent(
    new f.contentWindow.MouseEvent("click", { bubbles: true }));
  out.zoom = root.getAttribute("data-zoom");
  const src = f.dataset.src;
  f.src = src + (src.includes("?") ? "&" : "?") + "s=site_web_";
  await sleep(200);
  await until(() => svgReady(f) && f.contentDocument.documentElement.getAttribute("data-matched") !== null, 80);
  out.matched = f.contentDocument.documentElement.getAttribute("data-matched");
  return out;
}

async function testRun() {
  const out = { steps: [] };
  $("status").textContent = "test: visit";
  const pid = parseInt(params.get("pid"), 10);
  try {
    const procs = await refreshLists();
    out.processes = procs.processes.map((p) => p.pid);
    out.rows = $("procs").tBodies[0].rows.length;
    out.sparkInk = Array.from(document.querySelectorAll("canvas.spark")).map(canvasInk);
    const row = $("procs").querySelector('tr[data-pid="' + pid + '"]');
    out.rowFound = !!row;
    if (row) row.click();
    await until(() => state.report && state.report.pid === pid && state.history);
    out.before = { sites: state.report.sites.length, siteRows: $("sites").querySelectorAll("tr.site").length,
                   live: state.report.totals.live_bytes,
                   functions: state.report.sites.map((s) => mainFrame(s.frames).function),
                   labels: Array.from($("sites").querySelectorAll(".label")).map((x) => x.textContent) };
    out.chart = { datasets: state.chart ? state.chart.data.datasets.length : 0,
                  points: state.chart ? Math.max(0, ...state.chart.data.datasets.map((d) => d.data.length)) : 0,
                  ink: canvasInk($("chart")) };
    out.flame = state.caps.flamegraph ? await flameInfo() : { svg: false, disabled: true };
    /* sort by growth rate: the header click re-renders */
    $("sites").querySelector('th[data-key="rate"]').click();
    out.sortedByRate = Array.from($("sites").querySelectorAll("tr.site td:nth-child(3)")).map((x) => x.textContent);
    out.olds = $("olds").tBodies[0].rows.length;
    $("reset-btn").click();
    await until(() => $("action-msg").textContent === "reset done");
    /* the live refresh, by the timer alone */
    startTimer();
    await until(() => state.refreshes >= 2, 100);
    out.timerRefreshes = state.refreshes;
    const cell = $("procs").querySelector('tr[data-pid="' + pid + '"] td.num');
    out.listLive = cell ? cell.textContent : null;
    out.after = { sites: state.report.sites.length, siteRows: $("sites").querySelectorAll("tr.site").length,
                  live: state.report.totals.live_bytes, msg: $("action-msg").textContent,
                  functions: state.report.sites.map((s) => mainFrame(s.frames).function) };
    out.steps.push("done");
  } catch (e) {
    out.error = String(e && e.stack || e);
  }
  $("test-out").textContent = JSON.stringify(out);
  document.title = "test done";
}

async function testDiff() {
  const out = {};
  $("status").textContent = "test: diff";
  try {
    await refreshLists();
    out.listed = Array.from($("snaps").querySelectorAll('input[name="from"]')).map((r) => r.value);
    /* pick the two through the radio buttons, as a user would */
    for (const side of ["from", "to"]) {
      const r = $("snaps").querySelector('input[name="' + side + '"][value="' + params.get(side) + '"]');
      if (r) { r.checked = true; r.dispatchEvent(new Event("change")); }
    }
    out.buttonEnabled = !$("diff-btn").disabled;
    $("diff-btn").click();
    await until(() => !$("diff").hidden && $("diff-sites").tBodies[0].rows.length > 0);
    out.rows = Array.from($("diff-sites").tBodies[0].rows).map((tr) =>
      Array.from(tr.cells).map((c) => c.textContent));
    out.cards = Array.from($("diff-summary").querySelectorAll(".card")).map((c) => c.textContent);
    if (state.caps.diff_svg) {
      const f = $("diff-flame");
      await until(() => svgReady(f), 80);
      const d = f.contentDocument;
      out.diffFlame = d ? Array.from(d.querySelectorAll("g.f title")).map(
        (t) => t.textContent.split("\n")[0]) : null;
    }
  } catch (e) {
    out.error = String(e && e.stack || e);
  }
  $("test-out").textContent = JSON.stringify(out);
  document.title = "test done";
}

/* ------------------------------------------------------------ start */

function startTimer() {
  setInterval(() => { if ($("live").checked) refresh(); }, REFRESH_MS);
}

async function start() {
  for (const th of $("sites").querySelectorAll("th.sort"))
    th.addEventListener("click", () => { state.sort = th.dataset.key; renderSites(); });
  $("reset-btn").addEventListener("click", () => doAction("reset"));
  $("snap-btn").addEventListener("click", () => doAction("snapshot"));
  $("top").addEventListener("change", () => refreshProcess());
  $("growing").addEventListener("change", () => refreshProcess());
  $("diff-btn").addEventListener("click", () =>
    showDiff(state.picks.from, state.picks.to).catch((e) => { $("status").textContent = "error: " + e.message; }));
  $("diff-close").addEventListener("click", () => { $("diff").hidden = true;
    if (state.pid !== null) $("proc").hidden = false; else $("pick").hidden = false; });
  try {
    state.caps = await api("version");
  } catch (e) {
    $("status").textContent = "error: " + e.message;
    return;
  }
  if (params.get("test") === "1") return testRun();
  if (params.get("test") === "diff") return testDiff();
  if (params.has("pid")) await select(parseInt(params.get("pid"), 10));
  await refresh();
  startTimer();
}

start();
