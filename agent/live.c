/*
 * live.c - the sharded live-block table.
 *
 * Each shard is an open-addressing table in the manner of Abseil's Swiss
 * tables, with Folly F14's overflow counts instead of deleted marks:
 * slots in groups of 15 and 16 control bytes per group, one per slot
 * (empty, or 7 bits of the address hash) and the group's overflow count.
 * A lookup loads its group's 16 control bytes at once (SSE2, in every
 * x86_64), compares them all with the hash byte and looks only at the
 * entries that match: usually one line of control bytes and one entry,
 * and no rearranging on removal.  Groups are probed one after the other.
 * An entry that found its first group full went on to the next, and
 * counted itself in the overflow count of every group it passed; a probe
 * ends at a group whose count is 0, since no entry of its path lies
 * beyond.  A removal empties its slot and takes itself out of those
 * counts again.  So the table never fills with deleted marks, and an
 * insert whose first group has an empty slot and a count of 0 is done in
 * that group.  (With deleted marks, a group that had once been full sent
 * every later insert there down the general path until the shard was
 * rebuilt: 22% of the churn's inserts, docs/PERFORMANCE.md.)  A shard is
 * rebuilt a fifth larger when its live entries would pass 7/8 of its
 * slots, so that it stays between 73% and 7/8 full; the shards of a
 * window are spread over that cycle (grown()).
 *
 * A slot is 16 bytes (struct slot16 below): with its control byte and
 * the count's share, 17.1 bytes a slot, 19.5 to 23.4 bytes a live block
 * in one shard, about 21.4 over a window's 16 (grown()).
 */
#include <emmintrin.h>
#include <errno.h>
#include <string.h>
#include "live.h"
#include "lockrank.h"
#include "sys.h"

/*
 * A group's 16 control bytes: bytes 0-14 are its slots' (a hash byte,
 * 0-127, or CTRL_EMPTY), byte 15 its overflow count as CTRL_EMPTY | n,
 * n saturating at 127 (a saturated count never goes down: probes go on
 * past that group until the next rebuild, which is slower, never wrong).
 * Every byte that is not a full slot has its top bit set, so `ctrl[p] >=
 * 0` says "a full slot" for any position p, the count's included, and a
 * hash byte never compares equal to a count.  Control position p (g * 16
 * + i) holds its entry at slot ENT(p) (g * 15 + i).
 */
#define GROUP 16
#define GROUP_SLOTS 15
#define SLOT_BITS 0x7fffu	/* movemask bits of the slots' bytes */
#define OVF_BIT 0x8000u		/* movemask bit of the count's byte */
#define CTRL_EMPTY ((signed char)0x80)
#define OVF_MAX 0xffu
#define ENT(p) ((p) - ((p) >> 4))

/*
 * A compact slot, 16 bytes: the entry of nearly every block.
 *
 *   w0: address / 8 (bits 0-43), site (44-63)
 *   w1: birth (bits 0-31), size (32-49), thread index (50-63)
 *
 * The thread index is the slot of the thread id in tix_ids[], a hash
 * table of ids that only grows (each id gets one the first time it
 * inserts).  An entry that does not fit (an
 * address not 8-aligned or above 2^47, a size of 256 KiB or more, a site
 * id of 2^20 or more, a thread id past the first 12288 distinct ones)
 * goes whole, 24 bytes, to the shard's wide table instead,
 * which is the same kind of table under the same lock.  An address is in
 * at most one of the two.
 */
struct slot16 {
	uint64_t w0, w1;
};

#define KEY_MASK ((1ull << 44) - 1)
#define SITE_SHIFT 44
#define SIZE_SHIFT 32
#define SIZE_LIMIT (1ull << 18)
#define TIX_SHIFT 50
#define TIX_COUNT (1u << 14)
#define TIX_MAX (TIX_COUNT / 4 * 3)	/* ids indexed at most: probes stay short */

/*
 * The stride of a table's slots: w (the wide table) is always a
 * constant, so that every function below that takes it compiles into
 * one copy per table.
 */
#define STRIDE(w) ((w) ? sizeof(struct ls_live_entry) : sizeof(struct slot16))

struct shard {
	ls_lock_t lock;		/* the wide table's is unused: under the
				   compact shard's */
	uint32_t pad_;
	uint64_t ngroups;	/* 0 until first use */
	uint64_t count;		/* live entries */
	uint64_t nwide;		/* compact: the wide table's count, mirrored */
	/* count may not reach it: 7/8 of the slots, 0 until first use (so
	 * that one compare sends a first insert to rebuild() too). */
	uint64_t limit;
	signed char *ctrl;	/* 16 bytes per group; NULL until first use */
	char *slots;		/* in the same mapping, after ctrl */
} __attribute__((aligned(LS_CACHELINE)));

static struct shard shards[LS_LIVE_SHARDS];
static struct shard wide[LS_LIVE_SHARDS];
_Static_assert(sizeof(struct shard) == 64, "shard_of() scales by 64");

/* Thread ids by index, and indexes by thread id (+ 1; 0: none yet). */
/* Thread ids + 1 (0: an empty slot) by index, probed linearly from the
 * id's hash; 64 KiB of the agent's data, no mapping (so nothing off a
 * program's RLIMIT_AS). */
