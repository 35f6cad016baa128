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
 * rebuilt at twice the size when its live entries would pass 7/8 of its
 * slots.
 */
#include <emmintrin.h>
#include <errno.h>
#include <string.h>
#include "live.h"
#include "sys.h"

/*
 * A group's 16 control bytes: bytes 0-14 are its slots' (a hash byte,
 * 0-127, or CTRL_EMPTY), byte 15 its overflow count as CTRL_EMPTY | n,
 * n saturating at 127 (a saturated count never goes down: probes go on
 * past that group until the next rebuild, which is slower, never wrong).
 * Every byte that is not a full slot has its top bit set, so `ctrl[p] >=
 * 0` says "a full slot" for any position p, the count's included, and a
 * hash byte never compares equal to a count.  Control position p (g * 16
 * + i) holds its entry at slots[ENT(p)] (g * 15 + i).
 */
#define GROUP 16
#define GROUP_SLOTS 15
#define SLOT_BITS 0x7fffu	/* movemask bits of the slots' bytes */
#define OVF_BIT 0x8000u		/* movemask bit of the count's byte */
#define CTRL_EMPTY ((signed char)0x80)
#define OVF_MAX 0xffu
#define ENT(p) ((p) - ((p) >> 4))

struct shard {
	ls_lock_t lock;
	uint32_t pad_;
	uint64_t gmask;		/* groups - 1; meaningless while !ctrl */
	uint64_t count;		/* live entries */
	uint64_t pad2_;
	/* count may not reach it: 7/8 of the slots, 0 until first use (so
	 * that one compare sends a first insert to rebuild() too). */
	uint64_t limit;
	signed char *ctrl;	/* 16 bytes per group; NULL until first use */
	struct ls_live_entry *slots;	/* in the same mapping, after ctrl */
} __attribute__((aligned(LS_CACHELINE)));

static struct shard shards[LS_LIVE_SHARDS];
_Static_assert(sizeof(struct shard) == 64, "shard_of() scales by 64");

/*
 * Prefetching starts once a shard reaches this many groups (47 KiB of
 * slots): a program whose shards all stay smaller has a table that stays
 * in the second-level cache (the churn's 4096 live blocks per thread fill
 * 16 shards of 32 groups), where the prefetches would only add
 * instructions.
 */
#define PREFETCH_MIN_GROUPS 128

int ls_live_prefetch_on;

/*
 * The change log of a concurrent reachability check (reach.c): while it
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

/* Block addresses are 16-byte aligned with structure in the high bits:
 * a multiplicative hash spreads them.  Its top bits pick the shard within
 * a group, the next 7 bits are the control byte, bits from 20 up the
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

static inline uint64_t group_of(uint64_t h, uint64_t gmask)
{
	return h >> 20 & gmask;
}

static inline size_t map_size(uint64_t groups)
{
	return groups * (GROUP + GROUP_SLOTS * sizeof(struct ls_live_entry));
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

/* The control position of addr's entry, or -1. */
static inline __attribute__((always_inline))
int64_t find(const struct shard *s, uint64_t addr, uint64_t h)
{
	const __m128i want = _mm_set1_epi8(ctrl_of(h));
	uint64_t g = group_of(h, s->gmask), n, p;
	unsigned m;

	for (n = 0; n <= s->gmask; n++, g = (g + 1) & s->gmask) {
		for (m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(
				group_ctrl(s, g), want)); m; m &= m - 1) {
			p = g * GROUP + (unsigned)__builtin_ctz(m);
			if (s->slots[ENT(p)].addr == addr)
				return (int64_t)p;
		}
		if (*ovf_at(s, g) == (unsigned char)CTRL_EMPTY)
			break;	/* no entry went on past g */
	}
	return -1;
}

/*
 * A new entry's place: the first empty slot on its probe path.  The
 * groups it passes count it.  The shard is never fuller than 7/8, so
 * there is one.
 */
