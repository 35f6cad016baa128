"""A busy Python heap to check: alloc-heavy.py's records, KEEP of them held
for good, then alloc-heavy.py's rounds without end, for bench/reach-bench
--python (docs/REACHABILITY.md, "Cost").

    PYTHONMALLOC=malloc python3 reach-python.py KEEP COUNTER_FILE

With PYTHONMALLOC=malloc every object is a malloc block: 100,000 records
hold about 1.5 million live blocks (about 200 MiB of RSS), and each round
allocates and frees some 30,000 more (close to a million allocation
events a second on one core), which is what makes a concurrent check's
change log fill while it marks.  Prints "ready <pid> <records>" once the
held records are built; then runs rounds until its stdin closes (a thread
waits for it), writing after each round the number of rounds done and the
monotonic clock (two little-endian 8-byte integers, nanoseconds) at the
start of COUNTER_FILE, so that the bench can tell the rounds per second
during a check from those between checks.
"""

import json
import mmap
import os
import random
import struct
import sys
import threading
import time

from alloc_heavy_load import load_alloc_heavy


def main():
    keep = int(sys.argv[1])
    with open(sys.argv[2], "w+b") as f:
        f.write(b"\0" * 16)
        f.flush()
        counter = mmap.mmap(f.fileno(), 16)
    ah = load_alloc_heavy()
    rng = random.Random(7)
    kept = []
    while sum(len(b) for b in kept) < keep:
        batch = [ah.make_record(rng, i) for i in range(1000)]
        kept.append(json.loads(json.dumps(batch)))
    done = threading.Event()
    threading.Thread(target=lambda: (sys.stdin.read(), done.set()),
                     daemon=True).start()
    print("ready %d %d" % (os.getpid(), sum(len(b) for b in kept)),
          flush=True)
    cache, r = {}, 0
    while not done.is_set():
        ah.one_round(rng, r, cache)
        r += 1
        struct.pack_into("<QQ", counter, 0, r, time.monotonic_ns())


if __name__ == "__main__":
    main()
