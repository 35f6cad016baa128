"""alloc-heavy.py's records, a part of each round kept: a Python heap that
grows to a known size, for measuring a tracker's memory per live block.

    PYTHONMALLOC=malloc python3 alloc-hold.py [ROUNDS [KEEP [--wait]]]

Each round runs one round of alloc-heavy.py and then keeps KEEP more
records (built, round-tripped through JSON) until the end.  200 rounds of
1100 (the defaults) peak at about 250 MiB natively with PYTHONMALLOC=malloc
(~3.5M live malloc blocks, ~20k allocation sites), the size of the run
the hook-cost benchmarks measured.  With --wait it prints "ready" once everything is built
and sleeps until killed, holding it all (for `leakscope stats PID`).

Prints "alloc-hold rounds=N keep=K records=R".
"""

import json
import random
import sys
import time

from alloc_heavy_load import load_alloc_heavy


def main():
    rounds = int(sys.argv[1]) if len(sys.argv) > 1 else 200
    keep = int(sys.argv[2]) if len(sys.argv) > 2 else 1100
    wait = "--wait" in sys.argv[3:]
    ah = load_alloc_heavy()
    rng = random.Random(1)
    cache, kept = {}, []
    for r in range(rounds):
        ah.one_round(rng, r, cache)
        batch = [ah.make_record(rng, i) for i in range(keep)]
        kept.append(json.loads(json.dumps(batch)))
    print("alloc-hold rounds=%d keep=%d records=%d" %
          (rounds, keep, sum(len(b) for b in kept)), flush=True)
    if wait:
        print("ready", flush=True)
        while True:
            time.sleep(3600)


if __name__ == "__main__":
    main()