static uint64_t place(struct shard *s, uint64_t h)
{
	uint64_t g = group_of(h, s->gmask);
	unsigned m;
	unsigned char *o;

	for (;;) {
		m = (unsigned)_mm_movemask_epi8(group_ctrl(s, g)) & SLOT_BITS;
		if (m)
			return g * GROUP + (unsigned)__builtin_ctz(m);
		o = ovf_at(s, g);
		if (*o != OVF_MAX)
			++*o;
		g = (g + 1) & s->gmask;
	}
}

static void put_at(struct shard *s, uint64_t p, const struct ls_live_entry *e,
		   uint64_t h)
{
	s->count++;
	s->ctrl[p] = ctrl_of(h);
	s->slots[ENT(p)] = *e;
}

/* The entry at control position p out into *out, its slot empty. */
static inline void empty_at(struct shard *s, uint64_t p,
			    struct ls_live_entry *out)
{
	*out = s->slots[ENT(p)];
	s->ctrl[p] = CTRL_EMPTY;
	s->count--;
}

/* empty_at(), and the groups its probe passed on the way there (from its
 * first, the one of h) uncount it. */
static inline void take_at(struct shard *s, uint64_t p, uint64_t h,
			   struct ls_live_entry *out)
{
	uint64_t g = group_of(h, s->gmask);
	unsigned char *o;

	empty_at(s, p, out);
	for (; g != p / GROUP; g = (g + 1) & s->gmask) {
		o = ovf_at(s, g);
		if (*o != OVF_MAX)
			--*o;
	}
}

/* A new array of twice as many groups (one at first use) with every
 * live entry moved over.  Rare: out of line. */
static __attribute__((noinline, cold)) int rebuild(struct shard *s)
{
	uint64_t groups = !s->ctrl ? 1 : (s->gmask + 1) * 2;
	signed char *mem = ls_sys_map(map_size(groups));
	struct shard n = { .gmask = groups - 1 };
	uint64_t p, old_groups = s->gmask + 1;

	if (!mem)
		return -ENOMEM;
	n.ctrl = mem;
	n.slots = (struct ls_live_entry *)(void *)(mem + groups * GROUP);
	memset(n.ctrl, CTRL_EMPTY, groups * GROUP);	/* counts 0 too */
	for (p = 0; s->ctrl && p < old_groups * GROUP; p++)
		if (s->ctrl[p] >= 0) {
			uint64_t h = addr_hash(s->slots[ENT(p)].addr);

			put_at(&n, place(&n, h), &s->slots[ENT(p)], h);
		}
	if (s->ctrl)
		ls_sys_unmap(s->ctrl, map_size(old_groups));
	/* ls_live_mapped() reads ctrl and gmask without the lock, and
	 * ls_live_prefetch() all three. */
	__atomic_store_n(&s->gmask, n.gmask, __ATOMIC_RELAXED);
	s->limit = groups * GROUP_SLOTS * 7 / 8;
	s->count = n.count;
	__atomic_store_n(&s->slots, n.slots, __ATOMIC_RELAXED);
	__atomic_store_n(&s->ctrl, n.ctrl, __ATOMIC_RELAXED);
	if (groups >= PREFETCH_MIN_GROUPS)
		__atomic_store_n(&ls_live_prefetch_on, 1, __ATOMIC_RELAXED);
	return 0;
}

unsigned ls_live_shard(uint64_t addr)
{
	return (unsigned)(shard_of(addr, addr_hash(addr)) - shards);
}

size_t ls_live_shard_overflow(unsigned idx)
{
	const struct shard *s = &shards[idx];
	size_t n = 0;
	uint64_t g;

	for (g = 0; s->ctrl && g <= s->gmask; g++)
		n += *ovf_at(s, g) & 0x7fu;
	return n;
}

