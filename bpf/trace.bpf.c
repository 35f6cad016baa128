// SPDX-License-Identifier: GPL-2.0
/*
 * trace.bpf.c - the kernel side of `leakscope trace`.
 *
 * Every program turns one event (an allocator call returning, a free, a
 * heap or mapping growth syscall, a user page fault, a kernel allocation)
 * into one record of the `events` ring buffer.  Records that need a stack
 * carry the user registers and a copy of the top of the user stack: user
 * space unwinds it with .eh_frame CFI from the files (lib/stackcopy.c), so
 * code without frame pointers gives whole stacks.  With stack_mode
 * LS_STACK_FP the kernel walks frame pointers instead (bpf_get_stack), and
 * kernel allocations always carry kernel return addresses.
 *
 * What user space decides before loading (const volatile):
 *   target_tgid  process to trace, 0 = every process (kernel mode only)
 *   stack_mode   enum ls_trace_stack
 *   stack_bytes  bytes of user stack to copy (<= LS_TRACE_MAX_STACK)
 *   min_size, max_size  heap blocks outside [min, max] are left out
 *   sample_rate  mean bytes between sampled heap blocks, 0 = all
 *   combined     heap blocks are counted per stack id in `comb` (frame
 *                pointers, bpf_get_stackid) instead of being sent
 *   wakeup_bytes wake the reader only once this much is waiting (it
 *                also polls on its own): a wakeup per record would cost
 *                the traced thread a cross-CPU interrupt each time
 *
 * Blocks recorded are remembered in `live`, so that only their frees
 * reach user space (a busy process frees blocks it allocated before the
 * trace, or that sampling left out, all the time).
 */
#include "vmlinux.h"
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_tracing.h>
#include <bpf/bpf_core_read.h>
#include "trace.h"

char LICENSE[] SEC("license") = "GPL";

const volatile __u32 target_tgid = 0;
const volatile __u32 stack_mode = LS_STACK_COPY;
const volatile __u32 stack_bytes = 8192;
const volatile __u64 min_size = 0;
const volatile __u64 max_size = 0;
const volatile __u64 sample_rate = 0;
const volatile __u64 wakeup_bytes = 1 << 20;
const volatile __u32 combined = 0;

#define MAP_ANONYMOUS_FLAG 0x20
#define PAGE_KEY_TAG (1ULL << 62)	/* page frames apart from pointers */

struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 64 << 20);	/* resized by user space */
} events SEC(".maps");

/* The record being built: too big for the BPF stack. */
struct scratch {
	__u64 w[sizeof(struct ls_trace_event) / 8 + LS_TRACE_MAX_IPS +
		LS_TRACE_MAX_STACK / 8];
};

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, 1);
	__type(key, __u32);
	__type(value, struct scratch);
} scratch SEC(".maps");

struct call {
	__u64 size, arg, sp;
	__u32 fn, pad;
};

/* Allocator calls in flight on one thread, outermost first. */
struct pending {
	__u32 depth, pad;
	__s64 countdown;	/* bytes until the next sample */
	struct call c[LS_TRACE_NEST];
};

struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, struct pending);
} pending SEC(".maps");

/* Recorded blocks and mappings by address (kernel mode: tagged keys);
 * stack >= 0: counted in `comb` under that stack id. */
struct live_val {
	__u64 size;
	__s64 stack;
};

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 1 << 20);
	__uint(map_flags, BPF_F_NO_PREALLOC);
	__type(key, __u64);
	__type(value, struct live_val);
} live SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_STACK_TRACE);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__uint(value_size, LS_TRACE_MAX_IPS * 8);
} stacks SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__uint(max_entries, 16384);
	__type(key, __u32);
	__type(value, struct ls_trace_comb);
} comb SEC(".maps");

/* Exponential gaps of mean sample_rate, filled by user space. */
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, LS_TRACE_GAPS);
	__type(key, __u32);
	__type(value, __u64);
} gaps SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__uint(max_entries, LS_STAT_COUNT);
	__type(key, __u32);
	__type(value, __u64);
} stats SEC(".maps");

/* mmap arguments between sys_enter_mmap and sys_exit_mmap, per thread. */
struct {
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__uint(max_entries, 65536);
	__type(key, __u32);
	__type(value, __u64);
} mmap_len SEC(".maps");

static __always_inline void stat_add(__u32 which)
{
	__u64 *v = bpf_map_lookup_elem(&stats, &which);

	if (v)
		*v += 1;
}

