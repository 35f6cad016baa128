/*
 * request.h - the control protocol's requests, parsed without I/O
 * (docs/CONTROL-PROTOCOL.md): what the control thread (control.c) has
 * received goes through these pure functions, so that the fuzzer
 * (tests/fuzz/fuzz-request.c) drives the agent's own parser.  Nothing
 * here allocates, locks or calls stdio.
 */
#ifndef LEAKSCOPE_AGENT_REQUEST_H
#define LEAKSCOPE_AGENT_REQUEST_H

#include <stddef.h>
#include <stdint.h>
#include "../common/lsnap.h"

enum ls_request_verb {
	LS_REQ_UNKNOWN = 0,
	LS_REQ_PING,
	LS_REQ_SNAPSHOT,
	LS_REQ_SNAPSHOT_BLOCKS,
	LS_REQ_RESET,
	LS_REQ_DETACH,
	LS_REQ_CHECK,
	LS_REQ_CHECK_BLOCKS,
	LS_REQ_CHECK_FORK,
	LS_REQ_CHECK_FORK_BLOCKS,
};

/*
 * The first len bytes received of a request into a buffer of cap bytes
 * (len <= cap): 1 when they hold the whole line (the newline replaced by
 * a NUL, so buf is the request as a string: a line of cap bytes with its
 * newline fits), 0 when more must come, or -EMSGSIZE (no newline in cap
 * bytes), -EPROTO (a NUL in the line, which would hide the rest of it).
 */
int ls_request_line(char *buf, size_t len, size_t cap);

/*
 * A check request may end with " budget=US", the concurrent method's
 * pause budget in microseconds (0: none, at most LS_CHECK_BUDGET_MAX_US):
 * cut it off the line into *ns, so that the rest names the verb.  0, or
 * -1 when it is malformed.  Without it, LS_CHECK_BUDGET_US.
 */
int ls_request_budget(char *line, uint64_t *ns);

/* The verb a whole request line names; LS_REQ_UNKNOWN for anything else. */
enum ls_request_verb ls_request_verb(const char *line);

/*
 * A check's register list header: 0 and *n the thread records that
 * follow, or -EPROTO (wrong magic, reserved flags set, too many threads).
 */
int ls_request_threads_hdr(const struct lsnap_check_hdr *h, uint32_t *n);

/* The n thread records: 0, or -EPROTO when one is malformed (no tid, more
 * register words than a record holds). */
int ls_request_threads_ok(const struct lsnap_check_thread *th, uint32_t n);

#endif