static uint32_t tix_ids[TIX_COUNT];
static uint32_t tix_used;
static ls_lock_t tix_lock;

/*
 * Prefetching starts once a compact shard reaches this many groups
 * (30 KiB of slots): a program whose shards all stay smaller has a table
 * that stays in the second-level cache (the churn's 4096 live blocks per
 * thread fill 16 shards of about 40 groups), where the prefetches would
 * only add instructions.
 */
#define PREFETCH_MIN_GROUPS 128

int ls_live_prefetch_on;

/*
 * The change log of a concurrent reachability check (reachcm.c): while it
 * is on, every insert and removal is appended, under the shard's lock,
 * so that the entries of one address come in the order the table saw
 * them.  The rec's op is stored last (release): a record whose op is
 * still 0 belongs to a thread stopped while appending.  A ring: record i
 * goes to slot i % cap, which the reader has emptied once log_done
 * passed i - cap; a record that would overwrite one not yet read is lost
 * instead, and says so in log_lost.
 */
static struct ls_live_log_rec *log_buf;	/* NULL: off */
static size_t log_cap;			/* a power of two */
static uint64_t log_next;	/* records claimed */
static uint64_t log_done;	/* records read, their slots free again */
static int log_lost;

static __attribute__((noinline, cold))
void log_append(struct ls_live_log_rec *buf, uint32_t op,
		const struct ls_live_entry *e)
{
	uint64_t i = __atomic_fetch_add(&log_next, 1, __ATOMIC_RELAXED);

	if (i - __atomic_load_n(&log_done, __ATOMIC_ACQUIRE) >= log_cap) {
		__atomic_store_n(&log_lost, 1, __ATOMIC_RELAXED);
		return;
	}
	buf += i & (log_cap - 1);
	buf->e = *e;
	__atomic_store_n(&buf->op, op, __ATOMIC_RELEASE);
}

/* Inline: off, it is a load and a branch. */
static inline void log_put(uint32_t op, const struct ls_live_entry *e)
{
	struct ls_live_log_rec *buf = __atomic_load_n(&log_buf, __ATOMIC_ACQUIRE);

	if (ls_unlikely(buf != NULL))
		log_append(buf, op, e);
}

void ls_live_log_start(struct ls_live_log_rec *buf, size_t cap)
{
	log_cap = cap;
	__atomic_store_n(&log_next, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&log_done, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&log_lost, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&log_buf, buf, __ATOMIC_RELEASE);
}

uint64_t ls_live_log_count(void)
{
	return __atomic_load_n(&log_next, __ATOMIC_ACQUIRE);
}

void ls_live_log_release(uint64_t done)
{
	__atomic_store_n(&log_done, done, __ATOMIC_RELEASE);
}

int ls_live_log_lost(void)
{
	return __atomic_load_n(&log_lost, __ATOMIC_ACQUIRE);
}

void ls_live_log_stop(void)
{
	__atomic_store_n(&log_buf, NULL, __ATOMIC_RELEASE);
}

/* Block addresses are 8- or 16-byte aligned with structure in the high
 * bits: a multiplicative hash spreads them.  Its top bits pick the shard
 * within a group, the next 7 bits are the control byte, bits 17-48 the
 * first group of slots. */
static inline uint64_t addr_hash(uint64_t a)
{
	return (a >> 4) * 0x9e3779b97f4a7c15ULL;
}

/*
 * 16 groups of 16 shards.  The group is the 64 MiB window the block lies
 * in, modulo 16: glibc gives each thread its own arena, a 64 MiB-aligned
 * heap, and consecutive heaps fall in consecutive windows, so up to 16
 * threads each lock shards no other thread touches, and shard lines stop
 * moving between CPUs on every allocation.  Measured on the churn: 2.35x
 * -> 1.74x native with 2 threads, 2.64x -> 2.05x with 4, the same with 1
 * (docs/PERFORMANCE.md).
 */
#define REGION_SHIFT 26

static inline struct shard *shard_of(uint64_t addr, uint64_t h)
{
	/* &shards[(addr >> REGION_SHIFT & 15) << 4 | (h >> 56 & 15)], as a
	 * byte offset: two shifts, two masks, no scaling. */
	return (struct shard *)(void *)((char *)shards +
		((addr >> (REGION_SHIFT - 10) & 0x3c00) | (h >> 50 & 0x3c0)));
}

static inline signed char ctrl_of(uint64_t h)
{
	return (signed char)(h >> 49 & 0x7f);
}

/* Bits 17-48 of the hash scaled to [0, ngroups) by a multiply: a shard
 * can have any number of groups, and grows by a fifth at a time (its
 * load stays between 73% and 7/8 rather than 44% and 7/8). */
static inline uint64_t group_of(uint64_t h, uint64_t ngroups)
{
	return (uint64_t)(uint32_t)(h >> 17) * ngroups >> 32;
}

static inline uint64_t next_group(uint64_t g, uint64_t ngroups)
{
	return g + 1 == ngroups ? 0 : g + 1;
}

static inline size_t map_size(uint64_t groups, int w)
{
	return groups * (GROUP + GROUP_SLOTS * STRIDE(w));
}

