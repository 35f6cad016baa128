/*
 * unwind.c - x86_64 stack unwinding from .eh_frame CFI, with cached
 * per-address rules.  See unwind.h for the contract and docs/UNWINDING.md
 * for the design and its measurements.
 *
 * Layout of this file: raw syscalls; the compact rule; reading CFI
 * (.eh_frame_hdr search, CIE/FDE, the CFA program, the few DWARF
 * expressions compilers emit); the rule caches; the proven stack range;
 * the walk.  Everything down to the "outside hooks" section may run
 * inside an allocation hook or a signal handler.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <sys/uio.h>
#include "sys.h"
#include "unwind.h"

/* Exported by ld.so: the main thread's initial stack pointer. */
extern void *__libc_stack_end;

#define UW_PAGE 4096ull		/* probe granularity; fine for any page size */
#define UW_USER_MAX (1ull << 47)	/* x86_64 user addresses lie below */

/* ------------------------------------------------------------------ */
/* Raw syscalls: async-signal-safe, and they leave errno alone.       */

static inline long uw_sys3(long nr, long a, long b, long c)
{
	long r;

	__asm__ volatile("syscall" : "=a"(r) : "0"(nr), "D"(a), "S"(b), "d"(c)
			 : "rcx", "r11", "memory");
	return r;
}

static inline long uw_sys6(long nr, long a, long b, long c, long d, long e,
			   long f)
{
	register long r10 __asm__("r10") = d;
	register long r8 __asm__("r8") = e;
	register long r9 __asm__("r9") = f;
	long r;

	__asm__ volatile("syscall" : "=a"(r)
			 : "0"(nr), "D"(a), "S"(b), "d"(c), "r"(r10), "r"(r8),
			   "r"(r9)
			 : "rcx", "r11", "memory");
	return r;
}

/* ------------------------------------------------------------------ */
/* The compact rule: everything one frame needs, in one atomic word.  */

enum uw_kind {
	UW_NONE = 0,		/* empty slot / not ready: never a real rule */
	UW_FRAME,		/* an ordinary frame: apply the offsets */
	UW_OUTERMOST,		/* return address undefined: the walk is done */
	UW_SIGNAL,		/* sigreturn trampoline: ucontext at sp */
	UW_STOP,		/* no usable CFI: cannot go further */
};

enum uw_rbp {
	UW_RBP_SAME = 0,	/* callee left %rbp alone */
	UW_RBP_AT_CFA,		/* saved at CFA + rbp_off */
	UW_RBP_AT_RBP,		/* saved at %rbp + rbp_off (stack realignment) */
	UW_RBP_UNDEF,		/* unknown: becomes 0, no rbp-based rule works */
};

union uw_rule {
	uint64_t word;
	struct {
		int32_t cfa_off;
		int16_t rbp_off;
		int8_t ra_off;	/* return address at CFA + ra_off */
		uint8_t bits;	/* kind | cfa on rbp | cfa deref | rbp rule */
	} f;
};

#define UW_KIND(b) ((b) & 7u)
#define UW_CFA_RBP 0x08u	/* CFA base is %rbp, else %rsp */
#define UW_CFA_DEREF 0x10u	/* CFA = *(base + cfa_off) */
#define UW_RBP_SHIFT 5

static uint64_t uw_simple(enum uw_kind kind)
{
	union uw_rule r = { .word = 0 };

	r.f.bits = (uint8_t)kind;
	return r.word;
}

/* ------------------------------------------------------------------ */
/* Bounded reads of a module's CFI.                                   */

/* A cursor over [p, end); reading past end sets bad and yields 0. */
struct uw_rd {
	const uint8_t *p, *end;
	int bad;
};

/* The module holding the pc: map bounds and its .eh_frame_hdr. */
struct uw_mod {
	uint64_t lo, hi;
	const uint8_t *hdr;
};

static uint64_t rd_uint(struct uw_rd *r, unsigned n)
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

static int64_t rd_sint(struct uw_rd *r, unsigned n)
{
	uint64_t v = rd_uint(r, n);
	unsigned sh = 64 - 8 * n;

	return (int64_t)(v << sh) >> sh;
}

static uint64_t rd_uleb(struct uw_rd *r)
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
	return v;
}

static int64_t rd_sleb(struct uw_rd *r)
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

static uint64_t rd_value(struct uw_rd *r, uint8_t enc)
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
static uint64_t rd_ptr(struct uw_rd *r, uint8_t enc, const struct uw_mod *m)
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

static void rd_init(struct uw_rd *r, const struct uw_mod *m, uint64_t at,
		    uint64_t len)
{
	r->bad = at < m->lo || at > m->hi || len > m->hi - at;
	r->p = (const uint8_t *)(uintptr_t)at;
	r->end = r->bad ? r->p : r->p + len;
}

/* ------------------------------------------------------------------ */
/* .eh_frame_hdr: the sorted table from pc to FDE.                    */

#define HDR_TABLE_ENC 0x3b	/* datarel | sdata4: what every linker writes */

