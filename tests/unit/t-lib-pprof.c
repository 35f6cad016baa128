/*
 * t-lib-pprof.c - the protobuf encoder against bytes computed by hand
 * from the wire format's rules (and the examples of its documentation:
 * 150 -> 08 96 01, "testing" -> 12 07 ..., packed 3 270 86942), then the
 * whole pprof Profile of a one-site snapshot, inflated, byte for byte.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "../../lib/protobuf.h"
#include "../../lib/render.h"
#include "lib-fixture.h"
#include "tap.h"

#define SEC 1000000000ULL

static int bytes_are(const uint8_t *got, size_t n, const uint8_t *want,
		     size_t wn, const char *what)
{
	size_t i;

	if (ok(n == wn && !memcmp(got, want, n), "%s", what))
		return 1;
	printf("#   got  (%zu):", n);
	for (i = 0; i < n; i++)
		printf(" %02x", got[i]);
	printf("\n#   want (%zu):", wn);
	for (i = 0; i < wn; i++)
		printf(" %02x", want[i]);
	putchar('\n');
	return 0;
}

#define EXPECT(pb, what, ...) do { \
	static const uint8_t want_[] = { __VA_ARGS__ }; \
	bytes_are((pb)->buf, (pb)->len, want_, sizeof(want_), what); \
	ls_pb_release(pb); \
} while (0)

static void test_varints(void)
{
	static const struct {
		uint64_t v;
		uint8_t b[10];
		size_t n;
	} t[] = {
		{ 0, { 0x00 }, 1 },
		{ 1, { 0x01 }, 1 },
		{ 127, { 0x7f }, 1 },
		{ 128, { 0x80, 0x01 }, 2 },
		{ 300, { 0xac, 0x02 }, 2 },
		{ 16383, { 0xff, 0x7f }, 2 },
		{ 16384, { 0x80, 0x80, 0x01 }, 3 },
		{ UINT64_MAX, { 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
				0xff, 0x01 }, 10 },
	};
	uint8_t out[LS_PB_VARINT_MAX];
	size_t i, n;

	for (i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		n = ls_pb_varint_encode(out, t[i].v);
		bytes_are(out, n, t[i].b, t[i].n, "varint");
	}
}

static void test_fields(void)
{
	static const uint64_t pk[] = { 3, 270, 86942 };
	static const int64_t neg[] = { -1, 2 };
	struct ls_pb pb;
	char long_str[200];
	size_t mark, outer;

	ls_pb_init(&pb);
	ls_pb_uint(&pb, 1, 150);
	EXPECT(&pb, "uint field 1 = 150", 0x08, 0x96, 0x01);

	ls_pb_string(&pb, 2, "testing");
	EXPECT(&pb, "string field 2", 0x12, 0x07, 't', 'e', 's', 't', 'i',
	       'n', 'g');

	ls_pb_int(&pb, 1, -1);
	EXPECT(&pb, "int64 -1 takes ten bytes", 0x08, 0xff, 0xff, 0xff, 0xff,
	       0xff, 0xff, 0xff, 0xff, 0xff, 0x01);

	ls_pb_uint_nz(&pb, 3, 0);
	ls_pb_int_nz(&pb, 3, 0);
	ls_pb_bool_nz(&pb, 3, 0);
	ls_pb_packed_u64(&pb, 4, pk, 0);
	ok(pb.len == 0, "zero scalars and empty packed fields are left out");
	ls_pb_uint(&pb, 3, 0);
	ls_pb_bool_nz(&pb, 7, 1);
	ls_pb_string(&pb, 6, "");
	EXPECT(&pb, "explicit zero, true, empty string", 0x18, 0x00, 0x38,
	       0x01, 0x32, 0x00);

	ls_pb_packed_u64(&pb, 4, pk, 3);
	EXPECT(&pb, "packed 3 270 86942", 0x22, 0x06, 0x03, 0x8e, 0x02, 0x9e,
	       0xa7, 0x05);

	ls_pb_packed_i64(&pb, 2, neg, 2);
	EXPECT(&pb, "packed int64 -1 2", 0x12, 0x0b, 0xff, 0xff, 0xff, 0xff,
	       0xff, 0xff, 0xff, 0xff, 0xff, 0x01, 0x02);

	mark = ls_pb_open(&pb, 3);
	ls_pb_uint(&pb, 1, 150);
	ls_pb_close(&pb, mark);
	EXPECT(&pb, "nested message field 3 { 1: 150 }", 0x1a, 0x03, 0x08,
	       0x96, 0x01);

	outer = ls_pb_open(&pb, 1);
	mark = ls_pb_open(&pb, 2);
	ls_pb_close(&pb, mark);
	ls_pb_uint(&pb, 3, 1);
	ls_pb_close(&pb, outer);
	EXPECT(&pb, "nesting, an empty inner message", 0x0a, 0x04, 0x12, 0x00,
	       0x18, 0x01);

	/* A body of 204 bytes (key, 2-byte length, 199 bytes; key, value)
	 * needs a two-byte length: it moves by two. */
	memset(long_str, 'x', sizeof(long_str) - 1);
	long_str[sizeof(long_str) - 1] = '\0';
	mark = ls_pb_open(&pb, 5);
	ls_pb_string(&pb, 1, long_str);
	ls_pb_uint(&pb, 2, 1);
	ls_pb_close(&pb, mark);
	ok(pb.len == 1 + 2 + 204 && pb.buf[0] == 0x2a &&
	   pb.buf[1] == 0xcc && pb.buf[2] == 0x01 && pb.buf[3] == 0x0a &&
	   pb.buf[4] == 0xc7 && pb.buf[5] == 0x01 && pb.buf[6] == 'x' &&
	   pb.buf[204] == 'x' && pb.buf[205] == 0x10 && pb.buf[206] == 0x01,
	   "a 204-byte body: length cc 01, body intact after the move");
	ls_pb_release(&pb);

	ls_pb_raw(&pb, "\x08\x01", 2);
	ok(ls_pb_error(&pb) == 0, "no error");
	EXPECT(&pb, "raw bytes appended", 0x08, 0x01);
}

