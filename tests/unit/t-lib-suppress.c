/*
 * t-lib-suppress.c - LeakSanitizer's template rules (lib/suppress.c):
 * unanchored patterns match anywhere, `^` and `$` anchor, `*` is any run;
 * files: comments, blanks, spaces, the errors with file and line, and
 * nothing kept of a bad file.  Then the reachability kinds' parser.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "../../lib/report.h"
#include "../../lib/suppress.h"
#include "tap.h"

static void match(const char *tmpl, const char *str, int want)
{
	ok(ls_supp_template_match(tmpl, str) == want, "'%s' %s '%s'", tmpl,
	   want ? "matches" : "does not match", str);
}

static void test_templates(void)
{
	match("foo", "foo", 1);
	match("foo", "xfooy", 1);		/* unanchored: inside */
	match("^foo", "xfoo", 0);
	match("^foo", "foobar", 1);
	match("foo$", "foobar", 0);
	match("foo$", "barfoo", 1);
	match("^foo$", "foo", 1);
	match("^foo$", "foox", 0);
	match("f*o", "fxxxo", 1);
	match("^f*o$", "fxxxoy", 0);
	match("^f*o$", "fxoxo", 1);		/* backtracking */
	match("a*b*c", "xxaxxbxxcxx", 1);
	match("a*b*c", "xxaxxcxxbxx", 0);
	match("*", "", 1);
	match("^$", "", 1);
	match("^$", "x", 0);
	match("libfoo.so", "/usr/lib/libfoo.so.1", 1);
	match("^/usr/lib/*libfoo", "/usr/lib/x86_64/libfoo.so", 1);
	match("std::vector<*>::push_back",
	      "std::vector<int, std::allocator<int> >::push_back(int const&)", 1);
	ok(!ls_supp_template_match("foo", NULL), "a missing name never matches");
}

static char *write_file(const char *text)
{
	static char path[64];
	int fd;

	strcpy(path, "/tmp/t-lib-suppress-XXXXXX");
	fd = mkstemp(path);
	if (fd < 0 || write(fd, text, strlen(text)) != (ssize_t)strlen(text))
		return NULL;
	close(fd);
	return path;
}

static void test_files(void)
{
	struct ls_supp s = { 0 };
	char err[512], want[600], *path;
	int r;

	path = write_file("# comment\n\n   leak:site_one  \nleak:^two$\n"
			  "\t# indented comment\nleak:a*b\n");
	r = ls_supp_load(&s, path, err, sizeof(err));
	ok(r == 0, "a good file loads (%s)", r ? err : "");
	is_u64(s.n, 3, "three entries");
	ok(s.n == 3 && !strcmp(s.e[0].pattern, "site_one"), "spaces trimmed");
	snprintf(want, sizeof(want), "%s:4", path);
	ok(s.n == 3 && !strcmp(s.e[1].origin, want), "origin names file:line");
	unlink(path);

	path = write_file("leak:fine\nleak:also\nrace:x\n");
	r = ls_supp_load(&s, path, err, sizeof(err));
	snprintf(want, sizeof(want), "%s:3: unknown suppression type", path);
	ok(r == -EINVAL && !strncmp(err, want, strlen(want)),
	   "unknown type: %s", err);
	is_u64(s.n, 3, "nothing of the bad file kept");
	unlink(path);

	path = write_file("leak:\n");
	r = ls_supp_load(&s, path, err, sizeof(err));
	ok(r == -EINVAL && strstr(err, ":1: empty pattern"), "empty: %s", err);
	unlink(path);

	path = write_file("just words\n");
	r = ls_supp_load(&s, path, err, sizeof(err));
	ok(r == -EINVAL && strstr(err, ":1: expected TYPE:PATTERN"),
	   "no type: %s", err);
	unlink(path);

	r = ls_supp_load(&s, "/nonexistent/dir/supp", err, sizeof(err));
	ok(r == -ENOENT && strstr(err, "cannot read suppressions "
				  "'/nonexistent/dir/supp'"), "missing: %s", err);

	r = ls_supp_default(&s);
	ok(r == 0 && s.n > 10, "the default list adds its entries");
	ls_supp_release(&s);
	is_u64(s.n, 0, "released");
}

static void test_kinds(void)
{
	unsigned bits = 0;
	char err[256];

	ok(!ls_reach_parse_kinds("definite,indirect", &bits, err, sizeof(err)) &&
	   bits == (1u << LSNAP_REACH_DEFINITE | 1u << LSNAP_REACH_INDIRECT),
	   "definite,indirect");
	ok(!ls_reach_parse_kinds("all", &bits, err, sizeof(err)) && bits == 15,
	   "all");
	ok(!ls_reach_parse_kinds("reachable,", &bits, err, sizeof(err)) &&
	   bits == 1u << LSNAP_REACH_REACHABLE, "a trailing comma");
	ok(ls_reach_parse_kinds("definite,lost", &bits, err, sizeof(err)) ==
	   -EINVAL && strstr(err, "unknown kind 'lost'"), "unknown: %s", err);
	ok(ls_reach_parse_kinds("", &bits, err, sizeof(err)) == -EINVAL,
	   "empty");
	ok(!strcmp(ls_reach_kind_name(LSNAP_REACH_POSSIBLE), "possibly lost"),
	   "valgrind's names");
}

int main(void)
{
	test_templates();
	test_files();
	test_kinds();
	return tap_done();
}
