/*
 * unwind.c - the stack walk: rule caches, the proven stack range, and the
 * memo of the last walk.  See unwind.h for the contract, cfi.h for where
 * rules come from, docs/UNWINDING.md for the design and its numbers.
 *
 * Everything above the "outside hooks" section may run inside an
 * allocation hook or a signal handler.
 */
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <sys/uio.h>
#include "cfi.h"
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

/*
 * The last complete walk of a thread (it ended at an outermost frame), as
 * its states: each frame's pc, sp and %rbp, the rule that left it, and
 * where that step read the caller's return address and %rbp (0: no read;
 * a deref CFA's address follows from the rule).  A new walk that reaches
 * one of these states (same pc and sp, and %rbp if a later step uses it)
 * re-reads those words from there on: each step whose words are unchanged
 * led to the same next state -- a step is a function of the state, the
 * rule, the bounds and the words it reads -- so those frames are taken
 * from the memo without walking them.
 * Separate arrays, not an array of structs: GCC would otherwise pair the
 * stores with vector moves right on the walk's critical path.
 */
#define UW_MEMO_MAX 128

struct uw_memo {
	uint32_t n;		/* states; 0 = empty */
	uint32_t seq;		/* uw_seq of its rules */
	uint64_t lo, hi;	/* the range it ran in */
	uint64_t pc[UW_MEMO_MAX], sp[UW_MEMO_MAX], rbp[UW_MEMO_MAX];
	uint64_t rule[UW_MEMO_MAX], ra_at[UW_MEMO_MAX], rbp_at[UW_MEMO_MAX];
};

/* In a memo, rule bit 7 (never set by ls_cfi_rule) marks a state whose
 * %rbp value matters: a later step uses it before reloading it. */
#define UW_RBP_LIVE 0x8000000000000000ull