static inline char *slot_at(const struct shard *s, uint64_t p, int w)
{
	return s->slots + ENT(p) * STRIDE(w);
}

static inline uint64_t slot_addr(const char *q, int w)
{
	uint64_t w0;

	memcpy(&w0, q, sizeof(w0));	/* an entry's addr, or a slot's w0 */
	return w ? w0 : (w0 & KEY_MASK) << 3;
}

/* The overflow count's byte of group g. */
static inline unsigned char *ovf_at(const struct shard *s, uint64_t g)
{
	return (unsigned char *)(s->ctrl + g * GROUP + GROUP_SLOTS);
}

static inline __m128i group_ctrl(const struct shard *s, uint64_t g)
{
	return _mm_load_si128((const __m128i *)(const void *)(s->ctrl +
							      g * GROUP));
}

static inline uint32_t tix_home(uint32_t tid)
{
	return (tid * 0x9e3779b1u) >> 18;	/* 14 bits */
}

/* The index of tid, assigned on first sight; 0 when it has none and
 * cannot get one (the entry then goes to the wide table): 12288 ids
 * already indexed, or an id of 2^32 - 1. */
static __attribute__((noinline, cold)) int tix_assign(uint32_t tid,
						      uint32_t *ix)
{
	uint32_t i, v;
	int ok = 0;

	if (tid == UINT32_MAX)
		return 0;
	ls_lock_ranked(&tix_lock, LS_RANK_LIVE);
	for (i = tix_home(tid); ; i = (i + 1) & (TIX_COUNT - 1)) {
		v = tix_ids[i];
		if (v == tid + 1) {
			ok = 1;
			break;
		}
		if (!v) {
			if (tix_used < TIX_MAX) {
				tix_used++;
				__atomic_store_n(&tix_ids[i], tid + 1,
						 __ATOMIC_RELEASE);
				ok = 1;
			}
			break;
		}
	}
	*ix = i;
	ls_unlock_ranked(&tix_lock, LS_RANK_LIVE);
	return ok;
}

static inline int tix_get(uint32_t tid, uint32_t *ix)
{
	uint32_t i = tix_home(tid);

	if (ls_likely(__atomic_load_n(&tix_ids[i], __ATOMIC_ACQUIRE) ==
		      tid + 1)) {
		*ix = i;
		return 1;
	}
	return tix_assign(tid, ix);
}

/* e as a compact slot, when it fits one. */
static inline int pack(const struct ls_live_entry *e, struct slot16 *c)
{
	uint64_t sw;	/* size:40 and tid:24 (track.c, entry_make) */
	uint32_t ix;

	memcpy(&sw, (const char *)e + sizeof(e->addr), sizeof(sw));
	if ((e->addr & 0xffff800000000007ULL) ||
	    (sw & ((1ULL << 40) - SIZE_LIMIT)) ||
	    e->site >> (64 - SITE_SHIFT) || !tix_get((uint32_t)(sw >> 40), &ix))
		return 0;
	c->w0 = e->addr >> 3 | (uint64_t)e->site << SITE_SHIFT;
	c->w1 = e->birth | sw << SIZE_SHIFT | (uint64_t)ix << TIX_SHIFT;
	return 1;
}

/* Slot q of table w back into a whole entry. */
static inline void unpack(const char *q, int w, struct ls_live_entry *e)
{
	struct slot16 c;
	uint64_t sw;

	if (w) {
		memcpy(e, q, sizeof(*e));
		return;
	}
	memcpy(&c, q, sizeof(c));
	/* size:40 and tid:24 share a word (track.c, entry_make). */
	sw = (c.w1 >> SIZE_SHIFT & (SIZE_LIMIT - 1)) |
	     (uint64_t)(tix_ids[c.w1 >> TIX_SHIFT] - 1) << 40;
	e->addr = (c.w0 & KEY_MASK) << 3;
	memcpy((char *)e + sizeof(e->addr), &sw, sizeof(sw));
	e->site = (uint32_t)(c.w0 >> SITE_SHIFT);
	e->birth = (uint32_t)c.w1;
}

/* The control position of addr's entry in table w, or -1. */
static inline __attribute__((always_inline))
int64_t find(const struct shard *s, uint64_t addr, uint64_t h, int w)
{
	const __m128i want = _mm_set1_epi8(ctrl_of(h));
	uint64_t g = group_of(h, s->ngroups), n, p;
	unsigned m;

	for (n = 0; n < s->ngroups; n++, g = next_group(g, s->ngroups)) {
		for (m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
				group_ctrl(s, g), want)); m; m &= m - 1) {
			p = g * GROUP + (unsigned)__builtin_ctz(m);
			if (slot_addr(slot_at(s, p, w), w) == addr)
				return (int64_t)p;
		}
		if (*ovf_at(s, g) == (unsigned char)CTRL_EMPTY)
			break;	/* no entry went on past g */
	}
	return -1;
}

/*
 * A new entry's place: the first empty slot on its probe path.  The
 * groups it passes count it.  The table is never fuller than 7/8, so
 * there is one.
 */
