/*
 * lsnap.h - the leakscope snapshot wire format, shared by every producer
 * (the preload agent, later the eBPF tracer) and every consumer (the
 * command-line tool's reader).
 *
 * A snapshot is a 16-byte file header followed by records.  Each record is
 * a struct lsnap_rec_hdr (tag, payload length) and the payload.  Integers
 * are little-endian fixed width; payload structs are packed so that the
 * bytes on the wire are the bytes of the struct on x86_64 and aarch64.
 * A reader skips tags it does not know, which is how later versions add
 * records without breaking older readers.  The last record is always
 * LSNAP_END, which carries the record count and a hash of every byte
 * before it (version 2: lsnap_hash_*, 8 bytes a step; version 1: FNV-1a,
 * a byte a step): a file without a valid END record is truncated or
 * corrupt.
 *
 * The format is documented for users in docs/SNAPSHOT-FORMAT.md; keep the
 * two in step.
 */
#ifndef LEAKSCOPE_LSNAP_H
#define LEAKSCOPE_LSNAP_H

#include <stdint.h>

#define LSNAP_MAGIC "LEAKSCP"	/* 7 chars + NUL = 8 bytes */
#define LSNAP_VERSION 2		/* what producers write */
#define LSNAP_VERSION_MIN 1	/* the oldest a reader still reads: version
				   1 differs only in END's hash (FNV-1a) */

/* Upper bounds a reader enforces before trusting a length. */
#define LSNAP_MAX_RECORD (64u << 20)
#define LSNAP_MAX_FRAMES 256
#define LSNAP_MAX_PATH 4096

struct lsnap_file_hdr {
	char magic[8];
	uint32_t version;
	uint32_t flags;		/* reserved, 0 */
} __attribute__((packed));

#define LSNAP_NOTES_MAX 4096

enum lsnap_tag {
	LSNAP_HEADER = 1,	/* struct lsnap_header, once, first */
	LSNAP_COMMAND = 2,	/* argv strings, each NUL-terminated */
	LSNAP_CALLS = 3,	/* array of struct lsnap_call */
	LSNAP_TOTALS = 4,	/* struct lsnap_totals */
	LSNAP_MALLINFO = 5,	/* struct lsnap_mallinfo */
	LSNAP_MODULE = 6,	/* struct lsnap_module + path bytes */
	LSNAP_SITE = 7,		/* struct lsnap_site + nframes u64 */
	LSNAP_BLOCKS = 8,	/* array of struct lsnap_block */
	LSNAP_HISTORY = 9,	/* struct lsnap_history, at most once */
	LSNAP_SITE_HISTORY = 10,	/* struct lsnap_site_history + n int64 */
	LSNAP_UNWIND = 11,	/* struct lsnap_unwind, at most once */
	LSNAP_REACH = 12,	/* struct lsnap_reach, at most once: the
				   snapshot comes from a reachability check */
	LSNAP_REACH_SITE = 13,	/* struct lsnap_reach_site, per site */
	LSNAP_REACH_BLOCKS = 14,	/* uint8_t enum lsnap_reach_kind per
					   block, in BLOCKS order */
	LSNAP_REACH_HEUR = 15,	/* struct lsnap_reach_heur, at most once,
				   with LSNAP_REACH */
	LSNAP_REACH_HOW = 17,	/* struct lsnap_reach_how, at most once,
				   with LSNAP_REACH */
	LSNAP_ATTACH = 16,	/* struct lsnap_attach, at most once: the
				   agent was attached to a running process */
	LSNAP_PEAK = 20,	/* struct lsnap_peak, at most once */
	LSNAP_SITE_STATS = 21,	/* struct lsnap_site_stats + 2 * nbuckets
				   u64, at most once per site, after its
				   LSNAP_SITE */
	/* 20-29: peaks, activity and histograms (branch peaks) */
	LSNAP_NOTES = 18,	/* text, at most once: what the agent could
				   not do as asked, lines ending with '\n',
				   at most LSNAP_NOTES_MAX bytes */
	LSNAP_DROPPED = 19,	/* struct lsnap_dropped, at most once */
	LSNAP_AGENT_MEMORY = 30,	/* struct lsnap_agent_memory, at most
					   once: the agent's own memory */
	LSNAP_JIT = 31,		/* struct lsnap_jit + name, one per piece of
				   JIT code the stacks run through, named by
				   the runtime's perf map: added by
				   `leakscope snapshot` */
	LSNAP_REACH_HELD = 32,	/* struct lsnap_reach_held, per pair of
				   sites, with LSNAP_REACH */
	LSNAP_NAMESPACES = 33,	/* struct lsnap_namespaces, at most once:
				   the namespaces the process ran in */
	LSNAP_LOADER = 34,	/* struct lsnap_loader, at most once: a
				   walk of the loaded objects for this
				   snapshot was refused, who held the
				   loader's lock */
	LSNAP_MODULE_WALK = 35,	/* struct lsnap_module_walk, at most
				   once, with LSNAP_LOADER: the MODULE
				   records are an earlier walk's */
	LSNAP_END = 0xffff,	/* struct lsnap_end, last */
};

