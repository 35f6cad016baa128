/*
 * t-agent-unwind.c - the CFI unwinder against libunwind, frame by frame.
 *
 * Ground truth is libunwind's unw_backtrace (Debian's libunwind8, loaded
 * with dlopen as the agent does, so no link flag is needed) taken from
 * the same frame as our capture, and __builtin_return_address for pcs[0].
 * The helpers are built without frame pointers (checked at run time from
 * their code bytes), some with alloca so their CFA is %rbp-based, some
 * realigning their stack (CFA kept in memory), some in asm with a frame
 * pointer or junk in %rbp; stacks go through libc callbacks, a thread,
 * signal handlers on the thread's stack and on an alternate stack, and a
 * makecontext stack.  Then what the frame cache takes from earlier walks
 * is checked: along thousands of mutating call paths, against cold walks
 * over garbage-filled stacks (in a child, which must not crash), and from
 * two threads while the caches are invalidated under them.
 */
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/wait.h>
#include <ucontext.h>
#include <unistd.h>
#include "../../agent/libunwind-load.h"
#include "../../agent/unwind.h"
#include "tap.h"

#define MAXF 256
/* noipa: no inlining, no cloning for constant arguments, no tail-call
 * surprises from IPA: every helper is one real frame. */
#define NOFP __attribute__((noipa, optimize("omit-frame-pointer")))

static ls_unw_backtrace_fn unw_bt;

/* One capture by us and one by libunwind from the same frame. */
struct cap {
	uint64_t ours[MAXF];
	void *theirs[MAXF];
	int n_ours, n_theirs;
	uint64_t ra;		/* the capturing frame's return address */
	int with_cold;		/* first a capture right after invalidating */
	uint64_t cold[MAXF];
	int n_cold;
};

static volatile int sink;

/*
 * The walk memo, checked on every capture_both(): the value attached to a
 * walk is a copy of its frames, so a hit must give back exactly the
 * frames a fresh walk gives now.  Values are kept for the whole run.
 */
struct memo_val {
	int n;
	uint64_t pcs[MAXF];
};

#define MEMO_VALS 20000

static struct memo_val *memo_vals;
static int memo_nvals;
static long memo_hits, memo_misses, memo_bad;	/* atomic: signal handlers */

#define MEMO_ADD(v, n) __atomic_add_fetch(&(v), (n), __ATOMIC_RELAXED)

/* Frames after the first (each capture has its own call site) equal. */
static int same_tail(const uint64_t *a, int na, const uint64_t *b, int nb)
{
	return na == nb && na > 0 &&
	       !memcmp(a + 1, b + 1, (size_t)(na - 1) * sizeof(*a));
}

/* The memo's walk starts one frame deeper, in memo_check(): after its
 * return address into capture_both() come the frames of c. */
static int memo_same(const uint64_t *pcs, int n, const struct cap *c)
{
	return n == c->n_ours + 1 && n > 1 &&
	       !memcmp(pcs + 1, c->ours, (size_t)c->n_ours * sizeof(*pcs));
}

NOFP static void memo_check(struct cap *c, uint64_t hint)
{
	uint64_t pcs[MAXF];
	struct memo_val *v;
	void *val;
	int n = ls_unwind_capture_memo_from(NULL, pcs, MAXF, 0, 7, hint,
					    &val), i;

	if (val) {
		v = val;
		MEMO_ADD(memo_hits, 1);
		MEMO_ADD(memo_bad, !memo_same(v->pcs, v->n, c));
		return;
	}
	MEMO_ADD(memo_misses, 1);
	MEMO_ADD(memo_bad, !memo_same(pcs, n, c));
	i = MEMO_ADD(memo_nvals, 1) - 1;
	if (i < MEMO_VALS) {
		v = &memo_vals[i];
		v->n = n;
		memcpy(v->pcs, pcs, (size_t)n * sizeof(*pcs));
		ls_unwind_memo_put(v);
	}
}

NOFP static void capture_both(struct cap *c)
{
	if (c->with_cold) {
		ls_unwind_invalidate();
		c->n_cold = ls_unwind_capture(c->cold, MAXF, 0);
	}
	c->n_ours = ls_unwind_capture(c->ours, MAXF, 0);
	c->n_theirs = unw_bt(c->theirs, MAXF);
	c->ra = (uint64_t)(uintptr_t)__builtin_return_address(0);
	if (memo_vals)
		memo_check(c, c->ra);
	sink++;
}

/* The memo's record over the captures since the last call. */
static void memo_report(const char *what, int want_hits)
{
	ok(memo_bad == 0 && (!want_hits || memo_hits > 0),
	   "%s: walk memo: %ld hits, %ld misses, %ld differ from a fresh "
	   "walk", what, memo_hits, memo_misses, memo_bad);
	memo_hits = memo_misses = memo_bad = 0;
}

/* Index where libunwind's stack meets ours (its first frames are inside
 * unw_backtrace and the capturing frame), or -1. */
static int align(const struct cap *c)
{
	int j;

	for (j = 0; j < 4 && j < c->n_theirs; j++)
		if (c->n_ours > 0 &&
		    (uint64_t)(uintptr_t)c->theirs[j] == c->ours[0])
			return j;
	return -1;
}

/* Number of leading frames equal after alignment; -1 if not aligned. */
static int same_frames(const struct cap *c)
{
	int j = align(c), i;

	if (j < 0)
		return -1;
	for (i = 0; i < c->n_ours && j + i < c->n_theirs; i++)
		if (c->ours[i] != (uint64_t)(uintptr_t)c->theirs[j + i])
			break;
	return i;
}

static void check_cap(const struct cap *c, const char *what, int min)
{
	int j = align(c), same = same_frames(c);

	is_u64(c->ours[0], c->ra, "%s: pcs[0] is the capturing frame's "
	       "return address", what);
	ok(j >= 0 && same == c->n_ours && c->n_theirs - j == c->n_ours,
	   "%s: %d frames, identical to libunwind's %d (aligned at %d, "
	   "%d equal)", what, c->n_ours, c->n_theirs - (j < 0 ? 0 : j), j,
	   same);
	ok(c->n_ours >= min, "%s: at least %d frames (%d)", what, min,
	   c->n_ours);
}

/* ---------------------------------------------------------------- */
/* Helpers: recursion without frame pointers, and with alloca.       */

NOFP static int rec_plain(int d, struct cap *c)
{
	volatile char pad[24];
	int r;

	pad[d % 24] = (char)d;
	r = d ? rec_plain(d - 1, c) : (capture_both(c), 0);
	sink += pad[d % 24];
	return r + 1;
}

NOFP static int rec_alloca(int d, struct cap *c)
{
	char *p = __builtin_alloca(16 + (size_t)(d % 7) * 16);
	int r;

	__asm__ volatile("" : : "r"(p) : "memory");
	p[0] = (char)d;
	r = d ? rec_alloca(d - 1, c) : (capture_both(c), 0);
	sink += p[0];
	return r + 1;
}

/* Alternating plain and alloca frames. */
NOFP static int rec_mixed(int d, struct cap *c);

