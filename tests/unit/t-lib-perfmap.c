/*
 * t-lib-perfmap.c - a runtime's perf map (lib/perfmap.h) read as the
 * untrusted file it is: lines parsed or skipped, lookups at the edges of
 * each piece of code, and the files it must refuse (a symbolic link,
 * another user's file, a FIFO, one over the size cap).  Then jitdumps
 * built here byte by byte after perf's specification: code loads named,
 * every other record skipped, a record cut short, a name without its NUL,
 * sizes that do not fit, the wrong magic.
 */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "../../lib/perfmap.h"
#include "scratch.h"
#include "tap.h"

static void test_parse(void)
{
	const char *p = scratch_file("beam.map",
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

	p = scratch_file("node.map",
			 "3a6b8c0 40 LazyCompile:~main /app.js:1\n");
	m = ls_perfmap_load(p, me, me);
	ok(m && !strcmp(ls_perfmap_runtime(m), "jit") &&
	   !strcmp(ls_perfmap_find(m, 0x3a6b8c8, &lo, &size),
		   "LazyCompile:~main /app.js:1") && lo == 0x3a6b8c0,
	   "node's format, without 0x: its own runtime name");
	ls_perfmap_free(m);
}

static void test_refused(void)
{
	const char *p = scratch_file("other.map", "0x1000 10 $a:b/0\n");
	char link[256], fifo[256];
	uid_t me = getuid();
	FILE *f;

	errno = 0;
	ok(!ls_perfmap_load(p, me + 1, me + 2) && errno == EPERM,
	   "another user's file refused (EPERM)");
	snprintf(link, sizeof(link), "%s/link.map", scratch_dir);
	ok(!symlink(p, link), "symlink made");
	errno = 0;
	ok(!ls_perfmap_load(link, me, me) && errno == ELOOP,
	   "a symbolic link refused (ELOOP)");
	snprintf(fifo, sizeof(fifo), "%s/fifo.map", scratch_dir);
	ok(!mkfifo(fifo, 0600), "fifo made");
	errno = 0;
	ok(!ls_perfmap_load(fifo, me, me) && errno == EPERM,
	   "a FIFO refused without blocking (EPERM)");
	p = scratch_file("big.map", "");
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


/* --- jitdump ------------------------------------------------------------- */

static unsigned char jd[4096];
static size_t jd_len;

static void jd_put(const void *p, size_t n)
{
	memcpy(jd + jd_len, p, n);
	jd_len += n;
}

static void jd_u32(uint32_t v)
{
	jd_put(&v, 4);
}

static void jd_u64(uint64_t v)
{
	jd_put(&v, 8);
}

static void jd_header(uint32_t magic)
{
	jd_len = 0;
	jd_u32(magic);
	jd_u32(1);		/* version */
	jd_u32(40);		/* header size */
	jd_u32(62);		/* EM_X86_64 */
	jd_u32(0);
	jd_u32(4242);		/* pid */
	jd_u64(1);		/* timestamp */
	jd_u64(0);		/* flags */
}

/* A JIT_CODE_LOAD of [addr, addr + size) named name (nlen bytes written,
 * NUL included when nlen > strlen), with size code bytes, or fewer. */
static void jd_load(uint64_t addr, uint64_t size, const char *name,
		    size_t nlen, size_t code)
{
	jd_u32(0);
	jd_u32((uint32_t)(16 + 40 + nlen + code));
	jd_u64(2);
	jd_u32(4242);
	jd_u32(4243);
	jd_u64(addr);
	jd_u64(addr);
	jd_u64(size);
	jd_u64(7);
	jd_put(name, nlen);
	memset(jd + jd_len, 0xcc, code);
	jd_len += code;
}

static struct ls_perfmap *jd_read(const char *name)
{
	FILE *f;
	char path[256];

	snprintf(path, sizeof(path), "%s/%s", scratch_dir, name);
	f = fopen(path, "w");
	if (f) {
		fwrite(jd, 1, jd_len, f);
		fclose(f);
	}
	return ls_perfmap_load_jitdump(path, getuid(), getuid());
}

static void test_jitdump(void)
{
	struct ls_perfmap *m;
	uint64_t lo, size;
	const char *n;

	jd_header(0x4A695444);
	jd_load(0x7f0000001000, 0x40, "global::call_nif_shared", 24, 0x40);
	/* a JIT_CODE_CLOSE-like record of another id: skipped */
	jd_u32(3);
	jd_u32(16);
	jd_u64(3);
	jd_load(0x7f0000002000, 0x80, "leaky_nif:leak_inner/1", 23, 0x80);
	jd_load(0x7f0000003000, 0x10, "no-nul", 6, 0x10);	/* no NUL */
	jd_load(0x7f0000004000, 0x1000, "too-big", 8, 0x10);	/* size > room */
	jd_load(0xfffffffffffffff0, 0x20, "wraps", 6, 0x20);
	jd_load(0x7f0000005000, 0x20, "cut", 4, 0x20);
	jd_len -= 8;		/* the last record still being written */
	m = jd_read("jit-4242.dump");
	if (!ok(m != NULL, "a jitdump read"))
		return;
	ok(ls_perfmap_count(m) == 2, "2 code loads named, the rest skipped "
	   "(%zu)", ls_perfmap_count(m));
	n = ls_perfmap_find(m, 0x7f0000001000, &lo, &size);
	ok(n && !strcmp(n, "global::call_nif_shared") && lo == 0x7f0000001000 &&
	   size == 0x40, "its first byte");
	n = ls_perfmap_find(m, 0x7f000000207f, &lo, &size);
	ok(n && !strcmp(n, "leaky_nif:leak_inner/1"), "the other's last byte");
	ok(!ls_perfmap_find(m, 0x7f0000002080, &lo, &size) &&
	   !ls_perfmap_find(m, 0x7f0000003000, &lo, &size) &&
	   !ls_perfmap_find(m, 0x7f0000005000, &lo, &size),
	   "nothing past them, nor in the records that did not parse");
	ok(!strcmp(ls_perfmap_runtime(m), "jit"), "names of the runtime 'jit'");
	ls_perfmap_free(m);

	jd_header(0x4454694A);	/* the other byte order */
	errno = 0;
	ok(!jd_read("swapped.dump") && errno == EINVAL,
	   "another byte order: EINVAL");
	jd_len = 20;
	errno = 0;
	ok(!jd_read("short.dump") && errno == EINVAL, "a short header: EINVAL");
}

int main(void)
{
	if (scratch_make("perfmap"))
		return 1;
	test_parse();
	test_refused();
	test_jitdump();
	scratch_remove();
	return tap_done();
}
