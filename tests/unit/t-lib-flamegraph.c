/*
 * t-lib-flamegraph.c - the flame graph builder (lib/flamegraph.h) and its
 * SVG: prefixes merged into a tree with exact figures, children in name
 * order whatever the insertion order, bad input refused without a change,
 * hostile names escaped, widths and differential colours computed from
 * known values.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/flamegraph.h"
#include "tap.h"

#define FR(n, m) { .name = (n), .module = (m), .kind = LS_FLAME_KIND_CODE }

static int add_root_first(struct ls_flame *fg, const char *const *names,
			  size_t n, int64_t bytes, int64_t blocks)
{
	struct ls_flame_frame f[8];
	struct ls_flame_value v = { .bytes = bytes, .blocks = blocks };
	size_t i;

	for (i = 0; i < n; i++)
		f[i] = (struct ls_flame_frame)FR(names[i], "prog");
	return ls_flame_add(fg, f, n, LS_FLAME_ROOT_FIRST, &v);
}

/* The walk flattened to "depth:name:bytes/blocks(self bytes)" lines. */
struct flat {
	char buf[4096];
	size_t len;
	size_t nodes;
};

static int flatten(const struct ls_flame_node_info *n, void *arg)
{
	struct flat *fl = arg;

	fl->len += snprintf(fl->buf + fl->len, sizeof(fl->buf) - fl->len,
			    "%u:%s%s%s:%lld/%lld(%lld)\n", n->depth, n->name,
			    n->module ? "@" : "", n->module ? n->module : "",
			    (long long)n->total.bytes, (long long)n->total.blocks,
			    (long long)n->self.bytes);
	fl->nodes++;
	return 0;
}

static void flat_of(const struct ls_flame *fg, struct flat *fl)
{
	memset(fl, 0, sizeof(*fl));
	ls_flame_walk(fg, flatten, fl);
}

/* What a failed check was about, as TAP comments. */
static void diag(const char *text)
{
	const char *nl;

	for (; *text; text = nl + 1) {
		nl = strchrnul(text, '\n');
		printf("#   %.*s\n", (int)(nl - text), text);
		if (!*nl)
			break;
	}
}

static char *svg_of(const struct ls_flame *fg, const struct ls_flame_opts *o,
		    int *ret)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *mem = open_memstream(&buf, &len);

	if (!mem)
		abort();
	*ret = ls_flame_write_svg(mem, fg, o);
	fclose(mem);
	return buf;
}

static size_t count_of(const char *hay, const char *needle)
{
	size_t n = 0;

	while ((hay = strstr(hay, needle))) {
		n++;
		hay += strlen(needle);
	}
	return n;
}

/* The value of attribute attr of the frame whose label is label: in its
 * <g> (data-*) or its <rect> (the first x, y, width, fill after it). */
static int frame_attr(const char *svg, const char *label, const char *attr,
		      char *out, size_t outlen)
{
	char key[256];
	const char *p, *g = NULL, *e;

	snprintf(key, sizeof(key), "<title>%s\n", label);
	p = strstr(svg, key);
	if (!p)
		return -1;
	for (e = svg; (e = strstr(e, "<g class=\"f\"")) && e < p; e++)
		g = e;
	snprintf(key, sizeof(key), " %s=\"", attr);
	p = g ? strstr(g, key) : NULL;
	if (!p)
		return -1;
	p += strlen(key);
	e = strchr(p, '"');
	snprintf(out, outlen, "%.*s", (int)(e - p), p);
	return 0;
}

/* Frames in the document (after the script, whose comments name them). */
static size_t frames_in(const char *svg)
{
	const char *p = strstr(svg, "</script>");

	return p ? count_of(p, "<g class=\"f\"") : 0;
}

