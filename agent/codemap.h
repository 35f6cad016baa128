/*
 * codemap.h - which addresses of this process hold executable code, so
 * that the unwinder can check a return address it found by following
 * frame pointers through code without CFI (a JIT's) before it emits it.
 *
 * The executable mappings are read from /proc/self/maps with raw system
 * calls into a fixed table, and read again only when a lookup misses and
 * the mappings may have changed since the last reading: the mmap, munmap,
 * mprotect and mremap interposers call ls_codemap_changed() after each
 * call.  A mapping made by a bare system call, which the interposers do
 * not see, is found at the next reading a change causes.
 *
 * Safe inside allocation hooks and signal handlers: no malloc, no stdio,
 * no waiting lock (a lookup that finds another thread reading the file
 * answers from the table as it is), errno untouched.
 */
#ifndef LEAKSCOPE_AGENT_CODEMAP_H
#define LEAKSCOPE_AGENT_CODEMAP_H

#include <stdint.h>

/* Ranges kept; a process with more executable mappings has the ones past
 * this treated as not executable (its JIT frames then end early). */
#define LS_CODEMAP_MAX 512

/* 1 when addr lies in an executable mapping, else 0.  Costs a binary
 * search; a miss after a change of the mappings reads /proc/self/maps
 * (tens of microseconds). */
int ls_codemap_has(uint64_t addr);

/* The mappings may have changed: the next miss reads them again. */
void ls_codemap_changed(void);

/* In a fork child, single-threaded: a reading that a vanished thread
 * had begun is dropped; a finished table stays (same mappings). */
void ls_codemap_atfork_child(void);

#endif
