/*
 * t-lib-stack.c - the stack as the user asks to see it (lib/stack.h):
 * template arguments cut to "<…>" (operators that look like brackets
 * kept), runtime frames hidden only outside the program's own, --depth;
 * the one frame formatter every text output uses, its once-per-frame
 * memo, and watch's and top's one-line summary.
 */
#include <stdlib.h>
#include <string.h>
#include "../../lib/stack.h"
#include "tap.h"

static void short_is(const char *name, const char *want)
{
	char *got = ls_short_name(name);

	ok(want ? got && !strcmp(got, want) : !got, "short(%s) = %s (got %s)",
	   name, want ? want : "unchanged", got ? got : "unchanged");
	free(got);
}

static void test_names(void)
{
	short_is("std::_Rb_tree<int, std::pair<int const, int>, std::_Select1st<"
		 "std::pair<int const, int> >, std::less<int>, std::allocator<"
		 "std::pair<int const, int> > >::_M_get_node()",
		 "std::_Rb_tree<…>::_M_get_node()");
	short_is("std::vector<int, std::allocator<int> >::vector(unsigned long, "
		 "std::allocator<int> const&)",
		 "std::vector<…>::vector(unsigned long, std::allocator<…> const&)");
	short_is("main", NULL);
	short_is("operator<<(std::ostream&, Foo const&)", NULL);
	short_is("Foo::operator<(Foo const&) const", NULL);
	short_is("bool std::operator< <char>(std::string const&, char const*)",
		 "bool std::operator< <…>(std::string const&, char const*)");
	short_is("std::function<void ()>::operator()() const",
		 "std::function<…>::operator()() const");
	short_is("a<b>::operator->()", "a<…>::operator->()");
	short_is("std::map<K, V>::operator[](K const&)",
		 "std::map<…>::operator[](K const&)");
	short_is("broken<name(", NULL);
	short_is("x<>", "x<…>");
}

static struct ls_symframe frame(const char *fn, const char *module)
{
	struct ls_symframe f = { .function = fn, .module = module };

	return f;
}

static void put(struct ls_stack *st, const struct ls_symframe *f, size_t n)
{
	st->n = 0;
	if (st->cap < n) {
		st->f = realloc(st->f, n * sizeof(*f));
		st->cap = n;
	}
	memcpy(st->f, f, n * sizeof(*f));
	st->n = n;
}