struct lsnap_rec_hdr {
	uint32_t tag;
	uint32_t len;		/* payload bytes that follow */
} __attribute__((packed));

enum lsnap_mode {
	LSNAP_MODE_FULL = 0,	/* every allocation recorded: exact */
	LSNAP_MODE_SAMPLED = 1,	/* Poisson byte sampling: estimates */
};

enum lsnap_reason {
	LSNAP_REASON_EXIT = 0,	/* written by the process as it exits */
	LSNAP_REASON_REQUEST = 1,	/* asked for over the control socket */
};

enum lsnap_source {
	LSNAP_SOURCE_AGENT = 0,	/* the LD_PRELOAD agent */
	LSNAP_SOURCE_EBPF = 1,	/* leakscope trace (in memory only) */
};

struct lsnap_header {
	uint32_t pid;
	uint32_t ppid;
	uint64_t wall_ns;	/* CLOCK_REALTIME when taken */
	uint64_t mono_ns;	/* CLOCK_MONOTONIC when taken: ages are
				   mono_ns - block.birth_ns */
	uint64_t start_mono_ns;	/* CLOCK_MONOTONIC when tracking began */
	uint64_t sample_rate;	/* mean bytes between samples; 0 in full mode */
	uint32_t mode;		/* enum lsnap_mode */
	uint32_t reason;	/* enum lsnap_reason */
	uint32_t source;	/* enum lsnap_source */
	uint32_t max_depth;	/* frames captured at most per stack */
	uint32_t nthreads;	/* threads the agent has seen */
	uint32_t module_gen;	/* current module-map generation */
} __attribute__((packed));

#define LSNAP_CALL_NAME 16
struct lsnap_call {
	char name[LSNAP_CALL_NAME];	/* "malloc", "free", ...; NUL-padded */
	uint64_t count;
} __attribute__((packed));

struct lsnap_totals {
	uint64_t live_bytes;
	uint64_t live_blocks;
	uint64_t allocated_bytes;
	uint64_t allocated_blocks;
	uint64_t peak_live_bytes;
	uint64_t peak_slack;	/* the peak is exact to within this many
				   bytes (per-thread batching, see
				   docs/ARCHITECTURE.md) */
} __attribute__((packed));

/* glibc mallinfo2(), taken when the snapshot was written. */
struct lsnap_mallinfo {
	uint64_t arena, ordblks, smblks, hblks, hblkhd;
	uint64_t usmblks, fsmblks, uordblks, fordblks, keepcost;
} __attribute__((packed));

/* The stack unwinder and its work, since the agent started. */
enum lsnap_unwinder {
	LSNAP_UNWINDER_CFI = 0,		/* the agent's own, with its memo */
	LSNAP_UNWINDER_LIBUNWIND = 1,	/* LEAKSCOPE_UNWIND=libunwind */
	LSNAP_UNWINDER_CHECK = 2,	/* both, compared on every capture */
	LSNAP_UNWINDER_NONE = 3,	/* no stacks */
};

struct lsnap_unwind {
	uint32_t unwinder;	/* enum lsnap_unwinder */
	uint32_t pad;
	uint64_t walks;		/* stacks walked */
	uint64_t memo_hits;	/* captures answered by the walk memo */
	uint64_t check_mismatches;	/* LSNAP_UNWINDER_CHECK: captures
					 * where libunwind disagreed */
} __attribute__((packed));