size_t ls_live_shard_mapped(unsigned idx)
{
	const struct shard *s = &shards[idx];

	return __atomic_load_n(&s->ctrl, __ATOMIC_RELAXED) ?
	       map_size(__atomic_load_n(&s->gmask, __ATOMIC_RELAXED) + 1) : 0;
}

/*
 * The general cases, with the shard's lock held (they release it): a
 * shard to grow or rebuild, a probe that goes past its first group, a
 * check's change log to append to.  Out of line and reached by a tail
 * call, so that the fast paths below make no call and keep few values
 * live across one.
 */
static __attribute__((noinline))
int insert_locked(struct shard *s, const struct ls_live_entry *e,
		  struct ls_live_entry *old, uint64_t h)
{
	int64_t p;
	int ret = 0;

	/* Room first: a rebuild moves every slot. */
	if (s->count >= s->limit && rebuild(s)) {
		ret = -ENOMEM;
		goto out;
	}
	p = find(s, e->addr, h);
	if (p >= 0) {
		*old = s->slots[ENT(p)];
		s->slots[ENT(p)] = *e;
		log_put(LS_LIVE_LOG_REMOVE, old);
		ret = 1;
	} else {
		put_at(s, place(s, h), e, h);
	}
	log_put(LS_LIVE_LOG_INSERT, e);
out:
	ls_unlock(&s->lock);
	return ret;
}

static __attribute__((noinline))
int remove_locked(struct shard *s, uint64_t addr, struct ls_live_entry *out,
		  uint64_t h)
{
	int64_t p;
	int found = 0;

	if (!s->ctrl)
		goto out;
	p = find(s, addr, h);
	if (p < 0)
		goto out;
	take_at(s, (uint64_t)p, h, out);
	found = 1;
	log_put(LS_LIVE_LOG_REMOVE, out);
out:
	ls_unlock(&s->lock);
	return found;
}

/*
 * The shard's lock taken by one exchange; when another thread holds it,
 * ls_lock()'s wait and the general code, by a tail call: the fast paths
 * below then make no call but tail calls, and save no register.
 */
static inline int try_lock(struct shard *s)
{
	return !__atomic_exchange_n(&s->lock.v, 1, __ATOMIC_ACQUIRE);
}

static __attribute__((noinline))
int insert_wait(struct shard *s, const struct ls_live_entry *e,
		struct ls_live_entry *old, uint64_t h)
{
	ls_lock(&s->lock);
	return insert_locked(s, e, old, h);
}

static __attribute__((noinline))
int remove_wait(struct shard *s, uint64_t addr, struct ls_live_entry *out,
		uint64_t h)
{
	ls_lock(&s->lock);
	return remove_locked(s, addr, out, h);
}

/*
 * The common insert: no check running, room in the shard, and the
 * address's first group holds no slot that might be it, an empty slot,
 * and a count of 0 (so the probe ends there, and its first empty slot is
 * the one to take): one compare with CTRL_EMPTY says both.  What find()
 * and place() would do, in one group.
 */
