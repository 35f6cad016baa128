/*
 * unwind.c - the stack walk: the rule caches, the proven stack range, and
 * the frame cache of earlier walks.  See unwind.h for the contract, cfi.h
 * for where rules come from, docs/UNWINDING.md for the design and its
 * numbers.
 *
 * Everything above the "outside hooks" section may run inside an
 * allocation hook or a signal handler.
 */
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <string.h>
#include <sys/syscall.h>
#include <sys/ucontext.h>
#include <sys/uio.h>
#include "../common/cfi.h"
#include "../common/lsnap.h"
#include "codemap.h"
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
 * The frame cache: states of earlier walks -- a frame's pc, sp and %rbp,
 * the rule that leaves it -- each linked to its caller's, so they form a
 * tree, and indexed by (pc, sp).  A node also keeps the words its step
 * read: the caller's return address (at ra_at, the caller's pc) and saved
 * %rbp (x_at, x_val; the return address again when the step read no
 * %rbp).  A walk that reaches an indexed state follows the links,
 * re-reading those words: a step whose words are unchanged leads to the
 * same next state -- a step is a function of the state, the rule, the
 * range and the words it reads -- so its frame is taken without walking.
 * The first step that changed ends the chain, and the walk goes on from
 * there, rewriting that node.  A link is only a hint: it is followed only
 * to the very state the checked step leads to.
 */
#define UW_NODE_BITS 10
#define UW_NODES (1u << UW_NODE_BITS)
#define UW_NONE 0xffffffffu

struct uw_node {
	uint64_t pc, sp, rbp, rule;
	uint64_t ra_at;
	uint32_t up;		/* the caller's node; UW_NONE: unknown */
	uint32_t rbp_read;	/* the step loaded the caller's %rbp */
	uint64_t x_at, x_val;
};	/* one cache line: the chain loads one line per frame */

/* One plain 8-byte store.  The walk fills nodes with these: GCC would
 * pair adjacent stores into vector ones and then carry the walk's
 * registers in vector form, right on its critical path. */
#define UW_PUT(dst, v) __asm__("movq %1, %0" : "=m"(dst) : "r"((uint64_t)(v)))

/*
 * The walk memo: whole walks, each the state it started from, the stack
 * words its steps read (with the values they held) and a value the caller
 * attached to the result (the agent's interned site).  A walk is a
 * function of its starting state, the rules (fixed for a uw_seq), the
 * range (fixed while the stack top is) and the words it reads, so when
 * every recorded word still holds its value the walk would give the same
 * frames again: the caller gets its value back without a walk.  Unlike
 * the frame cache, the check is a flat array of independent loads, not a
 * chain.  Only walks on the thread's own stack that used no signal frame
 * and no uncacheable rule are kept.
 *
 * Entries are 8-way sets with a 64-bit tag each, indexed by a hash of
 * (pc, sp, key, hint); their words live in a per-thread ring, contiguous
 * per entry.  An entry is intact while no word was written a whole ring
 * past its start (dirty <= pos + UW_POOL).
 */
/*
 * Sized for deep stacks (docs/UNWINDING.md): with 128 sets and 8192
 * words, python3 (45-word walks) kept ~170 walks in the ring and most
 * misses were entries whose words the ring had already overwritten, or
 * that their set had replaced.  256 sets and 32768 words (640 KiB of
 * address space, touched only as walks are recorded) halve python's
 * misses and leave cxx-containers 3% of them.
 */
#define UW_MEMO_SET_BITS 8
#define UW_MEMO_SETS (1u << UW_MEMO_SET_BITS)
#define UW_MEMO_WAYS 8
#define UW_POOL (1u << 15)	/* words in the ring */
#define UW_MEMO_MAXW 512	/* words one walk may record */
/* Words checked per test.  A walk's words are padded to a multiple of
 * this with uw_pad_word, which always holds 0, so the check has no tail
 * and each group of four is one 64-byte line of the ring. */
#define UW_MEMO_GROUP 4

struct uw_word {
	uint64_t at, val;
};

struct uw_memo {
	uint64_t pc, sp, rbp, key;
	void *val;		/* NULL: empty */
	uint64_t pos;		/* ring position of its first word */
	const struct uw_word *wd;	/* that word */
	uint32_t nw;		/* words, a multiple of UW_MEMO_GROUP, >= 1 */
	uint32_t need_rbp;	/* the walk used the %rbp it started with */
};	/* 64 bytes: one line */

/*
 * Walks from the same pc and sp (a hook called at the same depth from
 * one place) differ first in the caller's return address.  The memo uses
 * that word as the hint that picks the entry: this cache says, for a pc,
 * at what offset from sp the first walk from it read its return address.
 * Only a hint: all words are checked anyway.
 */
#define UW_FSZ 512

struct uw_fsz {
	uint64_t pc;
	uint64_t off;		/* from sp */
};

/*
 * The hint goes deeper where one start state has many walks.  A hook
 * called from one place at one depth with the same caller (python3's
 * allocator wrappers under the interpreter loop) can have dozens of
 * walks that differ from the second to the eighth return address: all
 * had the same hint, hence the same set, and replaced each other in its
 * eight ways while 2000 other entries sat idle.  When a miss finds an
 * entry of the same start state and hint whose words changed, the hint
 * chain of that walk is made one return address deeper: this cache says,
 * for a return address ra, how far above ra's slot the next return
 * address lies, which is fixed when the frame ra returns into has an
 * %rsp-based CFA.  The hint then mixes the return addresses along the
 * chain (UW_DEEP_MAX at most), and the walks of that state spread over
 * the sets.  Only a hint: every word is checked anyway, and put and
 * lookup compute it with the same function on the same stack.
 */
#define UW_DEEP 1024
#define UW_DEEP_MAX 8

/*
 * The recent entries: a lookup first tries the last two entries hit or
 * put for its start state, key and first return address (the hint's
 * first word), kept as copies in a small 2-way table indexed by a hash of
 * those.  Most captures come back to a walk they hit a moment ago, so
 * most lookups skip the deep hint's chain, the set's hash and the tag
 * scan.  A copy answers under the same conditions as its entry (state,
 * key, %rbp where used, words intact in the ring, every word holding), so
 * it is exact whatever else the sets hold.
 */
#define UW_FAST_BITS 9
#define UW_FAST_WAYS 2

struct uw_deep {
	uint64_t ra;
	uint64_t off;		/* from ra's slot to the next one's */
};

/*
 * The rest of a walk from a frame: for a frame-cache node's state (pc, sp
 * and, when a step from there used it before setting it, %rbp), where the
 * last recorded walk through that state kept the words it read from there
 * on (in the memo's ring) and the frames it gave (in the frame ring).  A
 * walk is a function of its state, the rules, the range and the words it
 * reads, so a later walk that reaches the same state, with every one of
 * those words holding its value, gives the same frames from there: it
 * copies them after one flat check of the words, instead of following the
 * frame cache's chain node by node.  That is the walk memo keyed by frame:
 * a miss costs the frames that changed plus a flat check of the rest.
 */
struct uw_sfx {
	uint64_t pc, sp, rbp;
	uint64_t wpos;		/* ring position of its first word */
	uint64_t fpos;		/* frame ring position of its first frame */
	uint32_t nw, nf;	/* words and frames to the walk's end */
	uint32_t epoch;		/* uw_tcache.epoch when written */
	uint8_t need_rbp;	/* a step from here used this %rbp */
	uint8_t whole;		/* the walk ended by itself, not at its max */
};

/* A frame of a recorded walk: the return address and where it was read
 * (UW_FIXED: the next slot is at a fixed distance, see uw_rec). */
struct uw_frame {
	uint64_t pc, ra_at;
};

#define UW_FIXED (1ull << 63)
#define UW_FRAMES (1u << 13)	/* frames in the frame ring */

/* A step of the walk being recorded, for the suffixes it publishes. */
struct uw_step {
	uint64_t pc, sp, rbp;	/* the state it left */
	uint64_t wpos, fpos;	/* its first word, its frame */
	uint32_t id;		/* the state's node; UW_NONE: none */
	uint32_t flags;		/* UW_STEP_USES, UW_STEP_SETS (%rbp) */
};

enum { UW_STEP_USES = 1, UW_STEP_SETS = 2 };

