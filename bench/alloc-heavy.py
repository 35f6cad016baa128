"""An allocation-heavy Python workload for the leakscope benchmark.

    python3 alloc-heavy.py [ROUNDS]

Each round builds a batch of small "records" (dicts holding strings, lists
and tuples), serialises the batch to JSON and parses it back, indexes it in
a dict of lists, formats report lines and throws everything away, keeping a
small part in a long-lived cache that is trimmed now and then.  That is the
kind of churn a Python service does per request: CPython allocates (mostly
through its small-object allocator, the rest through malloc) millions of
times.

Deterministic: prints "alloc-heavy rounds=N checksum=HEX", which must be the
same under any tracker.
"""

import json
import random
import sys
import zlib

WORDS = ("alpha bravo charlie delta echo foxtrot golf hotel india juliet kilo "
         "lima mike november oscar papa quebec romeo sierra tango").split()


def make_record(rng, i):
    name = "-".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4)))
    return {
        "id": i,
        "name": name,
        "tags": [rng.choice(WORDS) for _ in range(rng.randint(0, 6))],
        "score": rng.random() * 100,
        "pos": (rng.randint(-500, 500), rng.randint(-500, 500)),
        "blob": name.upper() * rng.randint(1, 12),
    }


def one_round(rng, r, cache):
    batch = [make_record(rng, r * 1000 + i) for i in range(400)]
    text = json.dumps(batch, sort_keys=True)
    back = json.loads(text)
    by_tag = {}
    for rec in back:
        for tag in rec["tags"]:
            by_tag.setdefault(tag, []).append(rec["id"])
    lines = ["%s:%d" % (tag, len(ids)) for tag, ids in sorted(by_tag.items())]
    summary = ";".join(lines)
    cache[r] = back[r % len(back)]
    if len(cache) > 200:
        for key in sorted(cache)[:100]:
            del cache[key]
    return zlib.crc32(summary.encode()) ^ len(text)


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 300
    rng = random.Random(12345)
    cache = {}
    checksum = 0
    for r in range(rounds):
        checksum = (checksum * 1000003 + one_round(rng, r, cache)) & 0xFFFFFFFF
    print("alloc-heavy rounds=%d checksum=%08x" % (rounds, checksum))


if __name__ == "__main__":
    main()