/* Address of the FDE whose range may hold pc, or 0. */
static uint64_t uw_fde_search(const struct uw_mod *m, uint64_t pc)
{
	struct uw_rd r;
	uint8_t ver, ptr_enc, cnt_enc, tab_enc;
	uint64_t count, lo = 0, hi, mid, tab;
	int32_t ent[2];

	rd_init(&r, m, (uint64_t)(uintptr_t)m->hdr, m->hi - (uint64_t)(uintptr_t)m->hdr);
	ver = (uint8_t)rd_uint(&r, 1);
	ptr_enc = (uint8_t)rd_uint(&r, 1);
	cnt_enc = (uint8_t)rd_uint(&r, 1);
	tab_enc = (uint8_t)rd_uint(&r, 1);
	/* NEEDSWORK: no table (ld -r, odd linkers) would need a linear
	 * scan of .eh_frame; such modules get no frames. */
	if (ver != 1 || cnt_enc == PE_OMIT || tab_enc != HDR_TABLE_ENC)
		return 0;
	rd_ptr(&r, ptr_enc, m);
	count = rd_ptr(&r, cnt_enc, m);
	tab = (uint64_t)(uintptr_t)r.p;
	if (r.bad || count == 0 || count > (m->hi - tab) / 8)
		return 0;
	hi = count;
	while (hi - lo > 1) {	/* last entry with initial_loc <= pc */
		mid = lo + (hi - lo) / 2;
		memcpy(ent, (const void *)(uintptr_t)(tab + 8 * mid), 8);
		if ((uint64_t)(uintptr_t)m->hdr + (uint64_t)(int64_t)ent[0] <= pc)
			lo = mid;
		else
			hi = mid;
	}
	memcpy(ent, (const void *)(uintptr_t)(tab + 8 * lo), 8);
	if ((uint64_t)(uintptr_t)m->hdr + (uint64_t)(int64_t)ent[0] > pc)
		return 0;
	return (uint64_t)(uintptr_t)m->hdr + (uint64_t)(int64_t)ent[1];
}

/* ------------------------------------------------------------------ */
/* CIE and FDE.                                                       */

struct uw_cie {
	uint64_t code_align;
	int64_t data_align;
	uint64_t ra_reg;
	uint8_t fde_enc;
	int has_z, signal;
	struct uw_rd insn;
};

struct uw_fde {
	uint64_t begin, end;
	struct uw_rd insn;
};

