/*
 * request.c - parsing the control socket's requests (request.h).
 */
#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include "../common/contract.h"
#include "request.h"

int ls_request_line(char *buf, size_t len, size_t cap)
{
	char *nl = memchr(buf, '\n', len);

	if (!nl)
		return len >= cap ? -EMSGSIZE : 0;
	if (memchr(buf, 0, (size_t)(nl - buf)))
		return -EPROTO;
	*nl = 0;
	return 1;
}

enum ls_request_verb ls_request_verb(const char *line)
{
	static const struct {
		const char *name;
		enum ls_request_verb verb;
	} verbs[] = {
		{ LS_VERB_PING, LS_REQ_PING },
		{ LS_VERB_SNAPSHOT, LS_REQ_SNAPSHOT },
		{ LS_VERB_SNAPSHOT_BLOCKS, LS_REQ_SNAPSHOT_BLOCKS },
		{ LS_VERB_RESET, LS_REQ_RESET },
		{ LS_VERB_DETACH, LS_REQ_DETACH },
		{ LS_VERB_CHECK, LS_REQ_CHECK },
		{ LS_VERB_CHECK_BLOCKS, LS_REQ_CHECK_BLOCKS },
		{ LS_VERB_CHECK_FORK, LS_REQ_CHECK_FORK },
		{ LS_VERB_CHECK_FORK_BLOCKS, LS_REQ_CHECK_FORK_BLOCKS },
	};
	size_t i;

	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (!strcmp(line, verbs[i].name))
			return verbs[i].verb;
	return LS_REQ_UNKNOWN;
}

int ls_request_threads_hdr(const struct lsnap_check_hdr *h, uint32_t *n)
{
	if (memcmp(h->magic, LSNAP_CHECK_MAGIC, sizeof(h->magic)) ||
	    h->flags || h->nthreads > LSNAP_CHECK_MAX_THREADS)
		return -EPROTO;
	*n = h->nthreads;
	return 0;
}

int ls_request_threads_ok(const struct lsnap_check_thread *th, uint32_t n)
{
	uint32_t i;

	for (i = 0; i < n; i++)
		if (!th[i].tid || th[i].nregs > LSNAP_CHECK_NREGS)
			return -EPROTO;
	return 0;
}

int ls_request_budget(char *req, uint64_t *ns)
{
	char *b = strstr(req, LS_CHECK_BUDGET_ARG), *end;
	unsigned long long us;

	*ns = LS_CHECK_BUDGET_US * 1000ull;
	if (!b || strncmp(req, LS_VERB_CHECK, strlen(LS_VERB_CHECK)))
		return 0;
	errno = 0;
	us = strtoull(b + strlen(LS_CHECK_BUDGET_ARG), &end, 10);
	if (errno || *end || end == b + strlen(LS_CHECK_BUDGET_ARG) ||
	    !isdigit((unsigned char)b[strlen(LS_CHECK_BUDGET_ARG)]) ||
	    us > LS_CHECK_BUDGET_MAX_US)
		return -1;
	*b = 0;
	*ns = us * 1000ull;
	return 0;
}