/* --- a whole profile ------------------------------------------------------ */

static void one_site_snapshot(struct ls_snapshot *s)
{
	static uint64_t frame = 0x401234;
	struct ls_module *m;
	struct ls_site *t;

	memset(s, 0, sizeof(*s));
	s->hdr = (struct lsnap_header){ .pid = 4242, .ppid = 1,
		.wall_ns = 1700000000123456789ULL, .mono_ns = 100 * SEC,
		.start_mono_ns = 90 * SEC, .mode = LSNAP_MODE_FULL,
		.module_gen = 2 };
	s->argv = calloc(3, sizeof(*s->argv));
	s->modules = calloc(1, sizeof(*s->modules));
	s->sites = calloc(1, sizeof(*s->sites));
	if (!s->argv || !s->modules || !s->sites)
		abort();
	s->argv[0] = xstrdup("./prog");
	s->argv[1] = xstrdup("-x");
	s->argc = 2;
	m = &s->modules[s->nmodules++];
	m->lo = 0x400000;
	m->hi = 0x500000;
	m->gen_from = 1;
	m->gen_to = LSNAP_GEN_LOADED;
	m->build_id_len = 4;
	memcpy(m->build_id, "\xde\xad\xbe\xef", 4);
	m->path = xstrdup("/nonexistent/prog");
	t = &s->sites[s->nsites++];
	t->id = 1;
	t->gen = 2;
	t->live_bytes = 600;
	t->live_blocks = 3;
	t->allocated_bytes = 1000;
	t->allocated_blocks = 10;
	t->nframes = 1;
	t->frames = malloc(sizeof(uint64_t));
	if (!t->frames)
		abort();
	t->frames[0] = frame;
}

