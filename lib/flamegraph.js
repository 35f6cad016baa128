// flamegraph.js - the script inside every leakscope flame graph SVG
// (compiled into lib/flamegraph_svg.c).  It reads everything from the
// document: each frame's <g class="f"> carries data-o (offset), data-v
// (width) in count units and data-d (depth); its <title>'s first line is
// the label, the second its figures.  No data is ever evaluated as code.
// URL state: ?s=REGEX searches, ?x=N zooms into frame fN (as the page
// sets them after a click or a search, to be reopened or shared).
"use strict";
(function () {
	var svg = document.documentElement, frames = [], zoomed = null, term = null;
	var total, xpad, charpx, width, countName, details, matched, unzoomBtn, searchBtn;
	var defaultDetails;

	function num(s) { return Number(s); }

	function thousands(n) {
		return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, ",");
	}

	// The label cut to what fits in w pixels; as label_put_fit() in C.
	function fit(label, w) {
		var n = Math.floor((w - 6) / charpx), cps = Array.from(label);

		if (n < 3)
			return "";
		if (cps.length <= n)
			return label;
		return cps.slice(0, n - 2).join("") + "..";
	}

	function place(f, x, w) {
		f.rect.setAttribute("x", x.toFixed(2));
		f.rect.setAttribute("width", w.toFixed(2));
		f.text.setAttribute("x", (x + 3).toFixed(2));
		f.text.textContent = fit(f.label, w);
	}

	function show(f, on, parent) {
		f.g.classList.toggle("hide", !on);
		f.g.classList.toggle("parent", !!parent);
	}

	function unzoom() {
		var scale = (width - 2 * xpad) / total;

		zoomed = null;
		frames.forEach(function (f) {
			show(f, true, false);
			place(f, xpad + f.o * scale, f.v * scale);
		});
		unzoomBtn.classList.add("hide");
		svg.removeAttribute("data-zoom");
		saveState();
	}

	// z fills the width; its ancestors span it, greyed; the rest hides.
	// Frames of one depth never overlap, so containment of [o, o+v) at a
	// greater depth means descent.
	function zoom(z) {
		var scale = (width - 2 * xpad) / z.v, end = z.o + z.v;

		zoomed = z;
		frames.forEach(function (f) {
			if (f.d >= z.d && f.o >= z.o && f.o + f.v <= end) {
				show(f, true, false);
				place(f, xpad + (f.o - z.o) * scale, f.v * scale);
			} else if (f.d < z.d && f.o <= z.o && f.o + f.v >= end) {
				show(f, true, true);
				place(f, xpad, width - 2 * xpad);
			} else {
				show(f, false, false);
			}
		});
		unzoomBtn.classList.remove("hide");
		svg.setAttribute("data-zoom", z.id);
		saveState();
	}

	function clearSearch() {
		term = null;
		frames.forEach(function (f) { f.rect.setAttribute("fill", f.fill); });
		matched.textContent = "";
		searchBtn.textContent = "Search";
		svg.removeAttribute("data-matched");
		saveState();
	}

	// Highlight the frames whose label matches; the matched share counts
	// a frame inside another matched frame once.  Sorted by offset, then
	// depth, an ancestor comes before everything it contains.
	function search(t) {
		var re, hits = [], sum = 0, end = -1;

		try {
			re = new RegExp(t);
		} catch (e) {
			matched.textContent = "bad regex: " + e.message;
			return;
		}
		clearSearch();
		term = t;
		frames.forEach(function (f) {
			if (f.d > 0 && re.test(f.label)) {
				f.rect.setAttribute("fill", "rgb(230,0,230)");
				hits.push(f);
			}
		});
		hits.sort(function (a, b) { return a.o - b.o || a.d - b.d; });
		hits.forEach(function (f) {
			if (f.o >= end) {
				sum += f.v;
				end = f.o + f.v;
			}
		});
		matched.textContent = "Matched: " + thousands(sum) + " " + countName +
			" (" + (total ? 100 * sum / total : 0).toFixed(2) + "%)";
		searchBtn.textContent = "Reset Search";
		svg.setAttribute("data-matched", String(sum));
		saveState();
	}

	function saveState() {
		var p = [];

		if (term !== null)
			p.push("s=" + encodeURIComponent(term));
		if (zoomed)
			p.push("x=" + zoomed.id.slice(1));
		try {
			history.replaceState(null, "", location.pathname + (p.length ? "?" + p.join("&") : ""));
		} catch (e) {
			// file: documents may refuse; the state just is not saved.
		}
	}

	function loadState() {
		var q = new URLSearchParams(location.search), x = q.get("x"), s = q.get("s");
		var f = x !== null && /^\d+$/.test(x) ? frames[num(x)] : null;

		if (f && f.d > 0)
			zoom(f);
		if (s !== null && s !== "")
			search(s);
	}

	function frameOf(node) {
		while (node && node !== svg) {
			if (node.classList && node.classList.contains("f"))
				return frames[num(node.id.slice(1))];
			node = node.parentNode;
		}
		return null;
	}

	function askSearch() {
		var t;

		if (term !== null) {
			clearSearch();
			return;
		}
		t = prompt("Search frames (regular expression)", "");
		if (t)
			search(t);
	}

	function init() {
		var lines, box = document.getElementById("frames");

		total = num(svg.getAttribute("data-total"));
		xpad = num(svg.getAttribute("data-xpad"));
		charpx = num(svg.getAttribute("data-charpx"));
		width = num(svg.getAttribute("width"));
		countName = svg.getAttribute("data-count");
		details = document.getElementById("details");
		matched = document.getElementById("matched");
		unzoomBtn = document.getElementById("unzoom");
		searchBtn = document.getElementById("search");
		defaultDetails = details.textContent;
		Array.prototype.forEach.call(box.querySelectorAll("g.f"), function (g) {
			lines = g.querySelector("title").textContent.split("\n");
			frames.push({ g: g, id: g.id, o: num(g.getAttribute("data-o")),
				v: num(g.getAttribute("data-v")), d: num(g.getAttribute("data-d")),
				rect: g.querySelector("rect"), text: g.querySelector("text"),
				label: lines[0], info: lines[1] || "",
				fill: g.querySelector("rect").getAttribute("fill") });
		});
		box.addEventListener("click", function (e) {
			var f = frameOf(e.target);

			if (f && f.d > 0)
				zoom(f);
			else if (f)
				unzoom();
		});
		box.addEventListener("mouseover", function (e) {
			var f = frameOf(e.target);

			if (f)
				details.textContent = f.label + " (" + f.info + ")";
		});
		box.addEventListener("mouseout", function () {
			details.textContent = defaultDetails;
		});
		unzoomBtn.addEventListener("click", unzoom);
		searchBtn.addEventListener("click", askSearch);
		window.addEventListener("keydown", function (e) {
			if ((e.ctrlKey && e.key === "f") || e.key === "/") {
				e.preventDefault();
				askSearch();
			} else if (e.key === "Escape") {
				if (zoomed)
					unzoom();
				if (term !== null)
					clearSearch();
			}
		});
		// Public for tests and for pages that embed the graph.
		window.leakscopeFlame = { zoom: function (n) { if (frames[n]) zoom(frames[n]); },
			unzoom: unzoom, search: search, clearSearch: clearSearch,
			frames: frames.length };
		loadState();
		svg.setAttribute("data-ready", "1");
	}

	if (document.readyState === "loading")
		document.addEventListener("DOMContentLoaded", init);
	else
		init();
})();