/* A walk being recorded. */
struct uw_rec {
	struct uw_word *w, *end;	/* next word, end of the room */
	struct uw_word *w0;		/* the first, at ring position wpos0 */
	uint64_t wpos0;
	struct uw_frame *f, *fend, *f0;	/* the same in the frame ring */
	uint64_t fpos0;
	struct uw_step *log;	/* its steps (the thread's, one walk at a time) */
	int nlog;
	int nosfx;		/* publish no suffix: the log or frames overflowed,
				 * or an end that depends on words not recorded */
	int end_need;		/* the suffix it ended with needs its %rbp */
	/* The first steps: where each read its return address, its value,
	 * and whether the next slot is at a fixed distance (an %rsp-based
	 * CFA, the return address at CFA - 8). */
	uint64_t ra_at[UW_DEEP_MAX + 2], ra[UW_DEEP_MAX + 2];
	uint8_t fixed[UW_DEEP_MAX + 2];
	int nra;
	uint64_t rbp_at, rbp_val;	/* where the current %rbp came from */
	int rbp_from;		/* UW_RBP_START, _WORD (rbp_at) or _FIXED */
	int need_rbp;		/* a step used the starting %rbp */
	int bad;		/* not to be kept */
};

enum { UW_RBP_START, UW_RBP_WORD, UW_RBP_FIXED };

struct uw_tcache {
	struct uw_tcache *next;	/* registry, never unlinked */
	int in_use;
	uint32_t seq;		/* uw_seq the rules and nodes belong to */
	uint64_t hi;		/* top of the stack the nodes are on */
	uint32_t ring;		/* next node to hand out */
	uint32_t index[UW_NODES];	/* hash of (pc, sp) -> node */
	struct uw_node node[UW_NODES];
	struct uw_slot slot[UW_TC_SIZE];
	/* the walk memo */
	uint64_t head;		/* ring position for the next walk's words */
	uint64_t dirty;		/* highest ring position written, plus one */
	struct uw_memo pend;	/* the last walk, waiting for its value */
	uint32_t pend_seq;
	int pend_ok;
	uint64_t walks, hits;	/* counted by this thread, read by snapshots */
	uint8_t victim[UW_MEMO_SETS];	/* next way to replace */
	int collided;		/* the last miss met its state's entry */
	int fast_used;		/* a recent entry was written since the clear */
	uint64_t pend_hint;	/* the pending walk's hint */
	uint64_t pend_h0;	/* and its recent-table hash */
	uint64_t missed_sp, missed_key;	/* the last lookup that missed */
	struct uw_fsz fsz[UW_FSZ];	/* pc -> where its return address is */
	struct uw_deep deep[UW_DEEP];	/* ra -> where the next one is */
	/* Each set of tags and each entry one cache line (an entry across
	 * two lines made the hit load both). */
	uint64_t tag[UW_MEMO_SETS][UW_MEMO_WAYS]	/* uw_memo_hash; 0: empty */
		__attribute__((aligned(64)));
	struct uw_memo memo[UW_MEMO_SETS][UW_MEMO_WAYS];
	/* the recent entries, most recent first; pc 0: empty */
	struct uw_memo fast[1u << UW_FAST_BITS][UW_FAST_WAYS];
	/* the walk memo keyed by frame */
	uint32_t epoch;		/* bumped when the nodes are forgotten */
	uint64_t takes;		/* walks that ended with a suffix */
	uint64_t fhead, fdirty;	/* the frame ring, as head and dirty */
	struct uw_sfx sfx[UW_NODES];	/* by node */
	struct uw_step log[LS_UNWIND_MAX_FRAMES];
	struct uw_frame frames[UW_FRAMES];
	struct uw_word pool[UW_POOL] __attribute__((aligned(64)));
};

static struct uw_slot *uw_tab;
static const uint64_t uw_pad_word;	/* the memo's padding reads it */
static uint32_t uw_seq;		/* odd while an invalidation runs */
/* A claimed cache's seq: odd, so never one a walk caches under, and not
 * a value uw_seq reaches (2^31 dlcloses), so that a cache whose seq is
 * uw_seq's is current and uw_seq even. */
#define UW_SEQ_NONE 0xffffffffu
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
			tc->seq = UW_SEQ_NONE;	/* never current: cleared */
			return tc;
		}
	}
	tc = ls_sys_map(sizeof(*tc));
	if (!tc)
		return NULL;
	tc->in_use = 1;
	tc->seq = UW_SEQ_NONE;
	tc->next = __atomic_load_n(&uw_registry, __ATOMIC_RELAXED);
	while (!__atomic_compare_exchange_n(&uw_registry, &tc->next, tc, 1,
					    __ATOMIC_RELEASE,
					    __ATOMIC_RELAXED))
		;
	return tc;
}

/* Forget the memo's entries (the ring's words are simply left behind). */
static void uw_memo_clear(struct uw_tcache *tc)
{
	memset(tc->tag, 0, sizeof(tc->tag));
	memset(tc->fsz, 0, sizeof(tc->fsz));
	memset(tc->deep, 0, sizeof(tc->deep));
	if (tc->fast_used)	/* 64 KiB: untouched until used */
		memset(tc->fast, 0, sizeof(tc->fast));
	tc->fast_used = 0;
	tc->pend_ok = 0;
	tc->epoch++;	/* every suffix goes with the nodes */
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
		memset(tc->index, 0xff, sizeof(tc->index));	/* UW_NONE */
		uw_memo_clear(tc);
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
	uint64_t done = 0, cnt, i, at;
	long pid = uw_sys3(SYS_getpid, 0, 0, 0), r;

	while (done < n &&
	       !__atomic_load_n(&uw_probe_mincore, __ATOMIC_RELAXED)) {
		cnt = n - done < UW_PROBE_BATCH ? n - done : UW_PROBE_BATCH;
		for (i = 0; i < cnt; i++) {
			at = page + (done + i) * UW_PAGE;
			remote[i].iov_base = (void *)(uintptr_t)at;
			remote[i].iov_len = 1;
		}
		local.iov_base = buf;
		local.iov_len = cnt;
		r = uw_sys6(SYS_process_vm_readv, pid, (long)&local, 1,
			    (long)remote, (long)cnt, 0);
		if (r == -ENOSYS || r == -EPERM || r == -EACCES) {
			__atomic_store_n(&uw_probe_mincore, 1,
					 __ATOMIC_RELAXED);
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
	/* A signal handler's capture may read these between any two
	 * stores: lowering home_lo keeps the range proven, but a new top
	 * must not meet an old low end. */
	if (hi != top) {
		uw_self.home_hi = 0;
		__atomic_signal_fence(__ATOMIC_SEQ_CST);
	}
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
	uint64_t hi0;		/* top of the range sp is in */
	struct uw_tcache *tc;	/* NULL: no per-thread caches */
	struct uw_slot *tab;	/* NULL: no global table */
	struct uw_rec *rec;	/* NULL: not recording */
	uint32_t seq;
};

struct uw_out {
	uint64_t *pcs;
	int n, max, skip;
};

static inline uint64_t uw_load(uint64_t a)
{
	uint64_t v;

	memcpy(&v, (const void *)(uintptr_t)a, 8);
	return v;
}

/* An 8-byte read at a lies inside [lo, hi).  A step reads nothing below
 * the sp of the frame it leaves: the words below are dead (and change
 * under the unwinder's own feet), so lo is that sp. */
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
	} else if (w->rec) {
		w->rec->bad = 1;	/* e.g. a pc in no module yet */
	}
	return rule;
}

struct uw_regs {
	uint64_t pc, sp, rbp, lo, hi;
	uint64_t sp0, hi0;	/* where the walk started: sp and range top */
	uint64_t rbx;		/* known only as a signal frame gives it */
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
	const uint64_t o_rbx = offsetof(ucontext_t, uc_mcontext.gregs[REG_RBX]);
	struct uw_range r;

	_Static_assert(REG_RBX < REG_RIP && REG_RBP < REG_RIP,
		       "the registers read lie below %rip's in the ucontext");
	if (!uw_in(uc, g->sp, g->hi) || !uw_in(uc + o_rip, g->sp, g->hi))
		return 0;
	g->pc = uw_load(uc + o_rip);
	g->rbp = uw_load(uc + o_rbp);
	g->rbx = uw_load(uc + o_rbx);
	g->sp = uw_load(uc + o_rsp);
	/* Interrupted on this stack: its frames lie above the handler's.
	 * Lower is possible only from an alternate stack to another one,
	 * and never below where the walk started on its own stack (those
	 * words are dead, the unwinder's own frames among them). */
	if (g->sp >= g->lo && g->sp <= uc)
		return 0;
	r = uw_bounds(g->sp);
	g->lo = r.lo;
	g->hi = r.hi;
	return r.hi != 0 && !(r.hi == g->hi0 && g->sp <= g->sp0);
}

/* ---- the frame cache ---- */

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

/* ---- recording a walk for the memo ---- */

static inline void uw_rec_word(struct uw_rec *rc, uint64_t at, uint64_t val)
{
	if (ls_unlikely(rc->w == rc->end)) {
		rc->bad = 1;
		return;
	}
	rc->w->at = at;
	rc->w->val = val;
	rc->w++;
}

