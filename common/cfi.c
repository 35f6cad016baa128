/*
 * cfi.c - reading .eh_frame CFI down to one compact rule per address.
 *
 * The path: _dl_find_object() gives the module and its .eh_frame_hdr;
 * the header's sorted table gives the FDE (binary search); the FDE's CIE
 * gives the encodings and the initial instructions; the CFA program runs
 * up to the address; the resulting row is reduced to the rule of cfi.h.
 * Only %rsp, %rbp and the return address are tracked: with them the next
 * frame's CFA and return address can be found, and every frame the
 * compilers emit on x86_64 is covered (see docs/UNWINDING.md).
 *
 * Formats: the LSB's .eh_frame / .eh_frame_hdr description and DWARF 4/5
 * section 6.4 (call frame information), section 2.5 (expressions).
 */
#include <dlfcn.h>
#include <link.h>
#include <string.h>
#include "cfi.h"

static uint64_t cfi_simple(enum ls_cfi_kind kind)
{
	union ls_cfi_rule r = { .word = 0 };

	r.f.bits = (uint8_t)kind;
	return r.word;
}

/* ------------------------------------------------------------------ */
/* Bounded reads of a module's CFI.                                   */

/* A cursor over [p, end); reading past end sets bad and yields 0. */
struct cfi_rd {
	const uint8_t *p, *end;
	int bad;
};

/* The module holding the pc: map bounds and its .eh_frame_hdr. */
struct cfi_mod {
	uint64_t lo, hi;
	const uint8_t *hdr;
};

static uint64_t rd_uint(struct cfi_rd *r, unsigned n)
{
	uint64_t v = 0;

	if (r->bad || (size_t)(r->end - r->p) < n) {
		r->bad = 1;
		return 0;
	}
	memcpy(&v, r->p, n);	/* little endian; unaligned is fine here */
	r->p += n;
	return v;
}

static int64_t rd_sint(struct cfi_rd *r, unsigned n)
{
	uint64_t v = rd_uint(r, n);
	unsigned sh = 64 - 8 * n;

	return (int64_t)(v << sh) >> sh;
}

/* The bits of a LEB128 number; *shift and *last tell a signed reader
 * how far it went and where its sign bit is. */
static uint64_t rd_leb(struct cfi_rd *r, unsigned *shift, uint8_t *last)
{
	uint64_t v = 0;
	unsigned sh = 0;
	uint8_t b;

	do {
		b = (uint8_t)rd_uint(r, 1);
		if (sh < 64)
			v |= (uint64_t)(b & 0x7f) << sh;
		sh += 7;
	} while ((b & 0x80) && !r->bad);
	*shift = sh;
	*last = b;
	return v;
}

static uint64_t rd_uleb(struct cfi_rd *r)
{
	unsigned sh;
	uint8_t b;

	return rd_leb(r, &sh, &b);
}

static int64_t rd_sleb(struct cfi_rd *r)
{
	unsigned sh;
	uint8_t b;
	uint64_t v = rd_leb(r, &sh, &b);

	if (sh < 64 && (b & 0x40))
		v |= ~0ull << sh;
	return (int64_t)v;
}

/* DW_EH_PE_* pointer encodings (LSB, "DWARF Exception Header Encoding"). */
#define PE_OMIT 0xff
#define PE_FMT(e) ((e) & 0x0f)
#define PE_APP(e) ((e) & 0x70)
#define PE_PCREL 0x10
#define PE_DATAREL 0x30
#define PE_INDIRECT 0x80

static uint64_t rd_value(struct cfi_rd *r, uint8_t enc)
{
	switch (PE_FMT(enc)) {
	case 0x00: return rd_uint(r, 8);		/* absptr */
	case 0x01: return rd_uleb(r);
	case 0x02: return rd_uint(r, 2);
	case 0x03: return rd_uint(r, 4);
	case 0x04: return rd_uint(r, 8);
	case 0x09: return (uint64_t)rd_sleb(r);
	case 0x0a: return (uint64_t)rd_sint(r, 2);
	case 0x0b: return (uint64_t)rd_sint(r, 4);
	case 0x0c: return (uint64_t)rd_sint(r, 8);
	}
	r->bad = 1;
	return 0;
}

/*
 * An encoded pointer.  datarel is relative to .eh_frame_hdr (the only
 * place x86_64 uses it); an indirect pointer is followed only inside the
 * module.  Unsupported applications (textrel, funcrel, aligned) set bad.
 */
