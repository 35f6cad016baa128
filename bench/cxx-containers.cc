/*
 * cxx-containers.cc - the C++ benchmark workload: containers built and
 * destroyed through deep template stacks.
 *
 *   cxx-containers ROUNDS SEED
 *
 * What a C++ service does per request or per batch: it builds a catalog
 * of items (std::string names, std::vector of tags, a std::map of
 * attributes, a std::unordered_map of link lists, a std::shared_ptr to a
 * parent), indexes it (std::unordered_map of std::vector<std::weak_ptr>,
 * std::map of std::set, a std::map of std::map of std::vector of pairs),
 * queries it (copies, sorts, joins strings) and destroys it.  The last
 * KEEP_CATALOGS catalogs stay alive, so blocks live for a few rounds
 * and the heap holds tens of thousands of them.
 *
 * Items are built by a recursive template, Builder<DEPTH>, DEPTH levels of
 * distinct non-inlined instantiations above libstdc++'s own template
 * layers (_Rb_tree::_M_emplace_hint_unique, _Hashtable::_M_insert_unique,
 * vector::_M_realloc_insert, __shared_count...): an allocation is 20-40
 * frames below main, through many distinct call sites.  Built as Debian
 * builds packages: -O2, no frame pointers (bench/Makefile).
 *
 * Ground truth, for the tests: item number 999, 1999, 2999... (counted
 * over the whole run) each leaves one 64-byte struct kept_item, allocated
 * with new in keep_forever() and never freed; every other block the
 * program allocates is freed before exit (stdout is unbuffered, so stdio
 * keeps no buffer either).
 *
 * Deterministic for ROUNDS and SEED.  Prints one line,
 *   cxx-containers rounds=R seed=S checksum=HEX items=N leaked=L
 *       leaked_bytes=B work_s=SECONDS
 * where work_s is CLOCK_MONOTONIC around the rounds (no start-up, no
 * exit), the rest must not change under a tracker.
 */
#include <algorithm>
#include <cinttypes>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <time.h>
#include <unordered_map>
#include <utility>
#include <vector>

namespace {

constexpr int ITEMS_PER_ROUND = 2000;
constexpr int KEEP_CATALOGS = 16;
constexpr uint64_t KEEP_EVERY = 1000;
constexpr int DEPTH = 24;

const char *const WORDS[] = {
	"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf",
	"hotel", "india", "juliet", "kilo", "lima", "mike", "november",
	"oscar", "papa", "quebec", "romeo", "sierra", "tango",
};
constexpr unsigned NWORDS = sizeof(WORDS) / sizeof(WORDS[0]);

struct Rng {
	uint64_t s;