NOFP static int rec_mixed_a(int d, struct cap *c)
{
	char *p = __builtin_alloca(32 + (size_t)(d & 3) * 8);
	int r;

	__asm__ volatile("" : : "r"(p) : "memory");
	r = d ? rec_mixed(d - 1, c) : (capture_both(c), 0);
	sink += p[0] = 1;
	return r + 1;
}

NOFP static int rec_mixed(int d, struct cap *c)
{
	int r = d ? rec_mixed_a(d - 1, c) : (capture_both(c), 0);

	sink += r;
	return r + 1;
}

/* Does the code at fn set %rbp up as a frame pointer (mov %rsp,%rbp)? */
static int uses_fp(const void *fn)
{
	const unsigned char *p = fn;
	int i;

	for (i = 0; i < 32; i++)
		if (p[i] == 0x48 && p[i + 1] == 0x89 && p[i + 2] == 0xe5)
			return 1;
	return 0;
}

static void test_codegen(void)
{
	ok(!uses_fp((const void *)rec_plain) &&
	   !uses_fp((const void *)rec_mixed) &&
	   !uses_fp((const void *)capture_both),
	   "plain helpers are built without a frame pointer");
	ok(uses_fp((const void *)rec_alloca) &&
	   uses_fp((const void *)rec_mixed_a),
	   "alloca helpers keep their CFA in %%rbp");
}

static void test_recursion(void)
{
	static const int depths[] = { 5, 20, 50, 100 };
	struct cap c = { 0 };
	char what[64];
	unsigned i;

	for (i = 0; i < sizeof(depths) / sizeof(depths[0]); i++) {
		rec_plain(depths[i], &c);
		snprintf(what, sizeof(what), "plain recursion %d", depths[i]);
		check_cap(&c, what, depths[i] + 2);
		rec_alloca(depths[i], &c);
		snprintf(what, sizeof(what), "alloca recursion %d", depths[i]);
		check_cap(&c, what, depths[i] + 2);
		rec_mixed(depths[i], &c);
		snprintf(what, sizeof(what), "mixed recursion %d", depths[i]);
		check_cap(&c, what, depths[i] + 2);
	}
}

/* ---------------------------------------------------------------- */
/* skip, max, cold and warm.                                         */

/* Two captures from one frame: the second with skip and max. */
NOFP static int cap_two(uint64_t *a, uint64_t *b, int *nb, int max, int skip)
{
	int na = ls_unwind_capture(a, MAXF, 0);

	*nb = ls_unwind_capture(b, max, skip);
	sink++;
	return na;
}

static void test_skip_max(void)
{
	uint64_t a[MAXF], b[MAXF];
	int na, nb, k;

	na = cap_two(a, b, &nb, MAXF, 3);
	ok(na >= 5 && nb == na - 3 && memcmp(a + 3, b, (size_t)nb * 8) == 0,
	   "skip 3 drops exactly the 3 innermost frames (%d -> %d)", na, nb);
	na = cap_two(a, b, &nb, MAXF, na);
	ok(nb == 0, "skipping all %d frames leaves 0 (%d)", na, nb);
	for (k = 1; k <= 3; k++) {
		memset(b, 0, 8 * 8);
		na = cap_two(a, b, &nb, k, 1);
		ok(nb == k && memcmp(b, a + 1, (size_t)k * 8) == 0 &&
		   b[k] == 0, "max %d, skip 1: exactly %d frames stored, "
		   "the right ones", k, k);
	}
	ok(cap_two(a, b, &nb, 0, 0) > 2 && nb == 0 &&
	   ls_unwind_capture(NULL, 5, 0) == 0, "max 0 and NULL pcs store "
	   "nothing");
}

static void test_cold_warm(void)
{
	struct cap c = { 0 };

	c.with_cold = 1;
	rec_mixed(30, &c);
	c.with_cold = 0;
	ok(c.n_cold == c.n_ours &&
	   memcmp(c.cold, c.ours, (size_t)c.n_ours * 8) == 0,
	   "a warm capture equals a cold one from the same frame (%d "
	   "frames)", c.n_ours);
	check_cap(&c, "warm mixed recursion 30", 32);
}

/* ---------------------------------------------------------------- */
/* Through libc: qsort, bsearch, a thread.                          */

static struct cap cb_cap;
static int cb_done;

NOFP static int cmp_int(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;

	if (!cb_done) {
		cb_done = 1;
		capture_both(&cb_cap);
	}
	return (x > y) - (x < y);
}

static void test_callbacks(void)
{
	int v[64], i, key = 17;

	for (i = 0; i < 64; i++)
		v[i] = (i * 37) % 64;
	cb_done = 0;
	qsort(v, 64, sizeof(v[0]), cmp_int);
	check_cap(&cb_cap, "qsort comparator", 5);
	cb_done = 0;
	ok(bsearch(&key, v, 64, sizeof(v[0]), cmp_int) != NULL,
	   "bsearch found the key");
	check_cap(&cb_cap, "bsearch comparator", 4);
}

static void *thread_main(void *arg)
{
	struct cap *c = arg;

	rec_mixed(12, c);
	return NULL;
}

static void test_thread(void)
{
	pthread_t t;
	struct cap c = { 0 };

	memset(&c, 0, sizeof(c));
	pthread_create(&t, NULL, thread_main, &c);
	pthread_join(t, NULL);
	check_cap(&c, "new thread, mixed recursion 12", 14);
}

/* ---------------------------------------------------------------- */
/* Signals, sigaltstack, makecontext.                                */

static struct cap sig_cap;
static uint64_t raiser_ra, restore_rt;
static const unsigned char sigreturn_code[9] = {
	0x48, 0xc7, 0xc0, 0x0f, 0x00, 0x00, 0x00, 0x0f, 0x05
};

static void on_alarm(int sig)
{
	capture_both(&sig_cap);
	sink += sig;
}

NOFP static int raise_here(int d)
{
	int r;

	if (d) {
		r = raise_here(d - 1);
		sink += d;
		return r + 1;
	}
	raiser_ra = (uint64_t)(uintptr_t)__builtin_return_address(0);
	raise(SIGALRM);
	return sink;
}

static int has_pc(const struct cap *c, uint64_t pc)
{
	int i;

	for (i = 0; i < c->n_ours; i++)
		if (c->ours[i] == pc)
			return 1;
	return 0;
}