static uint64_t rd_ptr(struct cfi_rd *r, uint8_t enc, const struct cfi_mod *m)
{
	uint64_t at = (uint64_t)(uintptr_t)r->p, v = rd_value(r, enc);

	if (PE_APP(enc) == PE_PCREL)
		v += at;
	else if (PE_APP(enc) == PE_DATAREL)
		v += (uint64_t)(uintptr_t)m->hdr;
	else if (PE_APP(enc))
		r->bad = 1;
	if ((enc & PE_INDIRECT) && !r->bad) {
		if (v < m->lo || v > m->hi - 8) {
			r->bad = 1;
			return 0;
		}
		memcpy(&v, (const void *)(uintptr_t)v, 8);
	}
	return v;
}

static void rd_init(struct cfi_rd *r, const struct cfi_mod *m, uint64_t at,
		    uint64_t len)
{
	r->bad = at < m->lo || at > m->hi || len > m->hi - at;
	r->p = (const uint8_t *)(uintptr_t)at;
	r->end = r->bad ? r->p : r->p + len;
}

/* ------------------------------------------------------------------ */
/* .eh_frame_hdr: the sorted table from pc to FDE.                    */

#define HDR_TABLE_ENC 0x3b	/* datarel | sdata4: what every linker writes */

/* The header's table: its address and entry count; 0 if it has none we
 * can use. */
static uint64_t cfi_hdr_table(const struct cfi_mod *m, uint64_t *count)
{
	uint64_t hdr = (uint64_t)(uintptr_t)m->hdr, tab;
	uint8_t ver, ptr_enc, cnt_enc, tab_enc;
	struct cfi_rd r;

	rd_init(&r, m, hdr, m->hi - hdr);
	ver = (uint8_t)rd_uint(&r, 1);
	ptr_enc = (uint8_t)rd_uint(&r, 1);
	cnt_enc = (uint8_t)rd_uint(&r, 1);
	tab_enc = (uint8_t)rd_uint(&r, 1);
	/* NEEDSWORK: no table (ld -r, odd linkers) would need a linear
	 * scan of .eh_frame; such modules get no frames. */
	if (ver != 1 || cnt_enc == PE_OMIT || tab_enc != HDR_TABLE_ENC)
		return 0;
	rd_ptr(&r, ptr_enc, m);			/* .eh_frame itself: unused */
	*count = rd_ptr(&r, cnt_enc, m);
	tab = (uint64_t)(uintptr_t)r.p;
	if (r.bad || *count == 0 || *count > (m->hi - tab) / 8)
		return 0;
	return tab;
}

/* Address of the FDE whose range may hold pc, or 0: the last entry of
 * the sorted table starting at or below pc. */
static uint64_t cfi_fde_search(const struct cfi_mod *m, uint64_t pc)
{
	uint64_t hdr = (uint64_t)(uintptr_t)m->hdr, count, lo = 0, hi, mid;
	uint64_t tab = cfi_hdr_table(m, &count);
	int32_t ent[2];

	if (!tab)
		return 0;
	hi = count;
	while (hi - lo > 1) {
		mid = lo + (hi - lo) / 2;
		memcpy(ent, (const void *)(uintptr_t)(tab + 8 * mid), 8);
		if (hdr + (uint64_t)(int64_t)ent[0] <= pc)
			lo = mid;
		else
			hi = mid;
	}
	memcpy(ent, (const void *)(uintptr_t)(tab + 8 * lo), 8);
	if (hdr + (uint64_t)(int64_t)ent[0] > pc)
		return 0;
	return hdr + (uint64_t)(int64_t)ent[1];
}

/* ------------------------------------------------------------------ */
/* CIE and FDE.                                                       */

struct cfi_cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	int has_z, signal;
	struct cfi_rd insn;
};

struct cfi_fde {
	uint64_t begin, end;
	struct cfi_rd insn;
};

/* Open the entry at `at`: its body as a cursor.  0 or -1. */
static int cfi_entry(const struct cfi_mod *m, uint64_t at, struct cfi_rd *body)
{
	struct cfi_rd r;
	uint64_t len;

	rd_init(&r, m, at, m->hi - at);
	len = rd_uint(&r, 4);
	if (len == 0xffffffffu)
		len = rd_uint(&r, 8);
	if (r.bad || len == 0 || len > (uint64_t)(r.end - r.p))
		return -1;
	body->p = r.p;
	body->end = r.p + len;
	body->bad = 0;
	return 0;
}

/* The augmentation data of a "z" CIE. */
static int cfi_cie_aug(struct cfi_cie *c, const char *aug, struct cfi_rd *r,
		       const struct cfi_mod *m)
{
	uint64_t len = rd_uleb(r);
	struct cfi_rd d = *r;
	uint8_t enc;

	if (r->bad || len > (uint64_t)(r->end - r->p))
		return -1;
	d.end = r->p + len;
	r->p += len;
	for (; *aug; aug++) {
		switch (*aug) {
		case 'R':
			c->fde_enc = (uint8_t)rd_uint(&d, 1);
			break;
		case 'P':	/* personality: skip, never follow */
			enc = (uint8_t)rd_uint(&d, 1);
			rd_ptr(&d, enc & ~PE_INDIRECT, m);
			break;
		case 'L':
			rd_uint(&d, 1);
			break;
		case 'S':
			c->signal = 1;
			break;
		case 'B': case 'G':	/* no data */
			break;
		default:	/* unknown letter: the rest is opaque */
			return d.bad ? -1 : 0;
		}
	}
	return d.bad ? -1 : 0;
}