/*
 * What the agent itself holds in the process, when the snapshot was
 * written: every mapping it made for itself (tables, records, caches,
 * the post-mortem file), and its main parts.  Resident = in RAM, which
 * is what adds to the program's RSS (mincore()).
 */
struct lsnap_agent_memory {
	uint64_t mapped, resident;	/* all of the agent's mappings */
	uint64_t live_mapped, live_resident;	/* the live-block table */
	uint64_t live_entries;	/* blocks in it */
	uint64_t arena_mapped;	/* site records with their frames, thread
				   records, module paths */
	uint64_t postmortem_resident;	/* the post-mortem file's pages */
	uint64_t thread_records;
} __attribute__((packed));

/*
 * Tracking began when `leakscope attach` loaded the agent into a process
 * that was already running: blocks allocated before wall_ns are not
 * known (their frees pass unseen), and allocated totals count from then.
 * Absent when the agent was preloaded from the start.
 */
struct lsnap_attach {
	uint64_t wall_ns;	/* CLOCK_REALTIME when tracking began */
	uint64_t mono_ns;	/* CLOCK_MONOTONIC, same moment */
} __attribute__((packed));

/* The inode numbers of /proc/self/ns/pid and /proc/self/ns/mnt when the
 * snapshot was written (0: unknown): the header's pid is in that PID
 * namespace, which is the host's only when pid_ns is 0xEFFFFFFC. */
struct lsnap_namespaces {
	uint64_t pid_ns;
	uint64_t mnt_ns;
} __attribute__((packed));

/*
 * Another thread held the loader's lock (agent/dllock.h), so a walk of
 * the loaded objects for this snapshot was not done: the check's
 * (LSNAP_REACH_LOADER_HELD), or the module table's (LSNAP_MODULE_WALK).
 */
struct lsnap_loader {
	uint32_t tid;		/* the thread that held it */
	uint32_t pad;		/* 0 */
} __attribute__((packed));

/* The module table's refresh for this snapshot was refused: its MODULE
 * records are what the last walk done found. */
struct lsnap_module_walk {
	uint64_t walk_mono_ns;	/* CLOCK_MONOTONIC of that walk */
	uint32_t refused;	/* refreshes refused since, this one
				   included: >= 1 */
	uint32_t pad;		/* 0 */
} __attribute__((packed));

#define LSNAP_BUILD_ID_MAX 32
#define LSNAP_GEN_LOADED UINT32_MAX
/*
 * One loaded object.  bias is what dl_iterate_phdr calls dlpi_addr: the
 * run-time address of the object's virtual address 0.  [lo, hi) covers its
 * PT_LOAD segments.  The object was mapped there for module-map
 * generations [gen_from, gen_to); gen_to is LSNAP_GEN_LOADED while it still
 * is.  A site created at generation g resolves its frames against modules
 * whose interval contains g, so dlclose() followed by a new dlopen() at the
 * same address does not confuse the two.
 */
struct lsnap_module {
	uint64_t bias;
	uint64_t lo, hi;
	uint32_t gen_from, gen_to;
	uint8_t build_id_len;
	uint8_t build_id[LSNAP_BUILD_ID_MAX];
	uint8_t pad[3];
	uint32_t path_len;	/* path bytes follow, no NUL */
} __attribute__((packed));

enum lsnap_site_kind {
	LSNAP_KIND_HEAP = 0,	/* malloc family */
	LSNAP_KIND_MMAP = 1,	/* anonymous mmap/mremap by the program */
	/* Kinds of the eBPF tracer (`leakscope trace`), in memory and in
	 * its reports only: a snapshot file version 1 never holds them.
	 * brk and fault sites have counters but no blocks. */
	LSNAP_KIND_BRK = 2,	/* heap growth by brk(): bytes, calls */
	LSNAP_KIND_FAULT = 3,	/* user page faults: bytes, pages */
	LSNAP_KIND_KERNEL = 4,	/* kernel allocations: kernel stacks */
	/* Mappings that are not the program's live memory, kept apart:
	 * not in the live totals nor in the peak, left out of the
	 * default report, their bytes shown apart. */
	LSNAP_KIND_ALLOCATOR = 5,	/* anonymous mmap/mremap made by the
					   allocator behind malloc (not libc):
					   the chunks the heap blocks are
					   carved from */
	LSNAP_KIND_RESERVED = 6,	/* PROT_NONE anonymous mmap: address
					   space reserved, not memory */
	LSNAP_KIND_MAX = LSNAP_KIND_RESERVED,
};