/*
 * One step by rule, which read the return address npc at ra_at, maybe
 * the caller's %rbp xval at xat (xat 0: none) and maybe the CFA itself at
 * dat (dat 0: none).  A saved %rbp word is recorded only once a later
 * step uses it: code built without frame pointers keeps data in %rbp,
 * and a walk that never uses it does not depend on it.  A step that uses
 * the %rbp the walk started with makes the memo match %rbp too.
 */
/* The walk uses the %rbp it has now. */
static inline void uw_rec_use_rbp(struct uw_rec *rc)
{
	if (rc->rbp_from == UW_RBP_START)
		rc->need_rbp = 1;
	else if (rc->rbp_from == UW_RBP_WORD)
		uw_rec_word(rc, rc->rbp_at, rc->rbp_val);
	rc->rbp_from = rc->rbp_from == UW_RBP_START ? UW_RBP_START :
		       UW_RBP_FIXED;
}

static inline uint64_t uw_rec_wpos(const struct uw_rec *rc)
{
	return rc->wpos0 + (uint64_t)(rc->w - rc->w0);
}

/* The step from state (pc, sp, rbp), node id, into the log and its frame
 * into the frame ring: its words are those recorded from now on. */
static inline __attribute__((always_inline))
void uw_rec_log(struct uw_rec *rc, uint64_t pc, uint64_t sp, uint64_t rbp,
		uint32_t id, uint64_t rule, uint64_t npc, uint64_t ra_at,
		int fixed)
{
	struct uw_step *st;

	if (ls_unlikely(rc->nlog == LS_UNWIND_MAX_FRAMES || rc->f == rc->fend)) {
		rc->nosfx = 1;
		return;
	}
	st = &rc->log[rc->nlog++];
	st->pc = pc;
	st->sp = sp;
	st->rbp = rbp;
	st->wpos = uw_rec_wpos(rc);
	st->fpos = rc->fpos0 + (uint64_t)(rc->f - rc->f0);
	st->id = id;
	st->flags = (uw_uses_rbp(rule) ? UW_STEP_USES : 0) |
		    (uw_rbp_how(rule) != LS_CFI_RBP_SAME ? UW_STEP_SETS : 0);
	rc->f->pc = npc;
	rc->f->ra_at = ra_at | (fixed ? UW_FIXED : 0);
	rc->f++;
}

static inline __attribute__((always_inline))
void uw_rec_step_in(struct uw_rec *rc, uint64_t pc, uint64_t sp,
		    uint64_t rbp, uint32_t id, uint64_t rule, uint64_t dat,
		    uint64_t cfa, uint64_t ra_at, uint64_t npc, uint64_t xat,
		    uint64_t xval)
{
	int fixed = !dat && !(rule >> 56 & LS_CFI_CFA_RBP) && ra_at + 8 == cfa;

	if (uw_uses_rbp(rule))
		uw_rec_use_rbp(rc);
	uw_rec_log(rc, pc, sp, rbp, id, rule, npc, ra_at, fixed);
	if (dat)
		uw_rec_word(rc, dat, cfa);
	if (rc->nra < UW_DEEP_MAX + 2) {
		rc->ra_at[rc->nra] = ra_at;
		rc->ra[rc->nra] = npc;
		rc->fixed[rc->nra] = (uint8_t)fixed;
		rc->nra++;
	}
	uw_rec_word(rc, ra_at, npc);
	if (uw_rbp_how(rule) != LS_CFI_RBP_SAME) {
		rc->rbp_from = xat ? UW_RBP_WORD : UW_RBP_FIXED;
		rc->rbp_at = xat;
		rc->rbp_val = xval;
	}
}

/* Out of line for the walk, whose loop keeps its state in registers;
 * inline in the chain, which records every frame it takes. */
__attribute__((noinline))
static void uw_rec_step(struct uw_rec *rc, uint64_t pc, uint64_t sp,
			uint64_t rbp, uint64_t rule, uint64_t dat,
			uint64_t cfa, uint64_t ra_at, uint64_t npc,
			uint64_t xat, uint64_t xval)
{
	uw_rec_step_in(rc, pc, sp, rbp, UW_NONE, rule, dat, cfa, ra_at, npc,
		       xat, xval);
}

static inline uint32_t uw_node_hash(uint64_t pc, uint64_t sp)
{
	return (uint32_t)(((pc ^ sp << 20) * 0x9e3779b97f4a7c15ull) >>
			  (64 - UW_NODE_BITS));
}

/* The node for state (pc, sp): its own if indexed, else the next in the
 * ring (a state's node is rewritten in place when its step changed). */
static inline uint32_t uw_node_for(struct uw_tcache *tc, uint64_t pc,
				   uint64_t sp)
{
	uint32_t h = uw_node_hash(pc, sp), id = tc->index[h];

	if (id == UW_NONE || tc->node[id].pc != pc || tc->node[id].sp != sp) {
		id = tc->ring++ & (UW_NODES - 1);
		tc->index[h] = id;
	}
	tc->node[id].up = UW_NONE;
	return id;
}

/* A deref CFA step: is the word it loaded the CFA from unchanged? */
__attribute__((noinline))
static int uw_node_deref_holds(const struct uw_node *n, uint64_t cfa)
{
	union ls_cfi_rule r = { .word = n->rule };

	return uw_load((r.f.bits & LS_CFI_CFA_RBP ? n->rbp : n->sp) +
		       (uint64_t)(int64_t)r.f.cfa_off) == cfa;
}

/*
 * The walk is in node id's state with %rbp *rbp: take frames along the
 * chain while the steps hold, emitting them.  A step holds when the words
 * it read hold what they held (its return address: the caller's pc), it
 * does not use a %rbp other than the node's, and the next node is the
 * very state it leads to.  Every address in a node was checked against
 * the range by the walk that wrote it, the range being this one (the
 * cache is emptied when the stack top changes; the range only grows
 * downward), so the reads need no check here.
 *
 * Returns UW_NONE when done (an outermost frame was reached, or the
 * output is full), else the node whose step must be walked, with *rbp
 * the %rbp the walk has there.
 */
__attribute__((noinline))
static uint32_t uw_chain(const struct uw_tcache *tc, uint32_t id,
			 uint64_t *rbp, struct uw_out *o, struct uw_rec *rc)
{
	const struct uw_node *n = &tc->node[id], *p;
	uint64_t r = *rbp, *pcs = o->pcs;
	int cnt = o->n, skip = o->skip, max = o->max;
	union ls_cfi_rule rule;

	for (;;) {
		rule.word = n->rule;
		if (LS_CFI_KIND(rule.f.bits) == LS_CFI_OUTERMOST) {
			id = UW_NONE;
			break;
		}
		if (n->up == UW_NONE)
			break;
		p = &tc->node[n->up];
		if (ls_unlikely(n->rbp != r) && uw_uses_rbp(rule.word))
			break;
		if (p->sp != n->ra_at - (uint64_t)(int64_t)rule.f.ra_off)
			break;
		if ((uw_load(n->ra_at) ^ p->pc) | (uw_load(n->x_at) ^ n->x_val))
			break;
		if (ls_unlikely(rule.f.bits & LS_CFI_CFA_DEREF) &&
		    !uw_node_deref_holds(n, p->sp))
			break;
		if (rc)
			uw_rec_step_in(rc, n->pc, n->sp, r, id, rule.word,
				    rule.f.bits & LS_CFI_CFA_DEREF ?
				    (rule.f.bits & LS_CFI_CFA_RBP ? n->rbp :
				     n->sp) + (uint64_t)(int64_t)rule.f.cfa_off :
				    0, p->sp, n->ra_at, p->pc,
				    n->rbp_read ? n->x_at : 0, n->x_val);
		if (uw_rbp_how(rule.word) != LS_CFI_RBP_SAME)
			r = n->rbp_read ? n->x_val : 0;
		id = n->up;
		n = p;
		if (skip > 0) {
			skip--;
		} else {
			pcs[cnt++] = p->pc;
			if (cnt == max) {
				id = UW_NONE;
				break;
			}
		}
	}
	o->n = cnt;
	o->skip = skip;
	*rbp = r;
	return id;
}

/* ---- the walk memo keyed by frame ---- */

/* Every word of the ring from position pos on, n of them, holds. */
static inline int uw_words_hold(const struct uw_tcache *tc, uint64_t pos,
				uint32_t n)
{
	const struct uw_word *wd = &tc->pool[pos & (UW_POOL - 1)];
	const struct uw_word *end = wd + n;
	uint64_t d = 0;

	for (; end - wd >= UW_MEMO_GROUP; wd += UW_MEMO_GROUP)
		if ((uw_load(wd[0].at) ^ wd[0].val) |
		    (uw_load(wd[1].at) ^ wd[1].val) |
		    (uw_load(wd[2].at) ^ wd[2].val) |
		    (uw_load(wd[3].at) ^ wd[3].val))
			return 0;
	for (; wd < end; wd++)
		d |= uw_load(wd->at) ^ wd->val;
	return d == 0;
}