static int cfi_cie_parse(const struct cfi_mod *m, uint64_t at,
			 struct cfi_cie *c)
{
	struct cfi_rd r;
	const char *aug;
	uint8_t ver;

	if (cfi_entry(m, at, &r) < 0 || rd_uint(&r, 4) != 0)
		return -1;
	ver = (uint8_t)rd_uint(&r, 1);
	aug = (const char *)r.p;
	while (!r.bad && rd_uint(&r, 1))
		;
	if (ver == 4 && (rd_uint(&r, 1) != 8 || rd_uint(&r, 1) != 0))
		return -1;
	if (r.bad || (ver != 1 && ver != 3 && ver != 4))
		return -1;
	memset(c, 0, sizeof(*c));
	c->code_align = rd_uleb(&r);
	c->data_align = rd_sleb(&r);
	c->ra_reg = ver == 1 ? rd_uint(&r, 1) : rd_uleb(&r);
	if (aug[0] == 'z') {
		c->has_z = 1;
		if (cfi_cie_aug(c, aug + 1, &r, m) < 0)
			return -1;
	} else if (aug[0]) {
		return -1;	/* pre-"z" GNU augmentations: not on x86_64 */
	}
	c->insn = r;
	return r.bad ? -1 : 0;
}

static int cfi_fde_parse(const struct cfi_mod *m, uint64_t at,
			 struct cfi_cie *c, struct cfi_fde *f)
{
	struct cfi_rd r;
	uint64_t id_at, id, range;

