/*
 * snapshot.h - the in-memory snapshot model of the command-line tool.
 *
 * Every source (a snapshot file written by the agent at exit, a snapshot
 * streamed over the control socket, later the eBPF tracer) is read into a
 * struct ls_snapshot, and every renderer consumes one.  Nothing here is
 * symbolized: frames are raw return addresses plus the module map needed to
 * resolve them (see symbolize.h).
 */
#ifndef LEAKSCOPE_SNAPSHOT_H
#define LEAKSCOPE_SNAPSHOT_H

#include <stddef.h>
#include <stdint.h>
#include "../common/lsnap.h"
#include "container.h"

struct ls_call_count {
	char name[LSNAP_CALL_NAME + 1];
	uint64_t count;
};

struct ls_module {
	uint64_t bias, lo, hi;
	uint32_t gen_from, gen_to;
	unsigned build_id_len;
	uint8_t build_id[LSNAP_BUILD_ID_MAX];
	char *path;		/* owned */
	char *file;		/* owned, or NULL: where this process reads the
				   module while it is mapped, when path may not
				   lead to it (another mount namespace) */
};

/* A site's peak and temporaries (lsnap_site_stats; its histograms are
 * kept apart, ls_site_hist()). */
struct ls_site_stats {
	int64_t peak_bytes, peak_blocks;	/* live at the process's peak */
	uint64_t temp_bytes, temp_blocks;	/* temporary allocations */
};

/* A site's blocks by reachability category (enum lsnap_reach_kind),
 * from a check (struct lsnap_reach_site without the id). */
struct ls_reach_figs {
	uint64_t bytes[LSNAP_REACH_KINDS];
	uint64_t blocks[LSNAP_REACH_KINDS];
	uint64_t indirect_bytes;	/* held by its definitely lost blocks */
	uint64_t indirect_blocks;
};

/*
 * A site.  What only some reports read is kept out of it: the histograms
 * (their nonzero buckets, in the snapshot's hist_counts) and the
 * reachability figures (in the snapshot's site_reach): a snapshot of a
 * hundred thousand sites holds them once, at a few bytes a site.
 */
struct ls_site {
	uint32_t id;
	uint32_t kind;		/* enum lsnap_site_kind */
	uint32_t gen;
	uint32_t nframes;
	int64_t live_bytes;
	int64_t live_blocks;
	uint64_t allocated_bytes;
	uint64_t allocated_blocks;
	uint64_t *frames;	/* owned, or in the snapshot's frame_chunks;
				   frames[0] = allocating caller */
	int64_t *history;	/* owned; live bytes per growth sample,
				   oldest first; NULL if none */
	uint32_t nhistory;
	/* Allocations by log2 size and frees by log2 lifetime (in 1/256 s),
	 * LSNAP_HIST_BUCKETS each: a bit per nonzero bucket, their counts
	 * in snap->hist_counts from hist_at on, size buckets first.  Read
	 * with ls_site_hist(), set with ls_snapshot_set_hist(). */
	uint32_t size_mask, life_mask;
	uint32_t hist_at;
	struct ls_site_stats stats;	/* zero when the snapshot has none */
	const struct ls_reach_figs *reach;	/* NULL unless the snapshot
						   has_reach: ls_site_reach() */
};

struct ls_block {
	uint64_t addr, size, birth_ns;
	uint32_t site;		/* ls_site.id */
	uint32_t tid;
	uint8_t reach;		/* enum lsnap_reach_kind; LSNAP_REACH_NONE
				   without a check or for a mapping */
};

/* A piece of JIT code named in the snapshot (LSNAP_JIT). */
struct ls_jit_code {
	uint64_t lo, hi;
	int beam;		/* the BEAM's: module "beam jit" */
	char *name;		/* owned */
};

