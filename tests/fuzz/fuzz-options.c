/*
 * fuzz-options.c - the command line's report options (cli/parse-options.c
 * with the tables of cli/report-args.c and lib/ropt-table.h: formats,
 * filters, sizes, times, choices, the stack and flame graph options,
 * memleak's short names, older spellings, --only) and the
 * LeakSanitizer suppression files they name (lib/suppress.c).
 *
 * The input is the arguments, NUL-separated, after "report"; after a line
 * "@SUPP", the rest is a suppression file that every --suppressions
 * names (the input's own file names are never opened).  The parser must
 * answer a count of arguments, -1 after one line of usage error or the
 * help; a value it accepts must be within its option's range.  Its
 * messages go to /dev/null (LEAKSCOPE_FUZZ_VERBOSE=1 shows them).
 */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../../cli/report-args.h"
#include "../../common/contract.h"
#include "fuzz.h"

#define SUPP_MARK "\n@SUPP\n"
#define MAX_ARGS 64

static const struct ls_usage usage = {
	"report", "[OPTIONS] PID|FILE", "fuzzed", "fuzzed",
	(const struct ls_option *const[]){ ls_report_options,
		ls_ropt_options, ls_reach_options, NULL },
	NULL, LS_RO_REPORT | LS_RO_TRACE | LS_RO_MEMLEAK,
};

static int quiet(void)
{
	static int null_fd = -1;

	if (getenv("LEAKSCOPE_FUZZ_VERBOSE"))
		return -1;
	if (null_fd < 0)
		null_fd = open("/dev/null", O_WRONLY | O_CLOEXEC);
	return null_fd;
}

/* stdout and stderr to fd (from *saved when fd is -1, back). */
static void redirect(int fd, int saved[2])
{
	fflush(stdout);
	fflush(stderr);
	if (fd >= 0) {
		saved[0] = dup(1);
		saved[1] = dup(2);
		dup2(fd, 1);
		dup2(fd, 2);
	} else if (saved[0] >= 0) {
		dup2(saved[0], 1);
		dup2(saved[1], 2);
		close(saved[0]);
		close(saved[1]);
	}
}

/* The arguments, NUL-separated, into argv[1..]: argc. */
static int split(char *buf, size_t len, char **argv)
{
	int argc = 1;
	size_t i = 0;

	argv[0] = "report";
	while (i < len && argc < MAX_ARGS) {
		argv[argc++] = buf + i;
		i += strlen(buf + i) + 1;
	}
	argv[argc] = NULL;
	return argc;
}

static void check_ranges(const struct ls_report_args *a)
{
	if (a->ropts.depth > LS_DEPTH_MAX)
		fuzz_fail("--depth %u accepted", a->ropts.depth);
	if (a->ropts.top > 1000000)
		fuzz_fail("--top %zu accepted", a->ropts.top);
	if (a->ropts.svg.count > LS_FLAME_COUNT_BLOCKS ||
	    a->ropts.svg.colors > LS_FLAME_COLORS_KIND)
		fuzz_fail("a flame graph choice out of range accepted");
	if (a->ropts.by < 0 || a->ropts.by > LS_BY_TEMPORARY)
		fuzz_fail("--by %d accepted", a->ropts.by);
	if (a->nsupp_files > LS_SUPP_FILES_MAX)
		fuzz_fail("%zu suppression files", a->nsupp_files);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const uint8_t *supp = size ? memmem(data, size, SUPP_MARK,
					    strlen(SUPP_MARK)) : NULL;
	size_t n = supp ? (size_t)(supp - data) : size, i;
	struct ls_report_args a;
	char *buf = malloc(n + 1), *argv[MAX_ARGS + 1], path[64];
	int argc, r, fd = -1, saved[2] = { -1, -1 };

	if (!buf)
		fuzz_fail("out of memory");
	memcpy(buf, data, n);
	buf[n] = 0;
	if (supp) {
		fd = fuzz_memfd(supp + strlen(SUPP_MARK),
				size - n - strlen(SUPP_MARK));
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	argc = split(buf, n, argv);
	memset(&a, 0, sizeof(a));
	a.ropts.depth = LS_DEPTH_MAX;
	redirect(quiet(), saved);
	r = ls_parse_options(argc, argv, &usage, 0, &a);
	if (r >= 0) {
		check_ranges(&a);
		for (i = 0; i < a.nsupp_files; i++)
			a.supp_files[i] = fd >= 0 ? path : "/dev/null";
		a.default_supp = 1;
		ls_report_args_finish(&a, (int)(size & 1));
		ls_report_args_release(&a);
	}
	redirect(-1, saved);
	if (r < -2 || r >= argc)
		fuzz_fail("the parser answered %d for %d arguments", r, argc);
	if (fd >= 0)
		close(fd);
	free(buf);
	return 0;
}
