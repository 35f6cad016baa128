/*
 * live.h - the table of live heap blocks: address -> size, site, birth,
 * thread.
 *
 * Sharded by address: 16 groups by 64 MiB window (one per glibc thread
 * arena), 16 shards in each by address hash; each shard is an
 * open-addressing table probed a group of 15 slots at a time through 16
 * control bytes, one per slot and the group's overflow count (SSE2;
 * Abseil's "Swiss table" layout, Folly F14's counts instead of deleted
 * marks), guarded by its own spinlock, so two threads only meet when
 * their blocks hash to the same shard.  No fixed capacity: a shard is
 * rebuilt, a fifth larger, when its live entries would pass 7/8 of its
 * slots.  An entry is kept in 16 bytes (the address / 8 in 44 bits, the
 * site in 20, the birth in 32, the size in 18 and the thread as an index
 * in 14, live.c): 17.1 bytes per slot with its control byte and the
 * count's byte per 15, at a load between 73% and 7/8: 19.5 to 23.4
 * bytes per live block in one shard, about 21.4 in all once shards pass
 * 640 groups (the shards of a window grow out of step, live.c).  An
 * entry that does not fit (a size of 256 KiB or more, an address not
 * 8-aligned or above 2^47, a site id from 2^20,
 * a thread past the first 12288 distinct ids) is kept whole, in 24
 * bytes, in a second table of its shard.  Either way every field is
 * given back exactly as inserted.
 *
 * All functions are safe inside allocation hooks; none is async-signal
 * safe in the sense of being callable from a handler that interrupted the
 * same thread inside the table (the hooks' recursion guard prevents that).
 */
#ifndef LEAKSCOPE_AGENT_LIVE_H
#define LEAKSCOPE_AGENT_LIVE_H

#include <stddef.h>
#include <stdint.h>

/*
 * An entry as callers see it, 24 bytes.  Sizes up to 2^40 - 1 (1 TiB: no heap block of a 64-bit Linux
 * process is larger in practice), thread ids up to 2^24 - 1 (the kernel's
 * pid_max is at most 2^22), birth in 1/256 s since the agent started,
 * saturating after 194 days.
 */
struct ls_live_entry {
	uint64_t addr;		/* 0 = empty slot */
	uint64_t size : 40;
	uint64_t tid : 24;
	uint32_t site;
	uint32_t birth;		/* see ls_live_birth() */
};

#define LS_LIVE_TICKS_PER_S 256

/* A birth stamp for "now" (CLOCK_MONOTONIC_COARSE) relative to start. */
static inline uint32_t ls_live_birth(uint64_t now_ns, uint64_t start_ns)
{
	uint64_t t = now_ns > start_ns ?
		(now_ns - start_ns) / (1000000000u / LS_LIVE_TICKS_PER_S) : 0;

	return t > UINT32_MAX ? UINT32_MAX : (uint32_t)t;
}

/* Back to CLOCK_MONOTONIC nanoseconds. */
static inline uint64_t ls_live_birth_ns(uint32_t birth, uint64_t start_ns)
{
	return start_ns + (uint64_t)birth * (1000000000u / LS_LIVE_TICKS_PER_S);
}

#define LS_LIVE_SHARDS 256

/*
 * Insert or replace.  Returns 0, or -ENOMEM when the table cannot grow
 * (the block then goes untracked).  When an entry for addr already existed
 * (the program freed it through a path the agent does not see), it is
 * copied to *old and 1 is returned so the caller can settle its site.
 */
int ls_live_insert(const struct ls_live_entry *e, struct ls_live_entry *old);

/* Remove addr; copies the entry to *out and returns 1, or returns 0 when
 * addr is not tracked. */
int ls_live_remove(uint64_t addr, struct ls_live_entry *out);