static __always_inline int traced(void)
{
	return !target_tgid ||
	       (bpf_get_current_pid_tgid() >> 32) == target_tgid;
}

/* Copy the user stack from sp upwards, a page at a time (a read that
 * crosses into an unmapped page fails whole), into dst; bytes copied. */
static __always_inline __u32 copy_stack(__u8 *dst, __u64 sp)
{
	__u64 got = 0, want = stack_bytes, n;
	int i;

	n = LS_TRACE_PAGE - (sp & (LS_TRACE_PAGE - 1));
	for (i = 0; i < LS_TRACE_MAX_STACK / LS_TRACE_PAGE + 1; i++) {
		if (got >= want || got > LS_TRACE_MAX_STACK - LS_TRACE_PAGE)
			break;
		if (n > want - got)
			n = want - got;
		/* Bounds the verifier can see: 1..LS_TRACE_PAGE. */
		n &= 2 * LS_TRACE_PAGE - 1;
		if (n == 0 || n > LS_TRACE_PAGE)
			break;
		if (bpf_probe_read_user(dst + got, n, (void *)(sp + got)))
			break;
		got += n;
		n = LS_TRACE_PAGE;
	}
	return (__u32)got;
}

static __always_inline void user_stack(void *ctx, struct ls_trace_event *e,
				       struct pt_regs *regs)
{
	e->ip = BPF_CORE_READ(regs, ip);
	e->sp = BPF_CORE_READ(regs, sp);
	e->bp = BPF_CORE_READ(regs, bp);
	if (stack_mode == LS_STACK_FP) {
		long n = bpf_get_stack(ctx, e->data, LS_TRACE_MAX_IPS * 8,
				       BPF_F_USER_STACK);

		e->nips = n > 0 ? (__u32)n / 8 : 0;
	} else if (stack_mode == LS_STACK_COPY) {
		e->stack_len = copy_stack((__u8 *)e->data, e->sp);
		if (!e->stack_len)
			stat_add(LS_STAT_STACK_FAIL);
	}
}

static __always_inline struct ls_trace_event *record(__u32 type, __u32 fn,
						     __u64 addr, __u64 size,
						     __u64 old)
{
	__u32 zero = 0;
	struct scratch *s = bpf_map_lookup_elem(&scratch, &zero);
	__u64 id = bpf_get_current_pid_tgid();
	struct ls_trace_event *e;

	if (!s)
		return NULL;
	e = (struct ls_trace_event *)s->w;
	e->type = type;
	e->fn = fn;
	e->pid = id >> 32;
	e->tid = (__u32)id;
	e->ts = bpf_ktime_get_ns();
	e->addr = addr;
	e->size = size;
	e->old = old;
	e->ip = e->sp = e->bp = 0;
	e->flags = 0;
	e->nips = 0;
	e->stack_len = 0;
	return e;
}

static __always_inline void submit(struct ls_trace_event *e)
{
	__u64 len = sizeof(*e) + (__u64)e->nips * 8 + e->stack_len, flags;

	if (len > sizeof(struct scratch))
		len = sizeof(struct scratch);
	flags = bpf_ringbuf_query(&events, BPF_RB_AVAIL_DATA) >= wakeup_bytes ?
		BPF_RB_FORCE_WAKEUP : BPF_RB_NO_WAKEUP;
	if (bpf_ringbuf_output(&events, e, len, flags))
		stat_add(LS_STAT_LOST);
	else
		stat_add(LS_STAT_EVENTS);
}

/* A record with no stack (frees, unmaps). */
static __always_inline void emit_plain(__u32 type, __u32 fn, __u64 addr,
				       __u64 size)
{
	struct ls_trace_event *e = record(type, fn, addr, size, 0);

	if (e)
		submit(e);
}

static __always_inline void emit_user(void *ctx, struct pt_regs *regs,
				      __u32 type, __u32 fn, __u64 addr,
				      __u64 size, __u64 old, __u32 flags)
{
	struct ls_trace_event *e = record(type, fn, addr, size, old);

	if (!e)
		return;
	e->flags = flags;
	user_stack(ctx, e, regs);
	submit(e);
}

static __always_inline int live_add_at(__u64 key, __u64 size, __s64 stack)
{
	struct live_val v = { size, stack };

	if (bpf_map_update_elem(&live, &key, &v, BPF_ANY)) {
		stat_add(LS_STAT_LIVE_FULL);
		return -1;
	}
	return 0;
}