	uint64_t operator()()
	{
		/* splitmix64: the same sequence on every libc */
		uint64_t z = (s += 0x9e3779b97f4a7c15ULL);

		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
		z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
		return z ^ (z >> 31);
	}
	unsigned below(unsigned n) { return (unsigned)((*this)() % n); }
	const char *word() { return WORDS[below(NWORDS)]; }
};

/* The known leak: exactly one per KEEP_EVERY items, 64 bytes each. */
struct kept_item {
	kept_item *next;
	uint64_t id;
	char tag[48];
};
static_assert(sizeof(kept_item) == 64, "the ground truth says 64 bytes");

kept_item *kept;
uint64_t kept_count;

__attribute__((noipa)) void keep_forever(uint64_t id, const std::string &name)
{
	kept_item *k = new kept_item;

	k->next = kept;
	k->id = id;
	snprintf(k->tag, sizeof(k->tag), "%s", name.c_str());
	kept = k;
	kept_count++;
}

struct Item {
	uint64_t id = 0;
	unsigned levels = 0;
	std::string name;
	std::vector<std::string> tags;
	std::map<std::string, double> attrs;
	std::unordered_map<uint32_t, std::vector<uint32_t>> links;
	std::shared_ptr<const Item> parent;
};

struct Catalog {
	std::vector<std::shared_ptr<Item>> items;
	std::unordered_map<std::string, std::vector<std::weak_ptr<Item>>> by_tag;
	std::map<uint64_t, std::set<std::string>> by_bucket;
	std::map<std::string, std::map<std::string, std::vector<std::pair<uint32_t, double>>>> matrix;
};

uint64_t fnv(const std::string &s, uint64_t h = 14695981039346656037ULL)
{
	for (unsigned char c : s)
		h = (h ^ c) * 1099511628211ULL;
	return h;
}

/* One container operation on the item or the catalog, of four kinds. */
template <int D> __attribute__((noipa)) void add_part(Rng &rng, Item &it, Catalog &c)
{
	switch (rng.below(4)) {
	case 0:
		it.tags.emplace_back(std::string(rng.word()) + "-" + std::to_string(D % 8));
		break;
	case 1:
		it.attrs[std::string("attribute.") + rng.word() + "." + rng.word()] = D * 0.5;
		break;
	case 2:
		it.links[rng.below(64)].push_back(D);
		break;
	default:
		c.matrix[rng.word()][std::string(rng.word()) + "/" + rng.word()]
			.emplace_back((uint32_t)it.id, D * 0.25);
		break;
	}
}

/*
 * Builder<D>::grow: one level of the recursive build, a chain of DEPTH
 * distinct instantiations (each its own frame and return addresses), as
 * layers of generic code are.  A level adds a part to the item now and
 * then, the bottom one always: allocations happen at every depth, mostly
 * deep down.  The count after the call keeps it from being a tail call.
 */
template <int D> struct Builder {
	__attribute__((noipa)) static void grow(Rng &rng, Item &it, Catalog &c)
	{
		if (rng.below(5) == 0)
			add_part<D>(rng, it, c);
		Builder<D - 1>::grow(rng, it, c);
		it.levels++;
	}
};

template <> struct Builder<0> {
	__attribute__((noipa)) static void grow(Rng &rng, Item &it, Catalog &c)
	{
		add_part<0>(rng, it, c);
		add_part<0>(rng, it, c);
	}
};

__attribute__((noipa)) std::shared_ptr<Item> make_item(Rng &rng, Catalog &c, uint64_t id)
{
	auto it = std::make_shared<Item>();

	it->id = id;
	it->name = std::string("item-") + rng.word() + "-" + std::to_string(id) + "-";
	Builder<DEPTH>::grow(rng, *it, c);
	if (!c.items.empty() && rng.below(2))
		it->parent = c.items[rng.below((unsigned)c.items.size())];
	if (id % KEEP_EVERY == KEEP_EVERY - 1)
		keep_forever(id, it->name);
	return it;
}

__attribute__((noipa)) void index_item(Catalog &c, const std::shared_ptr<Item> &it)
{
	for (const std::string &t : it->tags)
		c.by_tag[t].push_back(it);
	c.by_bucket[fnv(it->name) % 97].insert(it->name);
}

__attribute__((noipa)) uint64_t query(const Catalog &c, Rng &rng)
{
	uint64_t sum = 0;
	std::string tag = std::string(rng.word()) + "-" + std::to_string(rng.below(8));
	auto hit = c.by_tag.find(tag);

	if (hit != c.by_tag.end()) {
		std::vector<std::shared_ptr<Item>> found;
		for (const auto &w : hit->second)
			if (auto p = w.lock())
				found.push_back(std::move(p));
		std::sort(found.begin(), found.end(),
			  [](const std::shared_ptr<Item> &a, const std::shared_ptr<Item> &b) {
				  return a->attrs.size() != b->attrs.size() ?
					 a->attrs.size() > b->attrs.size() : a->id < b->id;
			  });
		std::string joined;
		for (size_t i = 0; i < found.size() && i < 50; i++)
			joined += found[i]->name + ";";
		sum ^= fnv(joined);
	}
	auto row = c.matrix.find(rng.word());
	if (row != c.matrix.end()) {
		std::vector<std::string> keys;
		for (const auto &cell : row->second)
			keys.push_back(row->first + ":" + cell.first);
		sum = sum * 31 + keys.size() + (keys.empty() ? 0 : fnv(keys.back()));
	}
	for (const auto &b : c.by_bucket)
		sum += b.first * b.second.size();
	return sum;
}

/*
 * A stage of the service's request pipeline: a generic wrapper that
 * calls the next stage, as a framework's middleware templates do (two
 * frames per stage: the wrapper and the lambda).
 */
template <class F> __attribute__((noipa)) auto stage(uint64_t &calls, F &&next)
{
	calls++;
	return next();
}

__attribute__((noipa)) std::unique_ptr<Catalog> build_catalog(Rng &rng, uint64_t first_id)
{
	auto c = std::make_unique<Catalog>();

	c->items.reserve(ITEMS_PER_ROUND / 4);	/* grows by reallocation */
	for (int i = 0; i < ITEMS_PER_ROUND; i++) {
		c->items.push_back(make_item(rng, *c, first_id + (uint64_t)i));
		index_item(*c, c->items.back());
	}
	return c;
}

double now_s()
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

}	/* namespace */

int main(int argc, char **argv)
{
	if (argc != 3) {
		fprintf(stderr, "usage: cxx-containers ROUNDS SEED\n");
		return 2;
	}
	long rounds = strtol(argv[1], nullptr, 10);
	uint64_t seed = strtoull(argv[2], nullptr, 10);
	if (rounds < 1) {
		fprintf(stderr, "cxx-containers: ROUNDS must be at least 1\n");
		return 2;
	}

	/* No stdio buffer: the known leak stays the only block left. */
	setvbuf(stdout, nullptr, _IONBF, 0);

	Rng rng{seed};
	uint64_t checksum = 0, items = 0;
	double t0 = now_s();
	{
		std::deque<std::unique_ptr<Catalog>> live;
		for (long r = 0; r < rounds; r++) {
			uint64_t calls = 0;
			live.push_back(stage(calls, [&] {
				return stage(calls, [&] {
					return stage(calls, [&] { return build_catalog(rng, items); });
				});
			}));
			items += ITEMS_PER_ROUND;
			for (const auto &c : live)
				checksum = checksum * 1000003 + query(*c, rng);
			if (live.size() > KEEP_CATALOGS)
				live.pop_front();
		}
	}
	double work = now_s() - t0;

	printf("cxx-containers rounds=%ld seed=%" PRIu64 " checksum=%016" PRIx64
	       " items=%" PRIu64 " leaked=%" PRIu64 " leaked_bytes=%zu work_s=%.4f\n",
	       rounds, seed, checksum, items, kept_count,
	       (size_t)kept_count * sizeof(kept_item), work);
	return 0;
}
