/*
 * reach.h - which live blocks the program can still reach: the scan of a
 * copy-on-write image of the process (docs/REACHABILITY.md).
 *
 * The caller (the control thread, with every other thread stopped by
 * `leakscope check`; or the exiting thread under `run --leak-check`)
 * prepares, then spawns a child with a raw clone(): the child is a frozen
 * image of the whole address space in which only the calling thread
 * exists.  The child reads the live tables without their locks (a lock
 * held by a stopped thread stays held in the image), marks what the roots
 * reach, writes a snapshot with the categories to fd, and exits.  It uses
 * only the agent's own mappings and system calls: no malloc, no stdio, no
 * lock, no atfork handler (fork() would run them, and malloc's would wait
 * for a lock a stopped thread holds).
 *
 * Not for allocation hooks.  One check at a time (the caller serializes:
 * the control thread serves one request at a time; the exit path runs
 * once).
 */
#ifndef LEAKSCOPE_AGENT_REACH_H
#define LEAKSCOPE_AGENT_REACH_H

#include <stdint.h>
#include <sys/types.h>
#include "../common/lsnap.h"
#include "live.h"
#include "snapwrite.h"


/*
 * In the parent, before the world stops (takes the loader lock and the
 * allocator's): refresh the module map, note the agent's own writable
 * segments, take mallinfo.  Returns 0 or a negative errno.
 */
int ls_reach_prepare(void);

/* The agent's own writable segments and the C library's code, found
 * once (at start). */
void ls_reach_learn_segments(void);

/*
 * After ls_reach_prepare(), for a `check` request: the method asked for
 * (1 fork) and the concurrent method's pause budget (0: none).  The
 * snapshot's LSNAP_REACH_HOW record says both, and why another method
 * ran, if one did (docs/REACHABILITY.md, "A bounded pause").
 */
void ls_reach_set_method(int fork_method, uint64_t budget_ns);

/*
 * Clone the image and start the scan in it.  th[0..n) are the stopped
 * threads with their registers (none at exit); flags are enum
 * lsnap_reach_flags to report.  gate, if not NULL, is a pipe: the child
 * starts writing to fd only once it reads end of file on gate[0] (the
 * parent closes gate[1] after its own reply).  Returns the
 * child's pid (reap it with ls_reach_wait()) or a negative errno.
 * Returns in the parent only.
 */
pid_t ls_reach_spawn(int fd, const struct lsnap_check_thread *th, uint32_t n,
		     int with_blocks, enum lsnap_reason reason, uint32_t flags,
		     const int *gate);

/* Wait for the child; 0 when it wrote its snapshot, else -EIO. */
int ls_reach_wait(pid_t child);

/*
 * The check at exit (`run --leak-check`), from the exiting thread after
 * the program's atexit handlers: prepare, spawn, wait.  Other threads are
 * stopped by a tracer child while the image is taken (exitstop.h), or,
 * when ptrace is refused, run on (LSNAP_REACH_NO_REGS when there are any
 * besides the caller and the agent's own agent_threads).  0 when the
 * snapshot was written to fd, else a negative errno (the caller writes a
 * plain snapshot instead).
 */
int ls_reach_at_exit(int fd, int with_blocks, unsigned agent_threads);

/*
 * Where the agent's exit path began on the exiting thread's stack (the
 * frame of its outermost function), and from there where the program's
 * live frames begin (docs/REACHABILITY.md, "At exit"): the caller of the
 * outermost exit() (libc's, found by unwinding, as when main returns, or
 * the one ls_reach_note_exit_call() noted).  The check at exit scans
 * that stack from there up: not main's frame once main has returned,
 * not the exit path's frames (exit(), atexit handlers, destructors, the
 * agent's), whose unset locals and padding hold stale words.  Not in an
 * allocation hook.
 */
void ls_reach_note_exit_frame(const void *frame);

/*
 * From the entries of exit(), _exit() and _Exit() (hooks.c), before any
 * frame of the exit path: cfa, the stack pointer the caller will have
 * when the call returns (its live frames begin there), and regs, the
 * callee-saved registers it holds (rbx, rbp, r12 to r15; NULL: none
 * count, the call ends the process without saving them).  The first
 * call of the process counts (exit() from an atexit handler is part of
 * the exit path).  Lock-free, async-signal-safe.
 */
#define LS_REACH_EXIT_REGS 6
void ls_reach_note_exit_call(uint64_t cfa, const uint64_t *regs);

/*
 * The mostly-concurrent check (docs/REACHABILITY.md), in the live
 * process, from the control thread, after ls_reach_prepare():
 *
 *  - ls_reach_cm_begin(), while the program runs: write-protect its
 *    anonymous memory (userfaultfd, asynchronous: the kernel only notes
 *    which pages get written), log the allocations and frees, mark what
 *    the protected roots reach, reading through process_vm_readv (a
 *    block or a mapping may go away: never a fault).  -ENOTSUP when the
 *    kernel lacks userfaultfd's asynchronous write-protection; on any
 *    error everything is undone.
 *  - ls_reach_cm_pause(), with every other thread stopped (th, n):
 *    rescan the written pages, the unprotected roots (stacks from their
 *    stack pointers, file-backed data, new mappings), the registers and
 *    the blocks allocated meanwhile, and finish the closure.  On error
 *    (-EOVERFLOW: more allocations than the log holds) call
 *    ls_reach_cm_abort() and check by the fork method instead.
 *  - ls_reach_cm_finish(), the threads let go: lift the protection,
 *    cliques, sums, the snapshot to fd; frees everything.
 */
int ls_reach_cm_begin(void);
int ls_reach_cm_pause(const struct lsnap_check_thread *th, uint32_t n);
int ls_reach_cm_finish(int fd, int with_blocks);
void ls_reach_cm_abort(void);


#endif