static __always_inline int live_add(__u64 key)
{
	return live_add_at(key, 0, -1);
}

/* Was key recorded?  Forgets it. */
static __always_inline int live_take(__u64 key)
{
	return bpf_map_delete_elem(&live, &key) == 0;
}

/* The same, with what was recorded. */
static __always_inline int live_pop(__u64 key, struct live_val *v)
{
	struct live_val *p = bpf_map_lookup_elem(&live, &key);

	if (!p)
		return 0;
	*v = *p;
	return bpf_map_delete_elem(&live, &key) == 0;
}

/* Count size bytes in or (sign < 0) out of a stack's totals. */
static __always_inline void comb_add(__s64 stack, __u64 size, int sign)
{
	struct ls_trace_comb *c, zero = {};
	__u32 k = (__u32)stack;

	if (stack < 0)
		return;
	c = bpf_map_lookup_elem(&comb, &k);
	if (!c) {
		bpf_map_update_elem(&comb, &k, &zero, BPF_NOEXIST);
		c = bpf_map_lookup_elem(&comb, &k);
		if (!c)
			return;
	}
	if (sign < 0) {
		__sync_fetch_and_add(&c->bytes, -size);
		__sync_fetch_and_add(&c->blocks, -1);
		return;
	}
	__sync_fetch_and_add(&c->bytes, size);
	__sync_fetch_and_add(&c->blocks, 1);
	__sync_fetch_and_add(&c->alloc_bytes, size);
	__sync_fetch_and_add(&c->alloc_blocks, 1);
}

/* A recorded block is gone: out of its stack's totals, or a record. */
static __always_inline void forget(__u32 fn, __u64 addr,
				   const struct live_val *v)
{
	if (v->stack >= 0)
		comb_add(v->stack, v->size, -1);
	else
		emit_plain(LS_TEV_FREE, fn, addr, 0);
}

/* ------------------------------------------------------------------ */
/* User allocators: uprobes on entry, one uretprobe for all.           */

static __always_inline __u64 next_gap(void)
{
	__u32 i = bpf_get_prandom_u32() % LS_TRACE_GAPS;
	__u64 *g = bpf_map_lookup_elem(&gaps, &i);

	return g && *g ? *g : sample_rate;
}

static __always_inline struct pending *pending_of(__u32 tid)
{
	struct pending *p = bpf_map_lookup_elem(&pending, &tid);
	struct pending init = {};

	if (p)
		return p;
	if (sample_rate)
		init.countdown = (__s64)next_gap();
	bpf_map_update_elem(&pending, &tid, &init, BPF_NOEXIST);
	return bpf_map_lookup_elem(&pending, &tid);
}

/* Drop calls a longjmp or a lost uretprobe left behind: any call still in
 * flight has its sp below the sp of every call made after it. */
static __always_inline void prune(struct pending *p, __u64 sp)
{
	int i;

	for (i = 0; i < LS_TRACE_NEST; i++) {
		__u32 d = p->depth;

		if (d == 0 || d > LS_TRACE_NEST)
			break;
		if (p->c[(d - 1) & (LS_TRACE_NEST - 1)].sp > sp)
			break;
		p->depth = d - 1;
	}
	if (p->depth > LS_TRACE_NEST)
		p->depth = 0;
}

static __always_inline int enter(struct pt_regs *ctx, __u32 fn, __u64 size,
				 __u64 arg)
{
	__u64 sp = PT_REGS_SP(ctx);
	struct pending *p;
	__u32 d;

	if (!traced())
		return 0;
	p = pending_of((__u32)bpf_get_current_pid_tgid());
	if (!p)
		return 0;
	prune(p, sp);
	d = p->depth;
	if (d >= LS_TRACE_NEST)
		return 0;	/* deeper calls are nested: never recorded */
	asm volatile("" : "+r"(d));	/* keep the mask for the verifier */
	d &= LS_TRACE_NEST - 1;
	p->c[d].size = size;
	p->c[d].arg = arg;
	p->c[d].sp = sp;
	p->c[d].fn = fn;
	p->depth = d + 1;
	return 0;
}

/* Is this thread inside a traced allocator call?  Then what it frees or
 * unmaps belongs to that call (realloc's free, free's munmap). */
static __always_inline int nested(struct pt_regs *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	struct pending *p = bpf_map_lookup_elem(&pending, &tid);

	if (!p)
		return 0;
	prune(p, PT_REGS_SP(ctx));
	return p->depth != 0;
}