/* Does a site of this kind count as live memory of the program? */
static inline int lsnap_kind_live(uint32_t kind)
{
	return kind != LSNAP_KIND_ALLOCATOR && kind != LSNAP_KIND_RESERVED;
}

/*
 * One allocation site: a distinct call stack.  frames[0] is the return
 * address in the function that called the allocator (the allocating
 * caller); the last frame is the outermost one.  Addresses are return
 * addresses: a symbolizer looks up address - 1 for the line of the call.
 * In sampled mode the counters are unbiased estimates, rounded.
 */
struct lsnap_site {
	uint32_t id;
	uint32_t kind;		/* enum lsnap_site_kind */
	uint32_t gen;		/* module-map generation at creation */
	uint32_t nframes;
	int64_t live_bytes;
	int64_t live_blocks;
	uint64_t allocated_bytes;
	uint64_t allocated_blocks;
	/* uint64_t frames[nframes] follow */
} __attribute__((packed));

struct lsnap_block {
	uint64_t addr;
	uint64_t size;
	uint64_t birth_ns;	/* CLOCK_MONOTONIC at allocation */
	uint32_t site;
	uint32_t tid;
} __attribute__((packed));

/*
 * The growth sampler's time axis: sample k (0-based, of `ticks` taken) was
 * taken at about first_mono_ns + k * period_ms; a site history holds the
 * last n samples, n <= hist_len, oldest first, the newest being sample
 * ticks - 1 taken at last_mono_ns.
 */
/* Events the agent could not record for want of memory. */
struct lsnap_dropped {
	uint64_t events;
} __attribute__((packed));

struct lsnap_history {
	uint32_t period_ms;
	uint32_t hist_len;
	uint64_t ticks;
	uint64_t first_mono_ns;
	uint64_t last_mono_ns;
} __attribute__((packed));

struct lsnap_site_history {
	uint32_t site;
	uint32_t n;
	/* int64_t live_bytes[n] follow, oldest first */
} __attribute__((packed));

/*
 * When the process's live total last reached its peak.  sites_bytes and
 * sites_blocks are the sum of the sites' peak_bytes/peak_blocks
 * (LSNAP_SITE_STATS): the live total at that moment as the sites saw it,
 * which differs from lsnap_totals.peak_live_bytes by at most its
 * peak_slack (docs/ARCHITECTURE.md, "Peaks").
 */
struct lsnap_peak {
	uint64_t peak_mono_ns;	/* CLOCK_MONOTONIC (coarse) of the peak */
	int64_t sites_bytes;
	int64_t sites_blocks;
} __attribute__((packed));

/*
 * Log2 histogram buckets of LSNAP_SITE_STATS: bucket 0 counts the value
 * 0, bucket b in 1..LSNAP_HIST_BUCKETS-2 the values [2^(b-1), 2^b),
 * bucket LSNAP_HIST_BUCKETS-1 everything above.  A record may stop
 * before it (nbuckets < LSNAP_HIST_BUCKETS): the buckets left out are 0
 * (version 1 always wrote them all).  Sizes in bytes; lifetimes in 1/256 s
 * (LSNAP_LIFE_TICKS_PER_S), so lifetime bucket 0 is "freed within the
 * same clock tick".
 */
#define LSNAP_HIST_BUCKETS 32
#define LSNAP_LIFE_TICKS_PER_S 256

/*
 * A site's figures beyond "live": its live bytes and blocks at the
 * process's peak (LSNAP_PEAK), its temporary allocations (freed by the
 * allocating thread before that thread's next allocation), and the
 * histograms of its allocation sizes (every allocation) and of the
 * lifetimes of its blocks at free (every free of a recorded heap block).
 * In sampled mode the peak and temporary figures are estimates; the
 * histograms count sampled blocks only.
 */