struct ls_snapshot {
	struct lsnap_header hdr;
	int has_totals, has_mallinfo, has_blocks, has_history, has_unwind;
	int has_peak;		/* peak below, and the sites' stats */
	struct lsnap_peak peak;
	int has_attach;		/* attached to a running process: attach */
	int has_dropped;
	int has_agent_memory;	/* agent_memory below */
	struct lsnap_agent_memory agent_memory;
	uint64_t dropped;	/* events the agent could not record (out of
				   memory): figures are low by that much */
	char *notes;		/* owned: what the agent could not do as
				   asked, lines ending with '\n'; NULL if
				   nothing */
	int postmortem;		/* read from a post-mortem file */
	int torn;		/* ... whose last update was cut short */
	int exited;		/* ... of a process that exited normally */
	struct lsnap_history history;
	struct lsnap_totals totals;
	struct lsnap_mallinfo mallinfo;
	struct lsnap_unwind unwind;
	struct lsnap_attach attach;
	int has_namespaces;	/* the writer's PID and mount namespaces */
	struct lsnap_namespaces namespaces;
	int has_loader;		/* a walk of the loaded objects was
				   refused: who held the loader's lock */
	struct lsnap_loader loader;
	int has_module_walk;	/* ... the module table's: the modules
				   are an earlier walk's */
	struct lsnap_module_walk module_walk;
	int has_reach;		/* from a reachability check */
	struct lsnap_reach reach;
	int has_reach_heur;	/* ... that says what valgrind's heuristics
				   reached */
	struct lsnap_reach_heur reach_heur;
	struct lsnap_reach_held *reach_held;	/* what each site's lost
						   blocks hold, by site */
	size_t nreach_held;
	int has_reach_how;	/* ... that says how it ran */
	struct lsnap_reach_how reach_how;
	uint64_t reach_pause_ns;	/* set by the caller that stopped the
					   threads; 0 = not measured */
	uint64_t reach_stop_ns;		/* of which stopping every thread */
	uint64_t reach_agent_ns;	/* registers sent to the agent's
					   answer (its rescan, or its clone) */

	char **argv;		/* owned, argc entries + NULL */
	size_t argc;

	struct ls_call_count *calls;
	size_t ncalls;

	struct ls_module *modules;
	size_t nmodules;
	struct ls_jit_code *jit;	/* LSNAP_JIT records, in file order */
	size_t njit, jit_cap;

	struct ls_site *sites;	/* in file order */
	size_t nsites;
	uint64_t *hist_counts;	/* the sites' nonzero histogram buckets */
	size_t nhist_counts, cap_hist_counts;
	struct ls_reach_figs *site_reach;	/* what sites' reach point to */
	/* The snapshot reader keeps the sites' frames in chunks of a
	 * megabyte or so, a list linked by their first word: a malloc()
	 * less a site, and its 16 bytes of overhead.  NULL: each site owns
	 * its frames. */
	uint64_t *frame_chunks;
	size_t chunk_used, chunk_cap;	/* words, of the first chunk */

	struct ls_block *blocks;
	size_t nblocks;

	uint64_t charged;	/* bytes it holds of the memory budget
				   (ls_snapshot_set_budget) */
	/* Asked live of a process in a container (lib/client.h): where it
	 * runs; hdr.pid is then our pid of it, container.nspid its own. */
	int has_container;
	struct ls_container container;
};

/*
 * A budget of memory shared by every snapshot this process reads or
 * builds (`leakscope serve --memory-budget`): the reader charges each
 * record's bytes before it allocates for them, the post-mortem reader what
 * it will read and build, and the snapshot holds its charge until
 * ls_snapshot_release().  A read that would pass the budget fails with
 * -ENOBUFS.  0, the default: no budget.  Process-wide; set it once at
 * start.
 */
void ls_snapshot_set_budget(uint64_t bytes);
/* The budget (0: none) and the bytes charged to it now. */
uint64_t ls_snapshot_budget(uint64_t *in_use);
/* Charge bytes more to snap: 0, or -ENOBUFS and nothing charged when the
 * budget would be passed. */
int ls_snapshot_charge(struct ls_snapshot *snap, uint64_t bytes);

