/*
 * perfmap.h - names of just-in-time compiled code from a runtime's perf
 * map, /tmp/perf-PID.map: one "START SIZE NAME" line per piece of code
 * (hexadecimal, "0x" optional), as the BEAM writes it when started with
 * +JPperf true (names "$Module:Function/Arity"), Node.js with
 * --perf-basic-prof, Java through perf-map-agent and Python 3.12 with
 * -X perf.
 *
 * The file sits in /tmp and is written by the traced process's user, so
 * it is read as untrusted input: opened with O_NOFOLLOW (a symbolic link
 * is refused), only a regular file owned by an expected user, at most
 * LS_PERFMAP_MAX_BYTES, every line checked; lines that do not parse are
 * skipped.
 *
 * Not thread-safe; one map per process.
 */
#ifndef LEAKSCOPE_PERFMAP_H
#define LEAKSCOPE_PERFMAP_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define LS_PERFMAP_MAX_BYTES (64u << 20)
/* A jitdump holds the code too: only its record headers and names are
 * read, from a file of at most this many bytes, at most
 * LS_JITDUMP_MAX_CODES pieces of code and LS_PERFMAP_MAX_BYTES of names. */
#define LS_JITDUMP_MAX_BYTES (1ull << 30)
#define LS_JITDUMP_MAX_CODES (4u << 20)

struct ls_perfmap;

/*
 * Read path (normally /tmp/perf-PID.map) if it is a regular file owned
 * by uid a or uid b (the traced process's user, the caller's).  Returns
 * the map, or NULL with errno set: ENOENT (no map: the runtime writes
 * none), ELOOP (a symbolic link), EPERM (another owner, or not a regular
 * file), EFBIG (over LS_PERFMAP_MAX_BYTES), ENOMEM, or open's error.
 */
struct ls_perfmap *ls_perfmap_load(const char *path, uid_t a, uid_t b);

/*
 * The same names from a jitdump (perf's format: the BEAM's +JPperf dump
 * writes /tmp/jit-PID.dump, perf's jvmti agent its own), checked as
 * ls_perfmap_load() checks a map, at most LS_JITDUMP_MAX_BYTES.  Names
 * show as the runtime "jit".  NULL with errno set: EINVAL (not a jitdump
 * in this machine's byte order), or as ls_perfmap_load().  A last record
 * cut short (the runtime still writing) ends the reading.
 */
struct ls_perfmap *ls_perfmap_load_jitdump(const char *path, uid_t a,
					   uid_t b);
/* The jitdump parser alone, on size bytes at fd (from offset 0, read
 * with pread; fd stays open): for the fuzz target. */
struct ls_perfmap *ls_perfmap_jitdump_fd(int fd, uint64_t size);

/*
 * /tmp/perf-PID.map of process pid, read as ls_perfmap_load() reads it if
 * it belongs to the process's user (the owner of /proc/PID, while it
 * runs) or to ours; when there is no map, /tmp/jit-PID.dump, read as
 * ls_perfmap_load_jitdump() reads it.  NULL with errno set as those set
 * it.
 */
struct ls_perfmap *ls_perfmap_load_pid(pid_t pid);

/*
 * The name of the code holding addr, NULL when none does; *start and *size
 * get the code's start and length.  BEAM's "$" prefix is dropped.  The
 * name belongs to the map.
 */
const char *ls_perfmap_find(const struct ls_perfmap *m, uint64_t addr,
			    uint64_t *start, uint64_t *size);

/* The runtime's name for its JIT code: "beam jit" for a map the BEAM
 * wrote, else "jit". */
const char *ls_perfmap_runtime(const struct ls_perfmap *m);

/* Number of entries read. */
size_t ls_perfmap_count(const struct ls_perfmap *m);

struct ls_snapshot;

/*
 * Keep m's names of the JIT code snap's stacks run through in the
 * snapshot itself: snap is the snapshot read from the len bytes at in;
 * *out gets a malloc()ed copy of them with one LSNAP_JIT record per such
 * piece of code before a recomputed END record (docs/SNAPSHOT-FORMAT.md),
 * *outlen its length; *out is NULL when no frame is in m's code.
 * Returns 0, -EINVAL when the bytes do not end with an END record, or
 * -ENOMEM.
 */
int ls_perfmap_keep(const struct ls_perfmap *m, const struct ls_snapshot *snap,
		    const uint8_t *in, size_t len, uint8_t **out,
		    size_t *outlen);

/* Free the map; accepts NULL. */
void ls_perfmap_free(struct ls_perfmap *m);

#endif /* LEAKSCOPE_PERFMAP_H */