static inline __attribute__((always_inline))
uint64_t place(struct shard *s, uint64_t h)
{
	uint64_t g = group_of(h, s->ngroups);
	unsigned m;
	unsigned char *o;

	for (;;) {
		m = (unsigned)_mm_movemask_epi8(group_ctrl(s, g)) & SLOT_BITS;
		if (m)
			return g * GROUP + (unsigned)__builtin_ctz(m);
		o = ovf_at(s, g);
		if (*o != OVF_MAX)
			++*o;
		g = next_group(g, s->ngroups);
	}
}

static inline void put_at(struct shard *s, uint64_t p, const void *slot,
			  uint64_t h, int w)
{
	s->count++;
	s->ctrl[p] = ctrl_of(h);
	memcpy(slot_at(s, p, w), slot, STRIDE(w));
}

/* The entry at control position p out into *out, its slot empty. */
static inline void empty_at(struct shard *s, uint64_t p,
			    struct ls_live_entry *out, int w)
{
	unpack(slot_at(s, p, w), w, out);
	s->ctrl[p] = CTRL_EMPTY;
	s->count--;
}

/* empty_at(), and the groups its probe passed on the way there (from its
 * first, the one of h) uncount it. */
static inline void take_at(struct shard *s, uint64_t p, uint64_t h,
			   struct ls_live_entry *out, int w)
{
	uint64_t g = group_of(h, s->ngroups);
	unsigned char *o;

	empty_at(s, p, out, w);
	for (; g != p / GROUP; g = next_group(g, s->ngroups)) {
		o = ovf_at(s, g);
		if (*o != OVF_MAX)
			--*o;
	}
}

/*
 * The group count after n for the shard at idx: a fifth more, at least
 * one more.  The 16 shards of a window hold about as many entries each
 * (the hash spreads a window's blocks evenly), so growing in step they
 * would all be at the emptiest point of the cycle together: the whole
 * table at 73% load, 23.4 bytes a live block.  The step that first
 * reaches STAGGER_GROUPS goes instead to STAGGER_GROUPS plus 1/80 of it
 * per index of the shard in its window (640 to 760 groups, nearly evenly
 * spaced in log over one step of 1.2), so that from there on the 16 are
 * spread over the cycle and the table's load stays near its average
 * (80%, 21.4 bytes a live block) at any count.  From 640 groups (8400
 * entries a shard, 134,400 in a window), so that a program of a million
 * blocks split across two windows has them spread in both unless one
 * holds very few.  Spread, some shards stand fuller than in step would
 * at a given count, and their probes are longer: cxx-containers ran
 * 0.4-0.5% more instructions than with its shards in step (from 2560
 * groups, 0.1%, but a million blocks split evenly over two windows
 * would then be in step in both).
 */
#define STAGGER_GROUPS 640

static inline uint64_t grown(uint64_t n, unsigned idx)
{
	uint64_t to = n + (n / 5 ? n / 5 : 1);

	if (n < STAGGER_GROUPS && to >= STAGGER_GROUPS)
		to = STAGGER_GROUPS + (idx & 15) * (STAGGER_GROUPS / 80);
	return to;
}

/* New arrays a fifth larger (one group at first use) with every live
 * entry moved over.  Rare: out of line, one copy per table (below). */
static inline __attribute__((always_inline)) int rebuild(struct shard *s, int w)
{
	uint64_t groups = !s->ctrl ? 1 :
		grown(s->ngroups, (unsigned)(s - (w ? wide : shards)));
	signed char *mem = ls_sys_map(map_size(groups, w));
	struct shard n = { .ngroups = groups };
	uint64_t g, h, p, ng, old_groups = s->ngroups;
	const signed char *ctrl = s->ctrl;
	const char *q, *from = s->slots;
	unsigned full, m;

	if (!mem)
		return -ENOMEM;
	n.ctrl = mem;
	n.slots = (char *)(mem + groups * GROUP);
	for (g = 0; g < groups; g++)	/* counts 0 too */
		_mm_store_si128((__m128i *)(void *)(mem + g * GROUP),
				_mm_set1_epi8(CTRL_EMPTY));
	/* A shard grows by a fifth: in a table that only grows, each entry
	 * is moved about 5 times, so the moves are the bulk of an
	 * insert's cost there.  Group by group, the full slots from the
	 * control bytes' top bits; a new table has no removed entries, so
	 * an entry's first group nearly always has room, taken inline
	 * (place() when it has none). */
	for (g = 0; ctrl && g < old_groups; g++, from += GROUP_SLOTS * STRIDE(w))
		for (full = ~(unsigned)_mm_movemask_epi8(_mm_load_si128(
			(const __m128i *)(const void *)(ctrl + g * GROUP))) &
			    SLOT_BITS; full; full &= full - 1) {
			q = from + (unsigned)__builtin_ctz(full) * STRIDE(w);
			h = addr_hash(slot_addr(q, w));
			ng = group_of(h, groups);
			m = (unsigned)_mm_movemask_epi8(group_ctrl(&n, ng)) &
			    SLOT_BITS;
			p = ls_likely(m) ? ng * GROUP + (unsigned)__builtin_ctz(m) :
			    place(&n, h);
			n.ctrl[p] = ctrl_of(h);
			memcpy(slot_at(&n, p, w), q, STRIDE(w));
		}
	if (ctrl)
		ls_sys_unmap(s->ctrl, map_size(old_groups, w));
	/* ls_live_mapped() reads ctrl and ngroups without the lock, and
	 * ls_live_prefetch() all three. */
	__atomic_store_n(&s->ngroups, n.ngroups, __ATOMIC_RELAXED);
	s->limit = groups * GROUP_SLOTS * 7 / 8;
	__atomic_store_n(&s->slots, n.slots, __ATOMIC_RELAXED);
	__atomic_store_n(&s->ctrl, n.ctrl, __ATOMIC_RELAXED);
	if (!w && groups >= PREFETCH_MIN_GROUPS)
		__atomic_store_n(&ls_live_prefetch_on, 1, __ATOMIC_RELAXED);
	return 0;
}

