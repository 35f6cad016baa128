/*
 * t-lib-symbolize.c - the symbolizer against this very process: its
 * module map comes from dl_iterate_phdr with the real build ids, and the
 * ground truth is what the compiler knows (function addresses, __LINE__).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "../../lib/symbolize.h"
#include "lib-fixture.h"
#include "lib-selfmap.h"
#include "tap.h"

extern int __libc_start_main(void);

static const char *exe_base;
static int inl_line, mid_line, outer_line;

LIB_FIXTURE_CALL_PAIR(ls_test_caller, ls_test_callee)

static inline __attribute__((always_inline)) void inl_helper(void)
{
	ls_test_callee(); inl_line = __LINE__;
	__asm__ volatile("" ::: "memory");
}

/* Two levels of inlining: each level must become a frame. */
static inline __attribute__((always_inline)) void inl_middle(void)
{
	inl_helper(); mid_line = __LINE__;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noinline, noclone)) void ls_test_outer(void)
{
	inl_middle(); outer_line = __LINE__;
	__asm__ volatile("" ::: "memory");
}

/* Functions whose symbol names are mangled, to check demangling. */
__attribute__((noinline, noclone)) void cxx_fn(int x)
	__asm__("_ZN2ls4test4funcEi");
__attribute__((noinline, noclone)) void cxx_fn(int x)
{
	seen_ra = (uintptr_t)x;
}

__attribute__((noinline, noclone)) void rust_fn(void)
	__asm__("_ZN4core3ptr13drop_in_place17h0123456789abcdefE");
__attribute__((noinline, noclone)) void rust_fn(void)
{
	seen_ra = 2;
}

__attribute__((noinline, noclone)) void rust_v0_fn(void)
	__asm__("_RNvNtCs1234_7mycrate3bar3baz");
__attribute__((noinline, noclone)) void rust_v0_fn(void)
{
	seen_ra = 3;
}

/* Symbolize, expecting exactly one frame. */
static int one(struct ls_symbolizer *s, uint32_t gen, uintptr_t addr,
	       struct ls_symframe *f)
{
	struct ls_symframe fr[LS_SYM_MAX_FRAMES];
	size_t n = 0;
	int ret = ls_symbolize_frame(s, gen, addr, fr, LS_SYM_MAX_FRAMES, &n);

	if (ret || n != 1) {
		printf("# symbolize 0x%lx: ret %d, %zu frames\n",
		       (unsigned long)addr, ret, n);
		return -1;
	}
	*f = fr[0];
	return 0;
}

static int str_is(const char *got, const char *want)
{
	if (got && want && !strcmp(got, want))
		return 1;
	if (!got && !want)
		return 1;
	printf("#   got '%s', want '%s'\n", got ? got : "(null)",
	       want ? want : "(null)");
	return 0;
}

static const char *base(const char *p)
{
	return p ? ls_sym_basename(p) : NULL;
}

/* Addresses are return addresses, named by the instruction before them:
 * the first byte of a function is named by the function that ends there
 * (a call that does not return), the second by the function itself. */
static void test_function_address(struct ls_symbolizer *s)
{
	struct ls_symframe f;

	if (!ok(one(s, 1, (uintptr_t)&ls_test_caller + 1, &f) == 0,
		"function address + 1 symbolized to one frame"))
		return;
	ok(str_is(f.function, "ls_test_caller"), "function name");
	is_u64(f.offset, 1, "offset of function address + 1 is 1");
	ok(str_is(base(f.module), exe_base), "module basename");
	ok(!f.inlined, "not inlined");
	if (one(s, 1, (uintptr_t)&ls_test_caller, &f) == 0)
		ok(!f.function || strcmp(f.function, "ls_test_caller"),
		   "its own address is named as a return address of what "
		   "precedes it");
}

static void test_return_address(struct ls_symbolizer *s)
{
	uintptr_t ra;
	struct ls_symframe f;

	ls_test_caller();
	ra = seen_ra;
	if (!ok(one(s, 1, ra, &f) == 0, "return address: one frame"))
		return;
	ok(str_is(f.function, "ls_test_caller"), "caller's name");
	is_u64(f.offset, ra - (uintptr_t)&ls_test_caller,
	       "offset is the return address's");
	ok(str_is(base(f.module), exe_base), "module basename");
	ok(str_is(base(f.file), "t-lib-symbolize.c"), "source file");
	is_u64(f.line, call_line, "line of the call");
}

