/*
 * render_pprof.c - the report as a pprof heap profile: a gzip-compressed
 * protobuf Profile of google/pprof's proto/profile.proto, which
 * `go tool pprof`, Grafana Pyroscope and Parca read.  docs/PPROF.md maps
 * the model onto the fields.
 *
 * One Sample per stack with four values in Go's heap profile order and
 * names (alloc_objects/count, alloc_space/bytes, inuse_objects/count,
 * inuse_space/bytes), so that fleet tools classify it as memory.  A
 * Location per distinct return address and module, holding the raw
 * address, its Mapping and the inline chain as several Line entries,
 * innermost first; a Function per distinct (name, mangled name, file);
 * a Mapping per module with its range and hex build id.
 *
 * The output is deterministic for a given report: ids are handed out in
 * the order things are first met, the gzip header carries no time.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#include "protobuf.h"
#include "render.h"
#include "util.h"

/* profile.proto field numbers. */
enum {
	PROFILE_SAMPLE_TYPE = 1, PROFILE_SAMPLE = 2, PROFILE_MAPPING = 3,
	PROFILE_LOCATION = 4, PROFILE_FUNCTION = 5, PROFILE_STRING_TABLE = 6,
	PROFILE_TIME_NANOS = 9, PROFILE_DURATION_NANOS = 10,
	PROFILE_PERIOD_TYPE = 11, PROFILE_PERIOD = 12, PROFILE_COMMENT = 13,
	PROFILE_DEFAULT_SAMPLE_TYPE = 14,
	VALUE_TYPE_TYPE = 1, VALUE_TYPE_UNIT = 2,
	SAMPLE_LOCATION_ID = 1, SAMPLE_VALUE = 2, SAMPLE_LABEL = 3,
	LABEL_KEY = 1, LABEL_STR = 2,
	MAPPING_ID = 1, MAPPING_START = 2, MAPPING_LIMIT = 3,
	MAPPING_OFFSET = 4, MAPPING_FILENAME = 5, MAPPING_BUILD_ID = 6,
	MAPPING_HAS_FUNCTIONS = 7, MAPPING_HAS_FILENAMES = 8,
	MAPPING_HAS_LINE_NUMBERS = 9, MAPPING_HAS_INLINE_FRAMES = 10,
	LOCATION_ID = 1, LOCATION_MAPPING_ID = 2, LOCATION_ADDRESS = 3,
	LOCATION_LINE = 4,
	LINE_FUNCTION_ID = 1, LINE_LINE = 2,
	FUNCTION_ID = 1, FUNCTION_NAME = 2, FUNCTION_SYSTEM_NAME = 3,
	FUNCTION_FILENAME = 4,
};

/* Go's four values, and with --by peak or temporary the report's key as
 * two more (peak_objects/peak_space, temp_objects/temp_space). */
#define NVALUES_GO 4
#define NVALUES 6

/* An id per key of up to three words (pointers the symbolizer interned,
 * or an address): open addressing, ids from 1. */
struct idmap_ent {
	uint64_t k[3];
	uint64_t id;		/* 0: free slot */
};

struct idmap {
	struct idmap_ent *v;
	size_t cap, used;
};

/* The string table: "" first, every string once. */
struct strtab {
	char **s;		/* owned copies, by index */
	size_t n, cap;
	struct ls_strindex index;	/* of s */
};

/* What a mapping's locations turned out to have. */
struct mapinfo {
	int used, functions, files, lines;
};

struct pprof {
	const struct ls_render_ctx *c;
	struct ls_pb samples, locations, functions;
	struct idmap locs, funcs;
	struct strtab st;
	struct mapinfo *maps;	/* one per snapshot module */
	uint64_t *ids;		/* a sample's location ids */
	size_t nids, ids_cap;
	size_t nvalues;		/* NVALUES_GO, or NVALUES with a key */
	int err;
};

/* --- keyed ids ------------------------------------------------------------ */