	if (cfi_entry(m, at, &r) < 0)
		return -1;
	id_at = (uint64_t)(uintptr_t)r.p;
	id = rd_uint(&r, 4);
	if (r.bad || id == 0 || id > id_at ||
	    cfi_cie_parse(m, id_at - id, c) < 0)
		return -1;
	f->begin = rd_ptr(&r, c->fde_enc, m);
	range = rd_ptr(&r, PE_FMT(c->fde_enc), m);
	f->end = f->begin + range;
	if (c->has_z) {
		id = rd_uleb(&r);
		if (id > (uint64_t)(r.end - r.p))
			return -1;
		r.p += id;
	}
	f->insn = r;
	return r.bad ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* The CFA program: the row of the table at one address.              */

#define DW_RBX 3
#define DW_RBP 6
#define DW_RSP 7
#define DW_RIP 16

enum cfi_how { H_UNDEF, H_SAME, H_OFF, H_EXPR, H_OTHER };

struct cfi_reg {
	uint8_t how;
	int64_t off;			/* H_OFF: saved at CFA + off */
	const uint8_t *expr;		/* H_EXPR: saved at expr's value */
	uint64_t len;
};

struct cfi_row {
	int cfa_is_expr;
	uint64_t cfa_reg;
	int64_t cfa_off;
	const uint8_t *expr;
	uint64_t len;
	struct cfi_reg rbp, ra, rbx;
};

#define CFI_STATE_DEPTH 8

struct cfi_exec {
	const struct cfi_mod *m;
	const struct cfi_cie *c;
	uint64_t loc, target;
	struct cfi_row row, init;
	struct cfi_row saved[CFI_STATE_DEPTH];
	int nsaved;
};

static struct cfi_reg *cfi_tracked(struct cfi_exec *x, uint64_t reg)
{
	if (reg == x->c->ra_reg)
		return &x->row.ra;
	if (reg == DW_RBX)
		return &x->row.rbx;
	return reg == DW_RBP ? &x->row.rbp : NULL;
}

static void cfi_set(struct cfi_exec *x, uint64_t reg, uint8_t how, int64_t off)
{
	struct cfi_reg *g = cfi_tracked(x, reg);

	if (g) {
		g->how = how;
		g->off = off;
	}
}

static void cfi_restore(struct cfi_exec *x, uint64_t reg)
{
	struct cfi_reg *g = cfi_tracked(x, reg);

	if (g)
		*g = reg == x->c->ra_reg ? x->init.ra :
		     reg == DW_RBX ? x->init.rbx : x->init.rbp;
}

/* Returns 1 when loc passed the target (the row is complete). */
static int cfi_advance(struct cfi_exec *x, uint64_t delta)
{
	if (delta > x->target - x->loc)
		return 1;
	x->loc += delta;
	return 0;
}

static void cfi_block(struct cfi_rd *r, const uint8_t **p, uint64_t *len)
{
	*len = rd_uleb(r);
	*p = r->p;
	if (*len > (uint64_t)(r->end - r->p))
		r->bad = 1;
	else
		r->p += *len;
}

static int cfi_op_state(struct cfi_exec *x, uint8_t op)
{
	if (op == 0x0a) {			/* remember_state */
		if (x->nsaved == CFI_STATE_DEPTH)
			return -1;
		x->saved[x->nsaved++] = x->row;
	} else {				/* restore_state */
		if (x->nsaved == 0)
			return -1;
		x->row = x->saved[--x->nsaved];
	}
	return 0;
}

/*
 * v * factor: the instructions' offsets are factored by the CIE's data
 * alignment.  INT64_MIN, which no rule can hold, when the product
 * overflows: only a malformed CIE or instruction makes it.
 */
static int64_t cfi_factored(int64_t v, int64_t factor)
{
	int64_t r;

	return __builtin_mul_overflow(v, factor, &r) ? INT64_MIN : r;
}

/* The extended (low 6 bits = full opcode) operations. */
static int cfi_op(struct cfi_exec *x, struct cfi_rd *r, uint8_t op)
{
	const int64_t daf = x->c->data_align;
	const uint8_t *expr;
	uint64_t reg, len;
	struct cfi_reg *g;

	switch (op) {
	case 0x00: return 0;					/* nop */
	case 0x01:						/* set_loc */
		reg = rd_ptr(r, x->c->fde_enc, x->m);
		if (reg > x->target || reg < x->loc)
			return 1;
		x->loc = reg;
		return 0;
	case 0x02: return cfi_advance(x, rd_uint(r, 1) * x->c->code_align);
	case 0x03: return cfi_advance(x, rd_uint(r, 2) * x->c->code_align);
	case 0x04: return cfi_advance(x, rd_uint(r, 4) * x->c->code_align);
	case 0x05:					/* offset_extended */
		reg = rd_uleb(r);
		cfi_set(x, reg, H_OFF, cfi_factored((int64_t)rd_uleb(r), daf));
		return 0;
	case 0x06:					/* restore_extended */
		cfi_restore(x, rd_uleb(r));
		return 0;
	case 0x07: cfi_set(x, rd_uleb(r), H_UNDEF, 0); return 0;
	case 0x08: cfi_set(x, rd_uleb(r), H_SAME, 0); return 0;
	case 0x09:						/* register */
		reg = rd_uleb(r);
		cfi_set(x, reg, rd_uleb(r) == reg ? H_SAME : H_OTHER, 0);
		return 0;
	case 0x0a: case 0x0b: return cfi_op_state(x, op);
	case 0x0c:						/* def_cfa */
		x->row.cfa_reg = rd_uleb(r);
		x->row.cfa_off = (int64_t)rd_uleb(r);
		x->row.cfa_is_expr = 0;
		return 0;
	case 0x0d:					/* def_cfa_register */
		x->row.cfa_reg = rd_uleb(r);
		x->row.cfa_is_expr = 0;
		return 0;
	case 0x0e: x->row.cfa_off = (int64_t)rd_uleb(r); return 0;
	case 0x0f:					/* def_cfa_expression */
		cfi_block(r, &x->row.expr, &x->row.len);
		x->row.cfa_is_expr = 1;
		return 0;
	case 0x10: case 0x16:			/* expression, val_expression */
		g = cfi_tracked(x, rd_uleb(r));
		cfi_block(r, &expr, &len);
		if (g) {
			g->how = op == 0x10 ? H_EXPR : H_OTHER;
			g->expr = expr;
			g->len = len;
		}
		return 0;
	case 0x11:					/* offset_extended_sf */
		reg = rd_uleb(r);
		cfi_set(x, reg, H_OFF, cfi_factored(rd_sleb(r), daf));
		return 0;
	case 0x12:						/* def_cfa_sf */
		x->row.cfa_reg = rd_uleb(r);
		x->row.cfa_off = cfi_factored(rd_sleb(r), daf);
		x->row.cfa_is_expr = 0;
		return 0;
	case 0x13: x->row.cfa_off = cfi_factored(rd_sleb(r), daf); return 0;
	case 0x14: case 0x15:	/* val_offset(_sf): leb128 skips alike */
		reg = rd_uleb(r);
		rd_uleb(r);
		cfi_set(x, reg, H_OTHER, 0);
		return 0;
	case 0x2e:					/* GNU_args_size */
		rd_uleb(r);
		return 0;
	case 0x2f:			/* GNU_negative_offset_extended */
		reg = rd_uleb(r);
		cfi_set(x, reg, H_OFF,
			cfi_factored(cfi_factored((int64_t)rd_uleb(r), daf), -1));
		return 0;
	}
	return -1;
}

/* Run instructions until the end or past the target.  0, or -1 if the
 * program is malformed or uses what this unwinder does not know. */
static int cfi_run(struct cfi_exec *x, struct cfi_rd *r)
{
	uint8_t op;
	int rc;

	while (r->p < r->end && !r->bad) {
		op = (uint8_t)rd_uint(r, 1);
		switch (op >> 6) {
		case 1:
			rc = cfi_advance(x, (op & 0x3fu) * x->c->code_align);
			break;
		case 2:
			cfi_set(x, op & 0x3fu, H_OFF,
				cfi_factored((int64_t)rd_uleb(r),
					     x->c->data_align));
			rc = 0;
			break;
		case 3:
			cfi_restore(x, op & 0x3fu);
			rc = 0;
			break;
		default:
			rc = cfi_op(x, r, op);
		}
		if (rc)
			return rc > 0 ? 0 : -1;
	}
	return r->bad ? -1 : 0;
}

/* ------------------------------------------------------------------ */
/* DWARF expressions, evaluated symbolically at rule-building time.   */

/*
 * A value is a constant, or base register + offset, optionally loaded
 * from (deref).  That covers what compilers put in CFI: the PLT's CFA
 * (%rsp + 8 or 16 depending on %rip & 15, a constant once the pc is
 * known), stack realignment (CFA = *(%rbp - 8), %rbp saved at %rbp).
 */
enum cfi_base { B_CONST, B_RSP, B_RBP, B_CFA };

struct cfi_sym {
	uint8_t base, deref;
	int64_t v;
};

#define CFI_EVAL_DEPTH 8

static int cfi_eval_breg(struct cfi_sym *s, uint64_t reg, int64_t off,
			 uint64_t pc)
{
	s->deref = 0;
	s->v = off;
	if (reg == DW_RSP)
		s->base = B_RSP;
	else if (reg == DW_RBP)
		s->base = B_RBP;
	else if (reg == DW_RIP)
		s->base = B_CONST, s->v = (int64_t)(pc + (uint64_t)off); /* rip */
	else
		return -1;
	return 0;
}

/* Binary operation on the two top values, result in a. */
static int cfi_eval_bin(struct cfi_sym *a, const struct cfi_sym *b, uint8_t op)
{
	uint64_t x = (uint64_t)a->v, y = (uint64_t)b->v;

	if (a->deref || b->deref)
		return -1;
	if (op == 0x22 && a->base == B_CONST) {		/* plus */
		a->base = b->base;
		a->v = (int64_t)(x + y);
		return 0;
	}
	if ((op == 0x22 || op == 0x1c) && b->base == B_CONST) {
		a->v = (int64_t)(op == 0x22 ? x + y : x - y);
		return 0;
	}
	if (a->base != B_CONST || b->base != B_CONST)
		return -1;
	switch (op) {
	case 0x1a: x &= y; break;
	case 0x1e: x *= y; break;
	case 0x21: x |= y; break;
	case 0x24: x = y < 64 ? x << y : 0; break;
	case 0x25: x = y < 64 ? x >> y : 0; break;
	case 0x26: x = (uint64_t)(a->v >> (y < 64 ? y : 63)); break;
	case 0x27: x ^= y; break;
	case 0x29: x = a->v == b->v; break;
	case 0x2a: x = a->v >= b->v; break;
	case 0x2b: x = a->v > b->v; break;
	case 0x2c: x = a->v <= b->v; break;
	case 0x2d: x = a->v < b->v; break;
	case 0x2e: x = a->v != b->v; break;
	default: return -1;
	}
	a->v = (int64_t)x;
	return 0;
}

/* One operation; *sp is the stack depth. */
static int cfi_eval_op(struct cfi_rd *r, uint8_t op, struct cfi_sym *st,
		       int *sp, uint64_t pc)
{
	struct cfi_sym *top = *sp ? &st[*sp - 1] : NULL;
	struct cfi_sym v = { B_CONST, 0, 0 };
	uint64_t reg;

	if (op >= 0x30 && op <= 0x4f) {
		v.v = op - 0x30;			/* lit0..31 */
	} else if (op >= 0x70 && op <= 0x8f) {		/* breg0..31 */
		if (cfi_eval_breg(&v, op - 0x70u, rd_sleb(r), pc) < 0)
			return -1;
	} else {
		switch (op) {
		case 0x08: v.v = (int64_t)rd_uint(r, 1); break;
		case 0x09: v.v = rd_sint(r, 1); break;
		case 0x0a: v.v = (int64_t)rd_uint(r, 2); break;
		case 0x0b: v.v = rd_sint(r, 2); break;
		case 0x0c: v.v = (int64_t)rd_uint(r, 4); break;
		case 0x0d: v.v = rd_sint(r, 4); break;
		case 0x0e: case 0x0f: v.v = (int64_t)rd_uint(r, 8); break;
		case 0x10: v.v = (int64_t)rd_uleb(r); break;
		case 0x11: v.v = rd_sleb(r); break;
		case 0x92:				/* bregx */
			reg = rd_uleb(r);
			if (cfi_eval_breg(&v, reg, rd_sleb(r), pc) < 0)
				return -1;
			break;
		case 0x12:				/* dup */
			if (!top)
				return -1;
			v = *top;
			break;
		case 0x96: return 0;			/* nop */
		case 0x06:				/* deref */
			if (!top || top->deref || top->base == B_CONST)
				return -1;
			top->deref = 1;
			return 0;
		case 0x23:				/* plus_uconst */
			if (!top || top->deref)
				return -1;
			top->v = (int64_t)((uint64_t)top->v + rd_uleb(r));
			return 0;
		case 0x13:				/* drop */
			if (!top)
				return -1;
			(*sp)--;
			return 0;
		default:				/* binary operators */
			if (*sp < 2 || cfi_eval_bin(&st[*sp - 2], top, op) < 0)
				return -1;
			(*sp)--;
			return 0;
		}
	}
	if (*sp == CFI_EVAL_DEPTH)
		return -1;
	st[(*sp)++] = v;
	return 0;
}

/* Evaluate; with_cfa pushes the CFA first (register rules do). */
static int cfi_eval(const uint8_t *p, uint64_t len, uint64_t pc, int with_cfa,
		    struct cfi_sym *out)
{
	struct cfi_sym st[CFI_EVAL_DEPTH];
	struct cfi_rd r = { p, p + len, 0 };
	int sp = 0;