/*
 * Start bringing into the cache the lines of the table that an insert
 * of addr will read, so that the misses overlap with what the caller
 * does in between (an allocation's capture), and come together rather
 * than one after the other (the control bytes, then the slot they point
 * at).  ls_live_remove() issues the same prefetches itself, first
 * thing: a free has nothing to do before its removal.  On a large heap
 * the table is tens of MiB hashed at random, and those misses were most
 * of full tracking's cost on python3 with PYTHONMALLOC=malloc
 * (docs/perf-log/live-table.md, "The table's misses").  Only once
 * some shard has grown past what stays cached: before that, a load and
 * a branch.
 * Changes nothing, takes no lock, never faults; hook-safe and
 * async-signal-safe.
 */
extern int ls_live_prefetch_on;
void ls_live_prefetch_lines(uint64_t addr);

static inline void ls_live_prefetch(uint64_t addr)
{
	if (__atomic_load_n(&ls_live_prefetch_on, __ATOMIC_RELAXED))
		ls_live_prefetch_lines(addr);
}

/*
 * Copy shard i's entries into buf (room for cap entries).  Returns the
 * number of entries in the shard; when that exceeds cap nothing is copied
 * and the caller retries with a larger buffer.  Holds the shard lock only
 * while copying.
 */
size_t ls_live_copy_shard(unsigned i, struct ls_live_entry *buf, size_t cap);

/*
 * The same in a frozen copy-on-write image (reachrun.c), where a lock held
 * by a thread that was stopped will never be released: reads without the
 * lock, and sets *torn when the shard was caught mid-update (its entries
 * are then read as they stood, once its arrays are known to be mapped).
 */
size_t ls_live_copy_shard_frozen(unsigned i, struct ls_live_entry *buf,
				 size_t cap, int *torn);

/* The shard addr belongs to, the bytes shard idx has mapped, and the sum
 * of its groups' overflow counts, read without its lock (tests). */
unsigned ls_live_shard(uint64_t addr);
size_t ls_live_shard_mapped(unsigned idx);
size_t ls_live_shard_overflow(unsigned idx);
/* Entries of shard idx in its wide table (tests). */
size_t ls_live_shard_wide(unsigned idx);

/* Entries in all shards, read without locks (approximate while running). */
size_t ls_live_count(void);
/*
 * Call fn on every entry of shard idx, under its lock: the program's
 * threads wait on that shard meanwhile, so fn must be short.  For a
 * snapshot that cannot get memory to copy the shard (an exhausted
 * address space at exit).
 */
void ls_live_visit_shard(unsigned idx,
			 void (*fn)(const struct ls_live_entry *, void *),
			 void *arg);

/* Entries in the fullest shard, read without locks. */
size_t ls_live_max_shard(void);
/* Bytes of slot arrays currently mapped, and of them resident (not in
 * hooks: mincore). */
size_t ls_live_mapped(void);
size_t ls_live_resident(void);

/* Remove every entry (reset); calls fn for each removed entry first. */
void ls_live_clear(void (*fn)(const struct ls_live_entry *, void *), void *arg);

/*
 * The change log of a concurrent reachability check (reachcm.c): between
 * start and stop every insert (and the entry it replaced) and every
 * removal is appended to buf, a ring of cap records (a power of two):
 * record i (counted from 0 at start; ls_live_log_count() says how many
 * were claimed) lies in buf[i % cap].  The reader takes records in order
 * and gives their slots back with ls_live_log_release(records read so
 * far; a slot must be emptied, op 0, first); a record that finds its slot
 * still unread is lost, and so is the log after a reset:
 * ls_live_log_lost() says so.  A record whose op is still 0 is being
 * written, or was by a thread that was stopped.  Start, release and stop
 * from one thread (the control thread); appends are safe from any hook.
 */
enum { LS_LIVE_LOG_INSERT = 1, LS_LIVE_LOG_REMOVE = 2 };
struct ls_live_log_rec {
	struct ls_live_entry e;
	uint32_t op;		/* 0 until written */
	uint32_t pad;
};
void ls_live_log_start(struct ls_live_log_rec *buf, size_t cap);
uint64_t ls_live_log_count(void);
void ls_live_log_release(uint64_t done);
int ls_live_log_lost(void);
void ls_live_log_stop(void);
void ls_live_lock_all(void);
void ls_live_unlock_all(void);
void ls_live_reset_child(void);

#endif