static uint64_t mix(const uint64_t k[3])
{
	uint64_t h = k[0] * 0x9e3779b97f4a7c15ULL;

	h = (h ^ (h >> 29) ^ k[1]) * 0xbf58476d1ce4e5b9ULL;
	h = (h ^ (h >> 31) ^ k[2]) * 0x94d049bb133111ebULL;
	return h ^ (h >> 32);
}

static struct idmap_ent *idmap_slot(struct idmap_ent *v, size_t cap,
				    const uint64_t k[3])
{
	size_t j = mix(k) & (cap - 1);

	while (v[j].id && memcmp(v[j].k, k, sizeof(v[j].k)))
		j = (j + 1) & (cap - 1);
	return &v[j];
}

static int idmap_grow(struct idmap *m)
{
	size_t ncap = m->cap ? 2 * m->cap : 256, i;
	struct idmap_ent *n = calloc(ncap, sizeof(*n));

	if (!n)
		return -ENOMEM;
	for (i = 0; i < m->cap; i++)
		if (m->v[i].id)
			*idmap_slot(n, ncap, m->v[i].k) = m->v[i];
	free(m->v);
	m->v = n;
	m->cap = ncap;
	return 0;
}

/*
 * The id of key k: *created says whether it is new (the caller then
 * encodes the object).  Returns 0 on ENOMEM.
 */
static uint64_t idmap_get(struct idmap *m, const uint64_t k[3], int *created)
{
	struct idmap_ent *e;

	*created = 0;
	if (2 * (m->used + 1) > m->cap && idmap_grow(m))
		return 0;
	e = idmap_slot(m->v, m->cap, k);
	if (!e->id) {
		memcpy(e->k, k, sizeof(e->k));
		e->id = ++m->used;
		*created = 1;
	}
	return e->id;
}

/* --- string table --------------------------------------------------------- */

static const char *strtab_at(const void *t, size_t i)
{
	return ((const struct strtab *)t)->s[i];
}

/* The index of s (NULL is ""), added when new; -1 on ENOMEM. */
static int64_t str_index(struct strtab *t, const char *s)
{
	size_t *slot;

	if (!s)
		s = "";
	slot = ls_strindex_slot(&t->index, s, t->n, strtab_at, t);
	if (!slot)
		return -1;
	if (*slot)
		return *slot - 1;
	if (LS_GROW(t->s, t->n + 1, t->cap))
		return -1;
	t->s[t->n] = strdup(s);
	if (!t->s[t->n])
		return -1;
	*slot = ++t->n;
	return (int64_t)t->n - 1;
}

static void strtab_release(struct strtab *t)
{
	size_t i;

	for (i = 0; i < t->n; i++)
		free(t->s[i]);
	free(t->s);
	ls_strindex_release(&t->index);
}

/* A string field (index into the table); records ENOMEM in p->err. */
static void put_str(struct pprof *p, struct ls_pb *pb, uint32_t field,
		    const char *s)
{
	int64_t i = str_index(&p->st, s);

	if (i < 0)
		p->err = -ENOMEM;
	else
		ls_pb_int_nz(pb, field, i);
}

/* --- functions, locations ------------------------------------------------- */

static uint64_t function_id(struct pprof *p, const struct ls_symframe *f)
{
	uint64_t k[3] = { (uintptr_t)f->function, (uintptr_t)f->symbol,
			  (uintptr_t)f->file };
	int created;
	uint64_t id = idmap_get(&p->funcs, k, &created);
	size_t mark;

	if (!id || !created)
		return id;
	mark = ls_pb_open(&p->functions, PROFILE_FUNCTION);
	ls_pb_uint(&p->functions, FUNCTION_ID, id);
	put_str(p, &p->functions, FUNCTION_NAME, f->function);
	put_str(p, &p->functions, FUNCTION_SYSTEM_NAME,
		f->symbol ? f->symbol : f->function);
	put_str(p, &p->functions, FUNCTION_FILENAME, f->file);
	ls_pb_close(&p->functions, mark);
	return id;
}