	if (with_cfa)
		st[sp++] = (struct cfi_sym){ B_CFA, 0, 0 };
	while (r.p < r.end && !r.bad)
		if (cfi_eval_op(&r, (uint8_t)rd_uint(&r, 1), st, &sp, pc) < 0)
			return -1;
	if (r.bad || sp == 0)
		return -1;
	*out = st[sp - 1];
	return 0;
}

/* ------------------------------------------------------------------ */
/* Reducing a row to the compact rule.                                */

static int cfi_fits(int64_t v, int bits)
{
	return v >= -(1ll << (bits - 1)) && v < (1ll << (bits - 1));
}

static int cfi_reduce_cfa(const struct cfi_row *row, uint64_t pc,
			  union ls_cfi_rule *r)
{
	struct cfi_sym s = { B_CONST, 0, 0 };

	if (row->cfa_is_expr) {
		if (cfi_eval(row->expr, row->len, pc, 0, &s) < 0)
			return -1;
	} else {
		s.base = row->cfa_reg == DW_RSP ? B_RSP :
			 row->cfa_reg == DW_RBP ? B_RBP : B_CONST;
		s.v = row->cfa_off;
	}
	if ((s.base != B_RSP && s.base != B_RBP) || !cfi_fits(s.v, 32))
		return -1;
	r->f.cfa_off = (int32_t)s.v;
	r->f.bits |= (s.base == B_RBP ? LS_CFI_CFA_RBP : 0) |
		     (s.deref ? LS_CFI_CFA_DEREF : 0);
	return 0;
}

/* Where a register rule says the value is saved, as base + off with base
 * B_CFA or B_RBP; -1 if not "saved at an address" we can express. */
static int cfi_reg_addr(const struct cfi_reg *g, const union ls_cfi_rule *r,
			uint64_t pc, struct cfi_sym *s)
{
	if (g->how == H_OFF) {
		*s = (struct cfi_sym){ B_CFA, 0, g->off };
		return 0;
	}
	if (g->how != H_EXPR || cfi_eval(g->expr, g->len, pc, 1, s) < 0 ||
	    s->deref)
		return -1;
	if (s->base == B_RSP &&
	    !(r->f.bits & (LS_CFI_CFA_RBP | LS_CFI_CFA_DEREF))) {
		s->base = B_CFA;	/* rsp = CFA - cfa_off in this frame */
		s->v = (int64_t)((uint64_t)s->v - (uint64_t)(int64_t)r->f.cfa_off);
	}
	return s->base == B_CFA || s->base == B_RBP ? 0 : -1;
}

static void cfi_reduce_rbp(const struct cfi_row *row, uint64_t pc,
			   union ls_cfi_rule *r)
{
	struct cfi_sym s;
	unsigned how = LS_CFI_RBP_UNDEF;