static __attribute__((noinline, cold)) int rebuild_compact(struct shard *s)
{
	return rebuild(s, 0);
}

static __attribute__((noinline, cold)) int rebuild_wide(struct shard *s)
{
	return rebuild(s, 1);
}

/* Room for one more entry in table w. */
static inline int room(struct shard *s, int w)
{
	return s->count < s->limit ||
	       !(w ? rebuild_wide(s) : rebuild_compact(s));
}

/* Insert slot (e packed for table w) into it, there being room; over an
 * entry of the same address, which goes to *old: returns 1, else 0. */
static inline __attribute__((always_inline))
int tab_insert(struct shard *s, const void *slot, const struct ls_live_entry *e,
	       struct ls_live_entry *old, uint64_t h, int w)
{
	int64_t p = find(s, e->addr, h, w);

	if (p >= 0) {
		unpack(slot_at(s, (uint64_t)p, w), w, old);
		memcpy(slot_at(s, (uint64_t)p, w), slot, STRIDE(w));
		log_put(LS_LIVE_LOG_REMOVE, old);
		log_put(LS_LIVE_LOG_INSERT, e);
		return 1;
	}
	put_at(s, place(s, h), slot, h, w);
	log_put(LS_LIVE_LOG_INSERT, e);
	return 0;
}

/* Remove addr from table w into *out: 1, or 0 when it is not there. */
static inline __attribute__((always_inline))
int tab_remove(struct shard *s, uint64_t addr, uint64_t h,
	       struct ls_live_entry *out, int w)
{
	int64_t p;

	if (!s->ctrl || !s->count)
		return 0;
	p = find(s, addr, h, w);
	if (p < 0)
		return 0;
	take_at(s, (uint64_t)p, h, out, w);
	log_put(LS_LIVE_LOG_REMOVE, out);
	return 1;
}

unsigned ls_live_shard(uint64_t addr)
{
	return (unsigned)(shard_of(addr, addr_hash(addr)) - shards);
}

size_t ls_live_shard_overflow(unsigned idx)
{
	const struct shard *t[2] = { &shards[idx], &wide[idx] };
	size_t n = 0;
	uint64_t g;
	int w;

	for (w = 0; w < 2; w++)
		for (g = 0; t[w]->ctrl && g < t[w]->ngroups; g++)
			n += *ovf_at(t[w], g) & 0x7fu;
	return n;
}

/* Bytes table w of shard idx maps, read without its lock. */
static size_t tab_mapped(const struct shard *s, int w)
{
	return __atomic_load_n(&s->ctrl, __ATOMIC_RELAXED) ?
	       map_size(__atomic_load_n(&s->ngroups, __ATOMIC_RELAXED), w) : 0;
}

size_t ls_live_shard_mapped(unsigned idx)
{
	return tab_mapped(&shards[idx], 0) + tab_mapped(&wide[idx], 1);
}

size_t ls_live_shard_wide(unsigned idx)
{
	return __atomic_load_n(&wide[idx].count, __ATOMIC_RELAXED);
}

/*
 * The general cases, with the shard's lock held (they release it): a
 * table to grow or rebuild, a probe that goes past its first group, an
 * entry for the wide table or an address that is in it, a check's change
 * log to append to.  Out of line and reached by a tail call, so that the
 * fast paths below make no call and keep few values live across one.
 * c is e packed, or NULL when it does not fit a compact slot.
 * An insert first takes the address out of the other table (an entry
 * the program freed through a path the agent does not see), logging
 * that removal before the insert.
 */
static __attribute__((noinline))
int insert_locked(struct shard *s, const struct ls_live_entry *e,
		  struct ls_live_entry *old, uint64_t h, const struct slot16 *c)
{
	struct shard *wt = &wide[s - shards];
	int ret;

	if (c) {
		if (!room(s, 0)) {
			ret = -ENOMEM;
		} else {
			ret = s->nwide && tab_remove(wt, e->addr, h, old, 1);
			ret |= tab_insert(s, c, e, old, h, 0);
		}
	} else if (!room(wt, 1)) {
		ret = -ENOMEM;
	} else {
		ret = tab_remove(s, e->addr, h, old, 0);
		ret |= tab_insert(wt, e, e, old, h, 1);
	}
	s->nwide = wt->count;
	ls_unlock_ranked(&s->lock, LS_RANK_LIVE);
	return ret;
}

