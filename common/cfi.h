/*
 * cfi.h - the unwind rule of one code address, from the .eh_frame CFI of
 * the module that holds it.  The unwinder (unwind.h) caches these.
 *
 * A rule is one 64-bit word, so caches can publish it with one atomic
 * store: where the CFA is (%rsp or %rbp plus an offset, possibly loaded
 * from there), where the return address and the caller's %rbp are saved,
 * or that the frame is a sigreturn trampoline, the outermost frame, or
 * one that cannot be unwound.  x86_64 only.
 */
#ifndef LEAKSCOPE_COMMON_CFI_H
#define LEAKSCOPE_COMMON_CFI_H

#include <stdint.h>

enum ls_cfi_kind {
	LS_CFI_NONE = 0,	/* empty slot / not ready: never a real rule */
	LS_CFI_FRAME,		/* an ordinary frame: apply the offsets */
	LS_CFI_OUTERMOST,	/* return address undefined: the walk is done */
	LS_CFI_SIGNAL,		/* sigreturn trampoline: ucontext at sp */
	LS_CFI_STOP,		/* no usable CFI: cannot go further */
	LS_CFI_NOMODULE,	/* no loaded module holds the pc (JIT
				   code?): no CFI; ls_cfi_rule() only */
};

enum ls_cfi_rbp {
	LS_CFI_RBP_SAME = 0,	/* callee left %rbp alone */
	LS_CFI_RBP_AT_CFA,	/* saved at CFA + rbp_off */
	LS_CFI_RBP_AT_RBP,	/* saved at %rbp + rbp_off (realigned stack) */
	LS_CFI_RBP_UNDEF,	/* unknown: 0, so no %rbp-based rule works */
};

union ls_cfi_rule {
	uint64_t word;
	struct {
		int32_t cfa_off;
		int16_t rbp_off;
		int8_t ra_off;	/* return address at CFA + ra_off */
		uint8_t bits;	/* kind | cfa on rbp | cfa deref | rbp rule */
	} f;
};

#define LS_CFI_KIND(b) ((b) & 7u)
#define LS_CFI_CFA_RBP 0x08u	/* CFA base is %rbp, else %rsp */
#define LS_CFI_CFA_DEREF 0x10u	/* CFA = *(base + cfa_off) */
#define LS_CFI_RBP_SHIFT 5

/*
 * The rule for pc.  exact == 0: pc is a return address, so the row of
 * the call instruction (pc - 1) applies; exact != 0: pc was interrupted
 * by a signal and its own row applies.  Never 0 (LS_CFI_NONE).
 *
 * A pc in no loaded module gets LS_CFI_NOMODULE, and *cacheable is set
 * to 0: a later dlopen() may change that answer, whereas any other
 * answer holds until the module is unloaded.
 *
 * Reads CFI only inside the module _dl_find_object() reports, each read
 * bounded to its mapping; no allocation, no lock (_dl_find_object is
 * async-signal-safe), errno untouched.  Safe in allocation hooks and
 * signal handlers.  Costs about a microsecond: cache the result.
 * _dl_find_object came in glibc 2.35: before, the module comes from
 * dl_iterate_phdr, which takes the loader's lock (not signal-safe).
 */
uint64_t ls_cfi_rule(uint64_t pc, int exact, int *cacheable);
/* 1 if at lies in a loaded module (_dl_find_object, or dl_iterate_phdr
 * where the glibc has no _dl_find_object). */
int ls_cfi_in_module(uint64_t at);

/* Look up _dl_find_object (dlsym may allocate: at start, outside hooks
 * and signal handlers).  ls_cfi_rule does it on its first call when
 * nobody did. */
void ls_cfi_init(void);
/* Use fn as _dl_find_object; NULL: the dl_iterate_phdr fallback, as
 * before glibc 2.35 (tests/unit/t-agent-cfifind.c compares them). */
void ls_cfi_set_finder(void *fn);

/*
 * The same for a module this process can read but did not load itself:
 * [lo, hi) holds the module's image (its PT_LOAD segments at their
 * virtual addresses, gaps readable), eh_frame_hdr points into it, and pc
 * is an address of that image.  Every read stays inside [lo, hi).  The
 * eBPF tracer maps the files of another process so (lib/stackcopy.c).
 * No allocation, no lock; thread-safe.
 */
uint64_t ls_cfi_rule_in(uint64_t lo, uint64_t hi, const void *eh_frame_hdr,
			uint64_t pc, int exact);

/*
 * The row at pc in full, %rbx included, for what the compact rule cannot
 * hold: a CFA based on %rbx (glibc's lazy-binding trampoline
 * _dl_runtime_resolve sets CFA = %rbx + 32 after realigning %rsp), which
 * needs %rbx as each inner frame saved it.  Only a CFA that is a register
 * plus an offset, and a return address saved at CFA + ra_off.  Returns 0,
 * or -1 when the row is not of that form, the pc is in no module or is
 * the sigreturn trampoline.  Same safety as ls_cfi_rule(), and its cost
 * (a microsecond): for the rare frames the compact rule stops at.
 */
enum ls_cfi_reg { LS_CFI_REG_RSP, LS_CFI_REG_RBP, LS_CFI_REG_RBX };

struct ls_cfi_full {
	enum ls_cfi_reg cfa_reg;
	int64_t cfa_off, ra_off;
	int rbp_how, rbx_how;	/* LS_CFI_RBP_SAME, _AT_CFA or _UNDEF */
	int64_t rbp_off, rbx_off;	/* saved at CFA + off */
};

int ls_cfi_full(uint64_t pc, int exact, struct ls_cfi_full *f);

#endif