/* Open the entry at `at`: its body as a cursor.  0 or -1. */
static int uw_entry(const struct uw_mod *m, uint64_t at, struct uw_rd *body)
{
	struct uw_rd r;
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
static int uw_cie_aug(struct uw_cie *c, const char *aug, struct uw_rd *r,
		      const struct uw_mod *m)
{
	uint64_t len = rd_uleb(r);
	struct uw_rd d = *r;
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

static int uw_cie_parse(const struct uw_mod *m, uint64_t at, struct uw_cie *c)
{
	struct uw_rd r;
	const char *aug;
	uint8_t ver;

	if (uw_entry(m, at, &r) < 0 || rd_uint(&r, 4) != 0)
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
		if (uw_cie_aug(c, aug + 1, &r, m) < 0)
			return -1;
	} else if (aug[0]) {
		return -1;	/* pre-"z" GNU augmentations: not on x86_64 */
	}
	c->insn = r;
	return r.bad ? -1 : 0;
}

static int uw_fde_parse(const struct uw_mod *m, uint64_t at, struct uw_cie *c,
			struct uw_fde *f)
{
	struct uw_rd r;
	uint64_t id_at, id, range;

	if (uw_entry(m, at, &r) < 0)
		return -1;
	id_at = (uint64_t)(uintptr_t)r.p;
	id = rd_uint(&r, 4);
	if (r.bad || id == 0 || id > id_at || uw_cie_parse(m, id_at - id, c) < 0)
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

#define DW_RBP 6
#define DW_RSP 7
#define DW_RIP 16

enum uw_how { H_UNDEF, H_SAME, H_OFF, H_EXPR, H_OTHER };

struct uw_reg {
	uint8_t how;
	int64_t off;			/* H_OFF: saved at CFA + off */
	const uint8_t *expr;		/* H_EXPR: saved at expr's value */
	uint64_t len;
};

struct uw_row {
	int cfa_is_expr;
	uint64_t cfa_reg;
	int64_t cfa_off;
	const uint8_t *expr;
	uint64_t len;
	struct uw_reg rbp, ra;
};

#define UW_STATE_DEPTH 8

struct uw_exec {
	const struct uw_mod *m;
	const struct uw_cie *c;
	uint64_t loc, target;
	struct uw_row row, init;
	struct uw_row saved[UW_STATE_DEPTH];
	int nsaved;
};

static struct uw_reg *uw_tracked(struct uw_exec *x, uint64_t reg)
{
	if (reg == x->c->ra_reg)
		return &x->row.ra;
	return reg == DW_RBP ? &x->row.rbp : NULL;
}

static void uw_set(struct uw_exec *x, uint64_t reg, uint8_t how, int64_t off)
{
	struct uw_reg *g = uw_tracked(x, reg);

	if (g) {
		g->how = how;
		g->off = off;
	}
}

static void uw_restore(struct uw_exec *x, uint64_t reg)
{
	struct uw_reg *g = uw_tracked(x, reg);

	if (g)
		*g = reg == x->c->ra_reg ? x->init.ra : x->init.rbp;
}

/* Returns 1 when loc passed the target (the row is complete). */
static int uw_advance(struct uw_exec *x, uint64_t delta)
{
	if (delta > x->target - x->loc)
		return 1;
	x->loc += delta;
	return 0;
}

static void uw_block(struct uw_rd *r, const uint8_t **p, uint64_t *len)
{
	*len = rd_uleb(r);
	*p = r->p;
	if (*len > (uint64_t)(r->end - r->p))
		r->bad = 1;
	else
		r->p += *len;
}

static int uw_op_state(struct uw_exec *x, uint8_t op)
{
	if (op == 0x0a) {			/* remember_state */
		if (x->nsaved == UW_STATE_DEPTH)
			return -1;
		x->saved[x->nsaved++] = x->row;
	} else {				/* restore_state */
		if (x->nsaved == 0)
			return -1;
		x->row = x->saved[--x->nsaved];
	}
	return 0;
}

/* The extended (low 6 bits = full opcode) operations. */
static int uw_op(struct uw_exec *x, struct uw_rd *r, uint8_t op)
{
	const int64_t daf = x->c->data_align;
	const uint8_t *expr;
	uint64_t reg, len;
	struct uw_reg *g;

	switch (op) {
	case 0x00: return 0;					/* nop */
	case 0x01:						/* set_loc */
		reg = rd_ptr(r, x->c->fde_enc, x->m);
		if (reg > x->target || reg < x->loc)
			return 1;
		x->loc = reg;
		return 0;
	case 0x02: return uw_advance(x, rd_uint(r, 1) * x->c->code_align);
	case 0x03: return uw_advance(x, rd_uint(r, 2) * x->c->code_align);
	case 0x04: return uw_advance(x, rd_uint(r, 4) * x->c->code_align);
	case 0x05:						/* offset_extended */
		reg = rd_uleb(r);
		uw_set(x, reg, H_OFF, (int64_t)rd_uleb(r) * daf);
		return 0;
	case 0x06: uw_restore(x, rd_uleb(r)); return 0;	/* restore_extended */
	case 0x07: uw_set(x, rd_uleb(r), H_UNDEF, 0); return 0;
	case 0x08: uw_set(x, rd_uleb(r), H_SAME, 0); return 0;
	case 0x09:						/* register */
		reg = rd_uleb(r);
		uw_set(x, reg, rd_uleb(r) == reg ? H_SAME : H_OTHER, 0);
		return 0;
	case 0x0a: case 0x0b: return uw_op_state(x, op);
	case 0x0c:						/* def_cfa */
		x->row.cfa_reg = rd_uleb(r);
		x->row.cfa_off = (int64_t)rd_uleb(r);
		x->row.cfa_is_expr = 0;
		return 0;
	case 0x0d:						/* def_cfa_register */
		x->row.cfa_reg = rd_uleb(r);
		x->row.cfa_is_expr = 0;
		return 0;
	case 0x0e: x->row.cfa_off = (int64_t)rd_uleb(r); return 0;
	case 0x0f:						/* def_cfa_expression */
		uw_block(r, &x->row.expr, &x->row.len);
		x->row.cfa_is_expr = 1;
		return 0;
	case 0x10: case 0x16:			/* expression, val_expression */
		g = uw_tracked(x, rd_uleb(r));
		uw_block(r, &expr, &len);
		if (g) {
			g->how = op == 0x10 ? H_EXPR : H_OTHER;
			g->expr = expr;
			g->len = len;
		}
		return 0;
	case 0x11:						/* offset_extended_sf */
		reg = rd_uleb(r);
		uw_set(x, reg, H_OFF, rd_sleb(r) * daf);
		return 0;
	case 0x12:						/* def_cfa_sf */
		x->row.cfa_reg = rd_uleb(r);
		x->row.cfa_off = rd_sleb(r) * daf;
		x->row.cfa_is_expr = 0;
		return 0;
	case 0x13: x->row.cfa_off = rd_sleb(r) * daf; return 0;
	case 0x14: case 0x15:	/* val_offset(_sf): leb128 skips alike */
		reg = rd_uleb(r);
		rd_uleb(r);
		uw_set(x, reg, H_OTHER, 0);
		return 0;
	case 0x2e: rd_uleb(r); return 0;			/* GNU_args_size */
	case 0x2f:				/* GNU_negative_offset_extended */
		reg = rd_uleb(r);
		uw_set(x, reg, H_OFF, -(int64_t)rd_uleb(r) * daf);
		return 0;
	}
	return -1;
}

/* Run instructions until the end or past the target.  0, or -1 if the
 * program is malformed or uses what this unwinder does not know. */
static int uw_run(struct uw_exec *x, struct uw_rd *r)
{
	uint8_t op;
	int rc;

	while (r->p < r->end && !r->bad) {
		op = (uint8_t)rd_uint(r, 1);
		switch (op >> 6) {
		case 1:
			rc = uw_advance(x, (op & 0x3fu) * x->c->code_align);
			break;
		case 2:
			uw_set(x, op & 0x3fu, H_OFF,
			       (int64_t)rd_uleb(r) * x->c->data_align);
			rc = 0;
			break;
		case 3:
			uw_restore(x, op & 0x3fu);
			rc = 0;
			break;
		default:
			rc = uw_op(x, r, op);
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
enum uw_base { B_CONST, B_RSP, B_RBP, B_CFA };

struct uw_sym {
	uint8_t base, deref;
	int64_t v;
};

#define UW_EVAL_DEPTH 8

static int uw_eval_breg(struct uw_sym *s, uint64_t reg, int64_t off,
			uint64_t pc)
{
	s->deref = 0;
	s->v = off;
	if (reg == DW_RSP)
		s->base = B_RSP;
	else if (reg == DW_RBP)
		s->base = B_RBP;
	else if (reg == DW_RIP)
		s->base = B_CONST, s->v = (int64_t)pc + off;
	else
		return -1;
	return 0;
}

/* Binary operation on the two top values, result in a. */
static int uw_eval_bin(struct uw_sym *a, const struct uw_sym *b, uint8_t op)
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
static int uw_eval_op(struct uw_rd *r, uint8_t op, struct uw_sym *st, int *sp,
		      uint64_t pc)
{
	struct uw_sym *top = *sp ? &st[*sp - 1] : NULL;
	struct uw_sym v = { B_CONST, 0, 0 };
	uint64_t reg;

	if (op >= 0x30 && op <= 0x4f) {
		v.v = op - 0x30;			/* lit0..31 */
	} else if (op >= 0x70 && op <= 0x8f) {		/* breg0..31 */
		if (uw_eval_breg(&v, op - 0x70u, rd_sleb(r), pc) < 0)
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
			if (uw_eval_breg(&v, reg, rd_sleb(r), pc) < 0)
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
			top->v += (int64_t)rd_uleb(r);
			return 0;
		case 0x13:				/* drop */
			if (!top)
				return -1;
			(*sp)--;
			return 0;
		default:				/* binary operators */
			if (*sp < 2 || uw_eval_bin(&st[*sp - 2], top, op) < 0)
				return -1;
			(*sp)--;
			return 0;
		}
	}
	if (*sp == UW_EVAL_DEPTH)
		return -1;
	st[(*sp)++] = v;
	return 0;
}

/* Evaluate; with_cfa pushes the CFA first (register rules do). */
static int uw_eval(const uint8_t *p, uint64_t len, uint64_t pc, int with_cfa,
		   struct uw_sym *out)
{
	struct uw_sym st[UW_EVAL_DEPTH];
	struct uw_rd r = { p, p + len, 0 };
	int sp = 0;

	if (with_cfa)
		st[sp++] = (struct uw_sym){ B_CFA, 0, 0 };
	while (r.p < r.end && !r.bad)
		if (uw_eval_op(&r, (uint8_t)rd_uint(&r, 1), st, &sp, pc) < 0)
			return -1;
	if (r.bad || sp == 0)
		return -1;
	*out = st[sp - 1];
	return 0;
}

/* ------------------------------------------------------------------ */
/* Reducing a row to the compact rule.                                */

static int uw_fits(int64_t v, int bits)
{
	return v >= -(1ll << (bits - 1)) && v < (1ll << (bits - 1));
}

static int uw_reduce_cfa(const struct uw_row *row, uint64_t pc,
			 union uw_rule *r)
{
	struct uw_sym s = { B_CONST, 0, 0 };

	if (row->cfa_is_expr) {
		if (uw_eval(row->expr, row->len, pc, 0, &s) < 0)
			return -1;
	} else {
		s.base = row->cfa_reg == DW_RSP ? B_RSP :
			 row->cfa_reg == DW_RBP ? B_RBP : B_CONST;
		s.v = row->cfa_off;
	}
	if ((s.base != B_RSP && s.base != B_RBP) || !uw_fits(s.v, 32))
		return -1;
	r->f.cfa_off = (int32_t)s.v;
	r->f.bits |= (s.base == B_RBP ? UW_CFA_RBP : 0) |
		     (s.deref ? UW_CFA_DEREF : 0);
	return 0;
}

/* Where a register rule says the value is saved, as base + off with base
 * B_CFA or B_RBP; -1 if not "saved at an address" we can express. */
static int uw_reg_addr(const struct uw_reg *g, const union uw_rule *r,
		       uint64_t pc, struct uw_sym *s)
{
	if (g->how == H_OFF) {
		*s = (struct uw_sym){ B_CFA, 0, g->off };
		return 0;
	}
	if (g->how != H_EXPR || uw_eval(g->expr, g->len, pc, 1, s) < 0 ||
	    s->deref)
		return -1;
	if (s->base == B_RSP && !(r->f.bits & (UW_CFA_RBP | UW_CFA_DEREF))) {
		s->base = B_CFA;	/* rsp = CFA - cfa_off in this frame */
		s->v -= r->f.cfa_off;
	}
	return s->base == B_CFA || s->base == B_RBP ? 0 : -1;
}

static void uw_reduce_rbp(const struct uw_row *row, uint64_t pc,
			  union uw_rule *r)
{
	struct uw_sym s;
	unsigned how = UW_RBP_UNDEF;

	if (row->rbp.how == H_SAME) {
		how = UW_RBP_SAME;
	} else if (uw_reg_addr(&row->rbp, r, pc, &s) == 0 && uw_fits(s.v, 16)) {
		how = s.base == B_CFA ? UW_RBP_AT_CFA : UW_RBP_AT_RBP;
		r->f.rbp_off = (int16_t)s.v;
	}
	r->f.bits |= (uint8_t)(how << UW_RBP_SHIFT);
}

static uint64_t uw_reduce(const struct uw_row *row, uint64_t pc)
{
	union uw_rule r = { .word = 0 };
	struct uw_sym s;

	if (row->ra.how == H_UNDEF)
		return uw_simple(UW_OUTERMOST);
	if (uw_reg_addr(&row->ra, &r, pc, &s) < 0 || s.base != B_CFA ||
	    !uw_fits(s.v, 8))
		return uw_simple(UW_STOP);
	r.f.ra_off = (int8_t)s.v;
	if (uw_reduce_cfa(row, pc, &r) < 0)
		return uw_simple(UW_STOP);
	uw_reduce_rbp(row, pc, &r);
	r.f.bits |= UW_FRAME;
	return r.word;
}

/* ------------------------------------------------------------------ */
/* Building the rule for one pc (the slow path).                      */

/* mov $15,%rax; syscall: rt_sigreturn, glibc's __restore_rt. */
static const uint8_t uw_sigreturn[9] = {
	0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05
};

/* Does pc (or, if exact, pc - 7: interrupted at the syscall) start the
 * trampoline?  Reads only inside the FDE's code range. */
static int uw_is_sigreturn(uint64_t pc, int exact, const struct uw_fde *f)
{
	uint64_t at = pc;

	if (exact && pc >= f->begin + 7 && pc + 2 <= f->end &&
	    memcmp((const void *)(uintptr_t)pc, uw_sigreturn + 7, 2) == 0)
		at = pc - 7;
	if (at < f->begin || at + sizeof(uw_sigreturn) > f->end)
		return 0;
	return memcmp((const void *)(uintptr_t)at, uw_sigreturn,
		      sizeof(uw_sigreturn)) == 0;
}

static uint64_t uw_rule_from_fde(const struct uw_mod *m, uint64_t at,
				 uint64_t pc, int exact)
{
	struct uw_exec x;
	struct uw_cie c;
	struct uw_fde f;

	if (uw_fde_parse(m, uw_fde_search(m, at), &c, &f) < 0 ||
	    at < f.begin || at >= f.end)
		return uw_simple(UW_STOP);
	if (c.signal && uw_is_sigreturn(pc, exact, &f))
		return uw_simple(UW_SIGNAL);
	memset(&x, 0, sizeof(x));
	x.m = m;
	x.c = &c;
	x.loc = f.begin;
	x.target = at;
	x.row.rbp.how = H_SAME;
	x.row.ra.how = H_UNDEF;
	if (uw_run(&x, &c.insn) < 0)
		return uw_simple(UW_STOP);
	x.init = x.row;
	x.nsaved = 0;
	if (uw_run(&x, &f.insn) < 0)
		return uw_simple(UW_STOP);
	return uw_reduce(&x.row, pc);
}

/*
 * The rule for pc: a return address (exact == 0: look up pc - 1, inside
 * the call) or an interrupted pc (exact).  *cacheable is 0 when pc is in
 * no module, which a later dlopen() may change.
 */
static uint64_t uw_rule_compute(uint64_t pc, int exact, int *cacheable)
{
	struct dl_find_object fo;
	struct uw_mod m;
	uint64_t at = exact ? pc : pc - 1;

	*cacheable = 0;
	if (_dl_find_object((void *)(uintptr_t)at, &fo) != 0)
		return uw_simple(UW_STOP);
	*cacheable = 1;
	m.lo = (uint64_t)(uintptr_t)fo.dlfo_map_start;
	m.hi = (uint64_t)(uintptr_t)fo.dlfo_map_end;
	m.hdr = fo.dlfo_eh_frame;
	if (!m.hdr || (uint64_t)(uintptr_t)m.hdr < m.lo ||
	    (uint64_t)(uintptr_t)m.hdr >= m.hi)
		return uw_simple(UW_STOP);
	return uw_rule_from_fde(&m, at, pc, exact);
}

/* ------------------------------------------------------------------ */
/* Rule caches.                                                       */

/*
 * Global: open addressing, keys claimed by CAS, the rule stored after;
 * a reader that finds its key with rule 0 treats it as a miss.  Slots are
 * never freed one by one; ls_unwind_invalidate() zeroes the whole table
 * while uw_seq is odd, and walks that overlap it redo themselves
 * uncached.  When a probe run is full the rule is simply not cached.
 */
#define UW_TAB_BITS 17
#define UW_TAB_SIZE (1u << UW_TAB_BITS)
#define UW_TAB_PROBE 16

/* Per-thread: direct mapped, owned by one thread, never shared. */
#define UW_TC_BITS 10
#define UW_TC_SIZE (1u << UW_TC_BITS)

struct uw_slot {
	uint64_t key;		/* (pc << 1 | exact); 0 = empty */
	uint64_t rule;
};

struct uw_tcache {
	struct uw_tcache *next;	/* registry, never unlinked */
	int in_use;
	uint32_t seq;		/* uw_seq the slots belong to */
	struct uw_slot slot[UW_TC_SIZE];
};

static struct uw_slot *uw_tab;
static uint32_t uw_seq;		/* odd while an invalidation runs */
static struct uw_tcache *uw_registry;
static pthread_key_t uw_key;
static int uw_key_ok;

/* Per-thread, initial-exec TLS: no allocation on first access. */
struct uw_thread {
	struct uw_tcache *tc;	/* NULL: none yet; UW_TC_GONE: exiting */
	uint64_t home_lo;	/* [home_lo, home_hi): proven readable stack */
	uint64_t home_hi;	/* 0 until known; home_lo is written first */
	int busy;		/* a capture runs (signal reentry guard) */
};
static __thread struct uw_thread uw_self;

#define UW_TC_GONE ((struct uw_tcache *)1)

static inline uint64_t uw_hash(uint64_t key)
{
	return key * 0x9e3779b97f4a7c15ull;
}

static uint64_t uw_tab_get(const struct uw_slot *tab, uint64_t key)
{
	uint64_t h = uw_hash(key) >> (64 - UW_TAB_BITS), k;
	const struct uw_slot *s;
	unsigned i;

	for (i = 0; i < UW_TAB_PROBE; i++) {
		s = &tab[(h + i) & (UW_TAB_SIZE - 1)];
		k = __atomic_load_n(&s->key, __ATOMIC_ACQUIRE);
		if (k == key)
			return __atomic_load_n(&s->rule, __ATOMIC_ACQUIRE);
		if (k == 0)
			return 0;
	}
	return 0;
}

static void uw_tab_put(struct uw_slot *tab, uint64_t key, uint64_t rule)
{
	uint64_t h = uw_hash(key) >> (64 - UW_TAB_BITS), k;
	struct uw_slot *s;
	unsigned i;

	for (i = 0; i < UW_TAB_PROBE; i++) {
		s = &tab[(h + i) & (UW_TAB_SIZE - 1)];
		k = 0;
		if (__atomic_compare_exchange_n(&s->key, &k, key, 0,
						__ATOMIC_ACQ_REL,
						__ATOMIC_ACQUIRE)) {
			__atomic_store_n(&s->rule, rule, __ATOMIC_RELEASE);
			return;
		}
		if (k == key)
			return;		/* another thread got there first */
	}
}

/* Thread exit (pthread key destructor): the cache goes back to the pool.
 * Allocations made later in this thread's exit run uncached. */
static void uw_thread_exit(void *arg)
{
	struct uw_tcache *tc = arg;

	uw_self.tc = UW_TC_GONE;
	if (tc)
		__atomic_store_n(&tc->in_use, 0, __ATOMIC_RELEASE);
}

static struct uw_tcache *uw_tc_claim(void)
{
	struct uw_tcache *tc;
	int zero;

	for (tc = __atomic_load_n(&uw_registry, __ATOMIC_ACQUIRE); tc;
	     tc = tc->next) {
		zero = 0;
		if (!__atomic_load_n(&tc->in_use, __ATOMIC_RELAXED) &&
		    __atomic_compare_exchange_n(&tc->in_use, &zero, 1, 0,
						__ATOMIC_ACQUIRE,
						__ATOMIC_RELAXED)) {
			tc->seq = 1;	/* odd: never current, so cleared */
			return tc;
		}
	}
	tc = ls_sys_map(sizeof(*tc));
	if (!tc)
		return NULL;
	tc->in_use = 1;
	tc->seq = 1;
	tc->next = __atomic_load_n(&uw_registry, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&uw_registry, &tc->next, tc, 1,
					    __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
	return tc;
}

/* The calling thread's cache, current for seq; NULL if none. */
static struct uw_tcache *uw_tc_get(uint32_t seq)
{
	struct uw_tcache *tc = uw_self.tc;

	if (ls_unlikely(!tc)) {
		if (!__atomic_load_n(&uw_key_ok, __ATOMIC_ACQUIRE))
			return NULL;
		tc = uw_tc_claim();
		if (!tc)
			return NULL;
		uw_self.tc = tc;
		/* Keys below glibc's PTHREAD_KEY_2NDLEVEL_SIZE (32, checked
		 * at init) are stored without allocating. */
		pthread_setspecific(uw_key, tc);
	}
	if (ls_unlikely(tc == UW_TC_GONE))
		return NULL;
	if (ls_unlikely(tc->seq != seq)) {
		memset(tc->slot, 0, sizeof(tc->slot));
		tc->seq = seq;
	}
	return tc;
}

/* ------------------------------------------------------------------ */
/* The proven-readable stack range.                                   */

/*
 * Reads during a walk are bounded to [lo, hi): pages proven readable by
 * a probe.  A thread's "home" range runs from the lowest sp probed so far
 * to the top of its stack: for the main thread the page holding
 * __libc_stack_end, for a glibc thread its thread pointer (glibc puts the
 * TCB and static TLS at the top of every thread stack, caller-provided
 * ones included), so [sp, tp) lies in one mapping.  That range is probed
 * once, then only extended downward as the stack deepens; it stays
 * mapped for the thread's life.  An sp outside it (sigaltstack, makecontext
 * or coroutine stacks, threads not made by glibc) gets a window of at
 * most UW_WINDOW_PAGES probed on each capture, never cached because such
 * stacks can be freed.
 */
#define UW_HOME_MAX (1ull << 30)
#define UW_WINDOW_PAGES 32
#define UW_PROBE_BATCH 64

static int uw_probe_mincore;	/* process_vm_readv refused: weaker probe */

static inline uint64_t uw_tp(void)
{
	uint64_t tp;

	__asm__("mov %%fs:0, %0" : "=r"(tp));
	return tp;
}

/* Fallback: mapped, but PROT_NONE is not detected.  Pages up to n. */
static uint64_t uw_probe_mapped(uint64_t page, uint64_t n)
{
	unsigned char vec[1];
	uint64_t i;

	for (i = 0; i < n; i++)
		if (uw_sys3(SYS_mincore, (long)(page + i * UW_PAGE),
			    (long)UW_PAGE, (long)vec) != 0)
			break;
	return i;
}

/* How many of the n pages from page on are readable, counting from the
 * first.  process_vm_readv() on ourselves fails with EFAULT at the first
 * unreadable page instead of faulting. */
static uint64_t uw_probe(uint64_t page, uint64_t n)
{
	struct iovec remote[UW_PROBE_BATCH], local;
	char buf[UW_PROBE_BATCH];
	uint64_t done = 0, cnt, i;
	long pid = uw_sys3(SYS_getpid, 0, 0, 0), r;

	while (done < n && !__atomic_load_n(&uw_probe_mincore, __ATOMIC_RELAXED)) {
		cnt = n - done < UW_PROBE_BATCH ? n - done : UW_PROBE_BATCH;
		for (i = 0; i < cnt; i++) {
			remote[i].iov_base = (void *)(uintptr_t)(page + (done + i) * UW_PAGE);
			remote[i].iov_len = 1;
		}
		local.iov_base = buf;
		local.iov_len = cnt;
		r = uw_sys6(SYS_process_vm_readv, pid, (long)&local, 1,
			    (long)remote, (long)cnt, 0);
		if (r == -ENOSYS || r == -EPERM || r == -EACCES) {
			__atomic_store_n(&uw_probe_mincore, 1, __ATOMIC_RELAXED);
			break;
		}
		done += r > 0 ? (uint64_t)r : 0;
		if (r != (long)cnt)
			return done;
	}
	if (done < n && __atomic_load_n(&uw_probe_mincore, __ATOMIC_RELAXED))
		done += uw_probe_mapped(page + done * UW_PAGE, n - done);
	return done;
}

/* The top of the stack sp would be the home stack of, or 0. */
static uint64_t uw_home_top(uint64_t sp)
{
	uint64_t end = (uint64_t)(uintptr_t)__libc_stack_end, tp = uw_tp();

	if (sp < end && end - sp <= UW_HOME_MAX)
		return (end | (UW_PAGE - 1)) + 1;
	if (sp < tp && tp - sp <= UW_HOME_MAX)
		return tp;
	return 0;
}

/* Prove [page of sp, top) readable, reusing what is proven already. */
static int uw_home_grow(uint64_t sp, uint64_t top)
{
	uint64_t lo = sp & ~(UW_PAGE - 1), hi = uw_self.home_hi;
	uint64_t from = hi == top ? uw_self.home_lo : top;
	uint64_t n = (from - lo + UW_PAGE - 1) / UW_PAGE;

	if (uw_probe(lo, n) != n)
		return -1;
	uw_self.home_lo = lo;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	uw_self.home_hi = top;
	return 0;
}

/* Set [*lo, *hi) to a proven range holding sp; -1 if there is none. */
static int uw_bounds(uint64_t sp, uint64_t *lo, uint64_t *hi)
{
	uint64_t top, page, n;

	*hi = uw_self.home_hi;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	*lo = uw_self.home_lo;
	if (ls_likely(sp >= *lo && sp < *hi))
		return 0;
	top = uw_home_top(sp);
	if (top && uw_home_grow(sp, top) == 0) {
		*lo = uw_self.home_lo;
		*hi = top;
		return 0;
	}
	page = sp & ~(UW_PAGE - 1);
	if (sp >= UW_USER_MAX)
		return -1;
	n = uw_probe(page, UW_WINDOW_PAGES);
	*lo = page;
	*hi = page + n * UW_PAGE;
	return sp < *hi ? 0 : -1;
}

/* ------------------------------------------------------------------ */
/* The walk.                                                          */

struct uw_walk {
	uint64_t pc, sp, rbp;	/* the frame being left */
	int exact;		/* pc was interrupted, not a return address */
	uint64_t lo, hi;	/* proven range holding sp */
	struct uw_tcache *tc;	/* NULL: no per-thread cache */
	struct uw_slot *tab;	/* NULL: no global table */
	uint32_t seq;
};

static inline int uw_in(const struct uw_walk *w, uint64_t a)
{
	return a >= w->lo && a < w->hi && w->hi - a >= 8;
}

static inline uint64_t uw_load(uint64_t a)
{
	uint64_t v;

	memcpy(&v, (const void *)(uintptr_t)a, 8);
	return v;
}

/* Past the per-thread cache: the global table, else build the rule.
 * *cacheable is 0 for a rule that must not be kept. */
static uint64_t uw_rule_miss(struct uw_walk *w, uint64_t key, int *cacheable)
{
	uint64_t rule = w->tab ? uw_tab_get(w->tab, key) : 0;

	*cacheable = 1;
	if (rule)
		return rule;
	rule = uw_rule_compute(w->pc, w->exact, cacheable);
	if (*cacheable && w->tab &&
	    __atomic_load_n(&uw_seq, __ATOMIC_ACQUIRE) == w->seq)
		uw_tab_put(w->tab, key, rule);
	return rule;
}

static inline uint64_t uw_rule_get(struct uw_walk *w)
{
	uint64_t key = w->pc << 1 | (uint64_t)w->exact, rule;
	struct uw_slot *s;
	int cacheable;

	if (ls_unlikely(!w->tc))
		return uw_rule_miss(w, key, &cacheable);
	s = &w->tc->slot[uw_hash(key) >> (64 - UW_TC_BITS)];
	if (ls_likely(s->key == key))
		return s->rule;
	rule = uw_rule_miss(w, key, &cacheable);
	if (cacheable) {
		s->key = key;
		s->rule = rule;
	}
	return rule;
}

/* Through the sigreturn trampoline: the ucontext sits at sp. */
static int uw_step_signal(struct uw_walk *w)
{
	const uint64_t uc = w->sp;
	const uint64_t o_rip = offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]);
	const uint64_t o_rsp = offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP]);
	const uint64_t o_rbp = offsetof(ucontext_t, uc_mcontext.gregs[REG_RBP]);

	if (!uw_in(w, uc) || !uw_in(w, uc + o_rip))
		return 0;
	w->pc = uw_load(uc + o_rip);
	w->sp = uw_load(uc + o_rsp);
	w->rbp = uw_load(uc + o_rbp);
	w->exact = 1;
	/* The handler may have run on an alternate stack. */
	return uw_bounds(w->sp, &w->lo, &w->hi) == 0;
}

static inline int uw_step_frame(struct uw_walk *w, union uw_rule r)
{
	uint64_t cfa, at, rbp = w->rbp;

	cfa = (r.f.bits & UW_CFA_RBP ? w->rbp : w->sp) + (uint64_t)(int64_t)r.f.cfa_off;
	if (ls_unlikely(r.f.bits & UW_CFA_DEREF)) {
		if (!uw_in(w, cfa))
			return 0;
		cfa = uw_load(cfa);
	}
	if (ls_unlikely(cfa <= w->sp || cfa > w->hi))
		return 0;	/* the CFA must rise, inside the range */
	switch (r.f.bits >> UW_RBP_SHIFT) {
	case UW_RBP_SAME:
		break;
	case UW_RBP_AT_CFA:
		at = cfa + (uint64_t)(int64_t)r.f.rbp_off;
		rbp = uw_in(w, at) ? uw_load(at) : 0;
		break;
	case UW_RBP_AT_RBP:
		at = w->rbp + (uint64_t)(int64_t)r.f.rbp_off;
		rbp = uw_in(w, at) ? uw_load(at) : 0;
		break;
	default:
		rbp = 0;
	}
	at = cfa + (uint64_t)(int64_t)r.f.ra_off;
	if (ls_unlikely(!uw_in(w, at)))
		return 0;
	w->pc = uw_load(at);
	w->sp = cfa;
	w->rbp = rbp;
	w->exact = 0;
	return 1;
}

/* Leave the current frame: 1 if w now describes its caller. */
static inline int uw_step(struct uw_walk *w)
{
	union uw_rule r;

	if (ls_unlikely(w->pc == 0 || w->pc >= UW_USER_MAX))
		return 0;
	r.word = uw_rule_get(w);
	if (ls_likely(UW_KIND(r.f.bits) == UW_FRAME))
		return uw_step_frame(w, r);
	if (UW_KIND(r.f.bits) == UW_SIGNAL)
		return uw_step_signal(w);
	return 0;
}

static int uw_walk(struct uw_walk w, uint64_t *pcs, int max, int skip)
{
	int n = 0;

	if (uw_bounds(w.sp, &w.lo, &w.hi) < 0)
		return 0;
	while (n < max && uw_step(&w)) {
		if (w.pc == 0)
			break;
		if (skip > 0)
			skip--;
		else
			pcs[n++] = w.pc;
	}
	return n;
}

/*
 * Caches are used when no invalidation is running; a walk that overlapped
 * one may hold a rule of an unmapped module, so it is redone uncached.
 * A capture interrupted by a signal whose handler captures too: the
 * handler's walk leaves the per-thread cache alone (it may be mid-update).
 */
static int uw_capture(const struct uw_walk *start, uint64_t *pcs, int max,
		      int skip)
{
	struct uw_walk w = *start;
	int n, nested = uw_self.busy;

	uw_self.busy = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	w.seq = __atomic_load_n(&uw_seq, __ATOMIC_ACQUIRE);
	w.tab = w.seq & 1 ? NULL : __atomic_load_n(&uw_tab, __ATOMIC_ACQUIRE);
	w.tc = w.tab && !nested ? uw_tc_get(w.seq) : NULL;
	n = uw_walk(w, pcs, max, skip);
	if (w.tab && __atomic_load_n(&uw_seq, __ATOMIC_ACQUIRE) != w.seq) {
		w = *start;
		w.tab = NULL;
		w.tc = NULL;
		n = uw_walk(w, pcs, max, skip);
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	uw_self.busy = nested;
	return n;
}

/*
 * __builtin_frame_address makes GCC give this function a frame pointer
 * whatever the flags: [fp] is the caller's %rbp, fp + 8 the return
 * address, fp + 16 the caller's %rsp after the call.  So the walk starts
 * in the caller's frame without needing CFI for the agent's own code.
 */
__attribute__((noinline))
int ls_unwind_capture(uint64_t *pcs, int max, int skip)
{
	const uint64_t *fp = __builtin_frame_address(0);
	struct uw_walk w;

	if (max <= 0 || !pcs)
		return 0;
	memset(&w, 0, sizeof(w));
	w.pc = (uint64_t)(uintptr_t)__builtin_return_address(0);
	w.sp = (uint64_t)(uintptr_t)(fp + 2);
	w.rbp = fp[0];
	if (max > LS_UNWIND_MAX_FRAMES)
		max = LS_UNWIND_MAX_FRAMES;
	if (skip < 0)
		skip = 0;
	if (skip > LS_UNWIND_MAX_FRAMES)
		skip = LS_UNWIND_MAX_FRAMES;
	return uw_capture(&w, pcs, max, skip);
}

/* ------------------------------------------------------------------ */
/* Outside hooks.                                                     */

int ls_unwind_init(void)
{
	static ls_lock_t lock = LS_LOCK_INIT;
	struct uw_slot *tab;
	int rc = 0;

	ls_lock(&lock);
	if (__atomic_load_n(&uw_tab, __ATOMIC_RELAXED))
		goto out;
	tab = ls_sys_map(UW_TAB_SIZE * sizeof(*tab));
	if (!tab) {
		rc = -ENOMEM;
		goto out;
	}
	__atomic_store_n(&uw_tab, tab, __ATOMIC_RELEASE);
	/* Keys from 32 up would make pthread_setspecific() allocate. */
	if (pthread_key_create(&uw_key, uw_thread_exit) == 0 && uw_key < 32)
		__atomic_store_n(&uw_key_ok, 1, __ATOMIC_RELEASE);
out:
	ls_unlock(&lock);
	return rc;
}

void ls_unwind_invalidate(void)
{
	static ls_lock_t lock = LS_LOCK_INIT;
	struct uw_slot *tab = __atomic_load_n(&uw_tab, __ATOMIC_ACQUIRE);

	ls_lock(&lock);
	__atomic_add_fetch(&uw_seq, 1, __ATOMIC_SEQ_CST);
	/* Zero pages on next touch: a reader sees a key with rule 0 (a
	 * miss) or an empty slot, never another key's rule. */
	if (tab)
		uw_sys3(SYS_madvise, (long)tab,
			(long)(UW_TAB_SIZE * sizeof(*tab)), MADV_DONTNEED);
	__atomic_add_fetch(&uw_seq, 1, __ATOMIC_SEQ_CST);
	ls_unlock(&lock);
}

void ls_unwind_atfork_child(void)
{
	struct uw_tcache *tc;

	for (tc = uw_registry; tc; tc = tc->next)
		if (tc != uw_self.tc)
			tc->in_use = 0;
}