struct uw_tcache {
	struct uw_tcache *next;	/* registry, never unlinked */
	int in_use;
	uint32_t seq;		/* uw_seq the slots belong to */
	struct uw_memo *memo;	/* the last complete walk */
	struct uw_memo *scratch;	/* the walk being recorded */
	struct uw_memo m[2];
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
	tc->memo = &tc->m[0];
	tc->scratch = &tc->m[1];
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
		tc->memo->n = 0;
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

struct uw_range {
	uint64_t lo, hi;	/* hi == 0: no proven range */
};

/* A proven range holding sp.  Returned by value so that the walk's
 * copies stay in registers. */
static struct uw_range uw_bounds(uint64_t sp)
{
	struct uw_range r = { uw_self.home_lo, 0 };
	uint64_t top;

	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	r.hi = uw_self.home_hi;	/* written after home_lo: read it after */
	if (ls_likely(sp >= r.lo && sp < r.hi))
		return r;
	top = uw_home_top(sp);
	if (top && uw_home_grow(sp, top) == 0)
		return (struct uw_range){ uw_self.home_lo, top };
	if (sp >= UW_USER_MAX)
		return (struct uw_range){ 0, 0 };
	r.lo = sp & ~(UW_PAGE - 1);
	r.hi = r.lo + uw_probe(r.lo, UW_WINDOW_PAGES) * UW_PAGE;
	return sp < r.hi ? r : (struct uw_range){ 0, 0 };
}

/* ------------------------------------------------------------------ */
/* The walk.                                                          */

struct uw_walk {
	uint64_t pc, sp, rbp;	/* the state of the capture's caller */
	struct uw_tcache *tc;	/* NULL: no per-thread cache, no memo */
	struct uw_slot *tab;	/* NULL: no global table */
	uint32_t seq;
};

struct uw_out {
	uint64_t *pcs;
	int n, max, skip;
};

/* Store pc unless still skipping; 0 once the output is full. */
static inline int uw_emit(struct uw_out *o, uint64_t pc)
{
	if (o->skip > 0)
		o->skip--;
	else
		o->pcs[o->n++] = pc;
	return o->n < o->max;
}

static inline uint64_t uw_load(uint64_t a)
{
	uint64_t v;

	memcpy(&v, (const void *)(uintptr_t)a, 8);
	return v;
}

/* An 8-byte read at a lies inside [lo, hi). */
static inline int uw_in(uint64_t a, uint64_t lo, uint64_t hi)
{
	return a >= lo && a < hi && hi - a >= 8;
}

/* Past the per-thread cache: the global table, else build the rule.
 * *cacheable is 0 for a rule that must not be kept. */
__attribute__((noinline))
static uint64_t uw_rule_miss(const struct uw_walk *w, uint64_t pc, int exact,
			     int *cacheable)
{
	uint64_t key = pc << 1 | (uint64_t)exact;
	uint64_t rule = w->tab ? uw_tab_get(w->tab, key) : 0;

	*cacheable = 1;
	if (rule)
		return rule;
	rule = ls_cfi_rule(pc, exact, cacheable);
	if (*cacheable && w->tab &&
	    __atomic_load_n(&uw_seq, __ATOMIC_ACQUIRE) == w->seq)
		uw_tab_put(w->tab, key, rule);
	return rule;
}

static inline uint64_t uw_rule_get(const struct uw_walk *w, uint64_t pc,
				   int exact)
{
	uint64_t key = pc << 1 | (uint64_t)exact, rule;
	struct uw_slot *s;
	int cacheable;

	if (ls_unlikely(!w->tc))
		return uw_rule_miss(w, pc, exact, &cacheable);
	s = &w->tc->slot[uw_hash(key) >> (64 - UW_TC_BITS)];
	if (ls_likely(s->key == key))
		return s->rule;
	rule = uw_rule_miss(w, pc, exact, &cacheable);
	if (cacheable) {
		s->key = key;
		s->rule = rule;
	}
	return rule;
}

struct uw_regs {
	uint64_t pc, sp, rbp, lo, hi;
};

/* Through the sigreturn trampoline: the ucontext sits at sp, and the
 * handler may have run on an alternate stack.  0 if it cannot. */
__attribute__((noinline))
static int uw_step_signal(struct uw_regs *g)
{
	const uint64_t uc = g->sp;
	const uint64_t o_rip = offsetof(ucontext_t, uc_mcontext.gregs[REG_RIP]);
	const uint64_t o_rsp = offsetof(ucontext_t, uc_mcontext.gregs[REG_RSP]);
	const uint64_t o_rbp = offsetof(ucontext_t, uc_mcontext.gregs[REG_RBP]);
	struct uw_range r;

	if (!uw_in(uc, g->lo, g->hi) || !uw_in(uc + o_rip, g->lo, g->hi))
		return 0;
	g->pc = uw_load(uc + o_rip);
	g->sp = uw_load(uc + o_rsp);
	g->rbp = uw_load(uc + o_rbp);
	r = uw_bounds(g->sp);
	g->lo = r.lo;
	g->hi = r.hi;
	return r.hi != 0;
}

/* ---- the memo ---- */

static inline unsigned uw_rbp_how(uint64_t rule)
{
	return (unsigned)(rule >> (56 + LS_CFI_RBP_SHIFT)) & 3;
}

/* Does a step with this rule use the %rbp it starts from? */
static inline int uw_uses_rbp(uint64_t rule)
{
	return (rule >> 56 & LS_CFI_CFA_RBP) ||
	       uw_rbp_how(rule) == LS_CFI_RBP_AT_RBP;
}

/* Mark states [0, k) live or not, given whether state k is. */
static void uw_memo_liveness(struct uw_memo *m, uint32_t k, int live)
{
	while (k-- > 0) {
		live = uw_uses_rbp(m->rule[k]) ||
		       (live && uw_rbp_how(m->rule[k]) == LS_CFI_RBP_SAME);
		m->rule[k] = live ? m->rule[k] | UW_RBP_LIVE :
				    m->rule[k] & ~UW_RBP_LIVE;
	}
}

/* Is the walk's state old state j? */
static inline int uw_memo_match(const struct uw_memo *m, uint32_t j,
				uint64_t pc, uint64_t sp, uint64_t rbp)
{
	return m->sp[j] == sp && m->pc[j] == pc &&
	       (!(m->rule[j] & UW_RBP_LIVE) || m->rbp[j] == rbp);
}

/* Is the word at a, if in range, still v? */
static inline int uw_holds(const struct uw_memo *m, uint64_t a, uint64_t v)
{
	return uw_in(a, m->lo, m->hi) && uw_load(a) == v;
}

/* Do the words step i of the memo read still hold what it read?  The
 * range checks cannot fail for a memo the walk wrote; they keep a
 * damaged one harmless. */
static inline int uw_memo_step_holds(const struct uw_memo *m, uint32_t i)
{
	union ls_cfi_rule r = { .word = m->rule[i] };
	uint64_t base;

	if (!uw_holds(m, m->ra_at[i], m->pc[i + 1]))
		return 0;
	if (m->rbp_at[i] && !uw_holds(m, m->rbp_at[i], m->rbp[i + 1]))
		return 0;
	if (ls_likely(!(r.f.bits & LS_CFI_CFA_DEREF)))
		return 1;
	base = r.f.bits & LS_CFI_CFA_RBP ? m->rbp[i] : m->sp[i];
	return uw_holds(m, base + (uint64_t)(int64_t)r.f.cfa_off, m->sp[i + 1]);
}

/* The first step from old state j on whose words changed, or -1 if none
 * did.  Reads stay in the memo's range, which the caller checked is the
 * walk's. */
static int uw_memo_verify(const struct uw_memo *m, uint32_t j)
{
	for (; j + 1 < m->n; j++)
		if (!uw_memo_step_holds(m, j))
			return (int)j;
	return -1;
}

static void uw_memo_move(struct uw_memo *d, uint32_t to,
			 const struct uw_memo *s, uint32_t from, uint32_t n)
{
	memmove(&d->pc[to], &s->pc[from], n * sizeof(d->pc[0]));
	memmove(&d->sp[to], &s->sp[from], n * sizeof(d->sp[0]));
	memmove(&d->rbp[to], &s->rbp[from], n * sizeof(d->rbp[0]));
	memmove(&d->rule[to], &s->rule[from], n * sizeof(d->rule[0]));
	memmove(&d->ra_at[to], &s->ra_at[from], n * sizeof(d->ra_at[0]));
	memmove(&d->rbp_at[to], &s->rbp_at[from], n * sizeof(d->rbp_at[0]));
}

/* Emit the pcs of old states from..to-1; 0 once the output is full. */
static int uw_memo_emit(const struct uw_memo *m, uint32_t from, uint32_t to,
			struct uw_out *o)
{
	uint32_t c;