/* Keep this heap block?  Size filters, then sampling by bytes. */
static __always_inline int keep(struct pending *p, __u64 size)
{
	if (size < min_size || (max_size && size > max_size))
		return 0;
	if (!sample_rate)
		return 1;
	p->countdown -= (__s64)size;
	if (p->countdown > 0) {
		stat_add(LS_STAT_SAMPLED_OUT);
		return 0;
	}
	/* Memoryless: the next gap starts afresh at this block's end. */
	p->countdown = (__s64)next_gap();
	return 1;
}

static __always_inline void heap_alloc(struct pt_regs *ctx,
				       struct pending *p, __u32 fn,
				       __u64 addr, __u64 size)
{
	__s64 stack;

	if (!addr || !keep(p, size))
		return;
	if (combined) {
		stack = bpf_get_stackid(ctx, &stacks, BPF_F_USER_STACK);
		if (stack < 0)
			stat_add(LS_STAT_STACK_FAIL);
		else if (!live_add_at(addr, size, stack))
			comb_add(stack, size, 1);
		return;
	}
	if (live_add(addr))
		return;
	emit_user(ctx, ctx, LS_TEV_ALLOC, fn, addr, size, 0, 0);
}

/* realloc: a failed call (NULL for a nonzero size) keeps the old block
 * and its record; realloc(p, 0) returning NULL freed it (glibc).  The
 * old block is gone once a new one is returned, even at its address. */
static __always_inline void heap_realloc(struct pt_regs *ctx,
					 struct pending *p, __u32 fn,
					 __u64 addr, __u64 size, __u64 old)
{
	struct live_val v;
	int had;

	if (!addr) {
		if (size == 0 && old && live_pop(old, &v))
			forget(fn, old, &v);
		return;
	}
	had = old && live_pop(old, &v);
	if (combined) {
		if (had)
			forget(fn, old, &v);
		heap_alloc(ctx, p, fn, addr, size);
		return;
	}
	if (!keep(p, size) || live_add(addr)) {
		if (had)
			forget(fn, old, &v);
		return;
	}
	emit_user(ctx, ctx, LS_TEV_REALLOC, fn, addr, size, had ? old : 0, 0);
}

static __always_inline void on_return(struct pt_regs *ctx, struct call *c,
				      struct pending *p, __u64 ret)
{
	__u64 addr = 0;

	switch (c->fn) {
	case LS_TFN_REALLOC:
	case LS_TFN_REALLOCARRAY:
		heap_realloc(ctx, p, c->fn, ret, c->size, c->arg);
		return;
	case LS_TFN_POSIX_MEMALIGN:
		if (ret != 0 ||
		    bpf_probe_read_user(&addr, sizeof(addr), (void *)c->arg))
			return;
		heap_alloc(ctx, p, c->fn, addr, c->size);
		return;
	case LS_TFN_MMAP:
		if (ret == (__u64)-1 || !(c->arg & MAP_ANONYMOUS_FLAG) ||
		    live_add(ret))
			return;
		emit_user(ctx, ctx, LS_TEV_MMAP, c->fn, ret, c->size, 0, 0);
		return;
	case LS_TFN_MREMAP:
		if (ret == (__u64)-1 || !live_take(c->arg) || live_add(ret))
			return;
		emit_plain(LS_TEV_MREMAP, c->fn, ret, c->size);
		return;
	default:
		heap_alloc(ctx, p, c->fn, ret, c->size);
	}
}

SEC("uretprobe")
int BPF_KRETPROBE(ls_alloc_exit)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 sp = PT_REGS_SP(ctx), ret = PT_REGS_RC(ctx);
	struct pending *p = bpf_map_lookup_elem(&pending, &tid);
	struct call c;
	int i, found = -1;

	if (!p)
		return 0;
	/* The entry whose sp, plus the popped return address, is ours. */
	for (i = LS_TRACE_NEST - 1; i >= 0; i--)
		if ((__u32)i < p->depth && p->c[i].sp + 8 == sp) {
			found = i;
			break;
		}
	if (found < 0) {
		stat_add(LS_STAT_NEST_LOST);
		return 0;
	}
	c = p->c[found & (LS_TRACE_NEST - 1)];
	p->depth = found;
	if (found == 0)
		on_return(ctx, &c, p, ret);
	return 0;
}