static void t_merge(void)
{
	static const char *const s1[] = { "main", "a", "x" };
	static const char *const s2[] = { "main", "a", "y" };
	static const char *const s3[] = { "main", "b" };
	static const char *const s4[] = { "main" };
	struct ls_flame *fg = ls_flame_new();
	struct ls_flame_frame leaf_first[] = { FR("x", "prog"), FR("a", "prog"),
					       FR("main", "prog") };
	struct ls_flame_value v = { .bytes = 10, .blocks = 1 };
	struct flat fl;

	/* Out of order, and one stack twice (once leaf first). */
	ok(!add_root_first(fg, s3, 2, 25, 1), "add main;b");
	ok(!add_root_first(fg, s2, 3, 50, 2), "add main;a;y");
	ok(!add_root_first(fg, s1, 3, 100, 1), "add main;a;x");
	ok(!ls_flame_add(fg, leaf_first, 3, LS_FLAME_LEAF_FIRST, &v),
	   "add x;a;main leaf first");
	ok(!add_root_first(fg, s4, 1, 7, 7), "add main alone");
	flat_of(fg, &fl);
	if (!ok(!strcmp(fl.buf,
		   "0:all:192/12(0)\n"
		   "1:main@prog:192/12(7)\n"
		   "2:a@prog:160/4(0)\n"
		   "3:x@prog:110/2(110)\n"
		   "3:y@prog:50/2(50)\n"
		   "2:b@prog:25/1(25)\n"),
	   "tree merged, children by name, inclusive and self figures"))
		diag(fl.buf);
	is_u64(ls_flame_total(fg).bytes, 192, "total bytes");
	is_u64(ls_flame_total(fg).blocks, 12, "total blocks");
	ls_flame_free(fg);
}

static void t_identity(void)
{
	struct ls_flame *fg = ls_flame_new();
	struct ls_flame_frame f[] = { FR("run", "liba.so"), FR("run", "libb.so"),
				      FR("run", NULL), FR("run", "") };
	struct ls_flame_value v = { .bytes = 1, .blocks = 1 };
	struct flat fl;
	size_t i;

	for (i = 0; i < 4; i++)
		ok(!ls_flame_add(fg, &f[i], 1, 0, &v), "add run #%zu", i);
	f[0].kind = LS_FLAME_KIND_INLINE;
	ok(!ls_flame_add(fg, &f[0], 1, 0, &v), "add run@liba.so inlined");
	flat_of(fg, &fl);
	/* No module first ("" is none), then by module, then by kind. */
	if (!ok(!strcmp(fl.buf, "0:all:5/5(0)\n1:run:2/2(2)\n1:run@liba.so:1/1(1)\n"
		   "1:run@liba.so:1/1(1)\n1:run@libb.so:1/1(1)\n"),
	   "name, module and kind identify a frame"))
		diag(fl.buf);
	ls_flame_free(fg);
}

static void t_refused(void)
{
	struct ls_flame *fg = ls_flame_new();
	struct ls_flame_frame good[] = { FR("main", NULL), FR("f", NULL) };
	struct ls_flame_frame bad[] = { FR("main", NULL), FR(NULL, NULL) };
	struct ls_flame_value v = { .bytes = 8, .blocks = 1 }, neg = { .bytes = -1 };
	struct flat before, after;

	ok(!ls_flame_add(fg, good, 2, 0, &v), "a good stack");
	flat_of(fg, &before);
	is_u64(-ls_flame_add(fg, bad, 2, 0, &v), EINVAL, "NULL name: EINVAL");
	is_u64(-ls_flame_add(fg, good, 2, 0, &neg), EINVAL, "negative bytes: EINVAL");
	is_u64(-ls_flame_add(fg, good, 2, 4, &v), EINVAL, "unknown flag: EINVAL");
	bad[1] = (struct ls_flame_frame){ .name = "g", .kind = LS_FLAME_KIND_COUNT };
	is_u64(-ls_flame_add(fg, bad, 2, 0, &v), EINVAL, "unknown kind: EINVAL");
	is_u64(-ls_flame_add(fg, good, LS_FLAME_MAX_DEPTH + 1, 0, &v), E2BIG,
	       "too deep: E2BIG");
	flat_of(fg, &after);
	ok(!strcmp(before.buf, after.buf) && before.nodes == 3,
	   "the tree is unchanged after refusals");
	ls_flame_free(fg);
}