struct lsnap_site_stats {
	uint32_t site;		/* lsnap_site.id */
	uint32_t nbuckets;	/* of each histogram, <= LSNAP_HIST_BUCKETS:
				   the buckets written, from 0 */
	int64_t peak_bytes;
	int64_t peak_blocks;
	uint64_t temp_bytes;
	uint64_t temp_blocks;
	/* uint64_t size_hist[nbuckets], life_hist[nbuckets] follow */
} __attribute__((packed));

/*
 * Reachability, as valgrind's memcheck names it (docs/REACHABILITY.md).
 * Only heap blocks are classified; anonymous mappings are roots and get
 * LSNAP_REACH_NONE in LSNAP_REACH_BLOCKS.
 */
enum lsnap_reach_kind {
	LSNAP_REACH_DEFINITE = 0,	/* no pointer to it anywhere */
	LSNAP_REACH_INDIRECT = 1,	/* pointed to only from lost blocks */
	LSNAP_REACH_POSSIBLE = 2,	/* only pointers into its inside */
	LSNAP_REACH_REACHABLE = 3,	/* a pointer to its start from a root
					   or a reachable block */
	LSNAP_REACH_KINDS = 4,
	LSNAP_REACH_NONE = 0xff,	/* not classified (a mapping) */
};

enum lsnap_reach_flags {
	LSNAP_REACH_AT_EXIT = 1,	/* taken as the process exited */
	LSNAP_REACH_NO_REGS = 2,	/* some threads scanned without their
					   registers, their whole stacks */
	LSNAP_REACH_TORN = 4,	/* a table was caught mid-update by the stop:
				   its entries were read as they stood */
	LSNAP_REACH_PARTIAL = 8,	/* the check ran out of memory: some
					   blocks were not scanned, so some
					   blocks may be reported lost that
					   are not */
	LSNAP_REACH_CONCURRENT = 16,	/* marked while the program ran, then
					   finished with the threads stopped
					   (docs/REACHABILITY.md) */
	LSNAP_REACH_LOADER_HELD = 32,	/* another thread held the loader's
					   lock: objects loaded or unloaded
					   since the last walk were not seen */
};

struct lsnap_reach {
	uint64_t bytes[LSNAP_REACH_KINDS];	/* by enum lsnap_reach_kind */
	uint64_t blocks[LSNAP_REACH_KINDS];
	uint64_t scan_ns;	/* the scan in the copy-on-write child */
	uint64_t root_bytes;	/* bytes of roots scanned */
	uint64_t heap_bytes;	/* bytes of blocks scanned */
	uint64_t mem_bytes;	/* the check's own memory at its peak */
	uint32_t nthreads;	/* threads whose registers were scanned */
	uint32_t flags;		/* enum lsnap_reach_flags */
} __attribute__((packed));

/*
 * valgrind's leak heuristics (--leak-check-heuristics, all by default):
 * an interior pointer of one of these shapes counts as a pointer to the
 * block's start (docs/REACHABILITY.md).  LSNAP_REACH_HEUR sums the
 * blocks reached that way per heuristic, as memcheck's "of which
 * reachable via heuristic" lines do (index 0 unused).
 */
enum lsnap_reach_heur_kind {
	LSNAP_HEUR_NONE = 0,
	LSNAP_HEUR_STDSTRING = 1,
	LSNAP_HEUR_LENGTH64 = 2,
	LSNAP_HEUR_NEWARRAY = 3,
	LSNAP_HEUR_MULTIPLE = 4,	/* multipleinheritance */
	LSNAP_HEUR_KINDS = 5,
};

struct lsnap_reach_heur {
	uint64_t bytes[LSNAP_HEUR_KINDS];
	uint64_t blocks[LSNAP_HEUR_KINDS];
} __attribute__((packed));

/*
 * How a check ran (docs/REACHABILITY.md, "A bounded pause" and "Heap
 * models"): the method asked for, and why another ran instead; the
 * concurrent method's pause budget and the stop's work; which allocator
 * the scan modelled and how much of its memory it scanned as roots or
 * left unscanned.
 */