int ls_live_insert(const struct ls_live_entry *e, struct ls_live_entry *old)
{
	uint64_t h = addr_hash(e->addr);
	struct shard *s = shard_of(e->addr, h);
	__m128i c;
	uint64_t g;
	unsigned m, empty;

	if (ls_unlikely(!try_lock(s)))
		return insert_wait(s, e, old, h);
	/* limit is 0 while the shard has no arrays. */
	if (ls_unlikely(s->count >= s->limit ||
			__atomic_load_n(&log_buf, __ATOMIC_RELAXED)))
		return insert_locked(s, e, old, h);
	g = group_of(h, s->gmask);
	c = group_ctrl(s, g);
	empty = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(c,
					_mm_set1_epi8(CTRL_EMPTY)));
	if (ls_unlikely(!(empty & OVF_BIT) || !(empty & SLOT_BITS)))
		return insert_locked(s, e, old, h);
	for (m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(c,
					_mm_set1_epi8(ctrl_of(h)))); m; m &= m - 1)
		if (ls_unlikely(s->slots[ENT(g * GROUP +
			(unsigned)__builtin_ctz(m))].addr == e->addr))
			return insert_locked(s, e, old, h);
	put_at(s, g * GROUP + (unsigned)__builtin_ctz(empty), e, h);
	ls_unlock(&s->lock);
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
	uint64_t g, i;
	unsigned m;
	__m128i c;

	if (ls_unlikely(!try_lock(s)))
		return remove_wait(s, addr, out, h);
	if (ls_unlikely(!s->ctrl || __atomic_load_n(&log_buf,
						    __ATOMIC_RELAXED)))
		return remove_locked(s, addr, out, h);
	g = group_of(h, s->gmask);
	c = group_ctrl(s, g);
	m = (unsigned)_mm_movemask_epi8(_mm_cmpeq_epi8(c,
					_mm_set1_epi8(ctrl_of(h))));
	i = g * GROUP + (unsigned)__builtin_ctz(m | 0x10000);
	if (ls_unlikely(!m || s->slots[ENT(i)].addr != addr))
		return remove_locked(s, addr, out, h);
	empty_at(s, i, out);	/* in its first group: no group passed */
	ls_unlock(&s->lock);
	return 1;
}

/*
 * The lines an insert or removal of addr reads first: its first group's
 * control bytes and that group's 15 slots (360 bytes, 6 or 7 lines).
 * Which slot holds the entry is not known before the control bytes
 * arrive, and waiting for them would put the two misses back in a row:
 * so all seven lines, unrolled.  Without the lock: a rebuild meanwhile
 * can make these fields disagree or name an array it has unmapped, and
 * a prefetch of any address is harmless on x86_64 (a hint; it never
 * faults).
 */
void ls_live_prefetch_lines(uint64_t addr)
{
	uint64_t h = addr_hash(addr);
	const struct shard *s = shard_of(addr, h);
	const signed char *ctrl = __atomic_load_n(&s->ctrl, __ATOMIC_RELAXED);
	uint64_t g = group_of(h, __atomic_load_n(&s->gmask, __ATOMIC_RELAXED));
	const char *a;

	if (!ctrl)
		return;
	__builtin_prefetch(ctrl + g * GROUP, 1);
	a = (const char *)((uintptr_t)(__atomic_load_n(&s->slots,
						       __ATOMIC_RELAXED) +
				       g * GROUP_SLOTS) &
			   ~(uintptr_t)(LS_CACHELINE - 1));
	_Static_assert(GROUP_SLOTS * sizeof(struct ls_live_entry) + 64 - 8 <=
		       7 * 64, "a group's slots lie in 7 lines");
	__builtin_prefetch(a, 1);
	__builtin_prefetch(a + 64, 1);
	__builtin_prefetch(a + 128, 1);
	__builtin_prefetch(a + 192, 1);
	__builtin_prefetch(a + 256, 1);
	__builtin_prefetch(a + 320, 1);
	__builtin_prefetch(a + 384, 1);
}

size_t ls_live_copy_shard(unsigned idx, struct ls_live_entry *buf, size_t cap)
{
	struct shard *s = &shards[idx];
	size_t n, i, k = 0;

	ls_lock(&s->lock);
	n = s->count;
	if (n <= cap && s->ctrl)
		for (i = 0; i < (s->gmask + 1) * GROUP; i++)
			if (s->ctrl[i] >= 0)
				buf[k++] = s->slots[ENT(i)];
	ls_unlock(&s->lock);
	return n;
}