/*
 * The walk, recording into rc, is in node id's state with %rbp rbp: take
 * the rest of it from the node's suffix when that can be kept whole and
 * every word of it holds.  Returns 1 when taken (the walk is over: its
 * frames are in o, its words and frames in rc), 0 when nothing changed.
 * The suffix's words are read from the ring into rc's room further on:
 * both checks of a position against the rings' heads make sure those
 * copies never overwrite what they copy.
 */
__attribute__((noinline))
static int uw_sfx_take(struct uw_tcache *tc, uint32_t id, uint64_t rbp,
		       struct uw_out *o, struct uw_rec *rc)
{
	const struct uw_sfx *x = &tc->sfx[id];
	const struct uw_frame *fr;
	uint64_t wcur = uw_rec_wpos(rc);
	uint64_t fcur = rc->fpos0 + (uint64_t)(rc->f - rc->f0);
	uint32_t nf = (uint32_t)(o->max - o->n), k;

	if (x->epoch != tc->epoch || x->pc != tc->node[id].pc ||
	    x->sp != tc->node[id].sp || o->skip ||
	    (x->need_rbp && x->rbp != rbp))
		return 0;
	if (x->nf < nf) {
		if (!x->whole)
			return 0;	/* it was cut shorter than this one */
		nf = x->nf;
	}
	if (tc->dirty > x->wpos + UW_POOL || wcur + x->nw > x->wpos + UW_POOL ||
	    x->nw > (uint64_t)(rc->end - rc->w) ||
	    tc->fdirty > x->fpos + UW_FRAMES ||
	    fcur + nf > x->fpos + UW_FRAMES ||
	    nf > (uint64_t)(rc->fend - rc->f))
		return 0;
	if (!uw_words_hold(tc, x->wpos, x->nw))
		return 0;
	if (x->need_rbp)
		uw_rec_use_rbp(rc);
	memcpy(rc->w, &tc->pool[x->wpos & (UW_POOL - 1)],
	       x->nw * sizeof(*rc->w));
	rc->w += x->nw;
	fr = &tc->frames[x->fpos & (UW_FRAMES - 1)];
	for (k = 0; k < nf; k++) {
		o->pcs[o->n++] = fr[k].pc;
		rc->f[k] = fr[k];
		if (rc->nra < UW_DEEP_MAX + 2) {
			rc->ra_at[rc->nra] = fr[k].ra_at & ~UW_FIXED;
			rc->ra[rc->nra] = fr[k].pc;
			rc->fixed[rc->nra] = (fr[k].ra_at & UW_FIXED) != 0;
			rc->nra++;
		}
	}
	rc->f += nf;
	rc->end_need = x->need_rbp;
	__atomic_store_n(&tc->takes, tc->takes + 1, __ATOMIC_RELAXED);
	return 1;
}

/*
 * After a recorded walk that ended by itself or at its max, wend the
 * ring position past its last word: each of its steps that left a node's
 * state becomes that node's suffix.  Whether a step needs the %rbp it
 * started from is known from the end back: it uses it, or leaves it to
 * the next step that does.
 */
static void uw_sfx_publish(struct uw_tcache *tc, const struct uw_rec *rc,
			   uint64_t wend, int whole)
{
	uint64_t fend = rc->fpos0 + (uint64_t)(rc->f - rc->f0);
	const struct uw_step *st;
	struct uw_sfx *x;
	int need = rc->end_need, i;

	for (i = rc->nlog - 1; i >= 0; i--) {
		st = &rc->log[i];
		need = (st->flags & UW_STEP_USES) ||
		       (!(st->flags & UW_STEP_SETS) && need);
		if (st->id == UW_NONE)
			continue;
		x = &tc->sfx[st->id];
		x->pc = st->pc;
		x->sp = st->sp;
		x->rbp = st->rbp;
		x->wpos = st->wpos;
		x->fpos = st->fpos;
		x->nw = (uint32_t)(wend - st->wpos);
		x->nf = (uint32_t)(fend - st->fpos);
		x->epoch = tc->epoch;
		x->need_rbp = (uint8_t)need;
		x->whole = (uint8_t)whole;
	}
}

/* ---- the loop ---- */

/*
 * A step by a rule other than LS_CFI_FRAME: 1 with *g the state past a
 * signal frame, else 0 (the walk ends; an outermost frame gets its node,
 * the caller of node *prev).  Out of line and given scalars, so the
 * loop's state is never gathered into a struct: GCC would then keep it
 * in vector registers.
 */
__attribute__((noinline))
static int uw_special(const struct uw_walk *w, struct uw_tcache *tc,
		      uint64_t rule, uint64_t pc, uint64_t sp, uint64_t rbp,
		      uint64_t lo, uint64_t hi, uint32_t prev,
		      struct uw_regs *g)
{
	union ls_cfi_rule r = { .word = rule };
	uint32_t id;

	*g = (struct uw_regs){ pc, sp, rbp, lo, hi, w->sp, w->hi0, 0 };
	if (LS_CFI_KIND(r.f.bits) == LS_CFI_OUTERMOST && tc) {
		id = uw_node_for(tc, pc, sp);
		tc->node[id] = (struct uw_node){ pc, sp, rbp, rule, 0, UW_NONE,
						 0, 0, 0 };
		if (prev != UW_NONE)
			tc->node[prev].up = id;
	}
	return LS_CFI_KIND(r.f.bits) == LS_CFI_SIGNAL && uw_step_signal(g);
}

/* The frame cache for a walk in [lo, hi): only on the thread's own stack
 * (other stacks come and go), emptied when that changes. */
static struct uw_tcache *uw_nodes(struct uw_tcache *tc, uint64_t hi)
{
	if (!tc || hi != uw_self.home_hi)
		return NULL;
	if (ls_unlikely(tc->hi != hi)) {
		memset(tc->index, 0xff, sizeof(tc->index));
		uw_memo_clear(tc);
		tc->hi = hi;
	}
	return tc;
}

/*
 * JIT code: where the CFI walk reaches a pc that no CFI describes (no
 * module holds it, or its module has no CFI for it: V8's builtins in the
 * node binary), the frame-pointer chain from the walk's %rbp may go on:
 * runtimes that keep frame pointers in their JIT code (the BEAM with
 * +JPperf true or map, V8) link each frame, [fp] the caller's fp, [fp + 8]
 * its return address.  Each step is checked: fp aligned; at or above sp
 * when on the walk's stack, else in memory probed readable (an Erlang
 * process's stack is on its heap); above the fp before it, by less than
 * UW_FP_STEP_MAX; the return address in a module or executable memory
 * (codemap.h).
 * A step whose frame is on the walk's own stack hands the walk back to
 * CFI (*g, return 1): the caller may be C code.  Otherwise the frames go
 * to o and 0 is returned.
 *
 * A chain is kept only whole: ended by a 0 fp (the runtime's outermost
 * frame), by the hand-back, or by a full o.  A runtime without frame
 * pointers leaves a stale %rbp, which can lead to a real but older
 * frame: the BEAM without them (+JPperf dump or false) gives an Erlang
 * function three calls up as the NIF's caller, then a word that is no
 * frame.  A chain that breaks off is dropped, and a LSNAP_FRAME_STOP_NOFP
 * frame says where the walk had to stop (mark: for a pc in no module
 * only; a module's code without CFI is most often an outermost frame,
 * _start or a context's start).  Never on the path of code with CFI.
 */
#define UW_FP_STEP_MAX (1ull << 20)

/* A return address found by a frame pointer: in a loaded module (one
 * dlopen()ed after codemap.c last read the mappings included), or in
 * executable memory. */
static int uw_fp_code(uint64_t a)
{
	return ls_codemap_has(a) || ls_cfi_in_module(a);
}

__attribute__((noinline))
static int uw_fp_walk(struct uw_regs *g, struct uw_out *o, int mark,
		      struct uw_rec *rc)
{
	uint64_t fp = g->rbp, last = 0, wlo = 0, whi = 0, ra, nfp, page;
	int n0 = o->n, skip0 = o->skip;