enum lsnap_reach_fallback {
	LSNAP_FALLBACK_NONE = 0,	/* the method asked for ran */
	LSNAP_FALLBACK_KERNEL = 1,	/* no asynchronous write-protection
					   (userfaultfd WP_ASYNC, 6.7+) */
	LSNAP_FALLBACK_LOG = 2,		/* a change-log record was lost */
	LSNAP_FALLBACK_BUDGET = 3,	/* the stop's work, predicted at the
					   stop, exceeded the pause budget */
	LSNAP_FALLBACK_OVERRUN = 4,	/* the stop's work ran past the
					   budget and was abandoned */
	LSNAP_FALLBACK_ERROR = 5,	/* the mark failed (out of memory,
					   the maps unreadable) */
	LSNAP_FALLBACKS = 6,
};

enum lsnap_heap_alloc {
	LSNAP_ALLOC_GLIBC = 0,		/* glibc's malloc: heaps walked */
	LSNAP_ALLOC_JEMALLOC = 1,	/* jemalloc */
	LSNAP_ALLOC_OTHER = 2,		/* another allocator behind malloc */
	LSNAP_ALLOC_TCMALLOC = 3,	/* gperftools' tcmalloc */
	LSNAP_ALLOCS = 4,
};

struct lsnap_reach_how {
	uint32_t asked;		/* 0 the concurrent method, 1 fork */
	uint32_t fallback;	/* enum lsnap_reach_fallback */
	uint64_t budget_ns;	/* the concurrent method's pause budget */
	uint64_t predicted_ns;	/* the stop's work predicted at the stop
				   (0: not predicted) */
	uint64_t stop_work_ns;	/* the agent's work in the stop, measured
				   (0 for the fork method) */
	uint32_t passes;	/* precleaning passes while the program ran */
	uint32_t allocator;	/* enum lsnap_heap_alloc */
	uint64_t dirty_pages;	/* written pages found at the stop */
	uint64_t alloc_root_bytes;	/* the allocator's memory outside
					   tracked blocks, scanned as roots */
	uint64_t alloc_unscanned_bytes;	/* the allocator's memory not
					   scanned: free chunks, headers,
					   its own state */
} __attribute__((packed));

/*
 * A site's blocks by category.  indirect_bytes/blocks: what the site's
 * definitely lost blocks hold, the blocks reachable only through them
 * (valgrind's "N (D direct, I indirect) bytes"); those blocks are also
 * counted as indirect at their own sites.
 */
struct lsnap_reach_site {
	uint32_t site;
	uint32_t pad;
	uint64_t bytes[LSNAP_REACH_KINDS];
	uint64_t blocks[LSNAP_REACH_KINDS];
	uint64_t indirect_bytes;
	uint64_t indirect_blocks;
} __attribute__((packed));

/*
 * What the definitely lost blocks of one site hold, by the site of the
 * indirectly lost blocks (each indirectly lost block counts once, under
 * the definitely lost block whose clique it joined).  A report that
 * suppresses leader_site suppresses these too, as LeakSanitizer does.
 */
struct lsnap_reach_held {
	uint32_t leader_site;	/* of the definitely lost blocks */
	uint32_t site;		/* of the indirectly lost blocks */
	uint64_t bytes;
	uint64_t blocks;
} __attribute__((packed));

/*
 * The control socket's `check` request (docs/CONTROL-PROTOCOL.md): after
 * the agent's "READY <tid>" line the client stops every other thread and
 * sends this header and one record per stopped thread.
 */
#define LSNAP_CHECK_MAGIC "LSCHECK"	/* 7 chars + NUL */
#define LSNAP_CHECK_MAX_THREADS 65536
#define LSNAP_CHECK_NREGS 32
struct lsnap_check_hdr {
	char magic[8];
	uint32_t nthreads;
	uint32_t flags;		/* reserved, 0 */
} __attribute__((packed));

struct lsnap_check_thread {
	uint32_t tid;
	uint32_t nregs;		/* words of regs used */
	uint64_t sp;		/* the stack pointer */
	uint64_t regs[LSNAP_CHECK_NREGS];	/* every general register */
} __attribute__((packed));