static void t_widths(void)
{
	struct ls_flame *fg = ls_flame_new();
	struct ls_flame_frame big[] = { FR("main", "p"), FR("big", "p") };
	struct ls_flame_frame tiny[] = { FR("main", "p"), FR("tiny", "p") };
	struct ls_flame_value vb = { .bytes = 999999, .blocks = 1 };
	struct ls_flame_value vt = { .bytes = 1, .blocks = 3 };
	struct ls_flame_opts o = { .width = 1020 };
	char a[64], *svg;
	int ret;

	ls_flame_add(fg, big, 2, 0, &vb);
	ls_flame_add(fg, tiny, 2, 0, &vt);
	svg = svg_of(fg, &o, &ret);
	ok(!ret, "written");
	ok(!frame_attr(svg, "all", "width", a, sizeof(a)) && !strcmp(a, "1000.00"),
	   "root spans the width between the margins: %s", a);
	ok(!frame_attr(svg, "big [p]", "data-v", a, sizeof(a)) && !strcmp(a, "999999"),
	   "data-v of big is its bytes: %s", a);
	ok(!strstr(svg, "tiny"), "a frame under 0.1 px is not drawn");
	is_u64(frames_in(svg), 3, "three frames drawn");
	free(svg);

	o.min_width = -1;
	o.count = LS_FLAME_COUNT_BLOCKS;
	svg = svg_of(fg, &o, &ret);
	ok(!frame_attr(svg, "tiny [p]", "data-v", a, sizeof(a)) && !strcmp(a, "3"),
	   "by blocks, drawing everything: tiny is 3 wide: %s", a);
	ok(!frame_attr(svg, "tiny [p]", "width", a, sizeof(a)) && !strcmp(a, "750.00"),
	   "3 of 4 blocks: 750 px: %s", a);
	ok(!frame_attr(svg, "tiny [p]", "data-o", a, sizeof(a)) && !strcmp(a, "1"),
	   "tiny sits after big (by name): offset 1: %s", a);
	ok(strstr(svg, "data-count=\"blocks\"") != NULL, "count name blocks");
	free(svg);
	ls_flame_free(fg);
}

static void t_inverted(void)
{
	struct ls_flame *fg = ls_flame_new();
	struct ls_flame_frame f[] = { FR("main", NULL), FR("leaf", NULL) };
	struct ls_flame_value v = { .bytes = 64, .blocks = 1 };
	struct ls_flame_opts o = { 0 };
	char up[32], down[32], *svg;
	int ret;

	ls_flame_add(fg, f, 2, 0, &v);
	svg = svg_of(fg, &o, &ret);
	frame_attr(svg, "all", "y", up, sizeof(up));
	frame_attr(svg, "leaf", "y", down, sizeof(down));
	ok(atof(up) > atof(down), "flame: root below its leaf (%s > %s)", up, down);
	free(svg);
	o.inverted = 1;
	svg = svg_of(fg, &o, &ret);
	frame_attr(svg, "all", "y", up, sizeof(up));
	frame_attr(svg, "leaf", "y", down, sizeof(down));
	ok(atof(up) < atof(down), "icicle: root above its leaf (%s < %s)", up, down);
	free(svg);
	ls_flame_free(fg);
}

static void t_escaping(void)
{
	struct ls_flame *fg = ls_flame_new();
	struct ls_flame_frame f[] = {
		FR("std::ostream& operator<< <char>(std::ostream&, Foo const&)", "lib\"q'.so"),
		FR("</title><script>alert(1)</script>", NULL),
		FR("]]></script>", NULL),
		FR("bad\xff\xfeutf8\x01\x1b[31m", NULL),
		FR("caf\xc3\xa9 \xe2\x82\xac", NULL),
	};
	struct ls_flame_value v = { .bytes = 100, .blocks = 1 };
	struct ls_flame_opts o = { .title = "<b>&\"title\"", .subtitle = "x<y" };
	char *svg, *script_end;
	int ret;

	ok(!ls_flame_add(fg, f, 5, 0, &v), "hostile names added");
	svg = svg_of(fg, &o, &ret);
	ok(!ret, "written");
	script_end = strstr(svg, "]]></script>");
	ok(script_end && !strstr(script_end + 1, "]]>"),
	   "the script's CDATA is closed once, by the script");
	ok(count_of(svg, "<script") == 1, "no script element from the data");
	ok(strstr(svg, "operator&lt;&lt; &lt;char&gt;(std::ostream&amp;, Foo const&amp;) "
		  "[lib&quot;q&#39;.so]") != NULL, "C++ operator<< and quotes escaped");
	ok(strstr(svg, "&lt;/title&gt;&lt;script&gt;alert(1)&lt;/script&gt;") != NULL,
	   "markup in a name is text");
	ok(strstr(svg, ">&lt;b&gt;&amp;&quot;title&quot;</text>") != NULL, "title escaped");
	ok(strstr(svg, ">x&lt;y</text>") != NULL, "subtitle escaped");
	ok(strstr(svg, "bad\xef\xbf\xbd\xef\xbf\xbdutf8??[31m") != NULL,
	   "invalid UTF-8 replaced by U+FFFD, control characters by '?'");
	ok(!strchr(svg, '\x1b') && !strchr(svg, '\x01') && !strchr(svg, '\xff'),
	   "no control or invalid byte in the document");
	ok(strstr(svg, "caf\xc3\xa9 \xe2\x82\xac") != NULL, "valid UTF-8 kept");
	free(svg);
	ls_flame_free(fg);
}