	while (o->n < o->max) {
		if ((fp & 7) || fp - UW_PAGE >= UW_USER_MAX - UW_PAGE ||
		    fp <= last || (last && fp - last > UW_FP_STEP_MAX))
			break;
		if (fp >= g->lo && fp < g->hi) {
			if (fp < g->sp || !uw_in(fp + 8, fp, g->hi))
				break;
		} else if (fp < wlo || fp + 16 > whi) {
			/* Page by page: a chain spans a page or two, and a
			 * wider probe would fault in pages the program never
			 * touched (process_vm_readv pins what it reads). */
			page = fp & ~(UW_PAGE - 1);
			if (page != whi || fp < wlo)
				wlo = whi = page;
			while (whi < fp + 16 && uw_probe(whi, 1) == 1)
				whi += UW_PAGE;
			if (fp + 16 > whi)
				break;
		}
		ra = uw_load(fp + 8);
		nfp = uw_load(fp);
		/* The memo keeps a walk whose words are all on its stack. */
		if (rc && fp >= g->lo && fp < g->hi) {
			uw_rec_word(rc, fp, nfp);
			uw_rec_word(rc, fp + 8, ra);
		} else if (rc) {
			rc->bad = 1;
		}
		if (ra - UW_PAGE >= UW_USER_MAX - UW_PAGE || !uw_fp_code(ra - 1))
			break;
		if (fp >= g->lo && fp < g->hi) {
			*g = (struct uw_regs){ ra, fp + 16, nfp, g->lo, g->hi,
					       g->sp0, g->hi0, 0 };
			return 1;
		}
		if (o->skip > 0)
			o->skip--;
		else
			o->pcs[o->n++] = ra;
		if (!nfp)
			return 0;
		last = fp;
		fp = nfp;
	}
	if (o->n == o->max)
		return 0;
	o->n = n0;
	o->skip = skip0;
	if (mark && !o->skip)
		o->pcs[o->n++] = LSNAP_FRAME_STOP_NOFP;
	return 0;
}

/*
 * Walk from w's state, emitting into o, through the frame cache when the
 * walk is on the thread's stack.  One long function on purpose: the chain
 * from one frame to the next (pc -> cached rule -> CFA -> return address
 * load) is the cost, and helpers taking the loop's state by address would
 * move pc, sp, rbp, lo, hi and the output count out of registers.
 */
/* A saved register after one full step: the same, loaded from its
 * save slot (inside the range), or lost (0). */
static uint64_t uw_full_reg(int how, int64_t off, uint64_t cfa, uint64_t v,
			    uint64_t sp, uint64_t hi)
{
	uint64_t at = cfa + (uint64_t)off;

	if (how == LS_CFI_RBP_SAME)
		return v;
	return how == LS_CFI_RBP_AT_CFA && uw_in(at, sp, hi) ? uw_load(at) : 0;
}

/* One step of g's frame by its full row (pc exact or a return address):
 * its caller's pc, sp, %rbp and %rbx.  0 if the row or a read fails. */
static int uw_full_step(struct uw_regs *g, int exact)
{
	struct ls_cfi_full f;
	uint64_t cfa, at;

	if (ls_cfi_full(g->pc, exact, &f))
		return 0;
	cfa = (f.cfa_reg == LS_CFI_REG_RSP ? g->sp :
	       f.cfa_reg == LS_CFI_REG_RBP ? g->rbp : g->rbx) +
	      (uint64_t)f.cfa_off;
	at = cfa + (uint64_t)f.ra_off;
	if (cfa <= g->sp || cfa > g->hi || !uw_in(at, g->sp, g->hi))
		return 0;
	g->rbp = uw_full_reg(f.rbp_how, f.rbp_off, cfa, g->rbp, g->sp, g->hi);
	g->rbx = uw_full_reg(f.rbx_how, f.rbx_off, cfa, g->rbx, g->sp, g->hi);
	g->pc = uw_load(at);
	g->sp = cfa;
	return 1;
}

/*
 * The frame (pc, sp), where the compact rule stops, after the signal
 * frame that gave the interrupted registers sig: walk again from those
 * with full rows, following where each frame saved %rbx, to that frame,
 * and step it so.  A CFA on %rbx needs this: glibc's lazy-binding
 * trampoline, _dl_runtime_resolve, has one, so a handler that allocates
 * while the program is inside lazy binding (its first call of a
 * function) goes on to the program's frames.  1 with the caller's state
 * in *g, else 0.  A microsecond a frame: for these frames only.
 */
#define UW_FULL_FRAMES 64

__attribute__((noinline))
static int uw_step_after_signal(const struct uw_regs *sig, uint64_t pc,
				uint64_t sp, int exact, struct uw_regs *g)
{
	int ex = 1, i;

	*g = *sig;
	for (i = 0; i < UW_FULL_FRAMES; i++) {
		if (g->pc == pc && g->sp == sp && ex == exact)
			return uw_full_step(g, ex);
		if (g->sp > sp || !uw_full_step(g, ex))
			return 0;
		ex = 0;
	}
	return 0;
}

