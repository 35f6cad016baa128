/*
 * stress-cxx.cc - C++ exceptions through 50 frames, for the
 * reliability run: 2000 times, a recursion 50 deep where every frame owns
 * a std::string and a std::vector (freed by unwinding) throws from the
 * bottom; the top catches.  The agent interposes the allocations the
 * unwinder and the exception objects make.
 *
 * Exit status 0 and "cxx ok CHECKSUM" on stdout; nothing leaks.
 */
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>
#include "wl.h"

struct deep_error : std::runtime_error {
	uint64_t depth_sum;
	deep_error(uint64_t s) : std::runtime_error("bottom"), depth_sum(s) {}
};

WL_HELPER static uint64_t descend(int n, uint64_t acc)
{
	std::string name(40 + n, static_cast<char>('a' + n % 26));
	std::vector<int> v(static_cast<size_t>(n + 1), n);

	acc += static_cast<uint64_t>(name.size()) + static_cast<uint64_t>(v.back());
	if (n == 0)
		throw deep_error(acc);
	return descend(n - 1, acc) + 1;
}

int main()
{
	uint64_t sum = 0;

	for (int i = 0; i < wl_n(2000); i++) {
		try {
			sum += descend(50, static_cast<uint64_t>(i));
		} catch (const deep_error &e) {
			sum += e.depth_sum;
		}
	}
	wl_say(1, "cxx ok %llu\n", static_cast<unsigned long long>(sum));
	return 0;
}
