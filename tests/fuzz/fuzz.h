/*
 * fuzz.h - what the libFuzzer targets of tests/fuzz/ share (fuzz-util.c).
 *
 * Each target feeds its input to one parser of leakscope's real code,
 * built with AddressSanitizer and UndefinedBehaviorSanitizer, and checks
 * what every parser promises: a bad input gives a negative errno and one
 * line of explanation, never a crash, a hang or a leak.  A broken promise
 * calls fuzz_fail(), which aborts so that libFuzzer keeps the input.
 * docs/SECURITY.md, "Fuzzing", says how to run them.
 */
#ifndef LEAKSCOPE_FUZZ_H
#define LEAKSCOPE_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include "../../lib/snapshot.h"

/* Print what went wrong and abort. */
void fuzz_fail(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

/* A memory file holding data, positioned at its start; aborts when the
 * kernel cannot make one. */
int fuzz_memfd(const uint8_t *data, size_t size);

/* err, after a parser refused the input with ret: a negative errno and a
 * non-empty single line, or fuzz_fail() naming what. */
void fuzz_check_error(const char *what, int ret, const char *err);

/*
 * Everything the commands do with a snapshot they read, on snap: build
 * reports with options chosen by seed (order, filters, top, histograms),
 * render them in every format, the stats, the oldest blocks and a diff
 * against itself.  Module paths are emptied first, so that symbolizing
 * opens no file the input names.  Output goes to /dev/null.
 */
void fuzz_use_snapshot(struct ls_snapshot *snap, uint32_t seed);

/*
 * A copy of a snapshot (size bytes at data) whose END record, if it has
 * one, is made to agree with the records before it: their count and
 * their hash.  Without it nearly every mutation would fail the checksum
 * and never reach what the reader does after END, nor the reports.
 * Returns the copy (malloc()ed, size bytes); data itself is unchanged.
 */
uint8_t *fuzz_fix_snapshot(const uint8_t *data, size_t size);
/* The same, with every module record's path made "_" bytes, so that no
 * reader of the snapshot opens a file the input names. */
uint8_t *fuzz_fix_snapshot_blank(const uint8_t *data, size_t size);

/*
 * Re-execute the fuzzer (argv, from LLVMFuzzerInitialize) with
 * LEAKSCOPE_RUNTIME_DIR set to a new private dir when it is not set: the
 * commands read it from the initial environment.  With pid_ns, also in
 * a pid namespace of its own with its own /proc, so that nothing the
 * input asks (a reset, a snapshot of a pid) reaches a process outside;
 * exits 77 with one line when the kernel refuses the namespaces.
 */
void fuzz_private(char **argv, int pid_ns);

/* A 32-bit seed from the input's bytes (for option choices). */
uint32_t fuzz_seed(const uint8_t *data, size_t size);

#endif