static int uw_walk(struct uw_walk *w, struct uw_out *o)
{
	uint64_t pc = w->pc, sp = w->sp, rbp = w->rbp, cfa, at, nrbp, xat;
	uint64_t npc, r2, dat;
	struct uw_range range = uw_bounds(sp);
	uint64_t lo = range.lo, hi = range.hi;
	struct uw_tcache *tc;
	struct uw_node *nd;
	union ls_cfi_rule r;
	struct uw_regs g, sig;	/* sig: valid once a signal frame passed */
	uint32_t id, prev = UW_NONE, failed = UW_NONE;
	unsigned how;
	int exact = 0, n = o->n, skip = o->skip;

	if (!hi)
		return 0;
	w->hi0 = hi;
	sig.hi = 0;
	tc = uw_nodes(w->tc, hi);
	if (!tc && w->rec)
		w->rec->bad = 1;	/* not the thread's own stack */
	for (;;) {
		if (tc && !exact) {
			id = tc->index[uw_node_hash(pc, sp)];
			if (id != UW_NONE && id != failed &&
			    tc->node[id].pc == pc && tc->node[id].sp == sp) {
				if (prev != UW_NONE)
					tc->node[prev].up = id;
				prev = UW_NONE;
				o->n = n;
				o->skip = skip;
				if (w->rec && uw_sfx_take(tc, id, rbp, o,
							  w->rec))
					return o->n;
				r2 = rbp;	/* rbp stays in a register */
				failed = uw_chain(tc, id, &r2, o, w->rec);
				if (failed == UW_NONE)
					return o->n;
				n = o->n;
				skip = o->skip;
				pc = tc->node[failed].pc;
				sp = tc->node[failed].sp;
				rbp = r2;
				continue;
			}
		}
		if (ls_unlikely(pc - 1 >= UW_USER_MAX - 1))
			break;	/* 0 or not a user address */
		r.word = uw_rule_get(w, pc, exact);
		if (ls_unlikely(LS_CFI_KIND(r.f.bits) != LS_CFI_FRAME)) {
			if (LS_CFI_KIND(r.f.bits) == LS_CFI_SIGNAL && w->rec)
				w->rec->bad = 1;
			if (LS_CFI_KIND(r.f.bits) == LS_CFI_STOP && sig.hi &&
			    uw_step_after_signal(&sig, pc, sp, exact, &g)) {
				/* Stepped by its full row (the record is bad
				 * already: a signal frame). */
				if (w->rec)
					w->rec->nosfx = 1;
			} else if (LS_CFI_KIND(r.f.bits) == LS_CFI_NOMODULE ||
				   LS_CFI_KIND(r.f.bits) == LS_CFI_STOP) {
				/* No CFI: frame pointers, from this %rbp,
				 * their words recorded for the memo (no
				 * suffix: the frame log does not follow). */
				if (w->rec) {
					uw_rec_use_rbp(w->rec);
					w->rec->nosfx = 1;
				}
				o->n = n;
				o->skip = skip;
				g = (struct uw_regs){ pc, sp, rbp, lo, hi,
						      w->sp, w->hi0, 0 };
				if (!uw_fp_walk(&g, o, LS_CFI_KIND(r.f.bits) ==
						LS_CFI_NOMODULE, w->rec))
					return o->n;
				if (w->rec)	/* %rbp from a recorded word */
					w->rec->rbp_from = UW_RBP_FIXED;
				n = o->n;
				skip = o->skip;
			}
			if (LS_CFI_KIND(r.f.bits) == LS_CFI_NOMODULE ||
			    LS_CFI_KIND(r.f.bits) == LS_CFI_STOP) {
				pc = g.pc;
				sp = g.sp;
				rbp = g.rbp;
				exact = 0;
				tc = NULL;
				goto emit;
			}
			if (!uw_special(w, exact ? NULL : tc, r.word, pc, sp,
					rbp, lo, hi, prev, &g))
				break;
			sig = g;	/* the interrupted registers */
			pc = g.pc;
			sp = g.sp;
			rbp = g.rbp;
			lo = g.lo;
			hi = g.hi;
			exact = 1;
			tc = NULL;	/* another range: no frame cache */
			goto emit;
		}
		cfa = (r.f.bits & LS_CFI_CFA_RBP ? rbp : sp) +
		      (uint64_t)(int64_t)r.f.cfa_off;
		dat = 0;
		if (ls_unlikely(r.f.bits & LS_CFI_CFA_DEREF)) {
			if (!uw_in(cfa, sp, hi))
				goto unclean;
			dat = cfa;
			cfa = uw_load(cfa);
		}
		if (ls_unlikely(cfa <= sp || cfa > hi))
			goto unclean;	/* the CFA must rise, inside the range */
		nrbp = rbp;
		xat = 0;
		how = uw_rbp_how(r.word);
		if (ls_unlikely(how != LS_CFI_RBP_SAME)) {
			nrbp = 0;	/* undefined, or saved out of range */
			at = (how == LS_CFI_RBP_AT_CFA ? cfa : rbp) +
			     (uint64_t)(int64_t)r.f.rbp_off;
			if (how != LS_CFI_RBP_UNDEF && uw_in(at, sp, hi)) {
				nrbp = uw_load(at);
				xat = at;
			}
		}
		at = cfa + (uint64_t)(int64_t)r.f.ra_off;
		if (ls_unlikely(!uw_in(at, sp, hi)))
			goto unclean;
		npc = uw_load(at);
		if (w->rec)
			uw_rec_step(w->rec, pc, sp, rbp, r.word, dat, cfa, at,
				    npc, xat, nrbp);
		if (tc) {
			id = uw_node_for(tc, pc, sp);
			nd = &tc->node[id];
			UW_PUT(nd->pc, pc);
			UW_PUT(nd->sp, sp);
			UW_PUT(nd->rbp, rbp);
			UW_PUT(nd->rule, r.word);
			UW_PUT(nd->ra_at, at);
			UW_PUT(nd->x_at, xat ? xat : at);
			UW_PUT(nd->x_val, xat ? nrbp : npc);
			nd->rbp_read = xat != 0;
			if (prev != UW_NONE)
				tc->node[prev].up = id;
			prev = id;
			if (w->rec && w->rec->nlog &&
			    w->rec->log[w->rec->nlog - 1].sp == sp)
				w->rec->log[w->rec->nlog - 1].id = id;
		}
		pc = npc;
		sp = cfa;
		rbp = nrbp;
		exact = 0;
		failed = UW_NONE;
		if (pc == 0) {
			/* The step's words count (the walk ends on a 0), its
			 * frame does not: a suffix from there has none. */
			if (w->rec && !w->rec->nosfx)
				w->rec->f--;
			break;
		}
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
unclean:
	/* An end that depends on %rbp or a word the record does not hold:
	 * no suffix of this walk can be kept. */
	if (w->rec)
		w->rec->nosfx = 1;
	o->n = n;
	o->skip = skip;
	return n;
}

static inline struct uw_fsz *uw_fsz_of(struct uw_tcache *tc, uint64_t pc)
{
	return &tc->fsz[(pc * 0x9e3779b97f4a7c15ull) >> 55 & (UW_FSZ - 1)];
}

static inline struct uw_deep *uw_deep_of(struct uw_tcache *tc, uint64_t ra)
{
	return &tc->deep[(ra * 0x9e3779b97f4a7c15ull) >> 54 & (UW_DEEP - 1)];
}

/* The hint's first word for a walk from (pc, sp): the return address it
 * will read first when the frame-size cache knows where (*at its slot),
 * else the caller's hint (*at 0).  The read stays in [sp, hi). */
static inline uint64_t uw_ra0(struct uw_tcache *tc, uint64_t pc,
			      uint64_t sp, uint64_t hint, uint64_t *at)
{
	const struct uw_fsz *f = uw_fsz_of(tc, pc);

	*at = 0;
	if (f->pc != pc || sp + f->off + 8 > tc->hi)
		return hint;
	*at = sp + f->off;
	return uw_load(*at);
}

/* The hint from its first word ra, read at at (0: none): mixed with the
 * next return addresses where the deep cache knows them.  Reads stay in
 * [sp, hi): each distance is positive. */
static inline uint64_t uw_hint_from(struct uw_tcache *tc, uint64_t at,
				    uint64_t ra)
{
	const struct uw_deep *d;
	uint64_t hint = ra;
	int k;

	if (!at)
		return hint;
	for (k = 0; k < UW_DEEP_MAX; k++) {
		d = uw_deep_of(tc, ra);
		if (ls_likely(d->ra != ra) || at + d->off + 8 > tc->hi)
			break;
		at += d->off;
		ra = uw_load(at);
		hint = (hint ^ ra) * 0x9e3779b97f4a7c15ull;
	}
	return hint;
}

/* The set is the hash's top bits; the tag the whole hash, never 0. */
static inline uint64_t uw_memo_hash(uint64_t pc, uint64_t sp, uint64_t key,
				    uint64_t hint)
{
	uint64_t h = ((pc ^ sp << 16 ^ key) * 0x9e3779b97f4a7c15ull ^ hint) *
		     0xff51afd7ed558ccdull;

	return h | 1;
}

static inline uint32_t uw_memo_set(uint64_t h)
{
	return (uint32_t)(h >> (64 - UW_MEMO_SET_BITS));
}

/* The recent set's hash for a walk from (pc, sp) with key whose first
 * return address is ra0.  (Without pc, walks from two call sites of one
 * function at one depth collided: 16M more instructions on the churn.) */
static inline uint64_t uw_fast_hash(uint64_t pc, uint64_t sp, uint64_t key,
				    uint64_t ra0)
{
	return (pc ^ sp << 16 ^ key ^ (ra0 << 29 | ra0 >> 35)) *
	       0x9e3779b97f4a7c15ull;
}

/* After a miss that met an entry of its own state and hint: one return
 * address deeper for the hint of walks along this one's chain. */
static void uw_deepen(struct uw_tcache *tc, const struct uw_rec *rc)
{
	struct uw_deep *d;
	int k;

	for (k = 0; k + 1 < rc->nra && k < UW_DEEP_MAX; k++) {
		d = uw_deep_of(tc, rc->ra[k]);
		if (d->ra == rc->ra[k] &&
		    rc->ra_at[k] + d->off == rc->ra_at[k + 1])
			continue;	/* the chain goes on through it */
		if (rc->fixed[k] && rc->fixed[k + 1] && rc->ra[k] &&
		    rc->ra_at[k + 1] > rc->ra_at[k]) {
			d->ra = rc->ra[k];
			d->off = rc->ra_at[k + 1] - rc->ra_at[k];
		}
		return;
	}
}

/* Room for the words of a walk about to be recorded: contiguous in the
 * ring, from head on (or from the ring's start when it would wrap). */
static void uw_rec_open(struct uw_tcache *tc, struct uw_rec *rc,
			uint64_t *pos)
{
	uint64_t p = tc->head, f = tc->fhead;

	if ((p & (UW_POOL - 1)) + UW_MEMO_MAXW > UW_POOL)
		p = (p | (UW_POOL - 1)) + 1;
	if ((f & (UW_FRAMES - 1)) + LS_UNWIND_MAX_FRAMES > UW_FRAMES)
		f = (f | (UW_FRAMES - 1)) + 1;
	*pos = p;
	rc->w = rc->w0 = &tc->pool[p & (UW_POOL - 1)];
	rc->wpos0 = p;
	rc->end = rc->w + UW_MEMO_MAXW - (UW_MEMO_GROUP - 1);	/* pad room */
	rc->f = rc->f0 = &tc->frames[f & (UW_FRAMES - 1)];
	rc->fpos0 = f;
	rc->fend = rc->f0 + LS_UNWIND_MAX_FRAMES;
	rc->log = tc->log;
	rc->nlog = 0;
	rc->nosfx = 0;
	rc->end_need = 0;
	rc->rbp_from = UW_RBP_START;
	rc->need_rbp = 0;
	rc->bad = 0;
	rc->nra = 0;
}

/*
 * Caches are used when no invalidation is running; a walk that overlapped
 * one may hold a rule of an unmapped module, so it is redone uncached.
 * A capture interrupted by a signal whose handler captures too: the
 * handler's walk leaves the per-thread caches alone (they may be
 * mid-update).  With key non-NULL the walk is recorded, and left pending
 * in the thread's cache for ls_unwind_memo_put() when it can be kept.
 */
static int uw_capture(const struct uw_walk *start, struct uw_out *o,
		      const uint64_t *key, uint64_t hint)
{
	struct uw_walk w = *start;
	struct uw_out o0 = *o;
	struct uw_rec rec;
	struct uw_tcache *tc;
	uint64_t pos = 0, used = 0, wend = 0, fend = 0, ra0, at0;
	int n, nested = uw_self.busy;

	uw_self.busy = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	w.seq = __atomic_load_n(&uw_seq, __ATOMIC_ACQUIRE);
	w.tab = w.seq & 1 ? NULL : __atomic_load_n(&uw_tab, __ATOMIC_ACQUIRE);
	w.tc = tc = w.tab && !nested ? uw_tc_get(w.seq) : NULL;
	w.rec = NULL;
	if (tc) {
		__atomic_store_n(&tc->walks, tc->walks + 1, __ATOMIC_RELAXED);
		tc->pend_ok = 0;
		tc->missed_sp = 0;
		if (key) {
			uw_rec_open(tc, &rec, &pos);
			w.rec = &rec;
		}
	}
	n = uw_walk(&w, o);
	if (w.rec) {
		wend = uw_rec_wpos(&rec);
		fend = rec.fpos0 + (uint64_t)(rec.f - rec.f0);
		if (tc->fdirty < fend)
			tc->fdirty = fend;
		/* At least one group: the check tests before it loops. */
		while ((rec.w - tc->pool) % UW_MEMO_GROUP || rec.w == rec.w0) {
			rec.w->at = (uint64_t)(uintptr_t)&uw_pad_word;
			rec.w->val = 0;
			rec.w++;
		}
		used = (uint64_t)(rec.w - &tc->pool[pos & (UW_POOL - 1)]);
		if (tc->dirty < pos + used)
			tc->dirty = pos + used;
	}
	if (w.tab && __atomic_load_n(&uw_seq, __ATOMIC_ACQUIRE) != w.seq) {
		w.tab = NULL;
		w.tc = NULL;
		w.rec = NULL;
		*o = o0;
		n = uw_walk(&w, o);
	} else if (w.rec && !rec.bad) {
		if (!rec.nosfx && !o0.skip) {
			uw_sfx_publish(tc, &rec, wend, o->n < o->max);
			tc->head = pos + used;	/* kept, put or not */
			tc->fhead = fend;
		}
		if (rec.nra && rec.ra_at[0] > w.sp &&
		    rec.ra_at[0] - w.sp < UW_HOME_MAX) {
			struct uw_fsz *f = uw_fsz_of(tc, w.pc);

			f->pc = w.pc;
			f->off = rec.ra_at[0] - w.sp;
			if (tc->collided)
				uw_deepen(tc, &rec);
			tc->collided = 0;
		}
		/* What a lookup from here computes. */
		ra0 = uw_ra0(tc, w.pc, w.sp, hint, &at0);
		hint = uw_hint_from(tc, at0, ra0);
		tc->pend_hint = hint;
		tc->pend_h0 = uw_fast_hash(w.pc, w.sp, *key, ra0);
		tc->pend = (struct uw_memo){
			.pc = w.pc, .sp = w.sp, .rbp = w.rbp, .key = *key,
			.pos = pos, .wd = &tc->pool[pos & (UW_POOL - 1)],
			.nw = (uint32_t)used,
			.need_rbp = (uint32_t)rec.need_rbp,
		};
		tc->pend_seq = w.seq;
		tc->pend_ok = 1;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	uw_self.busy = nested;
	return n;
}

/* Every word of m holds its value. */
static inline int uw_memo_holds(const struct uw_tcache *tc,
				const struct uw_memo *m)
{
	const struct uw_word *wd = m->wd, *end = wd + m->nw;

	/* Four words per test, no tail (the padding): independent loads, a
	 * quarter of the branches; most checks hold.  Two per test with a
	 * tail cost 8.5 instructions a word, this 5 (docs/PERFORMANCE.md).
	 * Every entry has a group at least. */
	do {
		if ((uw_load(wd[0].at) ^ wd[0].val) |
		    (uw_load(wd[1].at) ^ wd[1].val) |
		    (uw_load(wd[2].at) ^ wd[2].val) |
		    (uw_load(wd[3].at) ^ wd[3].val))
			return 0;
	} while ((wd += UW_MEMO_GROUP) < end);
	return 1;
}

/* Entry m is of the walk from (pc, sp, rbp) with key, its words intact
 * in the ring (not whether they hold). */
static inline int uw_memo_is(const struct uw_tcache *tc,
			     const struct uw_memo *m, uint64_t pc,
			     uint64_t sp, uint64_t rbp, uint64_t key)
{
	return m->pc == pc && m->sp == sp && m->key == key &&
	       (!m->need_rbp || m->rbp == rbp) &&
	       tc->dirty <= m->pos + UW_POOL;
}

/* m becomes the most recent entry of its recent set fs. */
static inline void uw_fast_put(struct uw_tcache *tc, struct uw_memo *fs,
			       const struct uw_memo *m)
{
	tc->fast_used = 1;
	fs[1] = fs[0];
	fs[0] = *m;
}

static inline struct uw_memo *uw_fast_set(struct uw_tcache *tc, uint64_t h0)
{
	return tc->fast[h0 >> (64 - UW_FAST_BITS)];
}

/* The lookup is over: the busy flag goes (see uw_memo_lookup). */
static inline void *uw_memo_done(void *v)
{
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	uw_self.busy = 0;
	return v;
}

/*
 * Past the recent entries: the deep hint's chain from the first word ra0
 * (read at at, 0: none) picks the set, whose ways are scanned by tag.  An
 * entry found becomes the most recent of its recent set.  The hint is not
 * compared: it only picks the set (the tag holds it), and a walk from the
 * same state with the same key whose words hold gives the same frames
 * whatever its hint.  Called last by uw_memo_find(), the busy flag held,
 * in a tail call: so few arguments, the rest found again.
 */
__attribute__((noinline))
static void *uw_memo_sets(uint64_t pc, uint64_t sp, uint64_t rbp,
			  uint64_t key, uint64_t hint)
{
	struct uw_tcache *tc = uw_self.tc;
	uint32_t seq = tc->seq;	/* uw_seq's, checked by the caller */
	uint64_t at, ra0 = uw_ra0(tc, pc, sp, hint, &at);
	struct uw_memo *fs = uw_fast_set(tc, uw_fast_hash(pc, sp, key, ra0));
	uint64_t h = uw_memo_hash(pc, sp, key, uw_hint_from(tc, at, ra0));
	uint32_t set = uw_memo_set(h), i;
	struct uw_memo *m;
	int collided = 0;

	for (i = 0; i < UW_MEMO_WAYS; i++) {
		if (tc->tag[set][i] != h)
			continue;
		m = &tc->memo[set][i];
		if (!uw_memo_is(tc, m, pc, sp, rbp, key))
			continue;
		if (!uw_memo_holds(tc, m)) {
			collided = 1;
			continue;
		}
		/* A dlclose meanwhile: the rules may be stale. */
		if (__atomic_load_n(&uw_seq, __ATOMIC_ACQUIRE) != seq)
			return uw_memo_done(NULL);
		__atomic_store_n(&tc->hits, tc->hits + 1, __ATOMIC_RELAXED);
		uw_fast_put(tc, fs, m);
		return uw_memo_done(m->val);
	}
	tc->collided = collided;
	/* The capture that follows need not ask again. */
	tc->missed_sp = sp;
	tc->missed_key = key;
	return uw_memo_done(NULL);
}

/*
 * A memo entry for a walk from (pc, sp, rbp) with key whose words all hold
 * still: its value, else NULL.  Runs with the thread's busy flag set, so
 * that a signal handler's capture leaves the cache alone meanwhile, and
 * clears it.  The recent entries first, then the sets.
 */
static inline __attribute__((always_inline))
void *uw_memo_find(uint64_t pc, uint64_t sp, uint64_t rbp, uint64_t key,
		   uint64_t hint)
{
	struct uw_tcache *tc = uw_self.tc;
	uint32_t seq = __atomic_load_n(&uw_seq, __ATOMIC_ACQUIRE), i;
	struct uw_memo *fs, *m;
	uint64_t at;

	/* An entry's words lie in [sp, hi) (the range of the stack top its
	 * walk had; the memo is emptied when that changes): sp at or above
	 * home_lo keeps them proven readable, and no entry has an sp at or
	 * above hi. */
	if (!tc || tc == UW_TC_GONE || tc->seq != seq ||
	    tc->hi != uw_self.home_hi || sp < uw_self.home_lo)
		return uw_memo_done(NULL);
	fs = uw_fast_set(tc, uw_fast_hash(pc, sp, key,
					  uw_ra0(tc, pc, sp, hint, &at)));
	for (i = 0; i < UW_FAST_WAYS; i++) {
		m = &fs[i];
		if (!uw_memo_is(tc, m, pc, sp, rbp, key) ||
		    !uw_memo_holds(tc, m))
			continue;
		/* A dlclose meanwhile: the rules may be stale.  (tc->seq
		 * is seq: fewer registers live.) */
		if (__atomic_load_n(&uw_seq, __ATOMIC_ACQUIRE) != tc->seq)
			return uw_memo_done(NULL);
		__atomic_store_n(&tc->hits, tc->hits + 1, __ATOMIC_RELAXED);
		return uw_memo_done(m->val);
	}
	return uw_memo_sets(pc, sp, rbp, key, hint);	/* ra0 read again */
}

static int uw_clamp(int v)
{
	return v < 0 ? 0 : v > LS_UNWIND_MAX_FRAMES ? LS_UNWIND_MAX_FRAMES : v;
}

/* The memo key: the caller's key and the walk's (clamped) limits. */
static inline uint64_t uw_memo_key(uint32_t key, int max, int skip)
{
	return (uint64_t)key | (uint64_t)max << 32 | (uint64_t)skip << 48;
}

/* uw_memo_find() with the busy flag held; NULL when a capture is already
 * running in this thread (a signal handler's). */
static inline __attribute__((always_inline))
void *uw_memo_lookup(const struct uw_walk *w, uint64_t key, uint64_t hint)
{
	if (uw_self.busy)
		return NULL;
	uw_self.busy = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	return uw_memo_find(w->pc, w->sp, w->rbp, key, hint);	/* clears it */
}

/* The state of the function that called the caller of this one: see
 * LS_UNWIND_HERE() (fp is that caller's frame address). */
static inline void uw_walk_at(struct uw_walk *w, const uint64_t *fp)
{
	w->pc = fp[1];
	w->sp = (uint64_t)(uintptr_t)(fp + 2);
	w->rbp = fp[0];
}

static inline void uw_walk_from(struct uw_walk *w,
				const struct ls_unwind_start *st)
{
	w->pc = st->pc;
	w->sp = st->sp;
	w->rbp = st->rbp;
}

/*
 * __builtin_frame_address makes GCC give this function a frame pointer
 * whatever the flags: [fp] is the caller's %rbp, fp + 8 the return
 * address, fp + 16 the caller's %rsp after the call.  So the walk starts
 * in the caller's frame without needing CFI for the agent's own code.
 */
static inline int uw_capture_at(const uint64_t *fp, uint64_t *pcs, int max,
				int skip)
{
	struct uw_walk w = { 0 };
	struct uw_out o = { pcs, 0, max, skip };

	if (max <= 0 || !pcs)
		return 0;
	uw_walk_at(&w, fp);
	/* Each step of the walk emits a frame or uses up a skip: with both
	 * bounded, so is the walk, even through looping signal frames. */
	o.max = uw_clamp(o.max);
	o.skip = uw_clamp(o.skip);
	return uw_capture(&w, &o, NULL, 0);
}

__attribute__((noinline))
int ls_unwind_capture(uint64_t *pcs, int max, int skip)
{
	return uw_capture_at(__builtin_frame_address(0), pcs, max, skip);
}

/* A nested walk's way (busy set): no frame cache, no count. */
__attribute__((noinline))
int ls_unwind_capture_own(uint64_t *pcs, int max, int skip)
{
	int busy = uw_self.busy, n;

	uw_self.busy = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	n = uw_capture_at(__builtin_frame_address(0), pcs, max, skip);
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	uw_self.busy = busy;
	return n;
}

/* The memo, then a recorded walk, from w's state. */
static int uw_capture_memo(struct uw_walk *w, uint64_t *pcs, int max,
			   int skip, uint32_t key, uint64_t hint, void **val)
{
	struct uw_out o = { pcs, 0, uw_clamp(max), uw_clamp(skip) };
	uint64_t k = uw_memo_key(key, o.max, o.skip);
	struct uw_tcache *tc = uw_self.tc;
	void *v;

	/* Right after ls_unwind_memo_get() missed for this very walk (the
	 * agent's hooks), asking again would miss again. */
	if (tc && tc != UW_TC_GONE && tc->missed_sp == w->sp &&
	    tc->missed_key == k)
		v = NULL;
	else
		v = uw_memo_lookup(w, k, hint);

	if (v) {
		*val = v;
		return 0;
	}
	return uw_capture(w, &o, &k, hint);
}

__attribute__((noinline))
int ls_unwind_capture_memo_from(const struct ls_unwind_start *st,
				uint64_t *pcs, int max, int skip, uint32_t key,
				uint64_t hint, void **val)
{
	const uint64_t *fp = __builtin_frame_address(0);
	struct uw_walk w = { 0 };
	int n;

	*val = NULL;
	if (max <= 0 || !pcs)
		return 0;
	if (!st || st->sp <= (uint64_t)(uintptr_t)(fp + 2)) {
		uw_walk_at(&w, fp);
		return uw_capture_memo(&w, pcs, max, skip, key, hint, val);
	}
	/* That frame's own pc first, then the walk from it. */
	uw_walk_from(&w, st);
	if (skip > 0)
		return uw_capture_memo(&w, pcs, max, skip - 1, key, hint, val);
	pcs[0] = st->pc;
	if (max == 1)
		return 1;
	n = uw_capture_memo(&w, pcs + 1, max - 1, 0, key, hint, val);
	return *val ? 0 : n + 1;
}

void *ls_unwind_memo_get(const struct ls_unwind_start *st, int max,
			 uint32_t key)
{
	struct uw_walk w = { 0 };
	uint64_t rsp;

	/* Below this frame's sp, st cannot be a frame above the caller's
	 * (no frame pointer needed for that, unlike __builtin_frame_address:
	 * this is the hooks' path). */
	__asm__("mov %%rsp, %0" : "=r"(rsp));
	if (max <= 1 || !st || st->sp <= rsp)
		return NULL;
	uw_walk_from(&w, st);
	/* The key ls_unwind_capture_memo_from() gives the walk after
	 * st->pc: max - 1 frames, skip 0. */
	return uw_memo_lookup(&w, uw_memo_key(key, uw_clamp(max - 1), 0),
			      st->pc);
}

__attribute__((noinline))
void ls_unwind_memo_put(void *val)
{
	struct uw_tcache *tc = uw_self.tc;
	uint64_t h;
	uint32_t s, i;

	if (!val || !tc || tc == UW_TC_GONE || uw_self.busy || !tc->pend_ok)
		return;
	uw_self.busy = 1;
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	tc->pend_ok = 0;
	if (tc->pend_seq == tc->seq &&
	    __atomic_load_n(&uw_seq, __ATOMIC_ACQUIRE) == tc->seq) {
		h = uw_memo_hash(tc->pend.pc, tc->pend.sp, tc->pend.key,
				 tc->pend_hint);
		s = uw_memo_set(h);
		for (i = 0; i < UW_MEMO_WAYS && tc->tag[s][i] &&
			    tc->dirty <= tc->memo[s][i].pos + UW_POOL; i++)
			;
		if (i == UW_MEMO_WAYS)
			i = tc->victim[s]++ % UW_MEMO_WAYS;
		tc->memo[s][i] = tc->pend;
		tc->memo[s][i].val = val;
		tc->tag[s][i] = h;
		uw_fast_put(tc, uw_fast_set(tc, tc->pend_h0), &tc->memo[s][i]);
		tc->head = tc->pend.pos + tc->pend.nw;
	}
	__atomic_signal_fence(__ATOMIC_SEQ_CST);
	uw_self.busy = 0;
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

void ls_unwind_thread_prepare(void)
{
	uw_tc_get(__atomic_load_n(&uw_seq, __ATOMIC_ACQUIRE) & ~1u);
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

void ls_unwind_counts(uint64_t *walks, uint64_t *memo_hits)
{
	struct uw_tcache *tc;

	*walks = *memo_hits = 0;
	for (tc = __atomic_load_n(&uw_registry, __ATOMIC_ACQUIRE); tc;
	     tc = tc->next) {
		*walks += __atomic_load_n(&tc->walks, __ATOMIC_RELAXED);
		*memo_hits += __atomic_load_n(&tc->hits, __ATOMIC_RELAXED);
	}
}

uint64_t ls_unwind_suffix_takes(void)
{
	struct uw_tcache *tc;
	uint64_t n = 0;

	for (tc = __atomic_load_n(&uw_registry, __ATOMIC_ACQUIRE); tc;
	     tc = tc->next)
		n += __atomic_load_n(&tc->takes, __ATOMIC_RELAXED);
	return n;
}

void ls_unwind_atfork_child(void)
{
	struct uw_tcache *tc;

	for (tc = uw_registry; tc; tc = tc->next)
		if (tc != uw_self.tc)
			tc->in_use = 0;
	ls_codemap_atfork_child();
}
