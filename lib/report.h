/*
 * report.h - from a snapshot to what the user sees.
 *
 * ls_report_build() applies the user's filters to a struct ls_snapshot and
 * produces a sorted list of sites with the figures to print; the renderers
 * (render.h) print one.  Nothing here symbolizes or prints.
 */
#ifndef LEAKSCOPE_REPORT_H
#define LEAKSCOPE_REPORT_H

#include <stdio.h>
#include <stdint.h>
#include "flamegraph.h"
#include "snapshot.h"
#include "trend.h"
#include "suppress.h"

struct ls_renderer;

/* What a report sorts and sizes its sites by (`report --by`). */
enum ls_report_by {
	LS_BY_LIVE = 0,		/* bytes outstanding now */
	LS_BY_PEAK,		/* live bytes when the process peaked */
	LS_BY_ALLOCATED,	/* bytes allocated since the start */
	LS_BY_TEMPORARY,	/* bytes of temporary allocations */
};

extern const char *const ls_report_by_names[];	/* "live", ... , NULL */

struct ls_report_opts {
	const struct ls_renderer *format;	/* render.h; NULL = text */
	size_t top;		/* 0 = all sites */
	uint64_t min_age_ns;	/* only blocks at least this old */
	uint64_t min_size;	/* only blocks of at least this size */
	uint64_t max_size;	/* only blocks of at most this size; 0 = none */
	int show_allocs;	/* list each block (addr, size, age) */
	int growing;		/* only linear or exponential growth */
	unsigned only;		/* with a reachability check: only blocks
				   of these categories, bit (1 << enum
				   lsnap_reach_kind); 0 = all */
	struct ls_supp *supp;	/* suppressed sites are left out; NULL =
				   none (lib/suppress.h) */
	int gen_supp;		/* text: print suppressions for the
				   records shown */
	int need_blocks;	/* derived: a filter needs per-block data */
	int by;			/* enum ls_report_by */
	int histogram;		/* process-wide size and lifetime
				   histograms (rep->size_hist, life_hist) */
	struct ls_flame_opts svg;	/* --format svg: title, count, inverted,
					   colors (subtitle NULL: the process) */
	/* How stacks are shown (render.h, ls_render_stack). */
	unsigned depth;		/* frames shown at most; 0 = all */
	int full_names;		/* C++ template arguments in full */
	int hide_runtime;	/* drop libc/libstdc++/ld.so frames around
				   the program's own */
};

struct ls_report_site {
	const struct ls_site *site;
	int64_t live_bytes;	/* after filters */
	int64_t live_blocks;
	uint64_t allocated_bytes;
	uint64_t allocated_blocks;
	const struct ls_block **blocks;	/* owned array, oldest first; only
					   with show_allocs */
	size_t nblocks;
	const struct ls_trend *trend;	/* its growth, from the snapshot's
					   history; NULL without one */
	/* The figure opts->by names (live_bytes/blocks for LS_BY_LIVE):
	 * what the site is sorted by and what flame graphs measure. */
	int64_t key_bytes, key_blocks;
	struct ls_reach_figs *reach;	/* after filters; NULL unless the
					   snapshot has_reach */
};

struct ls_report {
	const struct ls_snapshot *snap;
	struct ls_report_site *sites;	/* sorted: live bytes desc */
	struct ls_reach_figs *site_reach;	/* what their reach point to */
	struct ls_trend *site_trend;	/* what their trend point to */
	size_t nsites;		/* after --top */
	size_t nsites_total;	/* sites with outstanding memory, before --top */
	int64_t live_bytes, live_blocks;	/* of the sites kept by filters */
	int by;			/* enum ls_report_by, from the options */
	int64_t key_bytes, key_blocks;	/* sum of the sites' keys */
	/* With opts->histogram: the sums of every site's histograms. */
	int has_histogram;
	uint64_t size_hist[LSNAP_HIST_BUCKETS], life_hist[LSNAP_HIST_BUCKETS];
	struct ls_reach_figs reach;	/* the same by category */
	uint64_t supp_bytes, supp_blocks;	/* left out by suppressions */
	size_t supp_sites;
};