static __attribute__((noinline))
int remove_locked(struct shard *s, uint64_t addr, struct ls_live_entry *out,
		  uint64_t h)
{
	struct shard *wt = &wide[s - shards];
	int found = tab_remove(s, addr, h, out, 0);

	if (!found && s->nwide) {
		found = tab_remove(wt, addr, h, out, 1);
		s->nwide = wt->count;
	}
	ls_unlock_ranked(&s->lock, LS_RANK_LIVE);
	return found;
}

/* Whether addr is in the compact table, or in the wide table of shard
 * s: find() out of line, so that the inline insert keeps its registers
 * for the common case. */
static __attribute__((noinline)) int in_compact(const struct shard *s,
						uint64_t addr, uint64_t h)
{
	return find(s, addr, h, 0) >= 0;
}

static __attribute__((noinline)) int in_wide(const struct shard *s,
					     uint64_t addr, uint64_t h)
{
	return find(&wide[s - shards], addr, h, 1) >= 0;
}

/*
 * The shard's lock taken by one exchange; when another thread holds it,
 * ls_lock()'s wait and the general code, by a tail call: the fast paths
 * below then make no call but tail calls, and save no register.  Ranked
 * as ls_lock_ranked() would (lockrank.h).
 */
static inline int try_lock(struct shard *s)
{
	if (__atomic_exchange_n(&s->lock.v, 1, __ATOMIC_ACQUIRE))
		return 0;
	ls_rank_enter(LS_RANK_LIVE);
	return 1;
}

static __attribute__((noinline))
int insert_wait(struct shard *s, const struct ls_live_entry *e,
		struct ls_live_entry *old, uint64_t h, const struct slot16 *c)
{
	ls_lock_ranked(&s->lock, LS_RANK_LIVE);
	return insert_locked(s, e, old, h, c);
}

static __attribute__((noinline))
int remove_wait(struct shard *s, uint64_t addr, struct ls_live_entry *out,
		uint64_t h)
{
	ls_lock_ranked(&s->lock, LS_RANK_LIVE);
	return remove_locked(s, addr, out, h);
}

/*
 * Group g's control bytes and its 15 compact slots (240 bytes, 4 or 5
 * lines).  Which slot holds an entry is not known before the control
 * bytes arrive, and waiting for them would put the two misses back in a
 * row: so all five lines, unrolled.  Without the lock: a rebuild
 * meanwhile can make these fields disagree or name an array it has
 * unmapped, and a prefetch of any address is harmless on x86_64 (a hint;
 * it never faults).
 */
static inline __attribute__((always_inline))
void prefetch_group(const struct shard *s, uint64_t g)
{
	const signed char *ctrl = __atomic_load_n(&s->ctrl, __ATOMIC_RELAXED);
	const char *a;

	if (!ctrl)
		return;
	__builtin_prefetch(ctrl + g * GROUP, 1);
	a = (const char *)((uintptr_t)(__atomic_load_n(&s->slots,
						       __ATOMIC_RELAXED) +
				       g * GROUP_SLOTS * sizeof(struct slot16)) &
			   ~(uintptr_t)(LS_CACHELINE - 1));
	_Static_assert(GROUP_SLOTS * sizeof(struct slot16) + 64 - 16 <=
		       5 * 64, "a group's slots lie in 5 lines");
	__builtin_prefetch(a, 1);
	__builtin_prefetch(a + 64, 1);
	__builtin_prefetch(a + 128, 1);
	__builtin_prefetch(a + 192, 1);
	__builtin_prefetch(a + 256, 1);
}

/*
 * The common insert: an entry that fits a compact slot, no check
 * running, its address not in the shard's wide table (one test when that
 * table is empty; python3 with PYTHONMALLOC=malloc keeps a few blocks of
 * 256 KiB or more in some shards, and a tenth of its inserts go to
 * those), room in it, and an empty slot in
 * the address's first group, which place() would take, counting no
 * group.  One compare with CTRL_EMPTY says whether there is one and
 * whether the group's count is 0.  When it is, the probe ends there:
 * only that group's slots whose byte matches can hold the address.
 * When it is not (29% of the churn's inserts at the table's 73-88%
 * load), find() follows the probe on, inline: the general path's call
 * and its tests cost about 100 instructions more.
 */
int ls_live_insert(const struct ls_live_entry *e, struct ls_live_entry *old)
{
	uint64_t h = addr_hash(e->addr);
	struct shard *s = shard_of(e->addr, h);
	struct slot16 c;
	__m128i v;
	uint64_t g;
	unsigned m, empty;
	const struct slot16 *fits = pack(e, &c) ? &c : NULL;

	if (ls_unlikely(!try_lock(s)))
		return insert_wait(s, e, old, h, fits);
	/* limit is 0 while the shard has no arrays. */
	if (ls_unlikely(!fits || s->count >= s->limit ||
			__atomic_load_n(&log_buf, __ATOMIC_RELAXED)))
		return insert_locked(s, e, old, h, fits);
	/* A shard with wide entries (blocks of 256 KiB or more, say) keeps
	 * the inline path for the rest: only an entry of the same address
	 * there, to be replaced, needs the general one. */
	if (ls_unlikely(s->nwide) && in_wide(s, e->addr, h))
		return insert_locked(s, e, old, h, fits);
	g = group_of(h, s->ngroups);
	v = group_ctrl(s, g);
	empty = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v,
					_mm_set1_epi8(CTRL_EMPTY)));
	if (ls_unlikely(!(empty & SLOT_BITS)))
		return insert_locked(s, e, old, h, fits);
	if (ls_likely(empty & OVF_BIT)) {
		for (m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(v,
				_mm_set1_epi8(ctrl_of(h)))); m; m &= m - 1)
			if (ls_unlikely(slot_addr(slot_at(s, g * GROUP +
				(unsigned)__builtin_ctz(m), 0), 0) == e->addr))
				return insert_locked(s, e, old, h, fits);
	} else if (ls_unlikely(in_compact(s, e->addr, h))) {
		return insert_locked(s, e, old, h, fits);
	}
	put_at(s, g * GROUP + (unsigned)__builtin_ctz(empty), &c, h, 0);
	ls_unlock_ranked(&s->lock, LS_RANK_LIVE);
	return 0;
}

