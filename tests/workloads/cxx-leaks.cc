/*
 * cxx-leaks.cc - C++ allocations: names in the report must be demangled.
 *
 * Expected outstanding sites at exit (frames[0] is libstdc++'s
 * "operator new(unsigned long)", which calls malloc; the first non-inlined
 * frame of this program is the one listed):
 *
 *   program frame               bytes  blocks  how
 *   leaktest::Widget::make()       96     2    new Widget (48 bytes) twice,
 *                                              from one call site
 *   site_vector                   400     1    the buffer of a
 *                                              std::vector<int>(100) whose
 *                                              object is never destroyed
 *   site_array                    200     1    new int[50]: libstdc++'s
 *                                              operator new[] tail-calls
 *                                              operator new, so it leaves
 *                                              no frame: frames[1] is
 *                                              site_array()
 *   site_string                    41     1    the heap buffer of a 40-char
 *                                              std::string never destroyed
 *
 * Stacks continue cxx_stage -> main.  Deleted objects, containers that go
 * out of scope and a thrown and caught exception (tmp_*) leave nothing.
 * libstdc++ allocates its emergency exception pool at start-up: that site
 * belongs to libstdc++, not to this program.
 */
#include <new>
#include <stdexcept>
#include <string>
#include <vector>
#include "wl.h"

namespace leaktest {

class Widget {
public:
	int v[12];
	static Widget *make();
};

WL_SITE Widget *Widget::make()
{
	Widget *w = new Widget(); /* @Widget::make */
	wl_sink = w;
	return w;
}

} // namespace leaktest

alignas(std::vector<int>) static unsigned char vec_store[sizeof(std::vector<int>)];
alignas(std::string) static unsigned char str_store[sizeof(std::string)];

WL_SITE static void site_vector()
{
	std::vector<int> *v = new (vec_store) std::vector<int>(100); /* @site_vector */
	wl_sink = v->data();
}

WL_SITE static void site_string()
{
	std::string *s = new (str_store) std::string(40, 'x'); /* @site_string */
	WL_CHECK(s->size() == 40, "string size %zu", s->size());
	wl_sink = &(*s)[0];
}

WL_SITE static void site_array()
{
	int *a = new int[50]; /* @site_array */
	wl_sink = a;
}

WL_HELPER static void tmp_objects()
{
	for (int i = 0; i < 100; i++) {
		std::vector<std::string> names;
		for (int j = 0; j < 20; j++)
			names.push_back(std::string(30 + j, 'a' + j % 26));
		leaktest::Widget *w = new leaktest::Widget();
		wl_sink = w;
		delete static_cast<leaktest::Widget *>(wl_sink);
		int *arr = new int[i + 1];
		wl_sink = arr;
		delete[] static_cast<int *>(wl_sink);
	}
}

WL_HELPER static void tmp_exception()
{
	try {
		throw std::runtime_error(std::string(100, 'e'));
	} catch (const std::exception &e) {
		WL_CHECK(std::string(e.what()).size() == 100, "what() lost");
	}
}

WL_HELPER static void cxx_stage()
{
	for (int i = 0; i < wl_n(2); i++)
		leaktest::Widget::make();
	site_vector();
	site_string();
	site_array();
	tmp_objects();
	tmp_exception();
	WL_BARRIER();
}

int main()
{
	cxx_stage();
	WL_BARRIER();
	return 0;
}