static size_t module_index(const struct pprof *p, const struct ls_module *m)
{
	return (size_t)(m - p->c->rep->snap->modules);
}

/* What the frames of one address tell about its mapping. */
static void note_mapping(struct pprof *p, const struct ls_symframe *fr,
			 size_t n)
{
	struct mapinfo *mi;
	size_t i;

	if (!fr[0].mod)
		return;
	mi = &p->maps[module_index(p, fr[0].mod)];
	mi->used = 1;
	for (i = 0; i < n; i++) {
		mi->functions |= fr[i].function != NULL;
		mi->files |= fr[i].file != NULL;
		mi->lines |= fr[i].line != 0;
	}
}

/* One Line per frame of the inline chain, innermost first, as pprof
 * wants them: the last is the function that holds the code. */
static void put_lines(struct pprof *p, const struct ls_symframe *fr,
		      size_t n)
{
	size_t i, mark;
	uint64_t fid;

	for (i = 0; i < n && fr[i].function; i++) {
		fid = function_id(p, &fr[i]);
		if (!fid) {
			p->err = -ENOMEM;
			return;
		}
		mark = ls_pb_open(&p->locations, LOCATION_LINE);
		ls_pb_uint(&p->locations, LINE_FUNCTION_ID, fid);
		ls_pb_int_nz(&p->locations, LINE_LINE, fr[i].line);
		ls_pb_close(&p->locations, mark);
	}
}

static uint64_t location_id(struct pprof *p, const struct ls_symframe *fr,
			    size_t n)
{
	uint64_t k[3] = { (uintptr_t)fr[0].mod, fr[0].addr, 0 };
	int created;
	uint64_t id = idmap_get(&p->locs, k, &created);
	size_t mark;

	if (!id || !created)
		return id;
	note_mapping(p, fr, n);
	mark = ls_pb_open(&p->locations, PROFILE_LOCATION);
	ls_pb_uint(&p->locations, LOCATION_ID, id);
	if (fr[0].mod)
		ls_pb_uint(&p->locations, LOCATION_MAPPING_ID,
			   module_index(p, fr[0].mod) + 1);
	ls_pb_uint(&p->locations, LOCATION_ADDRESS, fr[0].addr);
	put_lines(p, fr, n);
	ls_pb_close(&p->locations, mark);
	return id;
}

static int push_id(struct pprof *p, uint64_t id)
{
	if (LS_GROW(p->ids, p->nids + 1, p->ids_cap))
		return -ENOMEM;
	p->ids[p->nids++] = id;
	return 0;
}

/*
 * The site's location ids, leaf (allocating caller) first, without the
 * agent's own frames.  Locations are per return address, so this walks
 * the raw frames rather than ls_render_stack()'s expanded ones.
 * NEEDSWORK: the stack display options (depth, runtime frames) are not
 * applied; pprof has its own (-hide, -focus, -prune_from) and the profile
 * keeps whole stacks.
 */
static int site_locations(struct pprof *p, const struct ls_site *site)
{
	struct ls_symframe fr[LS_SYM_MAX_FRAMES];
	size_t i, n;
	uint64_t id;
	int ret;

	p->nids = 0;
	for (i = 0; i < site->nframes; i++) {
		ret = ls_symbolize_frame(p->c->sym, site->gen, site->frames[i],
					 fr, LS_SYM_MAX_FRAMES, &n);
		if (ret)
			return ret;
		if (ls_symframe_is_agent(&fr[0]))
			continue;
		id = location_id(p, fr, n);
		if (!id || push_id(p, id))
			return -ENOMEM;
	}
	return p->err;
}

/* --- samples -------------------------------------------------------------- */

static void put_label(struct pprof *p, struct ls_pb *pb, const char *key,
		      const char *val)
{
	size_t mark = ls_pb_open(pb, SAMPLE_LABEL);

	put_str(p, pb, LABEL_KEY, key);
	put_str(p, pb, LABEL_STR, val);
	ls_pb_close(pb, mark);
}

