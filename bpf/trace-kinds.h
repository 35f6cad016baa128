/*
 * trace-kinds.h - the eBPF tracer's kinds, one row each (an X-macro file:
 * no include guard; define the macro of the table wanted, include it).
 *
 * LS_TRACE_RECORD(ID, name, meaning): a record the kernel side sends
 *   (struct ls_trace_event.type): trace.h makes enum ls_trace_type
 *   (LS_TEV_ID, from 1), cmd-trace.c's -t prints name.
 * LS_TRACE_EVENT(ID, name, help): what `leakscope trace --event NAME`
 *   traces: tracer.h makes enum ls_tracer_what (LS_TRACE_ID, from 0,
 *   the first the default), cmd-trace.c its --event values and help.
 *
 * Adding a record kind is one row here, its emitter in trace.bpf.c and
 * its case in tracemodel.c; adding an event, one row, its programs in
 * trace.bpf.c and their attachment in trace.c.
 */

#ifdef LS_TRACE_RECORD
LS_TRACE_RECORD(ALLOC, "alloc", "addr, size: a heap block")
LS_TRACE_RECORD(FREE, "free", "addr")
LS_TRACE_RECORD(REALLOC, "realloc", "addr (new), old, size")
LS_TRACE_RECORD(MMAP, "mmap", "addr, size: an anonymous mapping")
LS_TRACE_RECORD(MUNMAP, "munmap", "addr, size")
LS_TRACE_RECORD(MREMAP, "mremap", "addr (new), old, size (new length)")
LS_TRACE_RECORD(BRK, "brk", "size: heap growth in bytes")
LS_TRACE_RECORD(FAULT, "fault", "addr: one user page fault")
LS_TRACE_RECORD(KALLOC, "kalloc", "addr (key), size, fn: a kernel allocation")
LS_TRACE_RECORD(KFREE, "kfree", "addr (key)")
LS_TRACE_RECORD(EXEC, "exec", "the process replaced its image")
#endif

#ifdef LS_TRACE_EVENT
LS_TRACE_EVENT(ALLOC, "alloc", "the allocator's calls (uprobes), the default")
LS_TRACE_EVENT(BRK, "brk", "heap growth by brk (sys_enter_brk)")
LS_TRACE_EVENT(MMAP, "mmap", "anonymous mmap minus munmap (syscalls)")
LS_TRACE_EVENT(FAULT, "page-fault", "user page faults (page_fault_user)")
LS_TRACE_EVENT(KERNEL, "kernel", "kmem and percpu tracepoints, kernel stacks")
#endif
