/*
 * t-agent-jitfp.c - the unwinder through code without CFI: a JIT's code,
 * generated here into an anonymous executable mapping that no module
 * holds, followed by its frame pointers (agent/unwind.c, uw_fp_walk).
 *
 * The generated stubs call a C function that captures the stack.  The
 * ground truth is built by hand: the stub's return address is its base
 * plus the length of its code up to the call; a stub with a real frame
 * pointer hands back to CFI, so the frames after it are exactly what a
 * capture in its C caller gives; fake frame chains laid out on the heap
 * (as an Erlang process's stack is) give exactly the return addresses
 * written in them, and a chain that breaks off gives the stop frame.
 * Then through the caches: a stub in this module without CFI (as V8's
 * builtins are in node) is walked once and then answered by the walk
 * memo, a chain on the heap is walked every time.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include "../../agent/codemap.h"
#include "../../agent/unwind.h"
#include "../../common/lsnap.h"
#include "tap.h"

#define MAXF 64
#define NOFP __attribute__((noipa, optimize("omit-frame-pointer")))

/* push rbp; mov rbp, rsp; call *rdi; pop rbp; ret */
static const unsigned char stub_fp_code[] = {
	0x55, 0x48, 0x89, 0xe5, 0xff, 0xd7, 0x5d, 0xc3
};
/* push rbp; mov rbp, rsi; call *rdi; pop rbp; ret: %rbp is whatever
 * the caller passed, as in a runtime that keeps no frame pointers */
static const unsigned char stub_rbp_code[] = {
	0x55, 0x48, 0x89, 0xf5, 0xff, 0xd7, 0x5d, 0xc3
};
#define STUB_RA 6		/* both: the call ends there */

typedef void (*stub_fn)(void (*target)(void), void *rbp);

static uint64_t got[MAXF];
static int ngot;
static volatile int sink;

NOFP static void target(void)
{
	ngot = ls_unwind_capture(got, MAXF, 0);
	sink++;
}

/* Calls the stub; ref gets a capture from here, the stub's caller. */
static uint64_t ref[MAXF];
static int nref;

NOFP static void outer(stub_fn stub, void *rbp)
{
	nref = ls_unwind_capture(ref, MAXF, 0);
	stub(target, rbp);
	sink++;
}

static unsigned char *code;

static stub_fn put_stub(size_t at, const unsigned char *bytes, size_t n)
{
	memcpy(code + at, bytes, n);
	return (stub_fn)(void *)(code + at);
}

static void test_fp_stub(void)
{
	stub_fn stub = put_stub(0, stub_fp_code, sizeof(stub_fp_code));
	int i, same = 1;

	outer(stub, NULL);
	ok(ngot >= 3 && got[0] == (uint64_t)(uintptr_t)code + STUB_RA,
	   "frame pointer stub: the first frame is the return into it");
	ok(ngot >= 3 && got[1] > (uint64_t)(uintptr_t)outer &&
	   got[1] < (uint64_t)(uintptr_t)outer + 256,
	   "the frame pointer leads to its caller, outer()");
	for (i = 0; i + 2 < ngot && i < nref; i++)
		same &= got[i + 2] == ref[i];
	ok(ngot == nref + 2 && same && nref > 2,
	   "then CFI takes over: the same %d frames a capture in outer() "
	   "gives (%d)", nref, ngot - 2);
}

/* A chain laid out on the heap: frames[i] = { next fp, return address }. */
static uint64_t *heap_chain(int n)
{
	uint64_t *f = aligned_alloc(16, (size_t)n * 32);
	int i;

	for (i = 0; i < n; i++) {
		f[4 * i] = i + 1 < n ? (uint64_t)(uintptr_t)&f[4 * (i + 1)] : 0;
		f[4 * i + 1] = (uint64_t)(uintptr_t)code + 0x100 + 16 * i;
	}
	return f;
}

static void test_heap_chain(void)
{
	stub_fn stub = put_stub(64, stub_rbp_code, sizeof(stub_rbp_code));
	uint64_t *f = heap_chain(4), ra0 = (uint64_t)(uintptr_t)code + 64 +
					     STUB_RA;
	int i, same = 1;

	outer(stub, f);
	for (i = 0; i < 4; i++)
		same &= ngot > i + 1 && got[i + 1] == f[4 * i + 1];
	ok(ngot == 5 && got[0] == ra0 && same,
	   "a whole chain on the heap: the stub, then the 4 return "
	   "addresses written in it, nothing after its 0 (%d frames)", ngot);

	f[4 * 2] = 3;		/* misaligned: the chain breaks there */
	outer(stub, f);
	ok(ngot == 2 && got[0] == ra0 && got[1] == LSNAP_FRAME_STOP_NOFP,
	   "a chain that breaks off is dropped: the stub, then the stop "
	   "frame (%d frames)", ngot);

	f[4 * 2] = (uint64_t)(uintptr_t)&f[4 * 3];
	f[4 * 3 + 1] = (uint64_t)(uintptr_t)f;	/* heap: not code */
	outer(stub, f);
	ok(ngot == 2 && got[1] == LSNAP_FRAME_STOP_NOFP,
	   "a return address outside executable memory breaks it too");

	f[4 * 3 + 1] = (uint64_t)(uintptr_t)code + 0x130;
	outer(stub, f);
	ok(ngot == 5, "mended, the chain is whole again (%d frames)", ngot);

	outer(stub, NULL);
	ok(ngot == 2 && got[1] == LSNAP_FRAME_STOP_NOFP,
	   "no frame pointer at all: the stub, then the stop frame");
	free(f);
}

