/*
 * reachint.h - what the reachability scan's files share, each calling
 * only the ones before it: agent/reach.c (memory access, the regions, the
 * mark, the page cache, valgrind's heuristics, the cliques, the sums),
 * agent/reachheap.c (the allocator's memory), agent/reachroots.c (the
 * maps, the roots), agent/reachrun.c (the inventory, the fork image's
 * whole scan), agent/reachcm.c (the mostly-concurrent mark; reach.c's
 * sweep drains its change log through struct scan's drain) and
 * agent/reachfork.c (the fork image's child, the parent's preparation,
 * the check at exit).  Internal to them: the agent's other modules use
 * reach.h.
 */
#ifndef LEAKSCOPE_AGENT_REACHINT_H
#define LEAKSCOPE_AGENT_REACHINT_H

#include <setjmp.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/uio.h>
#include "../common/lsnap.h"
#include "glibcheap.h"
#include "live.h"
#include "reach.h"
#include "sys.h"

#define RED_ZONE 128
#define GRANULE_SHIFT 20

/* ST_GONE: freed during a concurrent mark (not in the result). */
enum { ST_UNREACHED = 0, ST_POSSIBLE, ST_REACHABLE, ST_INDIRECT, ST_GONE };

/* A growable array of the child's own memory. */
struct vec {
	void *p;
	size_t len, cap;	/* in elements */
	size_t elem;
};

struct region {
	uint64_t start, end;
	unsigned readable : 1, writable : 1, shared : 1, file : 1, stack : 1,
		 exec : 1, heap : 1, shmem : 1;
};

/* Whether region g is scanned as a root: readable and writable, and not
 * a shared mapping of a file on disk (a shared mapping of memory, shmem,
 * is: a System V segment, a shared anonymous mapping, a memfd, a file
 * of /dev/shm). */
static inline int ls_scan_root_region(const struct region *g)
{
	return g->readable && g->writable &&
	       !(g->shared && g->file && !g->shmem);
}

struct span {
	uint64_t start, end;
};

#define WIN_BYTES (64u << 10)	/* the safe reader's window */
#define MAX_GRABS 256
/* Stacks in blocks cut at exit: the exiting thread's, and the one its
 * signal handler interrupted. */
#define SCAN_CUTS 2

struct nb_slot {
	uint64_t addr;		/* 0 = empty */
	uint64_t idx;		/* into nb */
};

struct gran {
	uint64_t key;		/* granule + 1; 0 = empty */
	uint32_t first, end;	/* blocks overlapping it */
};