/*
 * Frames that are no code address: the last frame of a stack whose walk
 * had to stop early says why (docs/UNWINDING.md, "JIT code").  Real
 * return addresses are never below the first page.
 */
enum {
	LSNAP_FRAME_STOP_NOFP = 1,	/* code without CFI (a JIT's), and no
					   whole frame pointer chain from it */
	LSNAP_FRAME_STOP_END		/* one past the last */
};

/* A piece of JIT code and its name, from the process's perf map
 * (/tmp/perf-PID.map, docs/SYMBOLS.md), so that a saved snapshot names
 * its JIT frames after the process and its map are gone. */
#define LSNAP_JIT_NAME_MAX 1024
#define LSNAP_JIT_F_BEAM 1u	/* the BEAM wrote the map */
struct lsnap_jit {
	uint64_t lo;		/* first byte of the code */
	uint32_t size;		/* its length, > 0 */
	uint16_t flags;		/* LSNAP_JIT_F_* */
	uint16_t name_len;	/* name bytes that follow, 1 to
				   LSNAP_JIT_NAME_MAX, no NUL */
} __attribute__((packed));

struct lsnap_end {
	uint32_t nrecords;	/* records before this one */
	uint32_t pad;
	uint64_t hash;		/* of every byte before this record's
				   header: lsnap_hash_end() (version 1:
				   lsnap_fnv1a() from LSNAP_FNV_INIT) */
} __attribute__((packed));

/*
 * The END record's hash from version 2 on: the bytes as little-endian
 * 64-bit words, the last 1-7 bytes zero-padded into one more word, each
 * word mixed in by lsnap_hash_mix(), then the byte count.  Every step
 * is a bijection of the state, so one damaged word always changes the
 * hash; it is an integrity check against damage, not against an
 * attacker.  Version 1's FNV-1a took a multiply per byte: 8 instructions
 * a byte, most of the time an exit snapshot took (docs/PERFORMANCE.md).
 * Feed the bytes in pieces of any size with lsnap_hash_add().
 */
struct lsnap_hash {
	uint64_t h;
	uint64_t len;		/* bytes added */
	uint64_t tail;		/* the last len % 8 bytes, little-endian */
};

#define LSNAP_HASH_MUL 0x9e3779b97f4a7c15ULL

static inline uint64_t lsnap_hash_mix(uint64_t h, uint64_t w)
{
	h = (h ^ w) * LSNAP_HASH_MUL;
	return h ^ (h >> 32);	/* the high bits down: a multiply moves
				   differences only upwards */
}

static inline void lsnap_hash_init(struct lsnap_hash *s)
{
	s->h = 0xcbf29ce484222325ULL;
	s->len = 0;
	s->tail = 0;
}

static inline void lsnap_hash_add(struct lsnap_hash *s, const void *buf,
				  uint64_t len)
{
	const unsigned char *p = buf;
	unsigned k = (unsigned)(s->len & 7);
	uint64_t w;

	s->len += len;
	if (k) {		/* complete the word the last piece began */
		for (; k < 8 && len; k++, len--)
			s->tail |= (uint64_t)*p++ << (8 * k);
		if (k < 8)
			return;
		s->h = lsnap_hash_mix(s->h, s->tail);
		s->tail = 0;
	}
	for (; len >= 8; p += 8, len -= 8) {
		__builtin_memcpy(&w, p, 8);	/* little-endian hosts only */
		s->h = lsnap_hash_mix(s->h, w);
	}
	for (k = 0; k < len; k++)
		s->tail |= (uint64_t)p[k] << (8 * k);
}

static inline uint64_t lsnap_hash_end(const struct lsnap_hash *s)
{
	uint64_t h = s->h;

	if (s->len & 7)
		h = lsnap_hash_mix(h, s->tail);
	return lsnap_hash_mix(h, s->len);
}

/* Version 1's hash, and a string hash for tables. */
#define LSNAP_FNV_INIT 0xcbf29ce484222325ULL
static inline uint64_t lsnap_fnv1a(uint64_t h, const void *buf, uint64_t len)
{
	const unsigned char *p = buf;

	while (len--) {
		h ^= *p++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

#endif /* LEAKSCOPE_LSNAP_H */