static void test_runtime(void)
{
	const struct ls_symframe fr[] = {
		frame("operator new(unsigned long)", "/usr/lib/x86_64-linux-gnu/libstdc++.so.6"),
		frame("std::vector<int>::vector()", "/bin/prog"),
		frame("qsort_r", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
		frame("compare", "/bin/prog"),
		frame("main", "/bin/prog"),
		frame("__libc_start_call_main", "/usr/lib/x86_64-linux-gnu/libc.so.6"),
		frame("_start", "/bin/prog-no"),
	};
	struct ls_stack st = { 0 };

	put(&st, fr, 6);
	ok(!ls_stack_view(&st, 0, 1, 1), "view");
	ok(st.n == 4 && !strcmp(st.f[0].function, "std::vector<int>::vector()") &&
	   !strcmp(st.f[1].function, "qsort_r") &&
	   !strcmp(st.f[3].function, "main"),
	   "runtime frames cut below and above the program's, kept between (%zu)",
	   st.n);
	put(&st, fr, 6);
	ok(!ls_stack_view(&st, 2, 0, 1) && st.n == 2 &&
	   !strcmp(st.f[0].function, "std::vector<…>::vector()"),
	   "depth 2 after hiding, names shortened");
	put(&st, fr, 1);
	ok(!ls_stack_view(&st, 0, 1, 1) && st.n == 1,
	   "a stack of runtime frames only is kept whole");
	put(&st, fr, 6);
	ok(!ls_stack_view(&st, 0, 1, 0) && st.n == 6, "nothing hidden by default");
	ls_stack_release(&st);
}

static void format_is(const struct ls_symframe *f, unsigned parts,
		      const char *want)
{
	char buf[128];
	size_t n = ls_frame_format(buf, sizeof(buf), f, parts);

	ok(!strcmp(buf, want) && n == strlen(want), "frame text '%s' "
	   "(got '%s', length %zu)", want, buf, n);
}

static void test_format(void)
{
	struct ls_symframe named = { .addr = 0x401136, .function = "main",
				     .offset = 0x1e, .module = "/usr/bin/prog",
				     .file = "/src/prog.c", .line = 12 };
	struct ls_symframe inl = named, bare = { .addr = 0x7f6c0fc94b5a,
		.module = "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2" };
	struct ls_symframe none = { .addr = 0x10 }, nasty = named;
	struct ls_symframe fr[3];
	struct ls_stack st = { 0 };
	char buf[16], sum[256];

	inl.function = "helper";
	inl.inlined = 1;
	nasty.function = "evil\033[2Jname";
	format_is(&named, LS_FRAME_ALL, "main+0x1e [prog] prog.c:12");
	format_is(&named, LS_FRAME_NAME, "main+0x1e [prog]");
	format_is(&inl, LS_FRAME_ALL, "helper [prog] prog.c:12 (inlined)");
	format_is(&bare, LS_FRAME_ALL, "0x7f6c0fc94b5a [libjemalloc.so.2]");
	format_is(&none, LS_FRAME_ALL, "0x10 [unknown]");
	format_is(&nasty, LS_FRAME_NAME, "evil?[2Jname+0x1e [prog]");
	named.line = 0;
	format_is(&named, LS_FRAME_ALL, "main+0x1e [prog] prog.c");
	ok(ls_frame_format(buf, sizeof(buf), &bare, LS_FRAME_ALL) == 33 &&
	   strlen(buf) == sizeof(buf) - 1 && !strncmp(buf, "0x7f6c0fc94b5a ", 15),
	   "cut to the buffer, the length needed returned");

	/* watch and top: an unnamed frame named with its module, as in a
	 * report, not as a bare address. */
	fr[0] = bare;
	fr[1] = inl;
	fr[2] = named;
	fr[2].line = 40;
	put(&st, fr, 3);
	ls_stack_summary(&st, 3, sum, sizeof(sum));
	ok(!strcmp(sum, "0x7f6c0fc94b5a [libjemalloc.so.2] < helper:12 < "
		   "main:40"), "summary: %s", sum);
	ls_stack_release(&st);
}

/* ls_stack_frame_line: ls_frame_format's text as a report line, made
 * once per distinct frame, forgotten when the frames come from elsewhere. */
static void test_memo(void)
{
	static char name[8] = "alpha";
	struct ls_symframe fr[4] = {
		{ .addr = 0x401136, .function = name, .offset = 0x1e,
		  .module = "/usr/bin/prog", .file = "/src/prog.c", .line = 12 },
	};
	struct ls_stack st = { 0 };
	char want[700], *longname = malloc(600);
	const char *t[4];
	size_t len[4], i;

	fr[1] = fr[0];
	fr[2] = fr[0];
	fr[2].line = 13;
	memset(longname, 'x', 599);
	longname[599] = 0;
	fr[3] = fr[0];
	fr[3].function = longname;
	ok(!ls_stack_set(&st, fr, 4), "set");
	for (i = 0; i < 4; i++) {
		t[i] = ls_stack_frame_line(&st, i, &len[i]);
		strcpy(want, "\t\t");
		ls_frame_format(want + 2, sizeof(want) - 3, &fr[i],
				LS_FRAME_ALL);
		strcat(want, "\n");
		ok(t[i] && !strcmp(t[i], want) && len[i] == strlen(want),
		   "frame %zu: as ls_frame_format spells it, between two "
		   "tabs and a newline (%zu bytes)", i, t[i] ? len[i] : 0);
	}
	ok(t[0] == t[1], "one text for two equal frames");
	ok(t[0] != t[2] && strstr(t[2], "prog.c:13"),
	   "another line, another text");
	ok(len[3] == 599 + strlen("\t\t+0x1e [prog] prog.c:12\n"),
	   "a text longer than the formatting buffer whole");
	memcpy(name, "beta_", 6);
	ok(!ls_stack_set(&st, fr, 1), "set again");
	t[0] = ls_stack_frame_line(&st, 0, &len[0]);
	ok(t[0] && !strcmp(t[0], "\t\tbeta_+0x1e [prog] prog.c:12\n"),
	   "new frames set: the memo is not reused");
	ls_stack_release(&st);
	free(longname);
}

int main(void)
{
	test_names();
	test_runtime();
	test_format();
	test_memo();
	return tap_done();
}