static int put_sample(struct pprof *p, const struct ls_site *site,
		      const int64_t v[NVALUES])
{
	size_t mark;
	int ret = site_locations(p, site);

	if (ret)
		return ret;
	mark = ls_pb_open(&p->samples, PROFILE_SAMPLE);
	ls_pb_packed_u64(&p->samples, SAMPLE_LOCATION_ID, p->ids, p->nids);
	ls_pb_packed_i64(&p->samples, SAMPLE_VALUE, v, p->nvalues);
	put_label(p, &p->samples, "kind",
		  site->kind == LSNAP_KIND_MMAP ? "mmap" : "heap");
	ls_pb_close(&p->samples, mark);
	return p->err;
}

static int report_sample(struct pprof *p, const struct ls_report_site *r)
{
	int64_t v[NVALUES] = {
		(int64_t)r->allocated_blocks, (int64_t)r->allocated_bytes,
		r->live_blocks, r->live_bytes, r->key_blocks, r->key_bytes,
	};

	return put_sample(p, r->site, v);
}

/*
 * An unfiltered report lists only the sites that still hold memory; the
 * others' allocations belong in alloc_objects and alloc_space too, as in
 * a Go heap profile, with nothing in use.
 */
static int unfiltered(const struct ls_render_ctx *c)
{
	const struct ls_report_opts *o = c->opts;

	return !o->top && !o->need_blocks && !o->growing;
}

static int freed_samples(struct pprof *p)
{
	const struct ls_snapshot *snap = p->c->rep->snap;
	size_t i;
	int ret = 0;

	for (i = 0; i < snap->nsites && !ret; i++) {
		const struct ls_site *s = &snap->sites[i];
		int64_t v[NVALUES] = { (int64_t)s->allocated_blocks,
				       (int64_t)s->allocated_bytes, 0, 0, 0, 0 };

		/* Not the sites the report lists already. */
		if (ls_report_site_listed(s, p->c->rep->by) ||
		    !s->allocated_blocks)
			continue;
		ret = put_sample(p, s, v);
	}
	return ret;
}

/* --- the profile ---------------------------------------------------------- */

static void put_value_type(struct pprof *p, struct ls_pb *pb, uint32_t field,
			   const char *type, const char *unit)
{
	size_t mark = ls_pb_open(pb, field);

	put_str(p, pb, VALUE_TYPE_TYPE, type);
	put_str(p, pb, VALUE_TYPE_UNIT, unit);
	ls_pb_close(pb, mark);
}

static void put_build_id(struct pprof *p, struct ls_pb *pb,
			 const struct ls_module *m)
{
	char hex[2 * LSNAP_BUILD_ID_MAX + 1];
	unsigned i;

	for (i = 0; i < m->build_id_len && i < LSNAP_BUILD_ID_MAX; i++)
		snprintf(hex + 2 * i, 3, "%02x", m->build_id[i]);
	hex[2 * i] = '\0';
	put_str(p, pb, MAPPING_BUILD_ID, hex);
}

/*
 * The mappings that locations refer to, in the snapshot's module order
 * (the agent lists the main program first, which pprof takes as the
 * binary the profile is of).  file_offset is 0: [lo, hi) starts at the
 * first PT_LOAD segment, which maps the file from offset 0 in the ELF
 * files toolchains produce.
 */
static void put_mappings(struct pprof *p, struct ls_pb *pb)
{
	const struct ls_snapshot *snap = p->c->rep->snap;
	size_t i, mark;

	for (i = 0; i < snap->nmodules; i++) {
		const struct ls_module *m = &snap->modules[i];
		const struct mapinfo *mi = &p->maps[i];

		if (!mi->used)
			continue;
		mark = ls_pb_open(pb, PROFILE_MAPPING);
		ls_pb_uint(pb, MAPPING_ID, i + 1);
		ls_pb_uint_nz(pb, MAPPING_START, m->lo);
		ls_pb_uint_nz(pb, MAPPING_LIMIT, m->hi);
		put_str(p, pb, MAPPING_FILENAME, m->path);
		put_build_id(p, pb, m);
		/* Symbolized already: pprof must not try again. */
		ls_pb_bool_nz(pb, MAPPING_HAS_FUNCTIONS, mi->functions);
		ls_pb_bool_nz(pb, MAPPING_HAS_FILENAMES, mi->files);
		ls_pb_bool_nz(pb, MAPPING_HAS_LINE_NUMBERS, mi->lines);
		ls_pb_bool_nz(pb, MAPPING_HAS_INLINE_FRAMES, mi->lines);
		ls_pb_close(pb, mark);
	}
}

