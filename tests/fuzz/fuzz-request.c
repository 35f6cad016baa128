/*
 * fuzz-request.c - the agent's side of the control protocol
 * (agent/request.c, docs/CONTROL-PROTOCOL.md): the request line, fed in
 * the pieces the input's first byte chooses as recv() would return them,
 * and the check's register list (header and thread records).
 *
 * Checks what the control thread relies on: a line is accepted only
 * with its newline, within LS_CONTROL_MAX_REQUEST bytes and without a NUL;
 * a verb is one of contract.h's exactly; a register list is accepted
 * only when every record is well formed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "../../agent/request.h"
#include "../../common/contract.h"
#include "fuzz.h"

static const char *const verbs[] = {
	[LS_REQ_PING] = LS_VERB_PING,
	[LS_REQ_SNAPSHOT] = LS_VERB_SNAPSHOT,
	[LS_REQ_SNAPSHOT_BLOCKS] = LS_VERB_SNAPSHOT_BLOCKS,
	[LS_REQ_RESET] = LS_VERB_RESET,
	[LS_REQ_DETACH] = LS_VERB_DETACH,
	[LS_REQ_CHECK] = LS_VERB_CHECK,
	[LS_REQ_CHECK_BLOCKS] = LS_VERB_CHECK_BLOCKS,
	[LS_REQ_CHECK_FORK] = LS_VERB_CHECK_FORK,
	[LS_REQ_CHECK_FORK_BLOCKS] = LS_VERB_CHECK_FORK_BLOCKS,
};

/* The line as the control thread receives it, step bytes at a time. */
static void line(const uint8_t *data, size_t size, size_t step)
{
	char *buf = malloc(LS_CONTROL_MAX_REQUEST);
	const uint8_t *nl = memchr(data, '\n', size);
	size_t len = 0, want = size < LS_CONTROL_MAX_REQUEST ? size :
		LS_CONTROL_MAX_REQUEST;
	int r = 0;

	if (!buf)
		fuzz_fail("out of memory");
	while (!r && len < want) {
		size_t n = want - len < step ? want - len : step;

		memcpy(buf + len, data + len, n);
		len += n;
		r = ls_request_line(buf, len, LS_CONTROL_MAX_REQUEST);
	}
	if (r == 1) {
		enum ls_request_verb v = ls_request_verb(buf);
		uint64_t ns;

		if (!nl || (size_t)(nl - data) >= LS_CONTROL_MAX_REQUEST ||
		    memchr(data, 0, (size_t)(nl - data)) ||
		    strlen(buf) != (size_t)(nl - data))
			fuzz_fail("a line accepted that is not one");
		if (v != LS_REQ_UNKNOWN && strcmp(buf, verbs[v]))
			fuzz_fail("'%s' taken for verb %d", buf, v);
		if (!ls_request_budget(buf, &ns) &&
		    ns > LS_CHECK_BUDGET_MAX_US * 1000)
			fuzz_fail("a budget of %llu ns accepted",
				  (unsigned long long)ns);
	} else if (r == 0 && size >= LS_CONTROL_MAX_REQUEST) {
		fuzz_fail("4096 bytes and still waiting for more");
	} else if (r == -EPROTO && (!nl || !memchr(data, 0, (size_t)(nl - data)))) {
		fuzz_fail("-EPROTO for a line without a NUL");
	} else if (r == -EMSGSIZE && nl && (size_t)(nl - data) <
		   LS_CONTROL_MAX_REQUEST) {
		fuzz_fail("-EMSGSIZE for a line that fits");
	}
	free(buf);
}

/* A header and the records it announces, as far as the input goes. */
static void threads(const uint8_t *data, size_t size)
{
	struct lsnap_check_hdr h;
	struct lsnap_check_thread *th;
	uint32_t n = 0, i;
	size_t have;

	if (size < sizeof(h))
		return;
	memcpy(&h, data, sizeof(h));
	if (ls_request_threads_hdr(&h, &n))
		return;
	if (n > LSNAP_CHECK_MAX_THREADS)
		fuzz_fail("a header of %u threads accepted", n);
	have = (size - sizeof(h)) / sizeof(*th);
	if (n > have)
		n = (uint32_t)have;
	th = malloc(((size_t)n + 1) * sizeof(*th));
	if (!th)
		fuzz_fail("out of memory");
	memcpy(th, data + sizeof(h), (size_t)n * sizeof(*th));
	if (!ls_request_threads_ok(th, n))
		for (i = 0; i < n; i++)
			if (!th[i].tid || th[i].nregs > LSNAP_CHECK_NREGS)
				fuzz_fail("thread record %u accepted: tid %u, "
					  "%u registers", i, th[i].tid,
					  th[i].nregs);
	free(th);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (!size)
		return 0;
	line(data + 1, size - 1, (size_t)data[0] % 64 + 1);
	threads(data + 1, size - 1);
	return 0;
}