static void test_signal(int altstack)
{
	struct sigaction sa;
	stack_t ss;
	const char *what = altstack ? "SIGALRM on sigaltstack" : "SIGALRM";

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_alarm;
	sa.sa_flags = altstack ? SA_ONSTACK : 0;
	if (altstack) {
		ss.ss_size = 64 << 10;
		ss.ss_sp = mmap(NULL, ss.ss_size, PROT_READ | PROT_WRITE,
				MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
		ss.ss_flags = 0;
		sigaltstack(&ss, NULL);
	}
	sigaction(SIGALRM, &sa, NULL);
	memset(&sig_cap, 0, sizeof(sig_cap));
	raise_here(8);
	check_cap(&sig_cap, what, 14);
	ok(has_pc(&sig_cap, raiser_ra), "%s: the stack continues past the "
	   "signal frame into the code that raised it", what);
	/* capture_both returns into on_alarm, on_alarm into the
	 * trampoline: mov $15,%rax; syscall (rt_sigreturn). */
	ok(sig_cap.n_ours > 2 &&
	   memcmp((const void *)(uintptr_t)sig_cap.ours[1], sigreturn_code,
		  9) == 0,
	   "%s: frame 1 is the sigreturn trampoline", what);
	restore_rt = sig_cap.ours[1];
	signal(SIGALRM, SIG_DFL);
	if (altstack) {
		ss.ss_flags = SS_DISABLE;
		sigaltstack(&ss, NULL);
	}
}

static ucontext_t uc_main, uc_co;
static struct cap co_cap;

static void co_main(void)
{
	rec_mixed(6, &co_cap);
}

static void test_makecontext(void)
{
	size_t sz = 64 << 10;
	char *stk = mmap(NULL, sz, PROT_READ | PROT_WRITE,
			 MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	getcontext(&uc_co);
	uc_co.uc_stack.ss_sp = stk;
	uc_co.uc_stack.ss_size = sz;
	uc_co.uc_link = &uc_main;
	makecontext(&uc_co, co_main, 0);
	swapcontext(&uc_main, &uc_co);
	check_cap(&co_cap, "makecontext stack", 8);
	munmap(stk, sz);
}

/* ---------------------------------------------------------------- */
/* The frame cache must not carry a stale %rbp.                      */

/*
 * fp_caller and junk_caller call fn(arg) at the same stack depth; the
 * first has a frame pointer (its CFA is %rbp-based), the second leaves a
 * junk value in %rbp.  Capturing below junk_caller and then below
 * fp_caller from the same frames: the first walk never used %rbp, the
 * second needs the real one.
 */
void fp_caller(void (*fn)(void *), void *arg);
void junk_caller(void (*fn)(void *), void *arg);
__asm__(".text\n"
	".p2align 4\n"
	"fp_caller:\n"
	"	.cfi_startproc\n"
	"	push %rbp\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbp, -16\n"
	"	mov %rsp, %rbp\n"
	"	.cfi_def_cfa_register %rbp\n"
	"	sub $16, %rsp\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	call *%rax\n"
	"	leave\n"
	"	.cfi_def_cfa %rsp, 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".p2align 4\n"
	"junk_caller:\n"
	"	.cfi_startproc\n"
	"	push %rbp\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbp, -16\n"
	"	sub $16, %rsp\n"
	"	.cfi_def_cfa_offset 32\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	mov $0x1234, %ebp\n"
	"	call *%rax\n"
	"	add $16, %rsp\n"
	"	.cfi_def_cfa_offset 16\n"
	"	pop %rbp\n"
	"	.cfi_def_cfa_offset 8\n"
	"	ret\n"
	"	.cfi_endproc\n");

/*
 * realign_fp keeps a frame pointer and aligns its stack to 64 bytes;
 * shallow_fp and deep_fp enter it 32 bytes apart.  Half the time both
 * align to the same place: the frames below then have the same pc and
 * sp but a different %rbp, which the frame above them needs.
 */
void realign_fp(void (*fn)(void *), void *arg);
void shallow_fp(void (*fn)(void *), void *arg);
void deep_fp(void (*fn)(void *), void *arg);
__asm__(".text\n"
	".p2align 4\n"
	"realign_fp:\n"
	"	.cfi_startproc\n"
	"	push %rbp\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbp, -16\n"
	"	mov %rsp, %rbp\n"
	"	.cfi_def_cfa_register %rbp\n"
	"	and $-64, %rsp\n"
	"	sub $64, %rsp\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	call *%rax\n"
	"	leave\n"
	"	.cfi_def_cfa %rsp, 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".p2align 4\n"
	"shallow_fp:\n"
	"	.cfi_startproc\n"
	"	sub $8, %rsp\n"
	"	.cfi_def_cfa_offset 16\n"
	"	call realign_fp\n"
	"	add $8, %rsp\n"
	"	.cfi_def_cfa_offset 8\n"
	"	ret\n"
	"	.cfi_endproc\n"
	".p2align 4\n"
	"deep_fp:\n"
	"	.cfi_startproc\n"
	"	sub $40, %rsp\n"
	"	.cfi_def_cfa_offset 48\n"
	"	call realign_fp\n"
	"	add $40, %rsp\n"
	"	.cfi_def_cfa_offset 8\n"
	"	ret\n"
	"	.cfi_endproc\n");

NOFP static void below_caller(void *arg)
{
	capture_both(arg);
	sink++;
}

NOFP static void via_caller(int fp, struct cap *c)
{
	(fp ? fp_caller : junk_caller)(below_caller, c);
	sink++;
}

NOFP static void via_realign(int deep, int pad, struct cap *c)
{
	char *p = __builtin_alloca((size_t)pad);

	__asm__ volatile("" : : "r"(p) : "memory");
	(deep ? deep_fp : shallow_fp)(below_caller, c);
	sink++;
}

/*
 * rbp_frame(fn, arg, rbp) calls fn(arg) with %rbp = rbp under CFI that
 * puts its CFA at %rbp + 16: a walk through it goes on through the fake
 * frame rbp points at.  Two fake frames at different addresses, entered
 * from the same frames at the same depth: a walk memo that ignored where
 * %rbp came from would give the first one's caller for the second.
 */
void rbp_frame(void (*fn)(void *), void *arg, uint64_t *rbp);
__asm__(".text\n"
	".p2align 4\n"
	"rbp_frame:\n"
	"	.cfi_startproc\n"
	"	push %rbp\n"
	"	.cfi_def_cfa_offset 16\n"
	"	.cfi_offset %rbp, -16\n"
	"	mov %rdx, %rbp\n"
	"	.cfi_def_cfa %rbp, 16\n"
	"	mov %rdi, %rax\n"
	"	mov %rsi, %rdi\n"
	"	call *%rax\n"
	"	.cfi_def_cfa %rsp, 16\n"
	"	pop %rbp\n"
	"	.cfi_def_cfa_offset 8\n"
	"	ret\n"
	"	.cfi_endproc\n");

NOFP static uint64_t ret_addr(void)
{
	return (uint64_t)(uintptr_t)__builtin_return_address(0);
}

/* Two return addresses in code whose CFA is %rsp-based. */
NOFP static uint64_t ra_site_a(void)
{
	uint64_t r = ret_addr();

	sink++;
	return r;
}

NOFP static uint64_t ra_site_b(void)
{
	uint64_t r = ret_addr();

	sink += 2;
	return r;
}

NOFP static void via_fake(uint64_t *fake, struct cap *c)
{
	rbp_frame(below_caller, c, fake);
	sink++;
}

/* Below rbp_frame with nothing in between that saves %rbp: the walk
 * uses the very %rbp it starts with. */
struct fake_cap {
	uint64_t pcs[MAXF], ref[MAXF];
	int n, nref;
	void *val;
};

NOFP static void fake_leaf(void *arg)
{
	struct fake_cap *f = arg;

	f->nref = ls_unwind_capture(f->ref, MAXF, 0);
	f->n = ls_unwind_capture_memo_from(NULL, f->pcs, MAXF, 0, 9, 0,
					   &f->val);
}

static void test_memo_start_rbp(void)
{
	uint64_t fakes[2][8] = { { 0 } };
	static struct fake_cap f;
	static struct memo_val vals[2];
	struct memo_val *v;
	int round, k, bad = 0, hits = 0;

	fakes[0][1] = ra_site_a();
	fakes[1][1] = ra_site_b();
	for (round = 0; round < 3; round++) {
		for (k = 0; k < 2; k++) {
			rbp_frame(fake_leaf, &f, fakes[k]);
			if (f.val) {
				v = f.val;
				hits++;
			} else {
				v = &vals[k];
				v->n = f.n;
				memcpy(v->pcs, f.pcs, sizeof(f.pcs));
				ls_unwind_memo_put(v);
			}
			bad += v->n != f.nref || v->n < 2 ||
			       v->pcs[v->n - 1] != fakes[k][1] ||
			       memcmp(v->pcs + 1, f.ref + 1,
				      (size_t)(v->n - 1) * sizeof(*v->pcs));
		}
	}
	ok(bad == 0 && hits > 0, "fake frames under the starting %%rbp: "
	   "%d memo hits, %d walks differ", hits, bad);
}

/* ls_unwind_capture_memo_from(LS_UNWIND_HERE()): the frames a capture
 * in this function gives, through the memo on the second call. */
struct from_val {
	int n;
	uint64_t pcs[MAXF];
};

__attribute__((noipa)) static int from_here(struct from_val *mine,
					     struct from_val *ref, void **val)
{
	struct ls_unwind_start st = LS_UNWIND_HERE();

	ref->n = ls_unwind_capture(ref->pcs, MAXF, 0);
	mine->n = ls_unwind_capture_memo_from(&st, mine->pcs, MAXF, 0, 3,
					      st.pc, val);
	return 0;
}

NOFP static void from_caller(struct from_val *mine, struct from_val *ref,
			     void **val)
{
	sink += from_here(mine, ref, val);
}

static void test_memo_from(void)
{
	static struct from_val mine, ref, kept;
	struct ls_unwind_start bad = { 1, 8, 0 };
	void *val;
	int round, hits = 0, bad_n = 0;

	for (round = 0; round < 3; round++) {
		from_caller(&mine, &ref, &val);
		if (val) {
			hits++;
			bad_n += val != &kept;
			continue;
		}
		bad_n += mine.n != ref.n || mine.n < 3 ||
			 memcmp(mine.pcs, ref.pcs, (size_t)ref.n * 8);
		kept = mine;
		ls_unwind_memo_put(&kept);
	}
	ok(hits == 2 && bad_n == 0, "a walk from the hook's caller's state: "
	   "the frames of a capture in place (%d frames), then %d memo hits "
	   "(%d wrong)", ref.n, hits, bad_n);
	ref.n = ls_unwind_capture(ref.pcs, MAXF, 0);
	mine.n = ls_unwind_capture_memo_from(&bad, mine.pcs, MAXF, 0, 4, 0,
					     &val);
	ok(!val && mine.n == ref.n && mine.n > 1 &&
	   !memcmp(mine.pcs, ref.pcs, (size_t)ref.n * 8), "a start below "
	   "the capture is ignored: the walk starts in place (%d frames)",
	   mine.n);
}

/*
 * Memo capacity: 512 distinct walks of ~45 frames each (24k words with
 * the padding), each from its own sp, captured in turn twice.  The memo
 * keeps them all (32768 words, 2048 entries), so the second pass is
 * answered from it: with the 8192-word ring it had before, the ring
 * held ~180 of them and every capture of the second pass walked.  Each
 * answer is checked against the walk made alongside it.
 */
#define CAP_STACKS 512
#define CAP_DEPTH 40

struct cap_walk {
	int n;
	uint64_t pcs[MAXF];
};

/* w is not the reference walk ref (nref frames, at least min of them)
 * past their first frame, where each capture's own call site lies. */
static int walk_differs(const struct cap_walk *w, const uint64_t *ref,
			int nref, int min)
{
	return w->n != nref || nref < min ||
	       memcmp(w->pcs + 1, ref + 1, (size_t)(nref - 1) * sizeof(*ref));
}

static struct cap_walk *cap_vals;
static int cap_hits, cap_bad;
static volatile int cap_passes = 2;

NOFP static void cap_leaf(int id)
{
	uint64_t ref[MAXF];
	struct cap_walk mine;
	void *val;
	int nref = ls_unwind_capture(ref, MAXF, 0);

	mine.n = ls_unwind_capture_memo_from(NULL, mine.pcs, MAXF, 0, 11, 0,
					     &val);
	if (val) {
		cap_hits++;
		cap_bad += val != &cap_vals[id] ||
			   walk_differs(&cap_vals[id], ref, nref, CAP_DEPTH);
		return;
	}
	cap_bad += walk_differs(&mine, ref, nref, CAP_DEPTH);
	cap_vals[id] = mine;
	ls_unwind_memo_put(&cap_vals[id]);
}

NOFP static void cap_level(int depth, int id)
{
	if (depth == 0)
		cap_leaf(id);
	else if (id >> (depth % 9) & 1)
		cap_level(depth - 1, id);
	else
		cap_level(depth - 1, id);
	sink++;
}

/* Each walk from its own sp, so that the 512 spread over the sets. */
NOFP static void cap_padded(int id)
{
	char *p = __builtin_alloca((size_t)(id + 1) * 16);

	__asm__ volatile("" : : "r"(p) : "memory");
	cap_level(CAP_DEPTH, id);
	sink++;
}

/* One call site for both passes: the same stacks. */
NOFP static void cap_pass(void)
{
	int id;

	cap_hits = 0;
	for (id = 0; id < CAP_STACKS; id++)
		cap_padded(id);
}

static void test_memo_capacity(void)
{
	int pass;

	cap_vals = calloc(CAP_STACKS, sizeof(*cap_vals));
	if (!cap_vals) {
		ok(0, "memo capacity: no memory for the test");
		return;
	}
	/* A loop GCC cannot unroll: two call sites would be two stacks. */
	for (pass = 0; pass < cap_passes; pass++)
		cap_pass();
	ok(cap_bad == 0 && cap_hits >= CAP_STACKS * 95 / 100,
	   "memo capacity: %d walks of %d+ frames kept, %d of them "
	   "answered from the memo on the second pass, %d differ",
	   CAP_STACKS, CAP_DEPTH, cap_hits, cap_bad);
	free(cap_vals);
}

/*
 * Many walks from one start state: 128 stacks under one leaf, one call
 * site and one depth, that differ in their 2nd, 3rd and 4th return
 * addresses (four call sites each) and, 15 frames up, in the call site
 * of the outermost variant frame.  All frames are frameless (%rsp-based
 * CFA).  They share the state and the first return address, so with a
 * hint of one return address they all fell in one set of 8 ways and
 * replaced each other (0 hits); the deeper hint spreads them.  Pairs
 * that differ only 15 frames up, beyond the hint, share a hint: only the
 * word check tells them apart.  Every answer is checked against a fresh
 * walk.
 */
#define VAR_STACKS 128

static struct cap_walk *var_vals;
static int var_hits, var_bad;

NOFP static void var_leaf(int id)
{
	uint64_t ref[MAXF];
	struct cap_walk mine;
	void *val;
	int nref = ls_unwind_capture(ref, MAXF, 0);

	mine.n = ls_unwind_capture_memo_from(NULL, mine.pcs, MAXF, 0, 12, 0,
					     &val);
	if (val) {
		var_hits++;
		var_bad += val != &var_vals[id] ||
			   walk_differs(&var_vals[id], ref, nref, 20);
		return;
	}
	var_bad += walk_differs(&mine, ref, nref, 20);
	var_vals[id] = mine;
	ls_unwind_memo_put(&var_vals[id]);
}

NOFP static void var_l1(int id)
{
	var_leaf(id);
	sink++;
}

/* Four call sites of fn: four return addresses. */
#define VAR_SITES(fn, sel, id)						\
	do {								\
		switch (sel) {						\
		case 0: fn(id); sink += 1; break;			\
		case 1: fn(id); sink += 2; break;			\
		case 2: fn(id); sink += 3; break;			\
		default: fn(id); sink += 4; break;			\
		}							\
	} while (0)

NOFP static void var_l2(int id)
{
	VAR_SITES(var_l1, id & 3, id);
}

NOFP static void var_l3(int id)
{
	VAR_SITES(var_l2, id >> 2 & 3, id);
}

NOFP static void var_l4(int id)
{
	VAR_SITES(var_l3, id >> 4 & 3, id);
}

NOFP static void var_pad(int depth, int id)
{
	if (depth)
		var_pad(depth - 1, id);
	else
		var_l4(id);
	sink++;
}

NOFP static void var_outer(int id)
{
	if (id >> 6 & 1) {
		var_pad(10, id);
		sink += 5;
	} else {
		var_pad(10, id);
		sink += 6;
	}
}

NOFP static void var_pass(void)
{
	int id;

	var_hits = 0;
	for (id = 0; id < VAR_STACKS; id++)
		var_outer(id);
}

static void test_memo_variants(void)
{
	int pass;

	var_vals = calloc(VAR_STACKS, sizeof(*var_vals));
	if (!var_vals) {
		ok(0, "memo variants: no memory for the test");
		return;
	}
	for (pass = 0; pass < cap_passes + 2; pass++)
		var_pass();
	ok(var_bad == 0 && var_hits >= VAR_STACKS * 9 / 10,
	   "memo: %d walks from one state, differing at the 2nd-4th and the "
	   "16th return address: %d answered from the memo on the 4th pass, "
	   "%d differ from a fresh walk", VAR_STACKS, var_hits, var_bad);
	free(var_vals);
}

/*
 * The recent entries (copies of the entries last hit or put for a start
 * state, key and first return address, tried before the sets).  The
 * hooks' sequence: ls_unwind_memo_get(), then on a miss
 * ls_unwind_capture_memo_from() for the same walk (which does not ask
 * the memo again), then ls_unwind_memo_put().  A copy must answer no
 * more than its entry would: nothing after an invalidation until a walk
 * is put again.
 */
__attribute__((noipa)) static void *recent_here(struct from_val *mine,
						 struct from_val *ref)
{
	struct ls_unwind_start st = LS_UNWIND_HERE();
	void *val = ls_unwind_memo_get(&st, MAXF, 5);

	ref->n = ls_unwind_capture(ref->pcs, MAXF, 0);
	mine->n = 0;
	if (!val)
		mine->n = ls_unwind_capture_memo_from(&st, mine->pcs, MAXF, 0,
						      5, st.pc, &val);
	return val;
}

NOFP static void *recent_caller(struct from_val *mine, struct from_val *ref)
{
	void *v = recent_here(mine, ref);

	sink++;
	return v;
}

static void test_memo_recent(void)
{
	static struct from_val mine, ref, kept[2];
	/* round: 0 walk, put; 1 hit; invalidate; 2 walk; 3 walk, put;
	 * 4 hit */
	static const int put[5] = { 1, 0, 0, 1, 0 };
	uint64_t w0, w1, h0, h1;
	void *val;
	int round, bad = 0, walked = 0, hits = 0, k = 0;

	for (round = 0; round < 5; round++) {
		if (round == 2)
			ls_unwind_invalidate();
		ls_unwind_counts(&w0, &h0);
		val = recent_caller(&mine, &ref);
		ls_unwind_counts(&w1, &h1);
		if (val) {
			hits++;
			bad += (round != 1 && round != 4) ||
			       val != &kept[round == 4] || h1 != h0 + 1 ||
			       w1 != w0 + 1;
			continue;
		}
		walked++;
		/* Two walks, the reference's and the capture's: the
		 * capture did not ask the memo again. */
		bad += round == 1 || round == 4 || w1 != w0 + 2 ||
		       mine.n != ref.n || mine.n < 3 ||
		       memcmp(mine.pcs, ref.pcs, (size_t)ref.n * 8);
		if (put[round]) {
			kept[k] = mine;
			ls_unwind_memo_put(&kept[k++]);
		}
	}
	ok(bad == 0 && hits == 2 && walked == 3, "recent entries: memo_get "
	   "then one walk, a hit, none after an invalidation until a walk is "
	   "put again (%d hits, %d walks, %d wrong)", hits, walked, bad);
}

/*
 * A recent entry whose words the ring has overwritten answers nothing.
 * Walk X from one state is put; then walks Y from the same state and
 * first return address (another caller one frame further up), never put,
 * are recorded again and again until the ring has gone round past X's
 * words: those now hold Y's words, which hold on Y's stack, so without
 * the ring check X's copy would answer Y's captures with X's frames.
 */
#define OVW_ROUNDS 12000

static struct cap_walk ovw_x;
static int ovw_hits, ovw_bad, ovw_walks;

NOFP static void ovw_leaf(int put)
{
	uint64_t ref[MAXF];
	struct cap_walk mine;
	void *val;
	int nref = ls_unwind_capture(ref, MAXF, 0);

	mine.n = ls_unwind_capture_memo_from(NULL, mine.pcs, MAXF, 0, 13, 0,
					     &val);
	if (val) {
		const struct cap_walk *v = val;

		ovw_hits++;
		ovw_bad += put != 2 || walk_differs(v, ref, nref, 0);
		return;
	}
	ovw_walks++;
	ovw_bad += walk_differs(&mine, ref, nref, 5);
	if (put == 1) {
		ovw_x = mine;
		ls_unwind_memo_put(&ovw_x);
	}
}

NOFP static void ovw_mid(int put)
{
	ovw_leaf(put);
	sink++;
}

/* put 0: Y (another call site of ovw_mid); 1: X, put; 2: X, a hit. */
NOFP static void ovw_top(int put)
{
	if (put) {
		ovw_mid(put);
		sink += 1;
	} else {
		ovw_mid(put);
		sink += 2;
	}
}

/* One call site for every capture (the same outer frames). */
NOFP static void ovw_run(const volatile int *put, int n)
{
	int i;

	for (i = 0; i < n; i++)
		ovw_top(put[i]);
}

static void test_memo_overwritten(void)
{
	static volatile int put[OVW_ROUNDS];
	int hits_x;

	put[0] = 1;	/* X, put */
	put[1] = 2;	/* X again: a hit */
	ovw_run(put, 2);
	hits_x = ovw_hits;
	ovw_run(put + 2, OVW_ROUNDS - 2);
	ok(hits_x == 1 && ovw_hits == 1 && ovw_bad == 0 &&
	   ovw_walks == OVW_ROUNDS - 1, "recent entries: after the ring went "
	   "round, %d captures from X's state on another stack: %d answered "
	   "(none may be), %d wrong (%d walks)", OVW_ROUNDS - 2,
	   ovw_hits - hits_x, ovw_bad, ovw_walks);
}

/* ---------------------------------------------------------------- */
/* The walk memo keyed by frame: suffixes of earlier walks.          */

static jmp_buf sfx_jb;
static int sfx_bad, sfx_n;
static struct memo_val sfx_vals[64];
static int sfx_nvals;

/* As the agent does: the recorded walk first (the memo, else a walk that
 * may end with a suffix), then a fresh walk and libunwind's to compare. */
NOFP static void sfx_capture(struct cap *c)
{
	uint64_t pcs[MAXF];
	struct memo_val *v;
	void *val;
	int n = ls_unwind_capture_memo_from(NULL, pcs, MAXF, 0, 9, 0, &val);

	c->n_ours = ls_unwind_capture(c->ours, MAXF, 0);
	c->n_theirs = unw_bt(c->theirs, MAXF);
	c->ra = (uint64_t)(uintptr_t)__builtin_return_address(0);
	if (val) {
		v = val;
		n = v->n;
		memcpy(pcs, v->pcs, (size_t)n * sizeof(*pcs));
	} else if (sfx_nvals < 64) {
		v = &sfx_vals[sfx_nvals++];
		v->n = n;
		memcpy(v->pcs, pcs, (size_t)n * sizeof(*pcs));
		ls_unwind_memo_put(v);
	}
	sfx_bad += n != c->n_ours ||
		   memcmp(pcs, c->ours, (size_t)n * sizeof(*pcs)) != 0;
	sfx_n++;
	sink++;
}

NOFP static void sfx_leaf0(struct cap *c)
{
	sfx_capture(c);
	sink++;
}

NOFP static void sfx_leaf1(struct cap *c)
{
	sfx_leaf0(c);
	sink += 2;
}

NOFP static void sfx_leaf2(struct cap *c)
{
	volatile char pad[40];

	pad[sink & 31] = 1;
	sfx_leaf1(c);
	sink += pad[sink & 31];
}

/* Four inner paths, each its own call sites and depth. */
NOFP static void sfx_inner(int sel, struct cap *c)
{
	switch (sel & 3) {
	case 0: sfx_leaf0(c); sink += 1; break;
	case 1: sfx_leaf1(c); sink += 2; break;
	case 2: sfx_leaf2(c); sink += 3; break;
	default: sfx_leaf0(c); sink += 4; break;
	}
}

/* 20 frames the inner paths share, then maybe a longjmp out of all of
 * them (the next calls reuse their stack, over their stale words). */
NOFP static void sfx_pad(int d, int sel, int jump, struct cap *c)
{
	volatile char pad[16];

	pad[d & 15] = (char)d;
	if (d) {
		sfx_pad(d - 1, sel, jump, c);
	} else {
		sfx_inner(sel, c);
		if (jump)
			longjmp(sfx_jb, 1);
	}
	sink += pad[d & 15];
}

/* Two callers of the same frame sizes: their pad frames lie at the same
 * (pc, sp) with a different return address at the outermost one. */
NOFP static void sfx_site_a(int sel, int jump, struct cap *c)
{
	sfx_pad(20, sel, jump, c);
	sink += 1;
}

NOFP static void sfx_site_b(int sel, int jump, struct cap *c)
{
	sfx_pad(20, sel, jump, c);
	sink += 2;
}

static int cap_agrees(const struct cap *c)
{
	int j = align(c);

	return j >= 0 && same_frames(c) == c->n_ours &&
	       c->n_theirs - j == c->n_ours;
}

/*
 * A walk whose inner frames are new takes the rest from the suffix an
 * earlier walk left at the first frame they share, when every word of it
 * holds.  Against stale suffixes: the same frames called from another
 * place (a word of the suffix changed), and longjmp out of them with the
 * next calls over their stale words.  memo_check() compares every
 * recorded walk, suffix or not, with a fresh walk; capture_both() the
 * fresh walk with libunwind.
 */
static void test_memo_suffix(void)
{
	static struct cap c;
	uint64_t t0 = ls_unwind_suffix_takes(), takes;
	volatile int round, sel;
	int agree = 0, n = 0;

	for (round = 0; round < 6; round++)
		for (sel = 0; sel < 4; sel++) {
			if (!setjmp(sfx_jb)) {
				if (round & 1)
					sfx_site_b(sel, round >= 2, &c);
				else
					sfx_site_a(sel, round >= 2, &c);
			}
			agree += cap_agrees(&c);
			n++;
		}
	takes = ls_unwind_suffix_takes() - t0;
	ok(agree == n, "suffixes: %d of %d fresh walks equal libunwind's",
	   agree, n);
	ok(sfx_bad == 0 && sfx_n == n, "suffixes: %d of %d recorded walks or "
	   "memo answers differ from a fresh walk", sfx_bad, sfx_n);
	ok(takes >= 4, "suffixes: %llu walks took the shared frames from an "
	   "earlier walk", (unsigned long long)takes);
}

static void test_memo_fake_rbp(void)
{
	/* [saved %rbp, return address, then zeros: the walk ends at pc 0] */
	uint64_t fakes[2][8] = { { 0 } };
	struct cap c = { 0 };
	int round, k, found;

	fakes[0][1] = ra_site_a();
	fakes[1][1] = ra_site_b();
	for (round = 0; round < 3; round++) {
		for (k = 0; k < 2; k++) {
			via_fake(fakes[k], &c);
			for (found = 0; found < c.n_ours; found++)
				if (c.ours[found] == fakes[k][1])
					break;
			ok(found < c.n_ours && c.n_ours == found + 1,
			   "fake frame %d (round %d): the walk ends in its "
			   "return address (%d frames)", k, round, c.n_ours);
		}
	}
}

static void test_cache_rbp(void)
{
	struct cap c = { 0 };
	char what[80];
	int pad, deep, round;

	for (pad = 0; pad < 64; pad += 16) {
		for (deep = 0; deep < 2; deep++) {
			via_realign(deep, pad, &c);
			snprintf(what, sizeof(what), "realigned frame pointer, "
				 "entered %s, padding %d", deep ? "deep" :
				 "shallow", pad);
			check_cap(&c, what, 6);
		}
	}

	/* Twice: the second round meets the walk memo's entries. */
	for (round = 0; round < 2; round++) {
		via_caller(0, &c);
		check_cap(&c, "below a junk %rbp", 5);
		via_caller(1, &c);
		check_cap(&c, "then below a frame pointer, same depth", 5);
		via_caller(0, &c);
		check_cap(&c, "then below a junk %rbp again", 5);
	}
}

static uint64_t rng = 88172645463325252ull;

static uint64_t rnd(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

/* ---------------------------------------------------------------- */
/* Frame cache fuzz: random call paths, each a change from the last. */

/*
 * Seven kinds of frame: no frame pointer, alloca (%rbp-based CFA), a
 * realigning function with stack arguments (GCC keeps its CFA in memory:
 * CFA = *(%rbp - 40), %rbp saved at %rbp), the asm frame pointer, junk
 * %rbp and realigned callers above.  Each capture changes one level of
 * the previous path (or its depth), so walks share parts in every way.
 */
struct fuzz {
	int d;			/* levels left */
	uint64_t path;		/* base-7 digits: the kind of each level */
	struct cap *c;
};

#define FUZZ_LEVELS 10
#define FUZZ_RUNS 4000

NOFP static void fuzz_next(struct fuzz *f);

NOFP static void fuzz_plain(void *arg)
{
	fuzz_next(arg);
	sink++;
}

NOFP static void fuzz_alloca(void *arg)
{
	struct fuzz *f = arg;
	char *p = __builtin_alloca(16 + (size_t)(f->d & 3) * 16);

	__asm__ volatile("" : : "r"(p) : "memory");
	fuzz_next(f);
	sink += p[0] = 1;
}

NOFP static int fuzz_drap(int a, int b, int c, int d, int e, int f, int g,
			  int h, struct fuzz *z)
{
	char buf[64] __attribute__((aligned(32)));
	char *p = __builtin_alloca((size_t)(a & 15) + 1);

	memset(buf, g + h, sizeof(buf));
	__asm__ volatile("" : : "r"(p), "r"(buf) : "memory");
	fuzz_next(z);
	return buf[3] + p[0] + b + c + d + e + f;
}

NOFP static void fuzz_next(struct fuzz *f)
{
	unsigned kind;

	if (f->d == 0) {
		capture_both(f->c);
		return;
	}
	kind = (unsigned)(f->path % 7);
	f->path /= 7;
	f->d--;
	switch (kind) {
	case 0: fuzz_plain(f); break;
	case 1: fuzz_alloca(f); break;
	case 2: sink += fuzz_drap(f->d, 2, 3, 4, 5, 6, 7, 8, f); break;
	case 3: fp_caller(fuzz_plain, f); break;
	case 4: junk_caller(fuzz_plain, f); break;
	case 5: shallow_fp(fuzz_plain, f); break;
	default: deep_fp(fuzz_plain, f); break;
	}
	sink++;
}

/* Change one level of path, or the depth. */
static void fuzz_mutate(uint64_t *path, int *d)
{
	uint64_t p = 1;
	int i, at = (int)(rnd() % FUZZ_LEVELS);

	if (rnd() % 8 == 0) {
		*d = (int)(rnd() % (FUZZ_LEVELS + 1));
		return;
	}
	for (i = 0; i < at; i++)
		p *= 7;
	*path = *path - (*path / p % 7) * p + (rnd() % 7) * p;
}

static void test_cache_fuzz(void)
{
	const unsigned char *code = (const unsigned char *)fuzz_drap;
	struct cap c = { 0 };
	struct fuzz f;
	uint64_t path = 0;
	int d = FUZZ_LEVELS, i, bad = 0, same, deepest = 0, j;

	/* lea disp8(%rsp),%r10: GCC's realignment with a CFA in memory */
	for (i = 0, j = 0; i < 16; i++)
		j |= code[i] == 0x4c && code[i + 1] == 0x8d &&
		     code[i + 2] == 0x54 && code[i + 3] == 0x24;
	ok(j, "fuzz_drap realigns through %%r10 (CFA kept in memory)");
	for (i = 0; i < FUZZ_RUNS; i++) {
		fuzz_mutate(&path, &d);
		f = (struct fuzz){ d, path, &c };
		fuzz_next(&f);
		same = same_frames(&c);
		if (c.ours[0] != c.ra || same != c.n_ours ||
		    c.n_theirs - align(&c) != c.n_ours)
			bad++;
		if (c.n_ours > deepest)
			deepest = c.n_ours;
	}
	ok(bad == 0 && deepest > FUZZ_LEVELS, "%d captures along mutating "
	   "paths: %d differ from libunwind (deepest %d frames)", FUZZ_RUNS,
	   bad, deepest);
}

/* ---------------------------------------------------------------- */
/* Stress: two threads, warm caches, invalidations meanwhile.        */

#define STRESS_N 1000000
#define STRESS_DEPTHS 8

struct stress {
	uint64_t ref[STRESS_DEPTHS][MAXF];
	int nref[STRESS_DEPTHS];
	long bad, done, memo_hits;
};

static volatile int stress_stop;

/* ref: record libunwind's stack for depth d; else compare ours to it. */
NOFP static void stress_leaf(struct stress *s, int d, int ref)
{
	uint64_t pcs[MAXF];
	uint64_t ra = (uint64_t)(uintptr_t)__builtin_return_address(0);
	void *lu[MAXF], *val;
	int n, j;

	if (ref) {
		n = unw_bt(lu, MAXF);
		for (j = 0; j < 4 && j < n; j++)
			if ((uint64_t)(uintptr_t)lu[j] == ra)
				break;
		for (s->nref[d] = 0; j < n; j++)
			s->ref[d][s->nref[d]++] = (uint64_t)(uintptr_t)lu[j];
		return;
	}
	n = ls_unwind_capture(pcs, MAXF, 0);
	if (n != s->nref[d] || memcmp(pcs, s->ref[d], (size_t)n * 8))
		s->bad++;
	/* The memo, its value the depth's reference: a hit must be right. */
	n = ls_unwind_capture_memo_from(NULL, pcs, MAXF, 0, 1, ra, &val);
	if (val) {
		s->memo_hits++;
		if (val != s->ref[d])
			s->bad++;
	} else {
		if (!same_tail(pcs, n, s->ref[d], s->nref[d]))
			s->bad++;
		ls_unwind_memo_put(s->ref[d]);
	}
	s->done++;
}

NOFP static void stress_rec(struct stress *s, int d, int left, int ref);

NOFP static void stress_rec_a(struct stress *s, int d, int left, int ref)
{
	char *p = __builtin_alloca(16 + (size_t)left * 8);

	__asm__ volatile("" : : "r"(p) : "memory");
	if (left)
		stress_rec(s, d, left - 1, ref);
	else
		stress_leaf(s, d, ref);
	sink += p[0] = 1;
}

NOFP static void stress_rec(struct stress *s, int d, int left, int ref)
{
	if (left)
		stress_rec_a(s, d, left - 1, ref);
	else
		stress_leaf(s, d, ref);
	sink++;
}

static void *stress_main(void *arg)
{
	struct stress *s = arg;
	long i;
	int d;

	/* References and checks from the one call site. */
	for (i = 0; i < STRESS_N + STRESS_DEPTHS; i++) {
		d = (int)(i % STRESS_DEPTHS);
		stress_rec(s, d, d, i < STRESS_DEPTHS);
	}
	return NULL;
}

static void *invalidator(void *arg)
{
	long *n = arg;

	while (!stress_stop) {
		ls_unwind_invalidate();
		(*n)++;
		usleep(2000);
	}
	return NULL;
}

static void test_stress(void)
{
	static struct stress s[2];
	pthread_t t[2], inv;
	long ninv = 0;
	int i;

	pthread_create(&inv, NULL, invalidator, &ninv);
	for (i = 0; i < 2; i++)
		pthread_create(&t[i], NULL, stress_main, &s[i]);
	for (i = 0; i < 2; i++)
		pthread_join(t[i], NULL);
	stress_stop = 1;
	pthread_join(inv, NULL);
	for (i = 0; i < 2; i++) {
		ok(s[i].done == STRESS_N && s[i].bad == 0 && s[i].nref[7] > 9 &&
		   s[i].memo_hits > STRESS_N / 2,
		   "stress thread %d: %ld captures (plain and through the "
		   "memo, %ld memo hits), %ld differ from libunwind's cold "
		   "stack", i, s[i].done, s[i].memo_hits, s[i].bad);
	}
	ok(ninv > 0, "%ld invalidations ran during the stress", ninv);
}

/* ---------------------------------------------------------------- */
/* Garbage above the capturing frame must not crash the unwinder.    */

#define GARBAGE_WORDS 96
#define GARBAGE_TRIALS 20000

static char *noaccess;		/* a PROT_NONE page */

static uint64_t garbage(uint64_t sp)
{
	switch (rnd() % 10) {
	case 0: return rnd();
	case 1: return rnd() & 0xffff;
	case 2: return sp + rnd() % 8192 - 4096;
	case 3: return sp + rnd() % (1u << 22);
	case 4: return (uint64_t)(uintptr_t)rec_plain + rnd() % 256;
	case 5: return (uint64_t)(uintptr_t)qsort + rnd() % 4096;
	case 6: return restore_rt;
	case 7: return (uint64_t)(uintptr_t)noaccess + rnd() % 4096;
	case 8: return 0;
	}
	return sp + (rnd() % 64) * 8;
}

static int garbage_mismatch;

/* Scribble over the callers' frames (and maybe our own saved %rbp and
 * return address), capture, put everything back.  Captures before and
 * after must agree, and the garbage capture must agree with a cold one
 * of the same garbage: what one walk remembers of the stack must never
 * stand in for what the stack now holds. */
__attribute__((noinline)) static int scribble(int words, int own)
{
	volatile uint64_t *top = __builtin_frame_address(0);
	uint64_t save[GARBAGE_WORDS + 2], pcs[64], before[64], after[64];
	uint64_t cold[64];
	int i, n, nb, na, nc, first = own ? 0 : 2;

	nb = ls_unwind_capture(before, 64, 0);
	for (i = first; i < words + 2; i++)
		save[i] = top[i];
	for (i = first; i < words + 2; i++)
		top[i] = garbage((uint64_t)(uintptr_t)top);
	n = ls_unwind_capture(pcs, 64, 0);
	if (rnd() % 4 == 0) {	/* a cold walk of the same garbage agrees */
		ls_unwind_invalidate();
		nc = ls_unwind_capture(cold, 64, 0);
		if (nc != n || memcmp(pcs, cold, (size_t)n * 8))
			garbage_mismatch++;
	}
	for (i = first; i < words + 2; i++)
		top[i] = save[i];
	na = ls_unwind_capture(after, 64, 0);
	if (na != nb || memcmp(before, after, (size_t)na * 8))
		garbage_mismatch++;
	return n;
}

NOFP static int garbage_rec(int d);

NOFP static int garbage_rec_a(int d)
{
	char *p = __builtin_alloca(8 + (size_t)(d & 3) * 24);
	int r;

	__asm__ volatile("" : : "r"(p) : "memory");
	r = d ? garbage_rec(d - 1) :
		scribble(1 + (int)(rnd() % GARBAGE_WORDS), rnd() % 4 == 0);
	sink += p[0] = 1;
	return r;
}

NOFP static int garbage_rec(int d)
{
	int r = d ? garbage_rec_a(d - 1) :
		scribble(1 + (int)(rnd() % GARBAGE_WORDS), rnd() % 4 == 0);

	sink++;
	return r;
}

static void garbage_child(void)
{
	long frames = 0;
	int i, n;

	noaccess = mmap(NULL, 4096, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS,
			-1, 0);
	for (i = 0; i < GARBAGE_TRIALS; i++) {
		n = garbage_rec((int)(rnd() % 12));
		if (n < 0 || n > 64)
			_exit(2);
		frames += n;
	}
	_exit(garbage_mismatch ? 4 : frames > GARBAGE_TRIALS ? 0 : 3);
}

static void test_garbage(void)
{
	int status = -1;
	pid_t pid;

	ok(restore_rt != 0, "the trampoline address is known for the "
	   "garbage test");
	fflush(stdout);
	pid = fork();
	if (pid == 0)
		garbage_child();
	waitpid(pid, &status, 0);
	ok(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	   "%d captures over garbage stacks: no crash, sane counts, cold "
	   "walks agree, the same stack before and after (status %#x)",
	   GARBAGE_TRIALS, status);
}

/* ---------------------------------------------------------------- */

static void test_uncached(void)
{
	struct cap c = { 0 };

	rec_mixed(10, &c);
	check_cap(&c, "before ls_unwind_init (uncached)", 12);
}

int main(void)
{
	unw_bt = ls_libunwind_load(NULL);
	if (!unw_bt) {
		ok(0, "libunwind.so.8 loads (Debian package libunwind8)");
		return tap_done();
	}
	memo_vals = calloc(MEMO_VALS, sizeof(*memo_vals));
	test_codegen();
	test_uncached();
	memo_report("before ls_unwind_init", 0);
	ok(ls_unwind_init() == 0, "ls_unwind_init succeeds");
	ok(ls_unwind_init() == 0, "a second ls_unwind_init is a no-op");
	test_recursion();
	test_skip_max();
	test_cold_warm();
	test_callbacks();
	test_thread();
	memo_report("recursion, callbacks, threads", 0);
	test_signal(0);
	test_signal(1);
	test_makecontext();
	memo_report("signal handlers and a makecontext stack", 0);
	test_cache_rbp();
	test_memo_fake_rbp();
	test_memo_start_rbp();
	test_memo_from();
	test_memo_recent();
	test_memo_overwritten();
	test_memo_capacity();
	test_memo_variants();
	memo_report("%rbp-based and realigned frames", 1);
	test_memo_suffix();
	test_cache_fuzz();
	memo_report("mutating paths", 1);
	test_stress();
	test_garbage();
	return tap_done();
}
