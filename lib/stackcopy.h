/*
 * stackcopy.h - unwind a copy of another process's stack with .eh_frame
 * CFI read from the files it has mapped.
 *
 * The eBPF tracer (bpf/trace.bpf.c) sends, with each event, the user
 * registers (pc, sp, rbp) and the top of the user stack.  This module
 * keeps the process's module map (/proc/PID/maps, read again when a pc
 * falls outside every known module, kept after the process is gone),
 * maps each module's file read-only at its virtual addresses once per
 * build id, and walks the copy with the agent's own CFI reader
 * (common/cfi.h, ls_cfi_rule_in()).  Frame pointers are followed where a
 * module has no CFI for a pc.  Rules are cached per address.
 *
 * Not thread-safe: one per tracing thread.  Never prints.
 */
#ifndef LEAKSCOPE_STACKCOPY_H
#define LEAKSCOPE_STACKCOPY_H

#include <stddef.h>
#include <stdint.h>
#include "snapshot.h"

struct ls_stackcopy;

/* The registers a walk starts from; exact: pc was interrupted (a
 * syscall, a fault), else it is a return address. */
struct ls_stackregs {
	uint64_t pc, sp, bp;
	int exact;
};

/*
 * A walker for process pid, its module map read now.  Returns 0 or
 * -errno (-ESRCH: no such process) with a reason in err.
 */
int ls_stackcopy_new(int pid, struct ls_stackcopy **out, char *err,
		     size_t errlen);
void ls_stackcopy_free(struct ls_stackcopy *sc);

/*
 * Walk: pcs[0] = regs->pc, then each caller's return address, at most
 * max in all; returns how many.  stack holds len bytes copied from
 * regs->sp; no other memory of the process is read.
 */
int ls_stackcopy_unwind(struct ls_stackcopy *sc,
			const struct ls_stackregs *regs, const void *stack,
			size_t len, uint64_t *pcs, int max);

/* Read the module map again if the process lives (new dlopen()s). */
void ls_stackcopy_refresh(struct ls_stackcopy *sc);

/* The process ran exec(): every module known so far is gone; read the
 * new map (a new generation). */
void ls_stackcopy_exec(struct ls_stackcopy *sc);

/* The module-map generation new sites are created at. */
uint32_t ls_stackcopy_gen(const struct ls_stackcopy *sc);

/*
 * Copy every module seen so far into snap->modules (appended; paths are
 * strdup()ed).  0 or -ENOMEM.
 */
int ls_stackcopy_modules(const struct ls_stackcopy *sc,
			 struct ls_snapshot *snap);


#endif
