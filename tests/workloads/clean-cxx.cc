/*
 * clean-cxx.cc - a C++ program that frees everything it allocates, but
 * uses iostreams, a named locale (on a string stream) and an exception: libstdc++ and the C
 * library keep their one-time allocations (stdout's buffer, locale data,
 * the exception machinery's globals) to the end.
 *
 * Ground truth: no site of this program holds memory at exit; `run
 * --leak-check --fail-on-leak` and `run --fail-on-leak` must exit 0.
 */
#include <iostream>
#include <locale>
#include <sstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

static int work()
{
	std::unique_ptr<std::string> s(new std::string(200, 'x'));
	std::vector<int> v(1000, 7);

	try {
		throw std::runtime_error("caught");
	} catch (const std::exception &e) {
		return (int)s->size() + v[3] + (int)std::string(e.what()).size();
	}
}

int main()
{
	std::ostringstream os;

	try {
		os.imbue(std::locale(""));
	} catch (const std::exception &) {
		/* no such locale here: the classic one is fine */
	}
	os << 1234567;
	std::cout << "hello from a clean C++ program " << work() << " "
		  << os.str() << std::endl;
	return 0;
}