static void t_fit(void)
{
	struct ls_flame *fg = ls_flame_new();
	struct ls_flame_frame f[] = {
		FR("\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
		   "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", NULL),
		FR("sibling", NULL),
	};
	struct ls_flame_value v = { .bytes = 60, .blocks = 1 };
	struct ls_flame_value w = { .bytes = 940, .blocks = 1 };
	struct ls_flame_opts o = { .width = 1020 };
	char *svg, *p;
	int ret;

	ls_flame_add(fg, &f[0], 1, 0, &v);	/* 60 px: (60 - 6) / 7.2 = 7 */
	ls_flame_add(fg, &f[1], 1, 0, &w);
	svg = svg_of(fg, &o, &ret);
	p = strstr(svg, "\xc3\xa9\n60 bytes");
	p = p ? strstr(p, "<text") : NULL;
	p = p ? strchr(p, '>') : NULL;
	ok(p && !strncmp(p, ">\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9..</text>", 20),
	   "a label cut to 7 characters at code point boundaries: 5 + '..'");
	free(svg);
	ls_flame_free(fg);
}

static void t_differential(void)
{
	struct ls_flame *fg = ls_flame_new();
	struct ls_flame_frame grew[] = { FR("main", NULL), FR("grew", NULL) };
	struct ls_flame_frame shrank[] = { FR("main", NULL), FR("shrank", NULL) };
	struct ls_flame_frame same[] = { FR("main", NULL), FR("same", NULL) };
	struct ls_flame_frame gone[] = { FR("main", NULL), FR("gone", NULL) };
	struct ls_flame_value vg = { 12288, 3, 8192, 2 }, vs = { 1024, 1, -4096, -1 };
	struct ls_flame_value v0 = { 2048, 2, 0, 0 }, vx = { 0, 0, -2048, -2 };
	struct ls_flame_opts o = { .differential = 1 };
	char a[64], *svg;
	int ret;

	ls_flame_add(fg, grew, 2, 0, &vg);
	ls_flame_add(fg, shrank, 2, 0, &vs);
	ls_flame_add(fg, same, 2, 0, &v0);
	ls_flame_add(fg, gone, 2, 0, &vx);
	is_u64(ls_flame_total(fg).delta_bytes, 2048, "net change +2048");
	svg = svg_of(fg, &o, &ret);
	ok(!ret, "written");
	ok(!frame_attr(svg, "grew", "fill", a, sizeof(a)) && !strcmp(a, "rgb(255,0,0)"),
	   "the largest growth is full red: %s", a);
	/* t = 4096 / 8192: 215 * (1 - (0.15 + 0.85 * 0.5)) = 91.375 */
	ok(!frame_attr(svg, "shrank", "fill", a, sizeof(a)) && !strcmp(a, "rgb(91,91,255)"),
	   "half as large a shrinkage is a middle blue: %s", a);
	ok(!frame_attr(svg, "same", "fill", a, sizeof(a)) && !strcmp(a, "rgb(220,220,220)"),
	   "unchanged is grey: %s", a);
	/* main: +2048 of 8192: 215 * (1 - (0.15 + 0.85 * 0.25)) = 137.3 */
	ok(!frame_attr(svg, "main", "fill", a, sizeof(a)) && !strcmp(a, "rgb(255,137,137)"),
	   "the parent carries the net growth, pale red: %s", a);
	ok(!strstr(svg, "<title>gone"), "a stack only the baseline had has no width");
	ok(strstr(svg, "<title>grew\n12,288 bytes (+8,192), 3 blocks (+2), 80.00%") != NULL,
	   "tooltip with the changes");
	ok(strstr(svg, "Differential Memory Flame Graph") != NULL, "default title");
	ok(strstr(svg, "id=\"legend\"") != NULL, "legend");
	free(svg);
	ls_flame_free(fg);
}