/*
 * The common removal: no check running, and the first slot of the
 * address's first group whose control byte matches is the address.
 */
int ls_live_remove(uint64_t addr, struct ls_live_entry *out)
{
	uint64_t h = addr_hash(addr);
	struct shard *s = shard_of(addr, h);
	uint64_t n = __atomic_load_n(&s->ngroups, __ATOMIC_RELAXED);
	uint64_t g = group_of(h, n), i;
	unsigned m;
	__m128i c;

	/* A free has nothing to do before its removal, so the prefetch
	 * (ls_live_prefetch()'s lines) is issued here, before the lock,
	 * from the group the removal needs anyway: read without the lock,
	 * as there, and the group computed again below only if a rebuild
	 * came in between. */
	if (__atomic_load_n(&ls_live_prefetch_on, __ATOMIC_RELAXED))
		prefetch_group(s, g);
	if (ls_unlikely(!try_lock(s)))
		return remove_wait(s, addr, out, h);
	if (ls_unlikely(!s->ctrl || __atomic_load_n(&log_buf,
						    __ATOMIC_RELAXED)))
		return remove_locked(s, addr, out, h);
	if (ls_unlikely(s->ngroups != n))
		g = group_of(h, s->ngroups);
	c = group_ctrl(s, g);
	m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(c,
					_mm_set1_epi8(ctrl_of(h))));
	i = g * GROUP + (unsigned)__builtin_ctz(m | 0x10000);
	if (ls_unlikely(!m || slot_addr(slot_at(s, i, 0), 0) != addr))
		return remove_locked(s, addr, out, h);
	empty_at(s, i, out, 0);	/* in its first group: no group passed */
	ls_unlock_ranked(&s->lock, LS_RANK_LIVE);
	return 1;
}

/* The lines an insert of addr reads first (prefetch_group()). */
void ls_live_prefetch_lines(uint64_t addr)
{
	uint64_t h = addr_hash(addr);
	const struct shard *s = shard_of(addr, h);

	prefetch_group(s, group_of(h, __atomic_load_n(&s->ngroups,
						      __ATOMIC_RELAXED)));
}

/* Table w's entries into buf, whole (it has room for all). */
static size_t tab_copy(const struct shard *s, struct ls_live_entry *buf, int w)
{
	size_t i, k = 0;

	for (i = 0; s->ctrl && i < s->ngroups * GROUP; i++)
		if (s->ctrl[i] >= 0)
			unpack(slot_at(s, i, w), w, &buf[k++]);
	return k;
}

size_t ls_live_copy_shard(unsigned idx, struct ls_live_entry *buf, size_t cap)
{
	struct shard *s = &shards[idx];
	size_t n, k;

	ls_lock_ranked(&s->lock, LS_RANK_LIVE);
	n = s->count + wide[idx].count;
	if (n <= cap) {
		k = tab_copy(s, buf, 0);
		tab_copy(&wide[idx], buf + k, 1);
	}
	ls_unlock_ranked(&s->lock, LS_RANK_LIVE);
	return n;
}

size_t ls_live_max_shard(void)
{
	size_t n, most = 0;
	unsigned i;

	for (i = 0; i < LS_LIVE_SHARDS; i++) {
		n = __atomic_load_n(&shards[i].count, __ATOMIC_RELAXED) +
		    __atomic_load_n(&wide[i].count, __ATOMIC_RELAXED);
		if (n > most)
			most = n;
	}
	return most;
}

/* Whether [p, p + len) is mapped, asked of the kernel (mincore fails
 * with ENOMEM on a hole). */
static int mapped(const void *p, size_t len)
{
	unsigned char vec[64];
	uintptr_t a = (uintptr_t)p & ~(uintptr_t)4095;
	size_t n = (uintptr_t)p + len - a, step = 64 * 4096;

	for (; n; a += step, n -= n < step ? n : step)
		if (syscall(SYS_mincore, a, n < step ? n : step, vec) &&
		    errno == ENOMEM)
			return 0;
	return 1;
}

/* Table w's full slots with a nonzero address, counted (buf NULL) or
 * copied, read without the lock. */