size_t ls_live_max_shard(void)
{
	size_t n, most = 0;
	unsigned i;

	for (i = 0; i < LS_LIVE_SHARDS; i++) {
		n = __atomic_load_n(&shards[i].count, __ATOMIC_RELAXED);
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

size_t ls_live_copy_shard_frozen(unsigned idx, struct ls_live_entry *buf,
				 size_t cap, int *torn)
{
	const struct shard *s = &shards[idx];
	size_t i, n = 0, k = 0, slots;

	if (!s->ctrl)
		return 0;
	slots = (s->gmask + 1) * GROUP;
	if (s->lock.v) {
		/* Stopped inside an update: a rebuild may have unmapped the
		 * arrays s->ctrl still points to. */
		*torn = 1;
		if (!mapped(s->ctrl, map_size(s->gmask + 1)))
			return 0;
	}
	for (i = 0; i < slots; i++)
		n += s->ctrl[i] >= 0 && s->slots[ENT(i)].addr;
	if (n > cap)
		return n;
	for (i = 0; i < slots; i++)
		if (s->ctrl[i] >= 0 && s->slots[ENT(i)].addr)
			buf[k++] = s->slots[ENT(i)];
	return k;
}

size_t ls_live_count(void)
{
	size_t n = 0;
	unsigned i;

	for (i = 0; i < LS_LIVE_SHARDS; i++)
		n += __atomic_load_n(&shards[i].count, __ATOMIC_RELAXED);
	return n;
}

size_t ls_live_mapped(void)
{
	size_t n = 0;
	unsigned i;

	for (i = 0; i < LS_LIVE_SHARDS; i++)
		if (__atomic_load_n(&shards[i].ctrl, __ATOMIC_RELAXED))
			n += map_size(__atomic_load_n(&shards[i].gmask,
						      __ATOMIC_RELAXED) + 1);
	return n;
}

size_t ls_live_resident(void)
{
	size_t n = 0;
	unsigned i;

	for (i = 0; i < LS_LIVE_SHARDS; i++) {
		struct shard *s = &shards[i];

		ls_lock(&s->lock);	/* a rebuild would unmap the arrays */
		if (s->ctrl)
			n += ls_sys_resident(s->ctrl, map_size(s->gmask + 1));
		ls_unlock(&s->lock);
	}
	return n;
}

void ls_live_visit_shard(unsigned idx,
			 void (*fn)(const struct ls_live_entry *, void *),
			 void *arg)
{
	struct shard *s = &shards[idx];
	uint64_t j, slots;

	ls_lock(&s->lock);
	slots = s->ctrl ? (s->gmask + 1) * GROUP : 0;
	for (j = 0; j < slots; j++)
		if (s->ctrl[j] >= 0)
			fn(&s->slots[ENT(j)], arg);
	ls_unlock(&s->lock);
}

void ls_live_clear(void (*fn)(const struct ls_live_entry *, void *), void *arg)
{
	unsigned i;
	uint64_t j, slots;

	/* A concurrent check cannot follow a reset: it sees a loss. */
	__atomic_store_n(&log_lost, 1, __ATOMIC_RELEASE);
	for (i = 0; i < LS_LIVE_SHARDS; i++) {
		struct shard *s = &shards[i];

		ls_lock(&s->lock);
		if (s->ctrl) {
			slots = (s->gmask + 1) * GROUP;
			for (j = 0; j < slots && fn; j++)
				if (s->ctrl[j] >= 0)
					fn(&s->slots[ENT(j)], arg);
			memset(s->ctrl, CTRL_EMPTY, slots);	/* counts too */
		}
		s->count = 0;
		ls_unlock(&s->lock);
	}
}

void ls_live_lock_all(void)
{
	unsigned i;

	for (i = 0; i < LS_LIVE_SHARDS; i++)
		ls_lock(&shards[i].lock);
}

void ls_live_unlock_all(void)
{
	unsigned i;

	for (i = 0; i < LS_LIVE_SHARDS; i++)
		ls_unlock(&shards[i].lock);
}

void ls_live_reset_child(void)
{
	unsigned i;

	for (i = 0; i < LS_LIVE_SHARDS; i++)
		ls_lock_reset(&shards[i].lock);
	/* A check that was running belongs to the parent: the child's
	 * hooks must not fill its copy of the log. */
	log_buf = NULL;
}