struct scan {
	struct ls_live_entry *blk;
	uint64_t *addr;		/* blk[i].addr, dense for the search */
	uint8_t *st;
	uint32_t *leader;
	size_t n;
	uint64_t lo, hi;	/* [first block, end of the last) */
	struct gran *gran;
	uint64_t gmask;
	struct vec regions;	/* struct region, sorted */
	struct vec stack;	/* uint32_t block indices to scan */
	struct vec later;	/* the same, for the next sweep (live) */
	uint64_t own_start[LS_SYS_OWN_SLOTS + 9], own_len[LS_SYS_OWN_SLOTS + 9];
	size_t nown;
	uint64_t mem, peak;	/* bytes mapped now and at most */
	uint64_t root_bytes, heap_bytes;
	int partial;		/* out of memory: some blocks not scanned */
	/* A concurrent mark (cm_*) runs in the live process: memory is
	 * read through process_vm_readv(), never in place (a block or a
	 * mapping may go away under the reader; at the stop, where none
	 * can, in place): pages into the cache (batch_*), roots and single
	 * words through a window. */
	int safe;
	pid_t self;
	uint8_t *win;
	uint64_t wbase, wlen;
	int record;		/* note the root pieces scanned in rootp */
	struct vec rootp;	/* struct span, ascending */
	struct vec regd;	/* struct span: ranges write-protected */
	int uffd;
	struct ls_live_log_rec *log;	/* the change log, a ring */
	size_t log_cap;
	uint64_t log_done;	/* its records applied */
	int log_on, log_bad;	/* log_bad: the first error of log_drain */
	/* The log's drain (reachcm.c), called once per batch of the live
	 * process's sweep (reach.c); NULL: no log. */
	int (*drain)(struct scan *sc, int stopped);
	struct ls_live_entry *nb;	/* blocks allocated during the mark */
	uint8_t *nbdone;	/* nb[i] scanned while the program ran */
	size_t nnb, nbcap;
	struct nb_slot *nbslot;	/* nb's index by address */
	size_t nbmask;
	void *grabs[MAX_GRABS];	/* every mapping, to give it back */
	size_t grab_len[MAX_GRABS];
	size_t ngrabs;
	uint64_t scan_ns;	/* so far */
	uint32_t nth;
	int torn;
	/* The live process's mark sweeps its pending blocks in address
	 * order (mark_sweep); a block marked above the finger joins the
	 * sweep, one at or below it waits on the stack. */
	uint64_t *pend;		/* bitmap over the blocks, NULL: no sweep */
	uint64_t *pbits;	/* its memory */
	size_t finger, pmax;
	/* glibc's free chunks cached in fastbins (glibcheap.h): an open
	 * hash of chunk addresses, fmask + 1 slots, 0 = empty. */
	uint64_t *fast;
	uint64_t fmask, nfast;
	unsigned resyncs;	/* chunk walks that went astray */
	size_t wcur;		/* the walk's cursor into addr */
	/* valgrind's leak heuristics: which one made block i reachable
	 * (enum lsnap_reach_heur, 0 none), and a cache of addresses
	 * already judged vtables or not. */
	uint8_t *heur;
	struct { uint64_t addr; int is; } vt[512];
	/* The allocator's memory outside tracked blocks: scanned as roots,
	 * and not scanned (heapmodel.h). */
	uint64_t alloc_root, alloc_unscanned;
	/* The allocator's own mappings, not scanned (heapmodel.h,
	 * ls_scan_note_alloc_maps()): struct span, ascending, merged. */
	struct vec amap;
	/* The concurrent mark's stop: the written pages (struct span),
	 * listed before any is rescanned, and when the stop's work must
	 * end (0: no bound); overrun once it passed. */
	struct vec dirty;
	uint64_t deadline;
	int overrun;
	/* Tracked blocks the exiting thread runs on (a coroutine's stack,
	 * an alternate signal stack, a pthread_attr_setstack stack): block
	 * cut_blk[k] is live in [cut_at[k], cut_end[k]) only, as a root and
	 * as contents (ls_scan_mark_roots(), ls_scan_scan_block()). */
	uint32_t ncut;
	uint32_t cut_blk[SCAN_CUTS];
	uint64_t cut_at[SCAN_CUTS], cut_end[SCAN_CUTS];
};

/* How the current check runs (struct lsnap_reach_how): set by the
 * control thread, read by the child and by the concurrent mark. */
LS_HIDDEN extern struct lsnap_reach_how ls_scan_how;

/* Filled by ls_reach_prepare(), read by the child. */
struct reach_prep {
	uint64_t seg_start[8], seg_end[8];	/* the agent's own writable
						   PT_LOAD segments */
	unsigned nseg;
	struct lsnap_mallinfo mallinfo;
	pid_t pid, ppid;
	uint64_t tid_off;	/* of the tid in glibc's struct pthread, 0
				   when this glibc's is not known */
	int alloc_maps;		/* ls_heapmodel_maps_known() */
	/* The C library's code, its executable PT_LOAD segment (0, 0: not
	 * found), for ls_scan_red_zone(). */
	uint64_t libc_lo, libc_hi;
};
LS_HIDDEN extern struct reach_prep ls_scan_prep;

/* The check at exit: the other threads waiting in a system call, and
 * where the agent's exit path began on the exiting thread's stack. */
#define EXIT_THREADS 256