static void put_comment(struct pprof *p, struct ls_pb *pb, const char *s)
{
	int64_t i = str_index(&p->st, s);

	if (i < 0)
		p->err = -ENOMEM;
	else
		ls_pb_int(pb, PROFILE_COMMENT, i);
}

/* "leakscope: pid 4242: ./server --port 80" and the mode, as comments
 * (`go tool pprof -comments`). */
static void put_comments(struct pprof *p, struct ls_pb *pb)
{
	const struct ls_snapshot *s = p->c->rep->snap;
	char *buf = NULL;
	size_t len = 0, i;
	FILE *mem = open_memstream(&buf, &len);

	if (!mem) {
		p->err = -ENOMEM;
		return;
	}
	fprintf(mem, "leakscope: pid %u:", s->hdr.pid);
	for (i = 0; i < s->argc; i++)
		fprintf(mem, " %s", s->argv[i]);
	if (fclose(mem)) {
		free(buf);
		p->err = -ENOMEM;
		return;
	}
	put_comment(p, pb, buf);
	free(buf);
	if (s->hdr.mode == LSNAP_MODE_SAMPLED) {
		char mode[96];

		snprintf(mode, sizeof(mode), "leakscope: sampled, one sample "
			 "per %" PRIu64 " bytes: values are estimates",
			 s->hdr.sample_rate);
		put_comment(p, pb, mode);
	} else {
		put_comment(p, pb, "leakscope: full tracking");
	}
}

static void put_header(struct pprof *p, struct ls_pb *pb)
{
	static const char *const types[NVALUES][2] = {
		{ "alloc_objects", "count" }, { "alloc_space", "bytes" },
		{ "inuse_objects", "count" }, { "inuse_space", "bytes" },
	};
	const struct lsnap_header *h = &p->c->rep->snap->hdr;
	int by = p->c->rep->by;
	size_t i;

	for (i = 0; i < NVALUES_GO; i++)
		put_value_type(p, pb, PROFILE_SAMPLE_TYPE, types[i][0],
			       types[i][1]);
	if (p->nvalues > NVALUES_GO) {
		put_value_type(p, pb, PROFILE_SAMPLE_TYPE, by == LS_BY_PEAK ?
			       "peak_objects" : "temp_objects", "count");
		put_value_type(p, pb, PROFILE_SAMPLE_TYPE, by == LS_BY_PEAK ?
			       "peak_space" : "temp_space", "bytes");
	}
	ls_pb_int_nz(pb, PROFILE_TIME_NANOS, (int64_t)h->wall_ns);
	ls_pb_int_nz(pb, PROFILE_DURATION_NANOS, h->mono_ns > h->start_mono_ns ?
		     (int64_t)(h->mono_ns - h->start_mono_ns) : 0);
	put_value_type(p, pb, PROFILE_PERIOD_TYPE, "space", "bytes");
	/* Full tracking sees every byte: a period of 1. */
	ls_pb_int(pb, PROFILE_PERIOD, h->mode == LSNAP_MODE_SAMPLED &&
		  h->sample_rate ? (int64_t)h->sample_rate : 1);
}

/* What pprof shows first: what the report was sorted by. */
static const char *default_type(int by)
{
	switch (by) {
	case LS_BY_PEAK:
		return "peak_space";
	case LS_BY_ALLOCATED:
		return "alloc_space";
	case LS_BY_TEMPORARY:
		return "temp_space";
	}
	return "inuse_space";
}