/*
 * Read a snapshot from fd until LSNAP_END.  On success returns 0 and fills
 * *snap, which the caller releases with ls_snapshot_release().  On failure
 * returns a negative errno (-EINVAL for a malformed or corrupt snapshot,
 * -ENOMEM, or the read error), leaves *snap empty and writes a one-line
 * reason, without trailing newline, into err.
 */
int ls_snapshot_read_fd(int fd, struct ls_snapshot *snap, char *err,
			size_t errlen);
/* Same, giving up with -ETIMEDOUT when the whole snapshot has not come by
 * deadline_ns (CLOCK_MONOTONIC; 0: no deadline): a peer that trickles
 * its bytes cannot hold the reader, as a timeout per read would let it;
 * and with -EFBIG once the records passed max bytes (0: no cap): what a
 * peer sends cannot cost more memory than about that. */
int ls_snapshot_read_fd_capped(int fd, uint64_t deadline_ns, uint64_t max,
			       struct ls_snapshot *snap, char *err,
			       size_t errlen);
/* Same, from a file path; the reason names the file. */
int ls_snapshot_load(const char *path, struct ls_snapshot *snap, char *err,
		     size_t errlen);
/*
 * Every figure the reports add up, summed over the sites (live,
 * allocated, peak and temporary bytes and blocks, the reachability
 * categories) or the blocks (sizes), at most LS_FIGURES_MAX: 0, or
 * -EINVAL with a one-line reason in err.  A real process stays far below
 * (2^60 bytes is an exabyte); a file beyond it is damaged or forged, and
 * the reports' sums and differences of such figures cannot overflow.
 * Both readers (snapshots, post-mortem files) apply it.
 */
#define LS_FIGURES_MAX (1ull << 60)
int ls_snapshot_check_figures(const struct ls_snapshot *snap, char *err,
			      size_t errlen);

/* Free everything *snap owns and zero it; accepts a zeroed snapshot. */
void ls_snapshot_release(struct ls_snapshot *snap);

/* The site with this id, or NULL.  Sites are looked up by binary search
 * when they are sorted by id (the agent writes them so), else linearly. */
const struct ls_site *ls_snapshot_site(const struct ls_snapshot *snap,
				       uint32_t id);

/* Site s's histograms, LSNAP_HIST_BUCKETS each, into size and life. */
void ls_site_hist(const struct ls_snapshot *snap, const struct ls_site *s,
		  uint64_t *size, uint64_t *life);
/* Give site s (of snap) these histograms of n <= LSNAP_HIST_BUCKETS
 * buckets: 0, or -ENOMEM (-EFBIG past 2^32 nonzero buckets in all). */
int ls_snapshot_set_hist(struct ls_snapshot *snap, struct ls_site *s,
			 const uint64_t *size, const uint64_t *life,
			 unsigned n);
/* Site s's reachability figures: all zero without a check. */
const struct ls_reach_figs *ls_site_reach(const struct ls_site *s);

/* Age of a block at snapshot time, 0 for a clock that went backwards. */
uint64_t ls_block_age_ns(const struct ls_snapshot *snap,
			 const struct ls_block *b);

/* With has_module_walk: how long before the snapshot its module table
 * was walked (0 for a walk stamped after the header, a race). */
uint64_t ls_module_walk_age_ns(const struct ls_snapshot *snap);

/*
 * Live bytes of the sites of one kind kept apart from the live totals
 * (LSNAP_KIND_ALLOCATOR, LSNAP_KIND_RESERVED): what the totals show as
 * allocator-mapped and reserved bytes.
 */
uint64_t ls_snapshot_apart_bytes(const struct ls_snapshot *snap,
				 uint32_t kind);

/* "heap", "mmap", "brk", "fault", "kernel", "allocator", "reserved"
 * (enum lsnap_site_kind). */
const char *ls_site_kind_name(uint32_t kind);

#endif /* LEAKSCOPE_SNAPSHOT_H */