static void test_inline_chain(struct ls_symbolizer *s)
{
	struct ls_symframe fr[LS_SYM_MAX_FRAMES];
	size_t n = 0;
	int ret;

	ls_test_outer();
	ret = ls_symbolize_frame(s, 1, seen_ra, fr, LS_SYM_MAX_FRAMES, &n);
	if (!ok(ret == 0 && n == 3, "two inlined levels expand to 3 frames "
		"(ret %d, n %zu)", ret, n))
		return;
	ok(str_is(fr[0].function, "inl_helper") && fr[0].inlined,
	   "innermost frame is the inlined function");
	ok(str_is(base(fr[0].file), "t-lib-symbolize.c"),
	   "inlined frame's file");
	is_u64(fr[0].line, inl_line, "inlined frame's line is the call");
	ok(str_is(fr[1].function, "inl_middle") && fr[1].inlined,
	   "then the function it was inlined into, inlined too");
	is_u64(fr[1].line, mid_line, "middle frame's line is its call");
	ok(str_is(fr[2].function, "ls_test_outer") && !fr[2].inlined,
	   "outer frame is the real function");
	is_u64(fr[2].offset, seen_ra - (uintptr_t)&ls_test_outer,
	       "outer frame's offset");
	is_u64(fr[2].line, outer_line, "outer frame's line is the call site "
	       "of the inlined function");
	ok(fr[0].addr == seen_ra && fr[1].addr == seen_ra &&
	   fr[2].addr == seen_ra, "all frames carry the address");
	ret = ls_symbolize_frame(s, 1, seen_ra, fr, 2, &n);
	ok(ret == -ENOSPC && n == 3, "too small a buffer: -ENOSPC and the "
	   "count needed");
}

static void test_libc(struct ls_symbolizer *s)
{
	void (*volatile fn)(void *, size_t, size_t,
			    int (*)(const void *, const void *)) = qsort;
	struct ls_symframe f;

	if (!ok(one(s, 1, (uintptr_t)fn + 1, &f) == 0, "qsort: one frame"))
		return;
	ok(str_is(f.function, "qsort"), "libc function name");
	is_u64(f.offset, 1, "libc function offset");
	ok(str_is(base(f.module), "libc.so.6"), "libc module basename");
	/* Versioned in libc's .symtab (with debug symbols installed):
	 * "__libc_start_main@@GLIBC_2.34" is shown without its version. */
	if (one(s, 1, (uintptr_t)&__libc_start_main + 0x10, &f) == 0)
		ok(str_is(f.function, "__libc_start_main") && f.offset == 0x10,
		   "symbol version dropped");
}

static void test_demangle(struct ls_symbolizer *s)
{
	struct ls_symframe f;

	if (one(s, 1, (uintptr_t)&cxx_fn + 1, &f) == 0)
		ok(str_is(f.function, "ls::test::func(int)"), "C++ demangled");
	else
		ok(0, "C++ symbol resolved");
	if (one(s, 1, (uintptr_t)&rust_fn + 1, &f) == 0)
		ok(str_is(f.function, "core::ptr::drop_in_place"),
		   "Rust legacy demangled");
	else
		ok(0, "Rust symbol resolved");
	if (one(s, 1, (uintptr_t)&rust_v0_fn + 1, &f) == 0)
		ok(str_is(f.function, "mycrate::bar::baz"), "Rust v0 demangled");
	else
		ok(0, "Rust v0 symbol resolved");
}

static void test_no_module(struct ls_symbolizer *s)
{
	struct ls_symframe f;

	if (!ok(one(s, 1, 0x10, &f) == 0, "address in no module: one frame"))
		return;
	ok(!f.module && !f.function && !f.file && f.line == 0,
	   "no module, no function, no line");
	is_u64(f.addr, 0x10, "address kept");
}

static void test_cache(struct ls_symbolizer *s)
{
	struct ls_symframe a, b;

	ls_test_caller();
	ok(one(s, 1, seen_ra, &a) == 0 && one(s, 1, seen_ra, &b) == 0 &&
	   a.function == b.function && a.file == b.file && a.line == b.line,
	   "repeated lookups give the same cached strings");
}