/* After the header: the samples, locations and functions already
 * encoded, the mappings, comments and the string table. */
static int assemble(struct pprof *p, struct ls_pb *out)
{
	size_t i;

	ls_pb_raw(out, p->samples.buf, p->samples.len);
	put_mappings(p, out);
	ls_pb_raw(out, p->locations.buf, p->locations.len);
	ls_pb_raw(out, p->functions.buf, p->functions.len);
	put_comments(p, out);
	put_str(p, out, PROFILE_DEFAULT_SAMPLE_TYPE, default_type(p->c->rep->by));
	for (i = 0; i < p->st.n; i++)
		ls_pb_string(out, PROFILE_STRING_TABLE, p->st.s[i]);
	if (p->err)
		return p->err;
	return ls_pb_error(out) ? ls_pb_error(out) :
		ls_pb_error(&p->samples) ? ls_pb_error(&p->samples) :
		ls_pb_error(&p->locations) ? ls_pb_error(&p->locations) :
		ls_pb_error(&p->functions);
}

/* --- gzip ----------------------------------------------------------------- */

/* data as one gzip member (no name, no time: reproducible) to out, at
 * zlib's default level: level 9 saved 2% on a python3 profile for more
 * CPU time. */
static int write_gzip(FILE *out, const uint8_t *data, size_t len)
{
	unsigned char buf[16384];
	z_stream z = { 0 };
	int zr, ret = 0;

	/* windowBits 15 + 16: a gzip header and trailer around deflate. */
	if (deflateInit2(&z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8,
			 Z_DEFAULT_STRATEGY) != Z_OK)
		return -ENOMEM;
	z.next_in = (Bytef *)(uintptr_t)data;
	z.avail_in = (uInt)len;	/* NEEDSWORK: profiles over 4 GiB */
	do {
		z.next_out = buf;
		z.avail_out = sizeof(buf);
		zr = deflate(&z, Z_FINISH);
		if (zr == Z_STREAM_ERROR) {
			ret = -EIO;
			break;
		}
		if (fwrite(buf, 1, sizeof(buf) - z.avail_out, out) !=
		    sizeof(buf) - z.avail_out) {
			ret = -EIO;
			break;
		}
	} while (zr != Z_STREAM_END);
	deflateEnd(&z);
	return ret == -EIO ? 0 : ret;	/* write errors: report.c checks */
}

static void pprof_release(struct pprof *p)
{
	ls_pb_release(&p->samples);
	ls_pb_release(&p->locations);
	ls_pb_release(&p->functions);
	free(p->locs.v);
	free(p->funcs.v);
	strtab_release(&p->st);
	free(p->maps);
	free(p->ids);
}

int ls_render_pprof(const struct ls_render_ctx *c)
{
	const struct ls_snapshot *snap = c->rep->snap;
	struct pprof p = { .c = c, .nvalues = NVALUES_GO };
	struct ls_pb out;
	size_t i;
	int ret = 0;

	ls_pb_init(&out);
	p.maps = calloc(snap->nmodules ? snap->nmodules : 1, sizeof(*p.maps));
	/* "" is string 0, as profile.proto requires; the header's strings
	 * follow, so that they have the same indexes in every profile. */
	if (!p.maps || str_index(&p.st, "") != 0) {
		ret = -ENOMEM;
		goto out;
	}
	if (c->rep->by == LS_BY_PEAK || c->rep->by == LS_BY_TEMPORARY)
		p.nvalues = NVALUES;
	put_header(&p, &out);
	for (i = 0; i < c->rep->nsites && !ret; i++)
		ret = report_sample(&p, &c->rep->sites[i]);
	if (!ret && unfiltered(c))
		ret = freed_samples(&p);
	if (!ret)
		ret = assemble(&p, &out);
	if (!ret)
		ret = write_gzip(c->out, out.buf, out.len);
out:
	ls_pb_release(&out);
	pprof_release(&p);
	return ret;
}
