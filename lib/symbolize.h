/*
 * symbolize.h - turn the raw return addresses of a snapshot into function,
 * module and source-line names.
 *
 * Works offline, after the process may have exited: each module of the
 * snapshot's map is opened from disk (through elfutils libdwfl) only when
 * an address in it is first asked for, and only trusted when its build id
 * still matches the one recorded in the snapshot.  Debug information comes
 * from the file itself or from separate debug files (.gnu_debuglink, or
 * by build id under /usr/lib/debug/.build-id), DWARF 4 and 5 as gcc, clang
 * and rustc write it, compressed or not, split (-gsplit-dwarf: .dwo files
 * where the skeleton unit names them) or not; nothing is ever fetched
 * from the network (DEBUGINFOD_URLS is removed from the environment).
 * docs/SYMBOLS.md says how frames are named and checked.
 *
 * Not thread-safe: one symbolizer per thread.
 */
#ifndef LEAKSCOPE_SYMBOLIZE_H
#define LEAKSCOPE_SYMBOLIZE_H

#include <stddef.h>
#include <stdint.h>
#include "snapshot.h"

/*
 * One symbolized frame.  Strings are owned by the symbolizer's pool (its
 * own, or the one given to ls_symbolizer_new_shared) and live as long as
 * it does; module and mod point into the snapshot.
 */
struct ls_symframe {
	uint64_t addr;		/* the address asked for */
	const char *function;	/* demangled name, NULL if unknown */
	const char *symbol;	/* the same name as the symbol table or the
				   debug information spells it (mangled,
				   version suffix dropped); NULL with
				   function */
	uint64_t offset;	/* addr - start of function; meaningful only
				   when function is set and !inlined */
	const char *module;	/* the module's path as the snapshot has it,
				   NULL when no module covers addr */
	const struct ls_module *mod;	/* the snapshot's record of that
					   module (bias, range, build id),
					   NULL when none covers addr */
	const char *file;	/* source file as the debug info has it, or
				   NULL */
	int line;		/* source line, 0 if unknown */
	int inlined;		/* 1: this function was inlined into the
				   next frame; file:line are where the code
				   at addr sits inside it */
};

/* Frames one address can expand to at most (its inline chain, capped). */
#define LS_SYM_MAX_FRAMES 32

struct ls_symbolizer;

/* The pseudo-module of kernel addresses (the eBPF tracer's kernel
 * stacks): resolved through /proc/kallsyms, not a file. */
#define LS_KERNEL_MODULE "kernel"

/*
 * A symbolizer for the modules of snap, which must outlive it.  Returns
 * NULL with errno set (ENOMEM) on failure.  Unsets DEBUGINFOD_URLS in
 * this process's environment when it is set.
 */
struct ls_symbolizer *ls_symbolizer_new(const struct ls_snapshot *snap);

/*
 * Symbolize addr, a return address taken at module-map generation gen
 * (ls_site.gen).  Functions, lines and the inline chain are those of
 * addr - 1, the call instruction (a call that does not return can end its
 * function: addr is then the next one's); offset is addr's distance from
 * the start of the function holding addr - 1.  Writes the frames for addr
 * into out[0..*n): innermost first, i.e. the inlined functions (inlined =
 * 1, named by their DW_TAG_inlined_subroutine) and, last, the function
 * that really holds the code, named by the symbol table where a symbol
 * covers it (which tells gcc's "f.cold" and "f.constprop.0" from f), else
 * by its debug information.  A line comes only from a line-table
 * sequence that holds addr - 1 in the compilation unit whose ranges hold
 * it.  *n is at least 1 and at most LS_SYM_MAX_FRAMES.
 *
 * The module is the one whose address range holds addr during generation
 * gen, or failing that the first one loaded at that range after gen (the
 * agent notices new modules lazily).  A module whose file is gone, whose
 * build id differs from the snapshot's, "linux-vdso.so.1" or one with an
 * empty path gives function NULL but still names the module.
 *
 * Returns 0, -ENOSPC when max is smaller than the frame count (*n is then
 * the count needed, nothing is written), or -ENOMEM.  Results are cached
 * in the pool per (file, address in the file): another process's report
 * that reaches the same code, at any load address, reuses them.
 */
int ls_symbolize_frame(struct ls_symbolizer *s, uint32_t gen, uint64_t addr,
		       struct ls_symframe *out, size_t max, size_t *n);

/*
 * A pool of opened module files, and of the frames resolved in them, that
 * several symbolizers share: every report of one `leakscope run` (the
 * command, its forked children, the programs it executed), and every
 * refresh of `watch` and `top`, open and index each library's debug
 * information once (elfutils inflating libc6-dbg's compressed sections
 * costs 60-100 ms per opening) and resolve each return address once.
 * Files are matched by path and build id, at any load address.  Free the
 * pool after every symbolizer made with it, and after the last use of
 * the strings its frames hold.  Not thread-safe.
 */
struct ls_sympool;

struct ls_sympool *ls_sympool_new(void);
void ls_sympool_free(struct ls_sympool *p);

/* A symbolizer for snap that opens modules through pool.  Returns NULL
 * with errno set (ENOMEM). */
struct ls_symbolizer *ls_symbolizer_new_shared(const struct ls_snapshot *snap,
					       struct ls_sympool *pool);

/* Free the symbolizer and every string it handed out; accepts NULL. */
void ls_symbolizer_free(struct ls_symbolizer *s);

/* The last path component of path ("libc.so.6"); path itself if it has
 * no '/'. */
const char *ls_sym_basename(const char *path);

#endif /* LEAKSCOPE_SYMBOLIZE_H */