	if (row->rbp.how == H_SAME) {
		how = LS_CFI_RBP_SAME;
	} else if (cfi_reg_addr(&row->rbp, r, pc, &s) == 0 &&
		   cfi_fits(s.v, 16)) {
		how = s.base == B_CFA ? LS_CFI_RBP_AT_CFA : LS_CFI_RBP_AT_RBP;
		r->f.rbp_off = (int16_t)s.v;
	}
	r->f.bits |= (uint8_t)(how << LS_CFI_RBP_SHIFT);
}

static uint64_t cfi_reduce(const struct cfi_row *row, uint64_t pc)
{
	union ls_cfi_rule r = { .word = 0 };
	struct cfi_sym s;

	if (row->ra.how == H_UNDEF)
		return cfi_simple(LS_CFI_OUTERMOST);
	if (cfi_reg_addr(&row->ra, &r, pc, &s) < 0 || s.base != B_CFA ||
	    !cfi_fits(s.v, 8))
		return cfi_simple(LS_CFI_STOP);
	r.f.ra_off = (int8_t)s.v;
	if (cfi_reduce_cfa(row, pc, &r) < 0)
		return cfi_simple(LS_CFI_STOP);
	cfi_reduce_rbp(row, pc, &r);
	r.f.bits |= LS_CFI_FRAME;
	return r.word;
}

/* ------------------------------------------------------------------ */
/* Building the rule for one pc (the slow path).                      */

/* mov $15,%rax; syscall: rt_sigreturn, glibc's __restore_rt. */
static const uint8_t cfi_sigreturn[9] = {
	0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05
};

/* Does pc (or, if exact, pc - 7: interrupted at the syscall) start the
 * trampoline?  Reads only inside the FDE's code range. */
static int cfi_is_sigreturn(uint64_t pc, int exact, const struct cfi_fde *f)
{
	uint64_t at = pc;

	if (exact && pc >= f->begin + 7 && pc + 2 <= f->end &&
	    memcmp((const void *)(uintptr_t)pc, cfi_sigreturn + 7, 2) == 0)
		at = pc - 7;
	if (at < f->begin || at + sizeof(cfi_sigreturn) > f->end)
		return 0;
	return memcmp((const void *)(uintptr_t)at, cfi_sigreturn,
		      sizeof(cfi_sigreturn)) == 0;
}

/* The row of the table at at into *row: 0, -1 (no usable CFI), or 1
 * (pc is in the sigreturn trampoline). */
static int cfi_row_at(const struct cfi_mod *m, uint64_t at, uint64_t pc,
		      int exact, struct cfi_row *row)
{
	struct cfi_exec x;
	struct cfi_cie c;
	struct cfi_fde f;

	if (cfi_fde_parse(m, cfi_fde_search(m, at), &c, &f) < 0 ||
	    at < f.begin || at >= f.end)
		return -1;
	if (c.signal && cfi_is_sigreturn(pc, exact, &f))
		return 1;
	memset(&x, 0, sizeof(x));
	x.m = m;
	x.c = &c;
	x.loc = f.begin;
	x.target = at;
	x.row.rbp.how = H_SAME;
	x.row.rbx.how = H_SAME;
	x.row.ra.how = H_UNDEF;
	if (cfi_run(&x, &c.insn) < 0)
		return -1;
	x.init = x.row;
	x.nsaved = 0;
	if (cfi_run(&x, &f.insn) < 0)
		return -1;
	*row = x.row;
	return 0;
}

static uint64_t cfi_rule_from_fde(const struct cfi_mod *m, uint64_t at,
				  uint64_t pc, int exact)
{
	struct cfi_row row;
	int r = cfi_row_at(m, at, pc, exact, &row);

	if (r)
		return cfi_simple(r > 0 ? LS_CFI_SIGNAL : LS_CFI_STOP);
	return cfi_reduce(&row, pc);
}

uint64_t ls_cfi_rule_in(uint64_t lo, uint64_t hi, const void *eh_frame_hdr,
			uint64_t pc, int exact)
{
	struct cfi_mod m = { lo, hi, eh_frame_hdr };

	if (!m.hdr || (uint64_t)(uintptr_t)m.hdr < m.lo ||
	    (uint64_t)(uintptr_t)m.hdr >= m.hi)
		return cfi_simple(LS_CFI_STOP);
	return cfi_rule_from_fde(&m, exact ? pc : pc - 1, pc, exact);
}

/* glibc's _dl_find_object, looked up: it came in 2.35, and the agent
 * loads into older ones (agent/glibcver.h). */
static int (*find_object)(void *, struct dl_find_object *);
static int find_object_looked;

void ls_cfi_set_finder(void *fn)
{
	memcpy(&find_object, &fn, sizeof(fn));
	__atomic_store_n(&find_object_looked, 1, __ATOMIC_RELEASE);
}

void ls_cfi_init(void)
{
	ls_cfi_set_finder(dlsym(RTLD_DEFAULT, "_dl_find_object"));
}

/* dl_iterate_phdr's answer for the module holding pc: the span of its
 * PT_LOAD segments and its PT_GNU_EH_FRAME, as _dl_find_object gives. */
struct cfi_phdr_find {
	uint64_t pc, lo, hi;
	const void *hdr;
};

static int cfi_phdr_cb(struct dl_phdr_info *info, size_t size, void *arg)
{
	struct cfi_phdr_find *f = arg;
	uint64_t lo = UINT64_MAX, hi = 0, base = info->dlpi_addr;
	const void *hdr = NULL;
	int in = 0;

	(void)size;
	for (unsigned i = 0; i < info->dlpi_phnum; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		uint64_t a = base + ph->p_vaddr;

		if (ph->p_type == PT_GNU_EH_FRAME)
			hdr = (const void *)(uintptr_t)a;
		if (ph->p_type != PT_LOAD)
			continue;
		lo = a < lo ? a : lo;
		hi = a + ph->p_memsz > hi ? a + ph->p_memsz : hi;
		in |= f->pc >= a && f->pc - a < ph->p_memsz;
	}
	if (!in)
		return 0;
	f->lo = lo;
	f->hi = hi;
	f->hdr = hdr;
	return 1;
}

static int cfi_find(uint64_t at, uint64_t *lo, uint64_t *hi, const void **hdr)
{
	struct dl_find_object fo;
	struct cfi_phdr_find f = { .pc = at };

	if (!__atomic_load_n(&find_object_looked, __ATOMIC_ACQUIRE))
		ls_cfi_init();
	if (find_object) {
		if (find_object((void *)(uintptr_t)at, &fo) != 0)
			return -1;
		*lo = (uint64_t)(uintptr_t)fo.dlfo_map_start;
		*hi = (uint64_t)(uintptr_t)fo.dlfo_map_end;
		*hdr = fo.dlfo_eh_frame;
		return 0;
	}
	if (!dl_iterate_phdr(cfi_phdr_cb, &f))
		return -1;
	*lo = f.lo;
	*hi = f.hi;
	*hdr = f.hdr;
	return 0;
}

int ls_cfi_in_module(uint64_t at)
{
	uint64_t lo, hi;
	const void *hdr;

	return !cfi_find(at, &lo, &hi, &hdr);
}

/* A register's rule in f's terms: the same, saved at CFA + off, or lost. */
static int cfi_full_reg(const struct cfi_reg *g, int64_t *off)
{
	*off = g->off;
	return g->how == H_SAME ? LS_CFI_RBP_SAME :
	       g->how == H_OFF && cfi_fits(g->off, 32) ? LS_CFI_RBP_AT_CFA :
	       LS_CFI_RBP_UNDEF;
}

int ls_cfi_full(uint64_t pc, int exact, struct ls_cfi_full *f)
{
	uint64_t lo, hi, at = exact ? pc : pc - 1;
	const void *hdr;
	struct cfi_mod m;
	struct cfi_row row;
	int64_t off;

	if (cfi_find(at, &lo, &hi, &hdr))
		return -1;
	m = (struct cfi_mod){ lo, hi, hdr };
	if (!m.hdr || (uint64_t)(uintptr_t)m.hdr < m.lo ||
	    (uint64_t)(uintptr_t)m.hdr >= m.hi ||
	    cfi_row_at(&m, at, pc, exact, &row) != 0 || row.cfa_is_expr ||
	    (row.cfa_reg != DW_RSP && row.cfa_reg != DW_RBP &&
	     row.cfa_reg != DW_RBX) || !cfi_fits(row.cfa_off, 32) ||
	    row.ra.how != H_OFF || !cfi_fits(row.ra.off, 32))
		return -1;
	f->cfa_reg = row.cfa_reg == DW_RSP ? LS_CFI_REG_RSP :
		     row.cfa_reg == DW_RBP ? LS_CFI_REG_RBP : LS_CFI_REG_RBX;
	f->cfa_off = row.cfa_off;
	f->ra_off = row.ra.off;
	f->rbp_how = cfi_full_reg(&row.rbp, &off);
	f->rbp_off = off;
	f->rbx_how = cfi_full_reg(&row.rbx, &off);
	f->rbx_off = off;
	return 0;
}

uint64_t ls_cfi_rule(uint64_t pc, int exact, int *cacheable)
{
	uint64_t lo, hi;
	const void *hdr;

	*cacheable = 0;
	if (cfi_find(exact ? pc : pc - 1, &lo, &hi, &hdr))
		return cfi_simple(LS_CFI_NOMODULE);
	*cacheable = 1;
	return ls_cfi_rule_in(lo, hi, hdr, pc, exact);
}