static size_t tab_frozen(const struct shard *s, struct ls_live_entry *buf,
			 int w)
{
	size_t i, k = 0;

	for (i = 0; s->ctrl && i < s->ngroups * GROUP; i++)
		if (s->ctrl[i] >= 0 && slot_addr(slot_at(s, i, w), w)) {
			if (buf)
				unpack(slot_at(s, i, w), w, &buf[k]);
			k++;
		}
	return k;
}

size_t ls_live_copy_shard_frozen(unsigned idx, struct ls_live_entry *buf,
				 size_t cap, int *torn)
{
	const struct shard *s = &shards[idx], *wt = &wide[idx];
	size_t n;

	if (s->lock.v) {
		/* Stopped inside an update: a rebuild may have unmapped the
		 * arrays s->ctrl or wt->ctrl still points to. */
		*torn = 1;
		if ((s->ctrl && !mapped(s->ctrl, map_size(s->ngroups, 0))) ||
		    (wt->ctrl && !mapped(wt->ctrl, map_size(wt->ngroups, 1))))
			return 0;
	}
	n = tab_frozen(s, NULL, 0) + tab_frozen(wt, NULL, 1);
	if (n > cap)
		return n;
	n = tab_frozen(s, buf, 0);
	return n + tab_frozen(wt, buf + n, 1);
}

size_t ls_live_count(void)
{
	size_t n = 0;
	unsigned i;

	for (i = 0; i < LS_LIVE_SHARDS; i++)
		n += __atomic_load_n(&shards[i].count, __ATOMIC_RELAXED) +
		     __atomic_load_n(&wide[i].count, __ATOMIC_RELAXED);
	return n;
}

size_t ls_live_mapped(void)
{
	size_t n = 0;
	unsigned i;

	for (i = 0; i < LS_LIVE_SHARDS; i++)
		n += ls_live_shard_mapped(i);
	return n;
}

size_t ls_live_resident(void)
{
	size_t n = 0;
	unsigned i;
	int w;

	for (i = 0; i < LS_LIVE_SHARDS; i++) {
		struct shard *t[2] = { &shards[i], &wide[i] };

		ls_lock_ranked(&shards[i].lock, LS_RANK_LIVE);	/* a rebuild would unmap them */
		for (w = 0; w < 2; w++)
			if (t[w]->ctrl)
				n += ls_sys_resident(t[w]->ctrl,
						     map_size(t[w]->ngroups, w));
		ls_unlock_ranked(&shards[i].lock, LS_RANK_LIVE);
	}
	return n;
}

/* fn on each of table w's entries, whole; then, when empty is set, the
 * table emptied. */
static void tab_visit(struct shard *s, int w,
		      void (*fn)(const struct ls_live_entry *, void *),
		      void *arg, int empty)
{
	struct ls_live_entry e;
	uint64_t j, slots = s->ctrl ? s->ngroups * GROUP : 0;

	for (j = 0; j < slots && fn; j++)
		if (s->ctrl[j] >= 0) {
			unpack(slot_at(s, j, w), w, &e);
			fn(&e, arg);
		}
	if (empty) {
		if (slots)
			memset(s->ctrl, CTRL_EMPTY, slots);	/* counts too */
		s->count = 0;
	}
}

void ls_live_visit_shard(unsigned idx,
			 void (*fn)(const struct ls_live_entry *, void *),
			 void *arg)
{
	struct shard *s = &shards[idx];

	ls_lock_ranked(&s->lock, LS_RANK_LIVE);
	tab_visit(s, 0, fn, arg, 0);
	tab_visit(&wide[idx], 1, fn, arg, 0);
	ls_unlock_ranked(&s->lock, LS_RANK_LIVE);
}

void ls_live_clear(void (*fn)(const struct ls_live_entry *, void *), void *arg)
{
	unsigned i;

	/* A concurrent check cannot follow a reset: it sees a loss. */
	__atomic_store_n(&log_lost, 1, __ATOMIC_RELEASE);
	for (i = 0; i < LS_LIVE_SHARDS; i++) {
		struct shard *s = &shards[i];

		ls_lock_ranked(&s->lock, LS_RANK_LIVE);
		tab_visit(s, 0, fn, arg, 1);
		tab_visit(&wide[i], 1, fn, arg, 1);
		s->nwide = 0;
		ls_unlock_ranked(&s->lock, LS_RANK_LIVE);
	}
}

void ls_live_lock_all(void)
{
	unsigned i;

	for (i = 0; i < LS_LIVE_SHARDS; i++)
		ls_lock_ranked(&shards[i].lock, LS_RANK_LIVE);
	ls_lock_ranked(&tix_lock, LS_RANK_LIVE);
}

void ls_live_unlock_all(void)
{
	unsigned i;

	ls_unlock_ranked(&tix_lock, LS_RANK_LIVE);
	for (i = 0; i < LS_LIVE_SHARDS; i++)
		ls_unlock_ranked(&shards[i].lock, LS_RANK_LIVE);
}

void ls_live_reset_child(void)
{
	unsigned i;

	for (i = 0; i < LS_LIVE_SHARDS; i++)
		ls_lock_reset(&shards[i].lock);
	ls_lock_reset(&tix_lock);
	/* A check that was running belongs to the parent: the child's
	 * hooks must not fill its copy of the log. */
	log_buf = NULL;
}