static int gunzip(const char *in, size_t n, uint8_t *out, size_t cap,
		  size_t *len)
{
	z_stream z = { 0 };
	int r;

	if (inflateInit2(&z, 15 + 16) != Z_OK)
		return -1;
	z.next_in = (Bytef *)(uintptr_t)in;
	z.avail_in = (uInt)n;
	z.next_out = out;
	z.avail_out = (uInt)cap;
	r = inflate(&z, Z_FINISH);
	*len = cap - z.avail_out;
	inflateEnd(&z);
	return r == Z_STREAM_END && z.avail_in == 0 ? 0 : -1;
}


static void test_profile(void)
{
	/* Strings by index: the header's first, then in order of use. */
	static const uint8_t want[] =
		/* sample_type x4 {type, unit} */
		"\x0a\x04\x08\x01\x10\x02" "\x0a\x04\x08\x03\x10\x04"
		"\x0a\x04\x08\x05\x10\x02" "\x0a\x04\x08\x06\x10\x04"
		/* time_nanos 1700000000123456789, duration_nanos 10 s */
		"\x48\x95\x9a\x97\xec\xe3\x9f\xe7\xcb\x17"
		"\x50\x80\xc8\xaf\xa0\x25"
		/* period_type {space, bytes}, period 1 */
		"\x5a\x04\x08\x07\x10\x04" "\x60\x01"
		/* sample {location_id [1], value [10 1000 3 600],
		 *         label {kind: heap}} */
		"\x12\x11" "\x0a\x01\x01" "\x12\x06\x0a\xe8\x07\x03\xd8\x04"
		"\x1a\x04\x08\x08\x10\x09"
		/* mapping {1, 0x400000, 0x500000, file 10, build id 11},
		 * no has_* flags: nothing could be resolved */
		"\x1a\x10\x08\x01\x10\x80\x80\x80\x02\x18\x80\x80\xc0\x02"
		"\x28\x0a\x30\x0b"
		/* location {1, mapping 1, address 0x401234}, no line */
		"\x22\x09\x08\x01\x10\x01\x18\xb4\xa4\x80\x02"
		/* comments 12, 13; default_sample_type 6 */
		"\x68\x0c\x68\x0d\x70\x06"
		/* string_table */
		"\x32\x00"
		"\x32\x0d" "alloc_objects" "\x32\x05" "count"
		"\x32\x0b" "alloc_space" "\x32\x05" "bytes"
		"\x32\x0d" "inuse_objects" "\x32\x0b" "inuse_space"
		"\x32\x05" "space" "\x32\x04" "kind" "\x32\x04" "heap"
		"\x32\x11" "/nonexistent/prog" "\x32\x08" "deadbeef"
		"\x32\x1e" "leakscope: pid 4242: ./prog -x"
		"\x32\x18" "leakscope: full tracking";
	struct ls_report_opts o = { .format = ls_renderer_find("pprof") };
	struct ls_snapshot s;
	struct ls_report rep;
	char *buf = NULL;
	size_t len = 0, n = 0;
	uint8_t raw[4096];
	FILE *out;
	int r;

	one_site_snapshot(&s);
	ls_report_opts_finish(&o);
	ok(ls_report_build(&s, &o, &rep) == 0, "report built");
	out = open_memstream(&buf, &len);
	if (!out)
		abort();
	r = ls_report_render(out, &rep, &o, NULL);
	fclose(out);
	ok(r == 0, "rendered: %d", r);
	ok(len > 18 && (uint8_t)buf[0] == 0x1f && (uint8_t)buf[1] == 0x8b,
	   "gzip magic");
	ok(len > 9 && !buf[4] && !buf[5] && !buf[6] && !buf[7],
	   "no time in the gzip header");
	ok(gunzip(buf, len, raw, sizeof(raw), &n) == 0, "inflates whole");
	bytes_are(raw, n, want, sizeof(want) - 1, "the Profile, byte for byte");
	ok((ls_renderer_find("pprof")->needs & LS_NEEDS_NOT_TTY) &&
	   !(ls_renderer_find("json")->needs & LS_NEEDS_NOT_TTY),
	   "pprof is the binary format");
	free(buf);
	ls_report_release(&rep);
	ls_snapshot_release(&s);
}

int main(void)
{
	test_varints();
	test_fields();
	test_profile();
	return tap_done();
}