struct reach_at_exit {
	struct lsnap_check_thread th[EXIT_THREADS];
	uint64_t sig[EXIT_THREADS];
	uint64_t frame;		/* ls_reach_note_exit_frame() */
	/* Where the exiting thread's live frames begin (0: not known, the
	 * stack is scanned from frame), and the registers its caller of
	 * exit() held (nregs 0: not known). */
	uint64_t live;
	uint64_t regs[LS_REACH_EXIT_REGS];
	uint32_t nregs;
	/* exit() from a signal handler on an alternate stack: the stack
	 * pointer of the context the signal interrupted, from the frame
	 * the kernel pushed (0: none), and [fp_lo, fp_hi) the frame's
	 * saved floating-point and vector registers, not scanned. */
	uint64_t intr_sp, fp_lo, fp_hi;
	/* exit() off the thread's own stack after a swapcontext() or
	 * setcontext() away from it, for ls_scan_switched_sp(): the hooks'
	 * record of the last switch made from it (co_sp, 0: none or not
	 * readable), the own stack's top (co_top), the stack pointer the
	 * program's ucontext_t saved (co_rsp, 0: setcontext(), none saved)
	 * and where the exiting thread's live frames begin (co_live). */
	uint64_t co_sp, co_top, co_rsp, co_live;
	/* ls_reach_note_exit_call(): the first call of the process. */
	pid_t call_pid, call_claim, call_tid;
	uint64_t call_cfa, call_regs[LS_REACH_EXIT_REGS];
	uint32_t call_nregs;
};
LS_HIDDEN extern struct reach_at_exit ls_scan_exit;

/* The concurrent mark's page cache and its batches of reads (reach.c,
 * "the live process's reader"). */
#define BATCH_IOVS 1024		/* the kernel's IOV_MAX */
#define CACHE_PAGES 4096	/* 16 MiB */
#define PAGE_SZ 4096ull

struct scan_cache {
	uint64_t tag[CACHE_PAGES];	/* page address + 1; 0: empty */
	uint32_t serial[CACHE_PAGES];	/* the batch that loads it */
	uint8_t *mem;			/* CACHE_PAGES pages */
};
LS_HIDDEN extern struct scan_cache ls_scan_cache;

/* One read: the pages to load (local: their cache slots; remote: runs,
 * ascending as they come) and the ranges to scan once they are in. */
struct batch {
	struct iovec lv[BATCH_IOVS], rv[BATCH_IOVS];
	size_t nlv, nrv, n;
	uint64_t rend;		/* the last run's end */
	uint32_t serial;
	uint64_t a[BATCH_IOVS], len[BATCH_IOVS];
	uint32_t arg[BATCH_IOVS];
};
LS_HIDDEN extern struct batch ls_scan_batch;	/* the control thread's */

LS_HIDDEN extern struct scan ls_scan_child;	/* the child's; static: no stack
						   for 260 KiB */
LS_HIDDEN extern sigjmp_buf ls_scan_fault_jmp;

/* reach.c */
void *ls_scan_grab(struct scan *sc, size_t bytes);
void ls_scan_drop(struct scan *sc, void *p, size_t bytes);
void ls_scan_drop_all(struct scan *sc);
size_t ls_scan_read_safe(const struct scan *sc, uint64_t a, void *dst,
			size_t len);
int ls_scan_vec_push(struct scan *sc, struct vec *v, const void *e);
int ls_scan_radix_sort(struct scan *sc, struct ls_live_entry *a, size_t n);
/* sc->blk[0 .. sc->n), sorted: their addresses, states and granule
 * index (the inventory's last step; the unit tests build a scan so). */
int ls_scan_index_blocks(struct scan *sc);
int64_t ls_scan_lookup(const struct scan *sc, uint64_t w, int *start);
void ls_scan_mark_word(struct scan *sc, uint64_t w, int definite);
void ls_scan_scan_words(struct scan *sc, uint64_t a, uint64_t b,
		       void (*fn)(struct scan *, uint64_t, uint32_t),
		       uint32_t arg);
void ls_scan_mark_range(struct scan *sc, uint64_t a, uint64_t b, int definite);
void ls_scan_on_fault(int sig);
void ls_scan_mark_from_block(struct scan *sc, uint64_t w, uint32_t definite);
void ls_scan_scan_block(struct scan *sc, uint32_t i,
		       void (*fn)(struct scan *, uint64_t, uint32_t), uint32_t arg);
