/*
 * fuzz-postmortem.c - the post-mortem file reader (lib/postmortem.c,
 * common/lspm.h): the input is the file, read through the path the
 * commands use (`report --postmortem FILE`, the web server's listing).
 *
 * A file whose sequence counter is odd is one the sampler was writing:
 * the reader retries for 0.1 s before it takes it as torn.  To keep the
 * fuzzer fast, only inputs whose last byte says so keep an odd counter;
 * the others are made even.  A refusal must be a negative errno and one
 * line; what is accepted goes through every report (fuzz_use_snapshot).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../../common/lspm.h"
#include "../../lib/postmortem.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct ls_snapshot snap;
	const size_t seq_at = offsetof(struct lspm_header, seq);
	char path[64], err[512];
	uint8_t *copy = malloc(size ? size : 1);
	int fd, r;

	if (!copy)
		fuzz_fail("out of memory");
	memcpy(copy, data, size);
	if (size > seq_at && (!size || data[size - 1] != 0xff))
		copy[seq_at] &= 0xfe;
	fd = fuzz_memfd(copy, size);
	free(copy);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	r = ls_postmortem_load(path, &snap, err, sizeof(err));
	close(fd);
	if (r) {
		fuzz_check_error("post-mortem file", r, err);
		return 0;
	}
	if (!snap.postmortem)
		fuzz_fail("a post-mortem file read without snap.postmortem");
	fuzz_use_snapshot(&snap, fuzz_seed(data, size));
	ls_snapshot_release(&snap);
	return 0;
}