	c = (uint32_t)o->skip < to - from ? (uint32_t)o->skip : to - from;
	o->skip -= (int)c;
	from += c;
	c = (uint32_t)(o->max - o->n) < to - from ?
	    (uint32_t)(o->max - o->n) : to - from;
	memcpy(&o->pcs[o->n], &m->pc[from], c * sizeof(o->pcs[0]));
	o->n += (int)c;
	return o->n < o->max;
}

/* Old states j.. continue the new walk's k states: emit the old pcs,
 * then make the memo the new walk (if rec kept all its states). */
__attribute__((noinline))
static int uw_memo_splice(struct uw_memo *old, struct uw_memo *rec,
			  uint32_t k, uint32_t j, struct uw_out *o)
{
	uint32_t rest = old->n - j;

	uw_memo_emit(old, j + 1, old->n, o);
	if (!rec || k + rest > UW_MEMO_MAX || k + j == 0)
		return o->n;
	if (k != j)
		uw_memo_move(old, k, old, j, rest);
	uw_memo_move(old, 0, rec, 0, k);
	uw_memo_liveness(old, k, !!(old->rule[k] & UW_RBP_LIVE));
	old->n = k + rest;
	return o->n;
}

/*
 * Steps j..m-1 of the memo still hold (m is the first that changed): the
 * walk is now in old state m.  Emit and record those frames; 0 if the
 * output is full.
 */
__attribute__((noinline))
static int uw_memo_take(const struct uw_memo *old, uint32_t j, uint32_t m,
			struct uw_memo **rec, uint32_t *k, struct uw_out *o)
{
	if (*rec && *k + (m - j) < UW_MEMO_MAX) {
		uw_memo_move(*rec, *k, old, j, m - j);
		*k += m - j;
	} else {
		*rec = NULL;
	}
	return uw_memo_emit(old, j + 1, m + 1, o);
}

/* The walk in rec ended at an outermost frame: it becomes the memo. */
__attribute__((noinline))
static void uw_memo_commit(struct uw_tcache *tc, struct uw_memo *rec,
			   uint32_t k, const struct uw_regs *g, uint64_t rule,
			   uint32_t seq)
{
	rec->pc[k] = g->pc;
	rec->sp[k] = g->sp;
	rec->rbp[k] = g->rbp;
	rec->rule[k] = rule;
	rec->ra_at[k] = rec->rbp_at[k] = 0;
	uw_memo_liveness(rec, k, 0);
	rec->n = k + 1;
	rec->seq = seq;
	rec->lo = g->lo;
	rec->hi = g->hi;
	tc->scratch = tc->memo;
	tc->memo = rec;
}

/* ---- the loop ---- */

/*
 * pc, sp, rbp, lo, hi and the output count stay in registers: the chain
 * from one frame to the next (pc -> cached rule -> CFA -> return address
 * load) is the cost.  States are recorded into rec for the memo; old is
 * the memo, consulted while the walk's sp has not passed its states.
 */
static int uw_walk(const struct uw_walk *w, struct uw_out *o)
{
	uint64_t pc = w->pc, sp = w->sp, rbp = w->rbp, cfa, at, nrbp, rbp_at;
	struct uw_range range = uw_bounds(sp);
	uint64_t lo = range.lo, hi = range.hi;
	struct uw_memo *old = NULL, *rec = NULL;
	union ls_cfi_rule r;
	uint32_t j = 0, k = 0;
	int exact = 0, m, n = o->n, skip = o->skip;

	if (!hi)
		return 0;
	if (w->tc) {
		old = w->tc->memo;
		rec = w->tc->scratch;
		if (old->n == 0 || old->seq != w->seq || old->lo != lo ||
		    old->hi != hi)
			old = NULL;
	}
	for (;;) {
		if (old) {
			while (j < old->n && old->sp[j] < sp)
				j++;
			if (j == old->n) {
				old = NULL;
			} else if (uw_memo_match(old, j, pc, sp, rbp)) {
				m = uw_memo_verify(old, j);
				o->n = n;
				o->skip = skip;
				if (m < 0)
					return uw_memo_splice(old, rec, k, j, o);
				if ((uint32_t)m > j &&
				    !uw_memo_take(old, j, (uint32_t)m, &rec, &k, o))
					return o->n;
				n = o->n;
				skip = o->skip;
				pc = old->pc[m];
				sp = old->sp[m];
				rbp = old->rbp[m];
				j = (uint32_t)m + 1;
			}
		}
		if (ls_unlikely(pc - 1 >= UW_USER_MAX - 1))
			break;	/* 0 or not a user address */
		r.word = uw_rule_get(w, pc, exact);
		if (ls_unlikely(LS_CFI_KIND(r.f.bits) != LS_CFI_FRAME)) {
			struct uw_regs g = { pc, sp, rbp, lo, hi };

			if (LS_CFI_KIND(r.f.bits) == LS_CFI_OUTERMOST && rec)
				uw_memo_commit(w->tc, rec, k, &g, r.word, w->seq);
			if (LS_CFI_KIND(r.f.bits) != LS_CFI_SIGNAL ||
			    !uw_step_signal(&g))
				break;
			pc = g.pc, sp = g.sp, rbp = g.rbp, lo = g.lo, hi = g.hi;
			exact = 1;
			old = rec = NULL;	/* bounds changed: no memo */
			goto emit;
		}
		cfa = (r.f.bits & LS_CFI_CFA_RBP ? rbp : sp) +
		      (uint64_t)(int64_t)r.f.cfa_off;
		if (ls_unlikely(r.f.bits & LS_CFI_CFA_DEREF)) {
			if (!uw_in(cfa, lo, hi))
				break;
			cfa = uw_load(cfa);
		}
		if (ls_unlikely(cfa <= sp || cfa > hi))
			break;		/* the CFA must rise, inside the range */
		nrbp = rbp;
		rbp_at = 0;
		if (uw_rbp_how(r.word) != LS_CFI_RBP_SAME) {
			rbp_at = uw_rbp_how(r.word) == LS_CFI_RBP_AT_CFA ? cfa :
				 uw_rbp_how(r.word) == LS_CFI_RBP_AT_RBP ? rbp : 0;
			rbp_at += (uint64_t)(int64_t)r.f.rbp_off;
			if (rbp_at && uw_in(rbp_at, lo, hi))
				nrbp = uw_load(rbp_at);
			else	/* undefined or out of range: 0, nothing read */
				nrbp = rbp_at = 0;
		}
		at = cfa + (uint64_t)(int64_t)r.f.ra_off;
		if (ls_unlikely(!uw_in(at, lo, hi)))
			break;
		if (rec) {
			rec->pc[k] = pc;
			rec->sp[k] = sp;
			rec->rbp[k] = rbp;
			rec->rule[k] = r.word;
			rec->ra_at[k] = at;
			rec->rbp_at[k] = rbp_at;
			if (++k == UW_MEMO_MAX)
				rec = NULL;	/* too deep to remember */
		}
		pc = uw_load(at);
		sp = cfa;
		rbp = nrbp;
		exact = 0;
		if (pc == 0)
			break;
emit:
		if (skip > 0) {
			skip--;
		} else {
			o->pcs[n++] = pc;
			if (n == o->max)
				break;
		}
	}
	o->n = n;
	o->skip = skip;
	return n;
}

/*
 * Caches are used when no invalidation is running; a walk that overlapped
 * one may hold a rule of an unmapped module, so it is redone uncached.
 * A capture interrupted by a signal whose handler captures too: the
 * handler's walk leaves the per-thread cache and memo alone (they may be
 * mid-update).
 */
static int uw_capture(const struct uw_walk *start, struct uw_out *o)
{
	struct uw_walk w = *start;
	struct uw_out o0 = *o;
	int n, nested = uw_self.busy;

	uw_self.busy = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	w.seq = __atomic_load_n(&uw_seq, __ATOMIC_ACQUIRE);
	w.tab = w.seq & 1 ? NULL : __atomic_load_n(&uw_tab, __ATOMIC_ACQUIRE);
	w.tc = w.tab && !nested ? uw_tc_get(w.seq) : NULL;
	n = uw_walk(&w, o);
	if (w.tab && __atomic_load_n(&uw_seq, __ATOMIC_ACQUIRE) != w.seq) {
		w.tab = NULL;
		w.tc = NULL;
		*o = o0;
		n = uw_walk(&w, o);
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
	struct uw_walk w = { 0, 0, 0, NULL, NULL, 0 };
	struct uw_out o = { pcs, 0, max, skip };

	if (max <= 0 || !pcs)
		return 0;
	w.pc = (uint64_t)(uintptr_t)__builtin_return_address(0);
	w.sp = (uint64_t)(uintptr_t)(fp + 2);
	w.rbp = fp[0];
	if (o.max > LS_UNWIND_MAX_FRAMES)
		o.max = LS_UNWIND_MAX_FRAMES;
	/* Each step of the walk emits a frame or uses up a skip: with both
	 * bounded, so is the walk, even through looping signal frames. */
	if (o.skip < 0)
		o.skip = 0;
	if (o.skip > LS_UNWIND_MAX_FRAMES)
		o.skip = LS_UNWIND_MAX_FRAMES;
	return uw_capture(&w, &o);
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