static void test_vdso(struct ls_symbolizer *s, const struct selfmap *l)
{
	struct ls_symframe f;
	size_t i;

	for (i = 0; i < l->n && strcmp(l->m[i].path, "linux-vdso.so.1"); i++)
		;
	if (i == l->n) {
		printf("# skip: no vDSO mapped\n");
		return;
	}
	if (ok(one(s, 1, l->m[i].lo + 0x10, &f) == 0, "vDSO address"))
		ok(!f.function && str_is(f.module, "linux-vdso.so.1"),
		   "vDSO: module named, nothing resolved");
}

/*
 * The executable mapped twice at the same place: with its true build id
 * for generations [1, 5), then as a different build (flipped build id)
 * from generation 5 on.  Plus a module whose file is gone and one without
 * a path.
 */
static struct ls_module *generations_map(const struct selfmap *l,
					 uintptr_t exe_addr, size_t *n)
{
	struct ls_module *m = calloc(l->n + 3, sizeof(*m));
	const struct ls_module *exe = selfmap_find(l, exe_addr);
	static char gone[] = "/nonexistent/libgone.so", none[] = "";

	memcpy(m, l->m, l->n * sizeof(*m));
	*n = l->n;
	m[*n] = *exe;
	m[*n].gen_from = 5;
	m[*n].build_id[0] ^= 0xff;
	m[exe - l->m].gen_to = 5;
	(*n)++;
	m[*n] = (struct ls_module){ .lo = 0x1000, .hi = 0x2000, .gen_from = 1,
		.gen_to = LSNAP_GEN_LOADED, .build_id_len = 4, .path = gone };
	(*n)++;
	m[*n] = (struct ls_module){ .lo = 0x3000, .hi = 0x4000, .gen_from = 1,
		.gen_to = LSNAP_GEN_LOADED, .path = none };
	(*n)++;
	return m;
}

static void test_generations(const struct selfmap *l)
{
	struct ls_snapshot snap = { 0 };
	struct ls_symbolizer *s;
	struct ls_symframe f;
	uintptr_t ra;

	ls_test_caller();
	ra = seen_ra;
	snap.modules = generations_map(l, ra, &snap.nmodules);
	s = ls_symbolizer_new(&snap);
	if (one(s, 2, ra, &f) == 0)
		ok(str_is(f.function, "ls_test_caller"),
		   "generation 2: the matching build resolves");
	if (one(s, 0, ra, &f) == 0)
		ok(str_is(f.function, "ls_test_caller"),
		   "generation 0: the first module loaded after it is used");
	if (one(s, 6, ra, &f) == 0) {
		ok(!f.function && !f.file && f.line == 0,
		   "generation 6: build id differs, no symbol");
		ok(str_is(base(f.module), exe_base),
		   "generation 6: module still named");
	}
	if (one(s, 1, 0x1800, &f) == 0)
		ok(!f.function && str_is(f.module, "/nonexistent/libgone.so"),
		   "file gone: module named, nothing resolved");
	if (one(s, 1, 0x3800, &f) == 0)
		ok(!f.function && !f.module,
		   "module without a path: nothing resolved");
	ls_symbolizer_free(s);
	free(snap.modules);
}

int main(void)
{
	struct selfmap l = { 0 };
	struct ls_snapshot snap = { 0 };
	struct ls_symbolizer *s;

	selfmap_read(&l);
	exe_base = ls_sym_basename(l.exe);
	setenv("DEBUGINFOD_URLS", "http://127.0.0.1:9/", 1);
	snap.modules = l.m;
	snap.nmodules = l.n;
	s = ls_symbolizer_new(&snap);
	if (!ok(s != NULL, "symbolizer created"))
		return tap_done();
	ok(getenv("DEBUGINFOD_URLS") == NULL, "DEBUGINFOD_URLS removed");
	test_function_address(s);
	test_return_address(s);
	test_inline_chain(s);
	test_libc(s);
	test_demangle(s);
	test_no_module(s);
	test_cache(s);
	test_vdso(s, &l);
	ls_symbolizer_free(s);
	test_generations(&l);
	selfmap_free(&l);
	return tap_done();
}
