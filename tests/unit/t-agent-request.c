/*
 * t-agent-request.c - the agent's request parser (agent/request.h): every
 * verb of common/contract.h, the framing of a line received in pieces,
 * and the register list's header and records, against the values the
 * protocol (docs/CONTROL-PROTOCOL.md) fixes.  tests/fuzz/fuzz-request.c
 * runs the same functions on hostile input.
 */
#include <errno.h>
#include <stdint.h>
#include <string.h>
#include "../../agent/request.h"
#include "../../common/contract.h"
#include "tap.h"

static int line(const char *in, size_t cap, char *buf)
{
	size_t len = strlen(in);

	memcpy(buf, in, len);
	return ls_request_line(buf, len, cap);
}

static void test_verbs(void)
{
	static const struct {
		const char *s;
		enum ls_request_verb v;
	} want[] = {
		{ "ping", LS_REQ_PING }, { "snapshot", LS_REQ_SNAPSHOT },
		{ "snapshot blocks", LS_REQ_SNAPSHOT_BLOCKS },
		{ "reset", LS_REQ_RESET }, { "detach", LS_REQ_DETACH },
		{ "check", LS_REQ_CHECK }, { "check blocks", LS_REQ_CHECK_BLOCKS },
		{ "check fork", LS_REQ_CHECK_FORK },
		{ "check fork blocks", LS_REQ_CHECK_FORK_BLOCKS },
		{ "", LS_REQ_UNKNOWN }, { "ping ", LS_REQ_UNKNOWN },
		{ "PING", LS_REQ_UNKNOWN }, { "snapshot  blocks", LS_REQ_UNKNOWN },
		{ "check\r", LS_REQ_UNKNOWN },
	};
	size_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ok(ls_request_verb(want[i].s) == want[i].v, "verb '%s' is %d",
		   want[i].s, want[i].v);
}

static void test_framing(void)
{
	char buf[LS_CONTROL_MAX_REQUEST];
	char big[LS_CONTROL_MAX_REQUEST + 1];

	ok(line("snapshot blocks\n", sizeof(buf), buf) == 1 &&
	   !strcmp(buf, "snapshot blocks"), "a whole line: its newline ends it");
	ok(line("snap", sizeof(buf), buf) == 0, "a part of a line: more to come");
	ok(line("ping\nping\n", sizeof(buf), buf) == 1 && !strcmp(buf, "ping"),
	   "the first line is the request");
	ok(ls_request_line(memcpy(buf, "pi\0ng\n", 6), 6, sizeof(buf)) == -EPROTO,
	   "a NUL in the line: -EPROTO");
	ok(ls_request_line(memcpy(buf, "ping\n\0", 6), 6, sizeof(buf)) == 1,
	   "a NUL after the newline is not the line's");
	/* docs/CONTROL-PROTOCOL.md: at most 4096 bytes, newline included. */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = 0;
	big[LS_CONTROL_MAX_REQUEST - 1] = 0;	/* 4095 bytes, no newline */
	ok(line(big, sizeof(buf), buf) == 0, "4095 bytes without a newline: "
	   "one more may be it");
	big[LS_CONTROL_MAX_REQUEST - 1] = '\n';
	ok(line(big, sizeof(buf), buf) == 1 && strlen(buf) == 4095,
	   "4096 bytes with the newline: accepted, 4095 in the request");
	big[LS_CONTROL_MAX_REQUEST - 1] = 'a';
	ok(line(big, sizeof(buf), buf) == -EMSGSIZE,
	   "4096 bytes without a newline: -EMSGSIZE");
}

static void test_threads(void)
{
	struct lsnap_check_hdr h = { .magic = LSNAP_CHECK_MAGIC, .nthreads = 3 };
	struct lsnap_check_thread th[2] = { { .tid = 7, .nregs = 32 },
					    { .tid = 8, .nregs = 0 } };
	uint32_t n = 0;

	ok(!ls_request_threads_hdr(&h, &n) && n == 3, "a header: 3 threads");
	h.nthreads = LSNAP_CHECK_MAX_THREADS;
	ok(!ls_request_threads_hdr(&h, &n) && n == 65536, "65536 threads: the limit");
	h.nthreads++;
	ok(ls_request_threads_hdr(&h, &n) == -EPROTO, "65537 threads: -EPROTO");
	h.nthreads = 1;
	h.flags = 1;
	ok(ls_request_threads_hdr(&h, &n) == -EPROTO, "reserved flags: -EPROTO");
	h.flags = 0;
	h.magic[6] = 'C';
	ok(ls_request_threads_hdr(&h, &n) == -EPROTO, "a wrong magic: -EPROTO");
	ok(!ls_request_threads_ok(th, 2), "two well-formed records");
	th[1].nregs = 33;
	ok(ls_request_threads_ok(th, 2) == -EPROTO, "33 register words: -EPROTO");
	th[1].nregs = 1;
	th[1].tid = 0;
	ok(ls_request_threads_ok(th, 2) == -EPROTO, "tid 0: -EPROTO");
	ok(!ls_request_threads_ok(th, 1), "only the records counted are read");
}

static void test_budget(void)
{
	char line[64];
	uint64_t ns;

	strcpy(line, LS_VERB_CHECK_BLOCKS " budget=2500");
	ok(!ls_request_budget(line, &ns) && ns == 2500000 &&
	   ls_request_verb(line) == LS_REQ_CHECK_BLOCKS,
	   "budget=2500: 2.5 ms, cut off the verb");
	strcpy(line, "check");
	ok(!ls_request_budget(line, &ns) && ns == LS_CHECK_BUDGET_US * 1000 &&
	   !strcmp(line, "check"), "no budget: the default, line unchanged");
	strcpy(line, "check budget=0");
	ok(!ls_request_budget(line, &ns) && ns == 0, "budget=0: none");
	strcpy(line, "check budget=60000001");
	ok(ls_request_budget(line, &ns) == -1, "past the maximum: -1");
	strcpy(line, "check budget=-5");
	ok(ls_request_budget(line, &ns) == -1, "a sign: -1");
	strcpy(line, "check budget=12x");
	ok(ls_request_budget(line, &ns) == -1, "trailing text: -1");
	strcpy(line, "check budget=");
	ok(ls_request_budget(line, &ns) == -1, "no digits: -1");
	strcpy(line, "snapshot budget=5");
	ok(!ls_request_budget(line, &ns) &&
	   ls_request_verb(line) == LS_REQ_UNKNOWN,
	   "not a check: left whole, an unknown verb");
}

int main(void)
{
	test_verbs();
	test_framing();
	test_threads();
	test_budget();
	return tap_done();
}