void ls_scan_cache_empty(void);
int ls_scan_batch_add(struct batch *b, uint64_t a, uint64_t len, uint32_t arg);
void ls_scan_cache_load(struct scan *sc, uint64_t a, uint64_t e);
void ls_scan_cache_flush(struct scan *sc);
void ls_scan_batch_scan(struct scan *sc, struct batch *b,
		       void (*fn)(struct scan *, uint64_t, uint32_t));
void ls_scan_scan_alone(struct scan *sc, uint64_t a, uint64_t len,
		       void (*fn)(struct scan *, uint64_t, uint32_t),
		       uint32_t arg);
void ls_scan_mark_all(struct scan *sc);
int ls_scan_cliques(struct scan *sc);
int ls_scan_sum_up(struct scan *sc, struct ls_reach_result *res);
ssize_t ls_scan_read_proc(const char *path, char *buf, size_t cap);
size_t ls_scan_other_threads(pid_t *tids, size_t cap);
int ls_scan_blocked_thread(pid_t tid, struct lsnap_check_thread *t,
			   uint64_t *sig);
/* The red zone below stopped thread t's stack pointer that its stack's
 * roots take in: 0 when it waits in a system call of the C library,
 * else RED_ZONE.  The one rule of every stop (reach.c). */
uint64_t ls_scan_red_zone(const struct lsnap_check_thread *t);
size_t ls_scan_blocked_sps(uint64_t *sps, uint64_t *reds, size_t cap,
			   uint64_t self_sp);
void ls_scan_note_own(struct scan *sc);
int ls_scan_peek(struct scan *sc, uint64_t a, uint64_t *v);
const struct region *ls_scan_region_of(const struct scan *sc, uint64_t a);
/* Where the own stack a coroutine switch left begins to be live, from
 * ls_scan_exit's record and the scan's regions, or 0 (reachroots.c). */
uint64_t ls_scan_switched_sp(const struct scan *sc);
uint64_t ls_scan_readable_until(const struct scan *sc, uint64_t a);
int ls_scan_is_own(const struct scan *sc, uint64_t a, uint64_t *end);
size_t ls_scan_first_block_from(const struct scan *sc, uint64_t a);
void ls_scan_mark_piece(struct scan *sc, uint64_t s, uint64_t e);

/* reachroots.c */
int ls_scan_parse_maps(struct scan *sc);
void ls_scan_mark_region(struct scan *sc, const struct region *g, uint64_t s);
uint64_t ls_scan_root_start(struct scan *sc, const struct region *g,
			   const struct lsnap_check_thread *th, uint32_t nth,
			   uint64_t self_sp, uint64_t self_red);
void ls_scan_mark_roots(struct scan *sc, const struct lsnap_check_thread *th,
		       uint32_t nth, uint64_t self_sp, uint64_t self_red);

/* reachheap.c */
#define HEAP_MAX_SIZE (64ull << 20)	/* glibc's arena heaps, 64-bit */
uint64_t ls_scan_tracked_bytes(const struct scan *sc, uint64_t s, uint64_t e);
void ls_scan_heap_range(struct scan *sc, size_t i, uint64_t gs,
		       uint64_t ge, uint64_t *xs, uint64_t *xe, int *arena);
const struct ls_gh_ops *ls_scan_gh_ops(struct scan *sc);
int ls_scan_note_fastbins(struct scan *sc);
void ls_scan_walk_heap(struct scan *sc, const struct ls_gh_heap *h);
int ls_scan_note_alloc_maps(struct scan *sc, int frozen);
size_t ls_scan_amap_from(const struct scan *sc, uint64_t a);

/* reachrun.c */
int ls_scan_take_inventory(struct scan *sc, int *torn);
int ls_scan_run_scan(struct scan *sc, const struct lsnap_check_thread *th,
		    uint32_t nth, uint64_t self_sp, uint64_t self_red,
		    struct ls_reach_result *res);

#endif /* LEAKSCOPE_AGENT_REACHINT_H */