/* Would a report by `by` (enum ls_report_by) list site s (before
 * filters and --top)?  Its figure for `by` is not 0. */
int ls_report_site_listed(const struct ls_site *s, int by);

/* The smallest value of log2 histogram bucket b (lsnap.h): 0, 1, 2, 4... */
uint64_t ls_hist_lo(unsigned b);

/* Per second of the snapshot's span (start to snapshot time): 0 when the
 * span is 0. */
double ls_report_per_second(const struct ls_snapshot *snap, uint64_t v);

/* Derive opts->need_blocks from the filters.  Filters on blocks apply
 * to live blocks: with opts->by other than LS_BY_LIVE they are refused by
 * ls_report_build (-EINVAL). */
void ls_report_opts_finish(struct ls_report_opts *opts);

/* qsort() order of pointers to blocks: oldest first, then by address. */
int ls_block_cmp_age(const void *a, const void *b);

/*
 * Build the report.  Sites with no outstanding block left after the
 * filters are dropped.  Returns 0, or -ENOMEM; release with
 * ls_report_release().  When opts->need_blocks is set and the snapshot has
 * no block list, returns -ENODATA (unless no site has anything
 * outstanding: the report is then simply empty).  In sampled mode the
 * figures built from blocks are estimates: each sampled heap block of
 * size s stands for 1 / (1 - exp(-s / sample_rate)) blocks (mappings are
 * always recorded, and count as one).  With opts->growing only the sites
 * whose growth history (ls_site.history) cli/trend.c labels linear or
 * exponential are kept; a snapshot without histories then gives an empty
 * report.  rep->snap points to snap, which must outlive the report.
 */
int ls_report_build(const struct ls_snapshot *snap,
		    const struct ls_report_opts *opts, struct ls_report *rep);
void ls_report_release(struct ls_report *rep);

/*
 * What --fail-on-leak gates on, from a built report (filters and
 * suppressions applied).  With a reachability check: the bytes and
 * blocks of the kinds in `kinds` (bits of enum lsnap_reach_kind);
 * without: every outstanding byte the report kept.
 */
struct ls_gate {
	uint64_t bytes, blocks;
	size_t sites;
	int reach;		/* the figures are by category */
};
void ls_report_gate(const struct ls_report *rep, unsigned kinds,
		    struct ls_gate *g);
/*
 * Whether the gate trips: more than limit bytes, or, with no limit (0),
 * any block at all (a block of 0 bytes never freed is a leak, as
 * LeakSanitizer counts it).
 */
int ls_gate_trips(const struct ls_gate *g, uint64_t limit);

/* "definite,indirect" -> bits of enum lsnap_reach_kind; 0 and *bits, or
 * -EINVAL naming the bad word in err. */
int ls_reach_parse_kinds(const char *s, unsigned *bits, char *err,
			 size_t errlen);
/* "definitely lost" etc., by enum lsnap_reach_kind. */
const char *ls_reach_kind_name(unsigned kind);
/* "definite" etc. (the words of --only). */
const char *ls_reach_kind_word(unsigned kind);
/* valgrind's names of its leak heuristics ("stdstring"...), by enum
 * lsnap_reach_heur_kind. */
const char *ls_reach_heur_name(unsigned heur);
/* Why the check ran by another method than asked ("pause budget"...),
 * by enum lsnap_reach_fallback; NULL for none.  *word: the JSON token. */
const char *ls_reach_fallback_text(unsigned why, const char **word);
/* The heap model's allocator ("glibc"...), by enum lsnap_heap_alloc. */
const char *ls_heap_alloc_name(unsigned id);

/*
 * The allocated-bytes threshold test used by --fail-on-leak: nonzero when
 * the snapshot's outstanding bytes exceed limit.
 */
int ls_report_leaks_over(const struct ls_snapshot *snap, uint64_t limit);

#endif /* LEAKSCOPE_REPORT_H */