/* Code mapped after the map of code was read is found once the hooks
 * say the mappings changed, and not as code before. */
static void test_new_code(void)
{
	unsigned char *more = mmap(NULL, 4096, PROT_READ | PROT_WRITE |
				   PROT_EXEC, MAP_PRIVATE | MAP_ANONYMOUS,
				   -1, 0);
	uint64_t *f = heap_chain(1);

	f[1] = (uint64_t)(uintptr_t)more + 8;
	outer(put_stub(64, stub_rbp_code, sizeof(stub_rbp_code)), f);
	ok(ngot == 2 && got[1] == LSNAP_FRAME_STOP_NOFP,
	   "new code unknown before the mappings are said to change");
	ls_codemap_changed();
	outer(put_stub(64, stub_rbp_code, sizeof(stub_rbp_code)), f);
	ok(ngot == 2 && got[1] == f[1], "known after (%d frames)", ngot);
	munmap(more, 4096);
	free(f);
}

/* The frame-pointer stub again, in this module but without CFI (no .cfi
 * directives: no FDE), as V8's builtins are in the node binary. */
__asm__(".text\n"
	".type jitfp_module_stub, @function\n"
	"jitfp_module_stub:\n"
	"\tpush %rbp\n\tmov %rsp, %rbp\n\tcall *%rdi\n\tpop %rbp\n\tret\n"
	".size jitfp_module_stub, . - jitfp_module_stub\n");
void jitfp_module_stub(void (*target)(void), void *rbp);

/* The walk memo: a walk through frame pointers on the thread's stack is
 * kept (its words recorded) when its rules are (code in a module; code
 * in no module has rules that are never cached), one through a chain
 * off the stack is not (its words could change unseen). */
static int token;
static void *memo_val;

__attribute__((noipa)) static void target_memo(void)
{
	struct ls_unwind_start st = LS_UNWIND_HERE();
	void *v;

	ngot = ls_unwind_capture_memo_from(&st, got, MAXF, 0, 7, st.pc, &v);
	memo_val = v;
	if (!v)
		ls_unwind_memo_put(&token);
	sink++;
}

NOFP static void outer_memo(stub_fn stub, void *rbp)
{
	stub(target_memo, rbp);
	sink++;
}

static void test_memo(void)
{
	stub_fn fp_stub = jitfp_module_stub;
	stub_fn rbp_stub = put_stub(192, stub_rbp_code, sizeof(stub_rbp_code));
	uint64_t *f = heap_chain(3), first[MAXF];
	int i, n = 0, hits = 0, n0 = 0;

	for (i = 0; i < 6; i++) {
		outer_memo(fp_stub, NULL);	/* one call site for all */
		if (!i) {
			n0 = ngot;
			memcpy(first, got, sizeof(first));
			continue;
		}
		hits += memo_val == &token;
		if (memo_val != &token && (ngot != n0 ||
		    memcmp(got, first, (size_t)n0 * 8)))
			hits = -100;	/* a walk that differs */
	}
	ok(n0 > 4 && first[0] == (uint64_t)(uintptr_t)jitfp_module_stub +
	   STUB_RA && first[1] > (uint64_t)(uintptr_t)outer_memo &&
	   first[1] < (uint64_t)(uintptr_t)outer_memo + 256 && hits >= 4,
	   "through a module's frame-pointer code without CFI (%d frames, on "
	   "to outer_memo()): the memo answers the same walk again (%d of 5)",
	   n0, hits);
	hits = 0;
	for (i = 0; i < 5; i++) {
		outer_memo(rbp_stub, f);
		hits += memo_val == &token;
		n = ngot;
		if (i == 2)
			f[4 * 1 + 1] = (uint64_t)(uintptr_t)code + 0x200;
	}
	ok(hits == 0 && n == 4 && got[2] == (uint64_t)(uintptr_t)code + 0x200,
	   "through a chain on the heap: walked every time, so a changed "
	   "return address there shows (%d hits, %d frames)", hits, n);
	free(f);
}

int main(void)
{
	code = mmap(NULL, 4096, PROT_READ | PROT_WRITE | PROT_EXEC,
		    MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (code == MAP_FAILED) {
		ok(0, "an executable mapping for the stubs");
		return tap_done();
	}
	ls_codemap_changed();
	test_fp_stub();
	test_heap_chain();
	test_new_code();
	ok(ls_unwind_init() == 0, "ls_unwind_init: the caches and the memo");
	test_fp_stub();		/* again, through the caches */
	test_heap_chain();
	test_memo();
	return tap_done();
}
