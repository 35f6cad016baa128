/*
 * t-lib-perfmap.c - a runtime's perf map (lib/perfmap.h) read as the
 * untrusted file it is: lines parsed or skipped, lookups at the edges of
 * each piece of code, and the files it must refuse (a symbolic link,
 * another user's file, a FIFO, one over the size cap).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../../lib/perfmap.h"
#include "tap.h"

static char dir[] = "/tmp/leakscope-perfmap-XXXXXX";

static const char *file(const char *name, const char *text)
{
	static char path[256];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	f = fopen(path, "w");
	if (f) {
		fputs(text, f);
		fclose(f);
	}
	return path;
}

static void test_parse(void)
{
	const char *p = file("beam.map",
		"0x7f5310605000 68 $global::apply_fun_shared\n"
		"0x7f52cecdbcd0 b0 $jp:main/0\n"
		"not a line at all\n"
		"0x1000 0 $empty\n"
		"ffffffffffffff00 200 $wraps\n"
		"0x7f52cecdbd80 30\n"
		"0x7f52cecdbdb0 60 $jp:module_info/0\n"
		"0x7f52cecdbe10 30 $jp:cut_off");
	uid_t me = getuid();
	struct ls_perfmap *m = ls_perfmap_load(p, me, me);
	uint64_t lo = 99, size = 0;

	if (!ok(m != NULL, "a BEAM map read"))
		return;
	is_u64(ls_perfmap_count(m), 3, "three good lines, the rest skipped");
	ok(!strcmp(ls_perfmap_runtime(m), "beam jit"), "a BEAM map");
	ok(!strcmp(ls_perfmap_find(m, 0x7f52cecdbcd0, &lo, &size),
		   "jp:main/0") && lo == 0x7f52cecdbcd0 && size == 0xb0,
	   "first byte, '$' dropped");
	ok(!strcmp(ls_perfmap_find(m, 0x7f52cecdbd7f, &lo, &size),
		   "jp:main/0") && lo == 0x7f52cecdbcd0, "last byte");
	ok(!ls_perfmap_find(m, 0x7f52cecdbd80, &lo, &size), "one past the "
	   "end: nothing (the line without a name was skipped)");
	ok(!ls_perfmap_find(m, 0x7f52cecdbe10, &lo, &size),
	   "an unterminated last line is not read");
	ok(!ls_perfmap_find(m, 0x10, &lo, &size), "below every entry");
	ls_perfmap_free(m);

	p = file("node.map", "3a6b8c0 40 LazyCompile:~main /app.js:1\n");
	m = ls_perfmap_load(p, me, me);
	ok(m && !strcmp(ls_perfmap_runtime(m), "jit") &&
	   !strcmp(ls_perfmap_find(m, 0x3a6b8c8, &lo, &size),
		   "LazyCompile:~main /app.js:1") && lo == 0x3a6b8c0,
	   "node's format, without 0x: its own runtime name");
	ls_perfmap_free(m);
}

static void test_refused(void)
{
	const char *p = file("other.map", "0x1000 10 $a:b/0\n");
	char link[256], fifo[256];
	uid_t me = getuid();
	FILE *f;

	errno = 0;
	ok(!ls_perfmap_load(p, me + 1, me + 2) && errno == EPERM,
	   "another user's file refused (EPERM)");
	snprintf(link, sizeof(link), "%s/link.map", dir);
	ok(!symlink(p, link), "symlink made");
	errno = 0;
	ok(!ls_perfmap_load(link, me, me) && errno == ELOOP,
	   "a symbolic link refused (ELOOP)");
	snprintf(fifo, sizeof(fifo), "%s/fifo.map", dir);
	ok(!mkfifo(fifo, 0600), "fifo made");
	errno = 0;
	ok(!ls_perfmap_load(fifo, me, me) && errno == EPERM,
	   "a FIFO refused without blocking (EPERM)");
	p = file("big.map", "");
	f = fopen(p, "r+");
	ok(f && !ftruncate(fileno(f), LS_PERFMAP_MAX_BYTES + 1), "sparse file");
	if (f)
		fclose(f);
	errno = 0;
	ok(!ls_perfmap_load(p, me, me) && errno == EFBIG,
	   "over the size cap refused (EFBIG)");
	errno = 0;
	ok(!ls_perfmap_load("/nonexistent/perf-1.map", me, me) &&
	   errno == ENOENT, "no map: ENOENT");
	unlink(link);
	unlink(fifo);
}

int main(void)
{
	char cmd[300];

	if (!mkdtemp(dir)) {
		perror("mkdtemp");
		return 1;
	}
	test_parse();
	test_refused();
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	if (system(cmd))
		fprintf(stderr, "# cannot remove %s\n", dir);
	return tap_done();
}