static void t_empty(void)
{
	struct ls_flame *fg = ls_flame_new();
	struct ls_flame_opts o = { .width = 50 };
	char *svg;
	int ret;

	svg = svg_of(fg, &o, &ret);
	is_u64(-ret, EINVAL, "width 50 refused");
	free(svg);
	o.width = 0;
	svg = svg_of(fg, &o, &ret);
	ok(!ret && !frames_in(svg) && strstr(svg, "no outstanding bytes"),
	   "an empty graph says so");
	ok(!strncmp(svg, "<?xml", 5) && strstr(svg, "</svg>\n"), "still a whole document");
	free(svg);
	ls_flame_free(fg);
	ls_flame_free(NULL);
}

/* Every frame of the "mem" palette is green, and a function has one
 * colour wherever it appears. */
static void t_mem_palette(void)
{
	static const char *const a[] = { "main", "parse", "xstrdup" };
	static const char *const b[] = { "main", "load", "xstrdup" };
	static const char *const c[] = { "main", "load", "cache_put" };
	struct ls_flame *fg = ls_flame_new();
	struct ls_flame_opts o = { 0 };
	const char *p;
	char *svg, first[32] = "";
	int ret, r, g, bl, green = 1, n = 0, same = 1;

	add_root_first(fg, a, 3, 100, 1);
	add_root_first(fg, b, 3, 100, 1);
	add_root_first(fg, c, 3, 100, 1);
	svg = svg_of(fg, &o, &ret);
	for (p = strstr(svg, "</script>"); (p = strstr(p, " fill=\"rgb(")); p++) {
		if (sscanf(p, " fill=\"rgb(%d,%d,%d)", &r, &g, &bl) != 3)
			break;
		green &= g > r && g > bl;
		n++;
	}
	ok(green && n == 7, "%d frames, all green", n);
	for (p = svg; (p = strstr(p, "<title>xstrdup [prog]")); p++) {
		char fill[32];

		sscanf(strstr(p, "fill=\""), "fill=\"%31[^\"]", fill);
		if (!*first)
			snprintf(first, sizeof(first), "%s", fill);
		same &= !strcmp(first, fill);
	}
	ok(*first && same, "xstrdup has one colour under parse and load: %s", first);
	free(svg);
	ls_flame_free(fg);
}

static void t_kinds(void)
{
	struct ls_flame *fg = ls_flame_new();
	struct ls_flame_frame f[] = {
		{ .name = "main", .kind = LS_FLAME_KIND_CODE },
		{ .name = "malloc", .module = "libc.so.6", .kind = LS_FLAME_KIND_RUNTIME },
	};
	struct ls_flame_value v = { .bytes = 1, .blocks = 1 };
	struct ls_flame_opts o = { .colors = LS_FLAME_COLORS_KIND };
	char *svg;
	int ret;

	ls_flame_add(fg, f, 2, 0, &v);
	svg = svg_of(fg, &o, &ret);
	ok(strstr(svg, ">code</text>") && strstr(svg, ">runtime (libc, libstdc++, ld.so)</text>")
	   && !strstr(svg, ">kernel</text>"), "the legend names the kinds drawn, only those");
	free(svg);
	ls_flame_free(fg);
}

int main(void)
{
	t_merge();
	t_identity();
	t_refused();
	t_widths();
	t_inverted();
	t_escaping();
	t_fit();
	t_differential();
	t_empty();
	t_mem_palette();
	t_kinds();
	return tap_done();
}
