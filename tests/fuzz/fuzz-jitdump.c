/*
 * fuzz-jitdump.c - the jitdump reader (lib/perfmap.c,
 * ls_perfmap_jitdump_fd): /tmp/jit-PID.dump is written by the traced
 * process's user, in a directory anyone may write.
 *
 * The input is the file.  A refusal must be NULL with errno set; a map
 * read must answer every lookup with a name of 1 to 1024 bytes whose
 * range holds the address asked for, at the first and last byte of each
 * piece of code found.
 */
#include <errno.h>
#include <string.h>
#include <unistd.h>
#include "../../lib/perfmap.h"
#include "../../common/lsnap.h"
#include "fuzz.h"

/* Look addr up: nothing, or a sane name over a range holding it. */
static void probe(const struct ls_perfmap *m, uint64_t addr)
{
	uint64_t lo = 0, size = 0;
	const char *name = ls_perfmap_find(m, addr, &lo, &size);
	size_t n;

	if (!name)
		return;
	n = strnlen(name, LSNAP_JIT_NAME_MAX + 1);
	if (!n || n > LSNAP_JIT_NAME_MAX)
		fuzz_fail("name of %zu bytes at 0x%llx", n,
			  (unsigned long long)addr);
	if (!size || addr < lo || addr - lo >= size)
		fuzz_fail("0x%llx named by [0x%llx, +0x%llx)",
			  (unsigned long long)addr, (unsigned long long)lo,
			  (unsigned long long)size);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int fd = fuzz_memfd(data, size);
	struct ls_perfmap *m;
	uint64_t lo, len, at;
	size_t i;

	errno = 0;
	m = ls_perfmap_jitdump_fd(fd, size);
	close(fd);
	if (!m) {
		if (errno <= 0)
			fuzz_fail("refused without errno");
		return 0;
	}
	/* Every 8-byte word of the input, as an address: each piece of
	 * code's start lies among them. */
	for (i = 0; i + 8 <= size; i++) {
		memcpy(&at, data + i, 8);
		probe(m, at);
		if (ls_perfmap_find(m, at, &lo, &len))
			probe(m, lo + len - 1);
	}
	ls_perfmap_free(m);
	return 0;
}