#define ENTRY(name, fn, size, arg)				\
SEC("uprobe")							\
int BPF_KPROBE(ls_##name##_enter)				\
{								\
	return enter(ctx, fn, size, arg);			\
}

ENTRY(malloc, LS_TFN_MALLOC, PT_REGS_PARM1(ctx), 0)
ENTRY(calloc, LS_TFN_CALLOC, PT_REGS_PARM1(ctx) * PT_REGS_PARM2(ctx), 0)
ENTRY(realloc, LS_TFN_REALLOC, PT_REGS_PARM2(ctx), PT_REGS_PARM1(ctx))
ENTRY(reallocarray, LS_TFN_REALLOCARRAY,
      PT_REGS_PARM2(ctx) * PT_REGS_PARM3(ctx), PT_REGS_PARM1(ctx))
ENTRY(posix_memalign, LS_TFN_POSIX_MEMALIGN, PT_REGS_PARM3(ctx),
      PT_REGS_PARM1(ctx))
ENTRY(aligned_alloc, LS_TFN_ALIGNED_ALLOC, PT_REGS_PARM2(ctx), 0)
ENTRY(memalign, LS_TFN_MEMALIGN, PT_REGS_PARM2(ctx), 0)
ENTRY(valloc, LS_TFN_VALLOC, PT_REGS_PARM1(ctx), 0)
ENTRY(pvalloc, LS_TFN_PVALLOC, PT_REGS_PARM1(ctx), 0)
ENTRY(mmap, LS_TFN_MMAP, PT_REGS_PARM2(ctx), PT_REGS_PARM4(ctx))
ENTRY(mremap, LS_TFN_MREMAP, PT_REGS_PARM3(ctx), PT_REGS_PARM1(ctx))

SEC("uprobe")
int BPF_KPROBE(ls_free_enter, __u64 addr)
{
	struct live_val v;

	if (!traced() || !addr || nested(ctx) || !live_pop(addr, &v))
		return 0;
	forget(LS_TFN_FREE, addr, &v);
	return 0;
}

SEC("uprobe")
int BPF_KPROBE(ls_munmap_enter, __u64 addr, __u64 len)
{
	if (!traced() || nested(ctx))
		return 0;
	live_take(addr);
	emit_plain(LS_TEV_MUNMAP, LS_TFN_MUNMAP, addr, len);
	return 0;
}

/* A new image: every block and mapping of the old one is gone (and
 * `-c CMD` traces from the fork, so that nothing is missed). */
SEC("tracepoint/sched/sched_process_exec")
int ls_exec(void *ctx)
{
	if (target_tgid && traced())
		emit_plain(LS_TEV_EXEC, 0, 0, 0);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Growth of a process seen from the kernel: brk, mmap, page faults.   */

struct sys_enter_args {
	__u64 common;
	__s32 nr, pad;
	__u64 args[6];
};

struct sys_exit_args {
	__u64 common;
	__s32 nr, pad;
	__s64 ret;
};

static __always_inline struct pt_regs *task_regs(void)
{
	return (struct pt_regs *)bpf_task_pt_regs(bpf_get_current_task_btf());
}

SEC("tracepoint/syscalls/sys_enter_brk")
int ls_brk(struct sys_enter_args *ctx)
{
	struct task_struct *t = bpf_get_current_task_btf();
	__u64 want = ctx->args[0], cur;

	if (!traced() || !want)
		return 0;
	cur = BPF_CORE_READ(t, mm, brk);
	/* NEEDSWORK: shrinks are not attributed (Gregg's view: growth). */
	if (want > cur)
		emit_user(ctx, task_regs(), LS_TEV_BRK, 0, cur, want - cur, 0,
			  LS_TEV_F_EXACT);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_mmap")
int ls_sys_mmap_enter(struct sys_enter_args *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 len = ctx->args[1];

	if (!traced() || !(ctx->args[3] & MAP_ANONYMOUS_FLAG))
		return 0;
	bpf_map_update_elem(&mmap_len, &tid, &len, BPF_ANY);
	return 0;
}

SEC("tracepoint/syscalls/sys_exit_mmap")
int ls_sys_mmap_exit(struct sys_exit_args *ctx)
{
	__u32 tid = (__u32)bpf_get_current_pid_tgid();
	__u64 *len = bpf_map_lookup_elem(&mmap_len, &tid), n;

	if (!len)
		return 0;
	n = *len;
	bpf_map_delete_elem(&mmap_len, &tid);
	if (ctx->ret < 0 && ctx->ret > -4096)
		return 0;
	emit_user(ctx, task_regs(), LS_TEV_MMAP, LS_TFN_MMAP, ctx->ret, n, 0,
		  LS_TEV_F_EXACT);
	return 0;
}

SEC("tracepoint/syscalls/sys_enter_munmap")
int ls_sys_munmap(struct sys_enter_args *ctx)
{
	if (traced())
		emit_plain(LS_TEV_MUNMAP, LS_TFN_MUNMAP, ctx->args[0],
			   ctx->args[1]);
	return 0;
}

SEC("tracepoint/exceptions/page_fault_user")
int ls_fault(struct trace_event_raw_exceptions *ctx)
{
	if (traced())
		emit_user(ctx, task_regs(), LS_TEV_FAULT, 0,
			  BPF_CORE_READ(ctx, address), LS_TRACE_PAGE, 0,
			  LS_TEV_F_EXACT);
	return 0;
}

/* ------------------------------------------------------------------ */
/* Kernel allocators.                                                  */

static __always_inline void kalloc(void *ctx, __u32 fn, __u64 key,
				   __u64 size)
{
	struct ls_trace_event *e;
	long n;

	if (!key || !traced() || live_add(key))
		return;
	e = record(LS_TEV_KALLOC, fn, key, size, 0);
	if (!e)
		return;
	e->flags = LS_TEV_F_KERNEL;
	n = bpf_get_stack(ctx, e->data, LS_TRACE_MAX_IPS * 8, 0);
	e->nips = n > 0 ? (__u32)n / 8 : 0;
	submit(e);
}

static __always_inline void kfree(__u32 fn, __u64 key)
{
	/* Any task may free what the traced one allocated. */
	if (key && live_take(key))
		emit_plain(LS_TEV_KFREE, fn, key, 0);
}

SEC("tracepoint/kmem/kmalloc")
int ls_kmalloc(struct trace_event_raw_kmalloc *ctx)
{
	kalloc(ctx, LS_KFN_KMALLOC, (__u64)BPF_CORE_READ(ctx, ptr),
	       BPF_CORE_READ(ctx, bytes_alloc));
	return 0;
}

SEC("tracepoint/kmem/kfree")
int ls_kfree(struct trace_event_raw_kfree *ctx)
{
	kfree(LS_KFN_KMALLOC, (__u64)BPF_CORE_READ(ctx, ptr));
	return 0;
}

SEC("tracepoint/kmem/kmem_cache_alloc")
int ls_cache_alloc(struct trace_event_raw_kmem_cache_alloc *ctx)
{
	kalloc(ctx, LS_KFN_CACHE, (__u64)BPF_CORE_READ(ctx, ptr),
	       BPF_CORE_READ(ctx, bytes_alloc));
	return 0;
}

SEC("tracepoint/kmem/kmem_cache_free")
int ls_cache_free(struct trace_event_raw_kmem_cache_free *ctx)
{
	kfree(LS_KFN_CACHE, (__u64)BPF_CORE_READ(ctx, ptr));
	return 0;
}

SEC("tracepoint/kmem/mm_page_alloc")
int ls_page_alloc(struct trace_event_raw_mm_page_alloc *ctx)
{
	__u64 pfn = BPF_CORE_READ(ctx, pfn);

	if (pfn != (__u64)-1)
		kalloc(ctx, LS_KFN_PAGE, pfn | PAGE_KEY_TAG,
		       (__u64)LS_TRACE_PAGE << BPF_CORE_READ(ctx, order));
	return 0;
}

SEC("tracepoint/kmem/mm_page_free")
int ls_page_free(struct trace_event_raw_mm_page_free *ctx)
{
	kfree(LS_KFN_PAGE, BPF_CORE_READ(ctx, pfn) | PAGE_KEY_TAG);
	return 0;
}

SEC("tracepoint/percpu/percpu_alloc_percpu")
int ls_percpu_alloc(struct trace_event_raw_percpu_alloc_percpu *ctx)
{
	kalloc(ctx, LS_KFN_PERCPU, (__u64)BPF_CORE_READ(ctx, ptr),
	       BPF_CORE_READ(ctx, bytes_alloc));
	return 0;
}

SEC("tracepoint/percpu/percpu_free_percpu")
int ls_percpu_free(struct trace_event_raw_percpu_free_percpu *ctx)
{
	kfree(LS_KFN_PERCPU, (__u64)BPF_CORE_READ(ctx, ptr));
	return 0;
}
